"""The narrow dtypes (float16, bfloat16, uint8, int8, int16) on cuda, against torch on the CPU.

Storage is native on the device (copy.cu casts between all ten dtypes, gather.cu and index.cu move
them); arithmetic goes through the widening wrapper (device/widen.rs) exactly as on the CPU:
float32 / int64 on the device, rounded once into the result. So values are compared bit for bit
where torch's CPU result is exact, with tests/test_small_dtypes.py's tolerance otherwise. Runs on
the host-emulated cuda:0 (the g++ build of the same .cu files) where there is no GPU."""

import itertools

import pytest
import torch

import minigrad as mg
from cuda_host.backend import cuda_device, in_torch_2_13_words  # noqa: F401  (cuda_device: module fixture)
from test_small_dtypes import ALL, EDGE, HALVES, INTS, NARROW, close_in, mdt, tdt
from test_small_dtypes import same as same_cpu


def same(m, t):
    assert m.device.type == "cuda", m.device
    same_cpu(m.cpu(), t)


def close(m, t, ulps=1):
    assert m.device.type == "cuda", m.device
    close_in(m.cpu(), t, ulps)


def cu(t):
    """A torch CPU tensor's values as a minigrad cuda tensor of the same dtype (through the CPU)."""
    return mg.tensor(t.tolist(), dtype=mdt(str(t.dtype).split(".")[-1])).to("cuda")


def rand(name, n=2000, seed=0):
    g = torch.Generator().manual_seed(seed)
    if name in HALVES:
        t = (torch.randn(n, generator=g) * 30).to(tdt(name))
    else:
        t = torch.randint(-300, 300, (n,), generator=g).to(tdt(name))
    return cu(t), t


def bits(m):
    """A 16-bit tensor's raw words, read on the CPU through DLPack (torch views the same memory)."""
    return torch.from_dlpack(m.cpu()).view(torch.int16)


# ----- storage, transfers, casts -----

@pytest.mark.parametrize("name", HALVES)
def test_every_half_bit_pattern_survives_transfers_and_widens_exactly(name):
    t = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(tdt(name))
    m = mg.from_dlpack(t.clone()).cuda()
    assert m.dtype == mdt(name) and m.is_cuda
    assert torch.equal(bits(m), t.view(torch.int16))  # host -> device -> host: every word as it was
    assert torch.equal(bits(m.clone()), t.view(torch.int16))  # a device copy (half -> half) too
    wide, want = torch.from_dlpack(m.float().cpu()), t.float()
    nan = want.isnan()
    assert torch.equal(wide.isnan(), nan)
    assert torch.equal(wide[~nan].view(torch.int32), want[~nan].view(torch.int32))  # exact, -0.0 too
    same(m.double(), t.double())


@pytest.mark.parametrize("name", HALVES)
def test_float32_rounds_to_nearest_even_as_torch(name):
    g = torch.Generator().manual_seed(7)
    words = torch.randint(-(2**31), 2**31, (200_000,), generator=g, dtype=torch.int64).to(torch.int32)
    # every halfway point between neighbouring half values, and one float32 step either side
    h = torch.arange(-(2**15), 2**15, dtype=torch.int32).to(torch.int16).view(tdt(name)).float()
    h = h[h.isfinite()].sort().values.view(torch.int32).to(torch.int64)
    mid = (h[:-1] + h[1:]) // 2
    words = torch.cat([words, mid.to(torch.int32), (mid + 1).to(torch.int32), (mid - 1).to(torch.int32)])
    f = words.view(torch.float32)
    f = torch.cat([f, torch.tensor([65504.0, 65519.99, 65520.0, 1e-8, -2.9802322e-08, 5.96e-8, 3.4e38, float("inf")])])
    got = bits(mg.from_dlpack(f.clone()).cuda().to(mdt(name)))
    want = f.to(tdt(name))
    nan = want.isnan()
    assert torch.equal(got[~nan], want.view(torch.int16)[~nan])
    assert got[nan].view(tdt(name)).isnan().all()


