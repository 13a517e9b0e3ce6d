"""The CUDA backend's reductions, softmax, matmul, a trained nn.Linear, and memory shared with
torch.cuda, CuPy and safetensors, against torch; on a GPU when there is one, else on the
host-emulated device (tests/cuda_host/backend.py, and test_cuda_backend.py for the elementwise
half)."""

import os
import subprocess
import sys

import pytest
import torch

import minigrad as mg
from cuda_host.backend import REAL_GPU, back, cuda_device, on, same  # noqa: F401  (cuda_device: autouse fixture)


# ----- reductions, softmax, matmul -----

def _rand(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g, dtype=dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    return torch.randint(-20, 20, shape, generator=g, dtype=dtype)


REDUCE_CASES = [((), None), ((5,), 0), ((4, 6), 1), ((4, 6), 0), ((3, 4, 5), (0, 2)), ((3, 4, 5), (1,)),
                ((2, 3, 4), None), ((0, 3), 0), ((3, 0), 1), ((9000,), 0), ((3, 9000), 1), ((9000, 3), 0)]


def _reduce_both(fn_t, fn_m, shape, dim, dtype, **kw):
    x = _rand(shape, dtype)
    for name, view in ([("plain", x)] + ([("transposed", x.t().contiguous().t())] if x.dim() == 2 else [])):
        m = on(view.contiguous())
        if name == "transposed":
            m = on(x.t().contiguous()).t()
        args = () if dim is None else (dim,)
        try:
            ref = fn_t(view, *args, **kw)
        except (RuntimeError, IndexError) as e:
            with pytest.raises(type(e)):
                fn_m(m, *args, **kw)
            continue
        got = fn_m(m, *args, **kw)
        if isinstance(ref, tuple):
            for r, g in zip(ref, got):
                same(g, r, exact=not r.dtype.is_floating_point)
        else:
            same(got, ref, exact=not ref.dtype.is_floating_point)


@pytest.mark.parametrize("shape,dim", REDUCE_CASES)
@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin", "prod", "logsumexp", "var", "std", "norm"])
def test_float_reductions(op, shape, dim):
    if op in ("amax", "amin", "logsumexp", "var", "std") and dim is None and op not in ("var", "std"):
        dim = tuple(range(len(shape))) if shape else ()
    if op in ("logsumexp",) and dim is None:
        return
    fn_t, fn_m = getattr(torch, op), getattr(mg, op)
    if op == "prod" and isinstance(dim, tuple):
        return
    if op == "norm":
        fn_t = lambda x, *a: torch.norm(x, 3.0, *a)  # noqa: E731
        fn_m = lambda x, *a: mg.norm(x, 3.0, *a)  # noqa: E731
    _reduce_both(fn_t, fn_m, shape, dim, torch.float32)
    _reduce_both(fn_t, fn_m, shape, dim, torch.float64)


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.bool])
@pytest.mark.parametrize("op", ["sum", "prod", "amax", "all", "any", "count_nonzero"])
def test_integer_and_bool_reductions(op, dtype):
    if op in ("amax",) and dtype == torch.bool:
        return
    for shape, dim in [((4, 6), 1), ((4, 6), 0), ((2, 3, 4), (0, 2)), ((9000,), 0)]:
        if op == "prod" and isinstance(dim, tuple):
            continue
        _reduce_both(getattr(torch, op), getattr(mg, op), shape, dim, dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_max_min_with_indices_and_argmax(dtype):
    x = _rand((5, 7), dtype)
    x[1, 2] = x[1, 5] = x[1].max()  # ties: the first index, as torch
    if dtype.is_floating_point:
        x[3, 4] = float("nan")
    for dim in (0, 1):
        for fn in ("max", "min"):
            rv, ri = getattr(torch, fn)(x, dim)
            mv, mi = getattr(mg, fn)(on(x), dim)
            same(mv, rv)
            same(mi, ri)
        same(mg.argmax(on(x), dim), torch.argmax(x, dim))
        same(mg.argmin(on(x), dim, keepdim=True), torch.argmin(x, dim, keepdim=True))
    same(mg.argmax(on(x)), torch.argmax(x))
    same(on(x).max(), x.max())


def test_a_long_reduction_takes_the_split_pass_and_is_deterministic():
    x = _rand((300_000,), torch.float32, seed=3)
    a = mg.sum(on(x))
    b = mg.sum(on(x))
    assert a.item() == b.item()
    torch.testing.assert_close(back(a), x.double().sum().float())
    same(mg.amax(on(x), 0), x.amax(0))


@pytest.mark.parametrize("log", [False, True])
@pytest.mark.parametrize(
    "shape,dim", [((4, 10), 1), ((4, 10), 0), ((2, 3, 5), 1), ((7,), 0), ((), 0), ((3, 1024), 1), ((2, 1025), 1)]
)
def test_softmax_forward_and_backward(log, shape, dim):
    fn = "log_softmax" if log else "softmax"
    x = _rand(shape, torch.float64).requires_grad_()
    xm = on(x.detach()).requires_grad_()
    ref = getattr(torch, fn)(x, dim)
    got = getattr(mg, fn)(xm, dim)
    same(got, ref.detach(), exact=False)
    g = _rand(shape, torch.float64, seed=1)
    ref.backward(g)
    got.backward(on(g))
    assert xm.grad.device.type == "cuda"
    # r * (g - sum(g * r)): g - sum cancels, so small gradients carry the sum's absolute error
    torch.testing.assert_close(back(xm.grad), x.grad, rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int64])