@pytest.mark.parametrize("src", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("dst", ALL)
def test_casts_match_torch(src, dst):
    t = torch.tensor(EDGE, dtype=torch.float64).to(tdt(src))
    m = mg.tensor(EDGE, dtype=mg.float64, device="cuda").to(mdt(src))
    same(m, t)
    same(m.to(mdt(dst)), t.to(tdt(dst)))
    same(m[::2].to(mdt(dst)), t[::2].to(tdt(dst)))  # strided source


@pytest.mark.parametrize("src", ["int64", "int32", "int16", "int8", "uint8", "bool"])
@pytest.mark.parametrize("dst", ALL)
def test_int_casts_wrap_like_torch(src, dst):
    vals = [0, 1, -1, 127, 128, -128, -129, 255, 256, 300, 32767, 32768, -32769, 65519, 65520, 2**31 - 1,
            2**40 + 300, -(2**62)]
    t = torch.tensor(vals, dtype=torch.int64).to(tdt(src))
    m = mg.tensor(vals, dtype=mg.int64, device="cuda").to(mdt(src))
    same(m, t)
    same(m.to(mdt(dst)), t.to(tdt(dst)))
    same(m.reshape(3, 6).t().to(mdt(dst)), t.reshape(3, 6).t().to(tdt(dst)))  # transposed source


def test_methods_factories_and_device_moves():
    tx = torch.tensor([1.7, -2.2, 3.5, 70000.0])
    x = mg.tensor(tx.tolist(), device="cuda")
    for meth in ["half", "bfloat16", "byte", "char", "short"]:
        same(getattr(x, meth)(), getattr(tx, meth)())
    for name in NARROW:
        d, td = mdt(name), tdt(name)
        same(mg.zeros(2, 3, dtype=d, device="cuda"), torch.zeros(2, 3, dtype=td))
        same(mg.ones(2, 3, dtype=d, device="cuda"), torch.ones(2, 3, dtype=td))
        same(mg.full((2,), 7, dtype=d, device="cuda"), torch.full((2,), 7, dtype=td))
        same(mg.arange(5, dtype=d, device="cuda"), torch.arange(5, dtype=td))
        same(mg.eye(3, dtype=d, device="cuda"), torch.eye(3, dtype=td))
        assert mg.empty(4, dtype=d, device="cuda").element_size() == torch.empty(4, dtype=td).element_size()
        c = mg.tensor([1, 2, 3], dtype=d)
        for moved in (c.cuda(), c.to("cuda"), c.to(device="cuda", dtype=d)):
            same(moved, torch.tensor([1, 2, 3], dtype=td))
        same(mg.tensor([1.5, 2.5], device="cuda").to("cpu", d).cuda(), torch.tensor([1.5, 2.5]).to(td))
        same(mg.tensor([1.5, 2.5]).to("cuda", d), torch.tensor([1.5, 2.5]).to(td))  # cast on the way
        assert mg.ones(2, dtype=d, device="cuda").cpu().dtype == d
    for name in HALVES:
        r = mg.randn(1000, dtype=mdt(name), device="cuda")
        assert r.dtype == mdt(name) and r.is_cuda and abs(r.float().mean().item()) < 0.2
        same(mg.linspace(0, 1, 7, dtype=mdt(name), device="cuda"), torch.linspace(0, 1, 7, dtype=tdt(name)))


# ----- promotion and arithmetic -----

def test_promotion_of_every_pair_on_cuda():
    for a, b in itertools.product(ALL, ALL):
        ta, tb = torch.tensor([1, 0, 3]).to(tdt(a)), torch.tensor([2, 1, 1]).to(tdt(b))
        same(cu(ta) + cu(tb), ta + tb)
        same(cu(ta) * cu(tb), ta * tb)


BINARY = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b, "max": lambda a, b: a.maximum(b), "lt": lambda a, b: a < b,
    "eq": lambda a, b: a == b, "alpha": lambda a, b: a.add(b, alpha=3),
}


@pytest.mark.parametrize("name", NARROW)
@pytest.mark.parametrize("op", list(BINARY))
def test_binary_tensor_tensor(name, op):
    (ma, ta), (mb, tb) = rand(name, seed=1), rand(name, seed=2)
    if name in INTS and op == "div":
        mb, tb = mb.abs() + 1, tb.abs() + 1
    if op == "alpha" and name in HALVES:
        close(BINARY[op](ma, mb), BINARY[op](ta, tb), ulps=8)  # torch's vector body and tail differ
    else:
        same(BINARY[op](ma, mb), BINARY[op](ta, tb))
    if op != "alpha":  # a broadcast operand beside a strided one
        same(BINARY[op](ma.reshape(40, 50)[::2, :1], mb.reshape(40, 50)[::2]),
             BINARY[op](ta.reshape(40, 50)[::2, :1], tb.reshape(40, 50)[::2]))


@pytest.mark.parametrize("name", NARROW)
@pytest.mark.parametrize("scalar", [0.1234567, 3, -7, 300, 2.5])
@pytest.mark.parametrize("op", ["add", "sub", "mul", "div", "lt", "max", "rsub", "rdiv", "floordiv", "rem"])
def test_binary_with_numbers(name, scalar, op):
    ma, ta = rand(name)
    if name in INTS and op == "rdiv":
        ma, ta = ma.abs() + 1, ta.abs() + 1
    f = {
        "add": lambda x: x + scalar, "sub": lambda x: x - scalar, "mul": lambda x: x * scalar,
        "div": lambda x: x / scalar, "lt": lambda x: x < scalar, "max": lambda x: x.clamp(min=scalar),
        "rsub": lambda x: scalar - x, "rdiv": lambda x: scalar / x, "floordiv": lambda x: x // scalar,
        "rem": lambda x: x % scalar,
    }[op]
    try:
        want = f(ta)
    except RuntimeError as e:  # e.g. uint8.clamp(min=300): torch's words, before any kernel
        with pytest.raises(RuntimeError) as me:
            f(ma)
        assert str(me.value) == str(e)
        return
    same(f(ma), want)


@pytest.mark.parametrize("name", NARROW)
def test_binary_with_zero_dim_tensors(name):
    ma, ta = rand(name)
    for v, d in [(0.1234567, "float32"), (3, "int64"), (2.5, "float64"), (5, "int16")]:
        ts = torch.tensor(v, dtype=tdt(d))
        for dev in ("cpu", "cuda"):
            ms = mg.tensor(v, dtype=mdt(d), device=dev)
            # A 0-d CPU tensor joins a cuda op as a number does (torch's CUDA kernels read a CPU
            # scalar in opmath too); a 0-d cuda tensor is an operand like any other, converted to
            # the common dtype first (torch.cuda's dynamic cast on load).
            tss = ts if dev == "cpu" else ts.to(torch.result_type(ta, ts))
            for f in [lambda x, s: x + s, lambda x, s: x * s, lambda x, s: x / s, lambda x, s: s - x]:
                same(f(ma, ms), f(ta, tss))


@pytest.mark.parametrize("name", HALVES)
@pytest.mark.parametrize("op", ["exp", "log", "sqrt", "tanh", "sigmoid", "sin", "neg", "abs", "relu", "rsqrt", "reciprocal"])
def test_unary_halves(name, op):
    ma, ta = rand(name)
    if op in ("log", "sqrt", "rsqrt"):
        ma, ta = ma.abs(), ta.abs()
    if op in ("exp", "sigmoid", "tanh", "sin", "rsqrt", "log"):
        close(getattr(ma, op)(), getattr(ta, op)())
    else:
        same(getattr(ma, op)(), getattr(ta, op)())