def test_matmul_family(dtype):
    a, b = _rand((3, 4), dtype), _rand((4, 5), dtype, seed=1)
    ba, bb = _rand((2, 3, 4), dtype, seed=2), _rand((4, 5), dtype, seed=3)
    v = _rand((4,), dtype, seed=4)
    cases = [(a, b), (a.t().contiguous().t(), b), (ba, bb), (ba, b.t().contiguous().t()), (a, v), (v, b), (v, v)]
    for x, y in cases:
        mx = on(x.contiguous())
        if not x.is_contiguous():
            mx = on(x.t().contiguous()).t()
        same(mg.matmul(mx, on(y.contiguous())), torch.matmul(x, y), exact=not dtype.is_floating_point)
    same(on(a) @ on(b), a @ b, exact=not dtype.is_floating_point)


def test_a_linear_layer_trains_on_the_device_as_on_torch():
    torch.manual_seed(0)
    tl = torch.nn.Linear(6, 3).double()
    ml = mg.nn.Linear(6, 3).double()
    with mg.no_grad():
        ml.weight.copy_(mg.from_numpy(tl.weight.detach().numpy().copy()))
        ml.bias.copy_(mg.from_numpy(tl.bias.detach().numpy().copy()))
    ml = ml.to("cuda")
    assert ml.weight.is_cuda and ml.weight.is_leaf
    x = _rand((8, 6), torch.float64)
    y = _rand((8, 3), torch.float64, seed=5)
    topt = torch.optim.SGD(tl.parameters(), lr=0.1, momentum=0.9)
    mopt = mg.optim.SGD(ml.parameters(), lr=0.1, momentum=0.9)
    for _ in range(3):
        for opt, model, lib, xx, yy in ((topt, tl, torch, x, y), (mopt, ml, mg, on(x), on(y))):
            opt.zero_grad()
            loss = ((lib.tanh(model(xx)) - yy) ** 2).mean()
            loss.backward()
            opt.step()
    same(ml.weight.detach(), tl.weight.detach(), exact=False)
    same(ml.bias.detach(), tl.bias.detach(), exact=False)


# ----- sharing memory with other libraries -----

def test_cuda_array_interface_describes_the_memory():
    x = mg.arange(12.0, device="cuda").reshape(3, 4)
    t = x.t()
    cai = t.__cuda_array_interface__
    assert cai["shape"] == (4, 3) and cai["typestr"] == "<f4" and cai["strides"] == (4, 16)
    assert cai["data"] == (x.data_ptr(), False) and cai["version"] == 2
    assert not hasattr(mg.ones(2), "__cuda_array_interface__")
    with pytest.raises(RuntimeError, match="requires grad"):
        mg.ones(2, device="cuda", requires_grad=True).__cuda_array_interface__


@pytest.mark.skipif(not REAL_GPU, reason="exchanging device memory with torch.cuda and CuPy needs a GPU")
def test_dlpack_and_cuda_array_interface_share_memory_with_torch_and_cupy():
    import cupy

    x = mg.arange(6.0, device="cuda")
    tt = torch.from_dlpack(x)
    assert tt.is_cuda and tt.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]
    tt.mul_(2)
    assert x.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    assert x._version == 0  # shared memory, not a shared version counter (as torch)
    c = cupy.asarray(x)
    c += 1
    assert x.tolist() == [1.0, 3.0, 5.0, 7.0, 9.0, 11.0]
    back_in = mg.from_dlpack(torch.arange(3.0, device="cuda"))
    assert back_in.is_cuda and back_in.tolist() == [0.0, 1.0, 2.0]


@pytest.mark.skipif(not REAL_GPU, reason="imports torch.cuda memory, which needs a GPU")
def test_gpu_memory_imported_first_is_usable():
    """A program whose first GPU tensor comes from torch through DLPack (found by a probe on the
    H100: the engine's CUDA backend was set up only when minigrad itself first asked for a GPU,
    so the first op said "no backend for device 'cuda:0'"). A fresh process, as nothing may have
    touched the GPU before."""
    program = (
        "import torch, minigrad as mg\n"
        "x = mg.from_dlpack(torch.arange(3.0, device='cuda'))\n"
        "print((x * 2).tolist(), x.device)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[0.0, 2.0, 4.0] cuda:0"


def test_cuda_tensors_save_to_safetensors_and_load_on_the_host(tmp_path):
    model = mg.nn.Linear(3, 2).cuda()
    path = tmp_path / "m.safetensors"
    mg.save(model.state_dict(), path)
    loaded = mg.load(path)
    assert not loaded["weight"].is_cuda
    assert loaded["weight"].tolist() == model.weight.detach().cpu().tolist()
    model.load_state_dict({k: v.cuda() for k, v in loaded.items()})
    assert model.weight.is_cuda


def test_new_factories_follow_self_onto_the_device():
    """Tensor.new_zeros / new_ones / new_full / new_empty / new_tensor take self's device and
    dtype unless told otherwise (tests/test_stacking_and_factories.py compares them with torch)."""
    x = on(torch.ones(2, dtype=torch.float64))
    for made in (x.new_zeros(3), x.new_ones(2, 2), x.new_full((2,), 4.0), x.new_empty(1), x.new_tensor([1, 2])):
        assert made.device.type == "cuda" and made.dtype == mg.float64 and made.is_leaf
    assert back(x.new_full((2,), 4.0)).tolist() == [4.0, 4.0] and back(x.new_tensor([1, 2])).tolist() == [1.0, 2.0]
    assert x.new_zeros(3, device="cpu").device.type == "cpu"
    assert x.new_ones(2, dtype=mg.int64).dtype == mg.int64