@pytest.mark.parametrize("name", INTS)
def test_int_ops(name):
    ma, ta = rand(name)
    mb, tb = rand(name, seed=5)
    same(-ma, -ta)
    same(ma.abs(), ta.abs())
    same(ma & mb, ta & tb)
    same(ma | mb, ta | tb)
    same(ma ^ mb, ta ^ tb)
    same(~ma, ~ta)
    same(ma * mb, ta * tb)
    close(ma.exp(), ta.exp())  # int -> float32
    same(ma ** 2, ta ** 2)
    nz_m, nz_t = mb.abs() % 50 + 1, tb.abs() % 50 + 1
    same(ma // nz_m, ta // nz_t)
    same(ma % nz_m, ta % nz_t)
    same(ma.clamp(-5, 7), ta.clamp(-5, 7))
    same(mg.where(ma > 0, ma, mb), torch.where(ta > 0, ta, tb))


@pytest.mark.parametrize("name", NARROW)
def test_reductions(name):
    ma, ta = rand(name, n=3000)
    ma2, ta2 = ma.reshape(30, 100), ta.reshape(30, 100)
    same(ma.sum(), ta.sum())
    same(ma2.sum(1), ta2.sum(1))
    same(ma2.amax(0), ta2.amax(0))
    same(ma2.argmin(1), ta2.argmin(1))
    same(ma2.max(1).values, ta2.max(1).values)
    same(ma2.max(1).indices, ta2.max(1).indices)
    close(ma.sum(dtype=mg.float32), ta.sum(dtype=torch.float32), ulps=64)  # float32 sums, orders differ
    if name in HALVES:
        same(ma2.mean(1), ta2.mean(1))
        close(ma2.softmax(1), ta2.softmax(1))
        close((ma2 / 30).logsumexp(1), (ta2 / 30).logsumexp(1))
        torch.testing.assert_close(torch.tensor(ma2.var(1).float().tolist()), ta2.var(1).float(), rtol=1e-2, atol=0)


def test_half_sum_accumulates_in_float32():
    # 4096 ones: a float16 accumulator would stop at 2048
    same(mg.ones(4096, dtype=mg.float16, device="cuda").sum(), torch.ones(4096, dtype=torch.float16).sum())


@pytest.mark.parametrize("name", HALVES)
def test_matmul(name):
    ma, ta = rand(name, n=48 * 40)
    mb, tb = rand(name, n=40 * 24, seed=3)
    ma, ta = ma.reshape(48, 40) / 8, ta.reshape(48, 40) / 8
    mb, tb = mb.reshape(40, 24) / 8, tb.reshape(40, 24) / 8
    got = ma @ mb
    assert got.dtype == mdt(name) and got.is_cuda
    # float32 sums in another order than torch's CPU gemm: one rounding step apart at most
    torch.testing.assert_close(torch.tensor(got.float().tolist()), (ta @ tb).float(), rtol=8e-3, atol=1e-2)


# ----- in place, versions, autograd -----

@pytest.mark.parametrize("name", NARROW)
def test_inplace_bumps_version_once(name):
    ma, ta = rand(name, n=10)
    ma.add_(1), ta.add_(1)
    ma.mul_(3), ta.mul_(3)
    ma.clamp_(-50, 50), ta.clamp_(-50, 50)
    ma += 2
    ta += 2
    same(ma, ta)
    assert ma._version == ta._version == 4
    ma[2:5].fill_(9), ta[2:5].fill_(9)
    same(ma, ta)
    assert ma._version == ta._version == 5
    ma[::3].copy_(mg.tensor([1.7, 300.0, -1.5, 4.0], device="cuda")), ta[::3].copy_(torch.tensor([1.7, 300.0, -1.5, 4.0]))
    same(ma, ta)
    assert ma._version == ta._version == 6


def test_inplace_cast_rules():
    x, tx = cu(torch.tensor([1, 2, 3], dtype=torch.int8)), torch.tensor([1, 2, 3], dtype=torch.int8)
    with pytest.raises(RuntimeError) as te:
        tx.add_(0.5)
    with pytest.raises(RuntimeError) as me:
        x.add_(0.5)
    assert str(me.value) == str(te.value)
    h, th = mg.tensor([1.0, 2.0], dtype=mg.float16, device="cuda"), torch.tensor([1.0, 2.0], dtype=torch.float16)
    h.add_(mg.tensor([1.0, 2.0], dtype=mg.float64, device="cuda"))
    th.add_(torch.tensor([1.0, 2.0], dtype=torch.float64))
    same(h, th)


@pytest.mark.parametrize("name", HALVES)
def test_backward_in_half(name):
    vals = [0.5, -1.25, 2.0, 3.5, -0.75, 1.0]
    m = mg.tensor(vals, dtype=mdt(name), device="cuda", requires_grad=True)
    t = torch.tensor(vals, dtype=tdt(name), requires_grad=True)

    def f(x):
        return ((x * x).sigmoid() * 3 + x.exp() / 4).sum()

    f(m).backward()
    f(t).backward()
    assert m.grad.dtype == mdt(name) and m.grad.is_cuda
    torch.testing.assert_close(torch.tensor(m.grad.tolist(), dtype=tdt(name)), t.grad)
    w = mg.tensor([[0.5, 1.0], [-1.0, 2.0]], dtype=mdt(name), device="cuda", requires_grad=True)
    tw = torch.tensor([[0.5, 1.0], [-1.0, 2.0]], dtype=tdt(name), requires_grad=True)
    (w @ w).softmax(1)[:, 0].sum().backward()
    (tw @ tw).softmax(1)[:, 0].sum().backward()
    close(w.grad, tw.grad, ulps=2)


def test_half_to_float_backward_and_saved_version_check():
    m = mg.tensor([1.0, 2.0], dtype=mg.float16, device="cuda", requires_grad=True)
    t = torch.tensor([1.0, 2.0], dtype=torch.float16, requires_grad=True)
    (m.float() * 3).sum().backward()
    (t.float() * 3).sum().backward()
    same(m.grad, t.grad)
    assert m.float().grad_fn.name() == "ToCopyBackward0"
    a = mg.tensor([0.5, 1.5], dtype=mg.float16, device="cuda", requires_grad=True)
    ta = torch.tensor([0.5, 1.5], dtype=torch.float16, requires_grad=True)
    y, ty = a.clone().sigmoid(), ta.clone().sigmoid()
    y.mul_(2), ty.mul_(2)  # sigmoid saved its result: backward must refuse, with torch's words
    with pytest.raises(RuntimeError) as te:
        ty.sum().backward()
    with pytest.raises(RuntimeError) as me:
        y.sum().backward()
    assert str(me.value) == in_torch_2_13_words(str(te.value)).replace("torch.", "minigrad.")


# ----- data movement (native kernels, no widening) -----

@pytest.mark.parametrize("name", NARROW)
def test_data_movement(name):
    m, t = rand(name, n=24)
    m, t = m.reshape(4, 6), t.reshape(4, 6)
    idx = [2, 0, 3]
    same(m[idx], t[idx])
    same(m[:, [5, 1, 1]], t[:, [5, 1, 1]])
    same(m.t().contiguous(), t.t().contiguous())
    same(mg.cat([m, m[:1]]), torch.cat([t, t[:1]]))
    same(mg.cat([m, m.float()], 1), torch.cat([t, t.float()], 1))  # promoted while joining
    same(m.index_select(1, mg.tensor([5, 0], device="cuda")), t.index_select(1, torch.tensor([5, 0])))
    gi = [[0], [1], [2], [3]]
    same(m.gather(1, mg.tensor(gi, device="cuda")), t.gather(1, torch.tensor(gi)))
    same(m[m > 0], t[t > 0])
    same(m.nonzero(), t.nonzero())
    m2, t2 = m.clone(), t.clone()
    m2[1] = 5
    t2[1] = 5
    m2[[0, 2], [1, 1]] = mg.tensor([7, 8], dtype=mdt(name), device="cuda")
    t2[[0, 2], [1, 1]] = torch.tensor([7, 8], dtype=tdt(name))
    same(m2, t2)
    same(m.masked_fill(m > 0, 3), t.masked_fill(t > 0, 3))
    same(mg.stack([m, m]), torch.stack([t, t]))


@pytest.mark.parametrize("name", NARROW)
def test_scatters_accumulate_as_torch(name):
    """scatter_add and scatter(reduce='multiply') of half types accumulate each element in float32
    and round once (torch's CPU kernels); index_put_(accumulate=True) and index_add with its alpha
    round every step into the storage type. Small integers wrap."""
    vals = [1000.5, 0.1, 3.0, -7.0, 0.3, 1.1] if name in HALVES else [100, 27, 3, -7, 90, 11]
    src_t = torch.tensor(vals * 4).to(tdt(name)).reshape(4, 6)
    src = cu(src_t)
    idx = [[0, 1, 2, 0, 1, 0], [0, 0, 0, 0, 0, 0], [2, 2, 1, 1, 0, 0], [0, 1, 2, 2, 2, 0]]
    mi, ti = mg.tensor(idx, device="cuda"), torch.tensor(idx)
    base_t = torch.full((3, 6), 3, dtype=tdt(name))
    base = cu(base_t)
    same(base.scatter_add(0, mi, src), base_t.scatter_add(0, ti, src_t))
    same(base.scatter(0, mi, src), base_t.scatter(0, ti, src_t))
    same(base.scatter(0, mi, src, reduce="multiply"), base_t.scatter(0, ti, src_t, reduce="multiply"))
    b2, tb2 = base.clone(), base_t.clone()
    b2.index_put_((mg.tensor([0, 0, 2, 0], device="cuda"),), src, accumulate=True)
    tb2.index_put_((torch.tensor([0, 0, 2, 0]),), src_t, accumulate=True)
    same(b2, tb2)
    assert b2._version == tb2._version == 1
    ii, tii = mg.tensor([0, 2, 0, 0], device="cuda"), torch.tensor([0, 2, 0, 0])
    for alpha in (1, 3):
        got, want = base.index_add(0, ii, src, alpha=alpha), base_t.index_add(0, tii, src_t, alpha=alpha)
        # the same bits as minigrad's CPU kernel (each step rounded, as torch's loop); torch routes
        # alpha=1 on the first dim through scatter_add instead (float32 sums): a few half steps apart
        same_cpu(got.cpu(), base.cpu().index_add(0, ii.cpu(), src.cpu(), alpha=alpha))
        if name in HALVES:
            close(got, want, ulps=4)
        else:
            same(got, want)


@pytest.mark.parametrize("name", HALVES)
def test_index_backward_accumulates_in_half(name):
    m = mg.tensor([0.5, 1.5, -2.0], dtype=mdt(name), device="cuda", requires_grad=True)
    t = torch.tensor([0.5, 1.5, -2.0], dtype=tdt(name), requires_grad=True)
    i = [0, 2, 0, 0, 1]
    (m[i] * mg.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=mdt(name), device="cuda")).sum().backward()
    (t[i] * torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=tdt(name))).sum().backward()
    same(m.grad, t.grad)


# ----- interop -----

@pytest.mark.parametrize("name", NARROW)
def test_tolist_item_repr(name):
    vals = [[1.5, 2.0, -3.25]] if name in HALVES else [[1, 2, 127]]
    m, t = mg.tensor(vals, dtype=mdt(name), device="cuda"), torch.tensor(vals, dtype=tdt(name))
    assert m.tolist() == t.tolist()
    assert m[0, 1].item() == t[0, 1].item()
    assert repr(m) == repr(t).replace("torch", "minigrad").replace("dtype=", "device='cuda:0', dtype=")


def test_safetensors_of_cuda_tensors(tmp_path):
    from safetensors.torch import load_file

    tensors = {}
    for name in NARROW:
        vals = [1.5, -2.0, 3.0] if name in HALVES else [1, -2, 3]
        tensors[name] = (mg.tensor(vals, dtype=mdt(name), device="cuda"), torch.tensor(vals, dtype=tdt(name)))
    path = tmp_path / "m.safetensors"
    mg.save({k: m for k, (m, _) in tensors.items()}, path)
    loaded = load_file(str(path))
    for k, (_, t) in tensors.items():
        assert loaded[k].dtype == t.dtype and torch.equal(loaded[k], t), k
    back = mg.load(path)
    for k, (m, _) in tensors.items():
        assert back[k].dtype == m.dtype and back[k].tolist() == m.tolist(), k
        same(back[k].cuda(), tensors[k][1])


def test_conv_and_pool_refuse_half_clearly():
    x = mg.ones(1, 1, 4, 4, dtype=mg.float16, device="cuda")
    with pytest.raises(NotImplementedError, match="cast to float32 first"):
        mg.nn.functional.conv2d(x, mg.ones(1, 1, 3, 3, dtype=mg.float16, device="cuda"))
    with pytest.raises(NotImplementedError, match="cast to float32 first"):
        mg.nn.functional.max_pool2d(x, 2)


@pytest.mark.parametrize("name", HALVES)
def test_half_module_and_sgd_step_on_cuda(name):
    torch.manual_seed(0)
    tl = torch.nn.Linear(6, 3).to(tdt(name))
    ml = mg.nn.Linear(6, 3)
    with mg.no_grad():
        ml.weight.copy_(mg.tensor(tl.weight.detach().float().tolist()))
        ml.bias.copy_(mg.tensor(tl.bias.detach().float().tolist()))
    ml = ml.to(mdt(name)).cuda()
    assert ml.weight.dtype == mdt(name) and ml.weight.is_cuda
    x = torch.randn(5, 6).to(tdt(name))
    topt = torch.optim.SGD(tl.parameters(), lr=0.1, momentum=0.9)
    mopt = mg.optim.SGD(ml.parameters(), lr=0.1, momentum=0.9)
    v0, tv0 = ml.weight._version, tl.weight._version
    for _ in range(2):
        tl(x).square().mean().backward()
        ml(cu(x)).square().mean().backward()
        topt.step()
        mopt.step()
        topt.zero_grad()
        mopt.zero_grad()
    assert ml.weight._version - v0 == tl.weight._version - tv0 > 0  # the optimizer's in-place updates
    # float32 sums in another order than torch's CPU gemm: a few half steps apart at most
    close(ml.weight.detach(), tl.weight.detach(), ulps=4)
    close(ml.bias.detach(), tl.bias.detach(), ulps=4)
