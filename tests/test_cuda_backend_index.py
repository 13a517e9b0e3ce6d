"""The CUDA backend's data movement against torch (on the CPU, the reference): gather, scatter,
scatter_add, index_select, index_add (and their in-place forms), advanced indexing reads and
writes (index_put_ with accumulate), nonzero / masked_select, cat / stack, embedding and the
class-index losses -- values, gradients, `_version`, errors. On a GPU when there is one, else on
the host-emulated device (tests/cuda_host/backend.py).

Out-of-range indices raise torch's CPU message on cuda too (minigrad reads the indices on the
host before launching; torch.cuda raises a device-side assert instead): docs/gpu.md.
"""

import pytest
import torch

import minigrad as mg
import minigrad.nn.functional as F
from cuda_host.backend import ALL, REAL_GPU, back, cuda_device, on, same, spying_on_copies, to_mg  # noqa: F401  (cuda_device: autouse fixture)


def _rand(shape, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g, dtype=dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    return torch.randint(-20, 20, shape, generator=g, dtype=dtype)


def _idx(high, shape, seed=1, dtype=torch.int64):
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, high, shape, generator=g).to(dtype)


def _same_as_cpu(mine, ref_mg_cpu):
    """The cuda result is bit-identical to minigrad's CPU result (same order of updates)."""
    assert torch.equal(back(mine), back(ref_mg_cpu.cuda()))


def _raises_like(fn_t, fn_m):
    with pytest.raises(Exception) as ref:
        fn_t()
    with pytest.raises(type(ref.value)) as got:
        fn_m()
    assert str(got.value) == str(ref.value), (str(got.value), str(ref.value))


# ----- gather / scatter along a dim -----

@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_gather_every_dtype_and_layout(dtype, dim):
    x = _rand((4, 5), dtype)
    index = _idx(x.shape[dim], (3, 4) if dim == 0 else (4, 3), seed=2)
    same(mg.gather(on(x), dim, on(index)), torch.gather(x, dim, index))
    # transposed source, non-contiguous index
    xt, it = x.t(), _idx(x.shape[0], (8, 4), seed=3)[::2]
    d = 1 if dim == 0 else 0
    xm, _ = to_mg(xt)
    im, _ = to_mg(it)
    same(xm.gather(d, im) if d == 1 else xm.gather(d, im[:, :4].contiguous()[:5]),
         xt.gather(d, it) if d == 1 else xt.gather(d, it[:, :4].contiguous()[:5]))


def test_gather_edge_shapes():
    x = torch.tensor(3.5)
    same(mg.gather(on(x), 0, on(torch.tensor(0))), torch.gather(x, 0, torch.tensor(0)))
    x = _rand((3, 4))
    empty = torch.zeros(0, 4, dtype=torch.int64)
    same(mg.gather(on(x), 0, on(empty)), torch.gather(x, 0, empty))
    i32 = _idx(3, (2, 4), dtype=torch.int32)
    same(mg.gather(on(x), 0, on(i32)), torch.gather(x, 0, i32))


@pytest.mark.parametrize("dtype", ALL)
@pytest.mark.parametrize("op", ["scatter", "scatter_value", "scatter_add", "scatter_add_", "scatter_", "multiply", "add"])
def test_scatter_family(dtype, op):
    x = _rand((4, 6), dtype, seed=4)
    src = _rand((3, 6), dtype, seed=5)
    # scatter: distinct positions per column (torch leaves duplicates unspecified)
    uniq = torch.stack([torch.randperm(4, generator=torch.Generator().manual_seed(k))[:3] for k in range(6)], 1)
    dup = _idx(4, (3, 6), seed=6)
    calls = {
        "scatter": lambda t, i, s: t.scatter(0, i(uniq), s),
        "scatter_": lambda t, i, s: t.clone().scatter_(0, i(uniq), s),
        "scatter_value": lambda t, i, s: t.scatter(0, i(uniq), 2 if not dtype.is_floating_point else 2.5),
        "scatter_add": lambda t, i, s: t.scatter_add(0, i(dup), s),
        "scatter_add_": lambda t, i, s: t.clone().scatter_add_(0, i(dup), s),
        "multiply": lambda t, i, s: t.scatter(0, i(dup), s, reduce="multiply"),
        "add": lambda t, i, s: t.scatter(0, i(dup), s, reduce="add"),
    }
    f = calls[op]
    ref = f(x, lambda i: i, src)
    got = f(on(x), on, on(src))
    same(got, ref, exact=not dtype.is_floating_point)
    _same_as_cpu(got, f(mg.from_numpy(x.numpy()), lambda i: mg.from_numpy(i.numpy()), mg.from_numpy(src.numpy())))


def test_scatter_into_strided_destination_and_version():
    base = _rand((6, 8), torch.float64)
    x = base.clone()
    xm = on(base)
    view_t, view_m = x[1:5, ::2], xm[1:5, ::2]
    index = _idx(4, (2, 4), seed=7)
    src = _rand((2, 4), torch.float64, seed=8)
    v0 = xm._version
    view_t.scatter_add_(0, index, src)
    view_m.scatter_add_(0, on(index), on(src))
    same(xm, x, exact=False)
    assert xm._version == v0 + 1
    # a bad index writes nothing and bumps nothing (torch's CPU kernel may write a prefix first)
    before = x.clone()
    bad = torch.tensor([[0, 9, 0, 0]])
    _raises_like(lambda: view_t.scatter_(0, bad, 1.0), lambda: view_m.scatter_(0, on(bad), 1.0))
    assert xm._version == v0 + 1
    same(xm, before, exact=False)


@pytest.mark.parametrize("dtype", ALL)
def test_index_select_and_index_add(dtype):
    x = _rand((5, 3, 4), dtype)
    for dim in (0, 1, -1, 2):
        index = _idx(x.shape[dim], (7,), seed=dim + 10)
        same(mg.index_select(on(x), dim, on(index)), torch.index_select(x, dim, index))
        xt = x.transpose(0, 2)
        xm, _ = to_mg(xt)
        same(xm.index_select(dim, on(index if dim % 3 != 0 else _idx(4, (7,)))),
             xt.index_select(dim, index if dim % 3 != 0 else _idx(4, (7,))))
        size = list(x.shape)
        size[dim] = 7
        src = _rand(tuple(size), dtype, seed=20)
        alpha = 2 if not dtype.is_floating_point else 0.5
        alpha = True if dtype == torch.bool else alpha
        same(on(x).index_add(dim, on(index), on(src), alpha=alpha), x.index_add(dim, index, src, alpha=alpha),
             exact=not dtype.is_floating_point)
    same(on(x[0, 0, 0]).index_select(0, on(torch.tensor([0]))), x[0, 0, 0].index_select(0, torch.tensor([0])))
    empty = torch.zeros(0, dtype=torch.int32)
    same(on(x).index_select(1, on(empty)), x.index_select(1, empty))


def test_index_add_in_place_version_and_duplicates():
    x = torch.zeros(4, 3, dtype=torch.float64)
    xm = on(x)
    index = torch.tensor([1, 1, 3, 1])
    src = _rand((4, 3), torch.float64)
    xm.index_add_(0, on(index), on(src), alpha=2.0)
    x.index_add_(0, index, src, alpha=2.0)
    assert xm._version == 1
    same(xm, x, exact=False)


@pytest.mark.parametrize("case", ["gather", "scatter", "index_select", "index_select_1d", "index_add"])
def test_out_of_range_indices_raise_torchs_cpu_error(case):
    x = _rand((3, 4))
    bad = torch.tensor([[0, 4]])
    cases = {
        "gather": (lambda t, i: t.gather(1, i(bad))),
        "scatter": (lambda t, i: t.scatter(1, i(bad), 1.0)),
        "index_select": (lambda t, i: t.index_select(0, i(torch.tensor([0, 3])))),
        "index_select_1d": (lambda t, i: t[0].index_select(0, i(torch.tensor([-1])))),
        "index_add": (lambda t, i: t.index_add(0, i(torch.tensor([5])), t[:1])),
    }
    f = cases[case]
    _raises_like(lambda: f(x, lambda i: i), lambda: f(on(x), on))


def test_gather_family_gradients():
    x = _rand((4, 5), torch.float64).requires_grad_()
    xm = on(x.detach()).requires_grad_()
    src = _rand((3, 5), torch.float64, seed=3).requires_grad_()
    srcm = on(src.detach()).requires_grad_()
    i2, i1 = _idx(4, (3, 5), seed=4), torch.tensor([3, 0, 3, 1])
    g = _rand((3, 5), torch.float64, seed=9)

    def program(lib, x, src, on_):
        a = lib.gather(x, 0, on_(i2)) * 2
        b = x.index_select(0, on_(i1)).sum(0)
        c = x.scatter_add(0, on_(i2), src).index_add(1, on_(torch.tensor([4, 4, 0])), src.t()[:4]).sum(1)
        return (a * on_(g)).sum() + b.sum() + (c * c).sum()

    program(torch, x, src, lambda t: t).backward()
    program(mg, xm, srcm, on).backward()
    same(xm.grad, x.grad, exact=False)
    same(srcm.grad, src.grad, exact=False)


# ----- advanced indexing -----

ADV_KEYS = [
    ("rows", lambda i: (i(torch.tensor([2, 0, -1])),)),
    ("cols", lambda i: (slice(None), i(torch.tensor([[1, 3], [0, -4]])))),
    ("separated", lambda i: (i(torch.tensor([0, 2])), slice(None), i(torch.tensor([3, 1])))),
    ("adjacent pair", lambda i: (slice(None), i(torch.tensor([0, 2])), i(torch.tensor([1, 1])))),
    ("mask", lambda i: (i(torch.tensor([True, False, True])),)),
    ("mask 2-d", lambda i: (slice(1, None), i(torch.tensor([[True, False, True, False, False]] * 2 + [[False] * 5] * 2)))),
    ("list", lambda i: ([1, 0, 1],)),
    ("bool", lambda i: (True, 1)),
    ("empty", lambda i: (i(torch.tensor([], dtype=torch.int64)),)),
]


@pytest.mark.parametrize("name,key", ADV_KEYS, ids=[k[0] for k in ADV_KEYS])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_advanced_index_read(name, key, dtype):
    x = _rand((3, 4, 5), dtype)
    for label, view in [("plain", x), ("strided", x.transpose(1, 2).contiguous().transpose(1, 2))]:
        xm, _ = to_mg(view)
        same(xm[key(on)], view[key(lambda t: t)])
    # CPU index tensors may index a cuda tensor, as in torch
    same(on(x)[key(lambda t: mg.from_numpy(t.numpy()))], x[key(lambda t: t)])


@pytest.mark.parametrize("name,key", ADV_KEYS[:6], ids=[k[0] for k in ADV_KEYS[:6]])
def test_advanced_index_write(name, key):
    x = _rand((3, 4, 5), torch.float64)
    xm = on(x)
    shape = x[key(lambda t: t)].shape
    v = _rand(shape, torch.float64, seed=5)
    x[key(lambda t: t)] = v
    xm[key(on)] = on(v)
    assert xm._version == 1
    same(xm, x)
    # a number, and a row broadcast over the indexed positions
    x[key(lambda t: t)] = 7.0
    xm[key(on)] = 7.0
    same(xm, x)
    x[key(lambda t: t)] = v[..., :1]
    xm[key(on)] = on(v[..., :1])
    same(xm, x)
    assert xm._version == 3


@pytest.mark.parametrize("key", [(torch.tensor([2, 0, 2, 1]),), (torch.tensor([True, False, True]),),
                                 (torch.tensor([0, 2]), torch.tensor([[3], [1]]))], ids=["rows", "mask", "pair"])
def test_index_put_accumulate(key):
    x = _rand((3, 4, 5), torch.float64)
    xm = on(x)
    v = _rand(x[key].shape, torch.float64, seed=5)
    x.index_put_(key, v, accumulate=True)
    xm.index_put_(tuple(on(k) for k in key), on(v), accumulate=True)
    assert xm._version == 1
    same(xm, x, exact=False)


def test_index_put_accumulates_duplicates_in_order():
    x = torch.zeros(4, 3, dtype=torch.float32)
    xm = on(x)
    idx = torch.tensor([0, 0, 2, 0, 2])
    v = _rand((5, 3), seed=11)
    x.index_put_((idx,), v, accumulate=True)
    xm.index_put_((on(idx),), on(v), accumulate=True)
    same(xm, x)
    # 1-D, no outer or inner dims: one thread walks every position in order
    y, ym = torch.zeros(3, dtype=torch.int32), on(torch.zeros(3, dtype=torch.int32))
    idx = torch.tensor([2, 2, 0, 2])
    y.index_put_((idx,), torch.tensor([1, 2, 3, 4], dtype=torch.int32), accumulate=True)
    ym.index_put_((on(idx),), on(torch.tensor([1, 2, 3, 4], dtype=torch.int32)), accumulate=True)
    same(ym, y)
    # without accumulate, the last duplicate wins (as torch's CPU kernel)
    z, zm = torch.zeros(3), on(torch.zeros(3))
    z[torch.tensor([1, 1])] = torch.tensor([5.0, 6.0])
    zm[on(torch.tensor([1, 1]))] = on(torch.tensor([5.0, 6.0]))
    same(zm, z)


def test_basic_indexing_reads_and_writes():
    x = _rand((4, 6), torch.float64)
    xm = on(x)
    for key in [(1,), (slice(1, 3), slice(None, None, 2)), (Ellipsis, -1), (None, 2), (slice(None, None, -1) if False else slice(3, None),)]:
        same(xm[key], x[key])
    x[1:3, ::2] = torch.tensor([1.0, 2.0, 3.0])
    xm[1:3, ::2] = on(torch.tensor([1.0, 2.0, 3.0]))
    x[0] = 5
    xm[0] = 5
    x[..., -1] += 1.0
    xm[..., -1] += 1.0
    same(xm, x)


@pytest.mark.parametrize("name,key", ADV_KEYS[:5], ids=[k[0] for k in ADV_KEYS[:5]])
def test_advanced_index_gradients(name, key):
    x = _rand((3, 4, 5), torch.float64).requires_grad_()
    xm = on(x.detach()).requires_grad_()
    g = _rand(x[key(lambda t: t)].shape, torch.float64, seed=3)
    (x[key(lambda t: t)] * g).sum().backward()
    (xm[key(on)] * on(g)).sum().backward()
    same(xm.grad, x.grad, exact=False)
    # index_put (out of place, both modes): both inputs get gradients
    if any(k == slice(None) for k in key(lambda t: t)):
        return  # index_put takes tensors only
    v = _rand(x[key(lambda t: t)].shape, torch.float64, seed=4).requires_grad_()
    vm = on(v.detach()).requires_grad_()
    for accumulate in (False, True):
        x.grad, xm.grad, v.grad, vm.grad = None, None, None, None
        (x.index_put(key(lambda t: t), v, accumulate=accumulate) ** 2).sum().backward()
        (xm.index_put(key(on), vm, accumulate=accumulate) ** 2).sum().backward()
        same(xm.grad, x.grad, exact=False)
        same(vm.grad, v.grad, exact=False)


def test_advanced_index_errors():
    x = _rand((3, 4))
    _raises_like(lambda: x[torch.tensor([0, 5])], lambda: on(x)[on(torch.tensor([0, 5]))])
    _raises_like(lambda: x[torch.tensor([-4])], lambda: on(x)[on(torch.tensor([-4]))])
    _raises_like(lambda: x[:, torch.tensor([1, 9, 2])], lambda: on(x)[:, on(torch.tensor([1, 9, 2]))])
    _raises_like(lambda: x[torch.tensor([True, False])], lambda: on(x)[on(torch.tensor([True, False]))])
    xm = on(x)

    def put(t, i):
        t[i(torch.tensor([7]))] = 1.0

    _raises_like(lambda: put(x.clone(), lambda t: t), lambda: put(xm, on))
    assert xm._version == 0


@pytest.mark.parametrize("dtype", ALL)
def test_nonzero_and_masked_select(dtype):
    x = _rand((3, 5), dtype, seed=12)
    nz = mg.nonzero(on(x))
    ref = torch.nonzero(x)
    same(nz, ref)
    assert nz.stride() == ref.stride()
    mask = _rand((5,), torch.bool, seed=13)
    same(mg.masked_select(on(x), on(mask)), torch.masked_select(x, mask))
    same(on(x)[on(x != 0)], x[x != 0])
    empty = torch.zeros(0, 3, dtype=dtype)
    same(mg.nonzero(on(empty)), torch.nonzero(empty))


def test_masked_select_gradient():
    x = _rand((3, 4), torch.float64).requires_grad_()
    xm = on(x.detach()).requires_grad_()
    mask = torch.tensor([True, False, True, True])
    (torch.masked_select(x, mask) ** 2).sum().backward()
    (mg.masked_select(xm, on(mask)) ** 2).sum().backward()
    same(xm.grad, x.grad, exact=False)


# ----- cat / stack -----

def test_cat_and_stack_values_layouts_and_gradients():
    a = _rand((2, 3), torch.float64).requires_grad_()
    b = _rand((3, 4), torch.float64, seed=2).t().requires_grad_()  # non-contiguous (4, 3)
    am = on(a.detach()).requires_grad_()
    bm = on(b.detach().t().contiguous()).t().requires_grad_()
    for dim in (0, -2):
        same(mg.cat([am, bm], dim), torch.cat([a, b], dim))
    same(mg.stack([am, am * 2], 1), torch.stack([a, a * 2], 1))
    ints = torch.tensor([[1, 2, 3]], dtype=torch.int32)
    same(mg.cat([am, on(ints)]), torch.cat([a, ints]))  # promotion
    legacy = torch.zeros(0)
    same(mg.cat([on(legacy), am]), torch.cat([legacy, a]))
    same(mg.cat([on(legacy), on(legacy)]), torch.cat([legacy, legacy]))
    g = _rand((6, 3), torch.float64, seed=5)
    (torch.cat([a, b]) * g).sum().backward()
    (mg.cat([am, bm]) * on(g)).sum().backward()
    same(am.grad, a.grad)
    same(bm.grad, b.grad)
    _raises_like(lambda: torch.cat([a, b.t()]), lambda: mg.cat([am, bm.t()]))


@pytest.mark.parametrize("op", ["flip", "roll", "roll_flat", "tril", "triu", "repeat", "tile", "pad", "pad_crop"])
def test_shape_ops_built_on_routed_primitives(op):
    x = _rand((3, 4, 5), torch.float64).requires_grad_()
    xm = on(x.detach()).requires_grad_()
    fns = {
        "flip": lambda t, lib: t.flip(0, 2),
        "roll": lambda t, lib: t.roll((1, -2), (2, 0)),
        "roll_flat": lambda t, lib: t.roll(7),
        "tril": lambda t, lib: t.tril(),
        "triu": lambda t, lib: t.triu(1),
        "repeat": lambda t, lib: t.repeat(2, 1, 1, 2),
        "tile": lambda t, lib: t.tile(2),
        "pad": lambda t, lib: lib.nn.functional.pad(t, (1, 2, 0, 1), value=0.5),
        "pad_crop": lambda t, lib: lib.nn.functional.pad(t, (-1, 2)),
    }
    ref, got = fns[op](x, torch), fns[op](xm, mg)
    same(got, ref)
    g = _rand(tuple(ref.shape), torch.float64, seed=3)
    (ref * g).sum().backward()
    (got * on(g)).sum().backward()
    same(xm.grad, x.grad)


# ----- embedding and class-index losses -----

@pytest.mark.parametrize("padding_idx,scale", [(None, False), (2, False), (None, True)])
def test_embedding_forward_and_backward(padding_idx, scale):
    w = _rand((6, 4), torch.float32).requires_grad_()
    wm = on(w.detach()).requires_grad_()
    idx = torch.tensor([[0, 2, 5], [2, 2, 1]])
    g = _rand((2, 3, 4), seed=7)
    ref = torch.nn.functional.embedding(idx, w, padding_idx=padding_idx, scale_grad_by_freq=scale)
    got = F.embedding(on(idx), wm, padding_idx=padding_idx, scale_grad_by_freq=scale)
    same(got, ref)
    (ref * g).sum().backward()
    (got * on(g)).sum().backward()
    same(wm.grad, w.grad, exact=False)
    _raises_like(lambda: torch.nn.functional.embedding(torch.tensor([6]), w),
                 lambda: F.embedding(on(torch.tensor([6])), wm))


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("spatial", [False, True])
def test_class_index_losses(reduction, weighted, spatial):
    shape = (4, 3, 2, 2) if spatial else (5, 3)
    x = _rand(shape, torch.float64).requires_grad_()
    xm = on(x.detach()).requires_grad_()
    t = _idx(3, (4, 2, 2) if spatial else (5,), seed=3)
    t.view(-1)[1] = -100  # ignored
    w = torch.tensor([0.5, 2.0, 1.0], dtype=torch.float64) if weighted else None
    wm = on(w) if weighted else None
    for fn_t, fn_m in [(torch.nn.functional.cross_entropy, F.cross_entropy),
                       (lambda *a, **k: torch.nn.functional.nll_loss(torch.log_softmax(a[0], 1), *a[1:], **k),
                        lambda *a, **k: F.nll_loss(a[0].log_softmax(1), *a[1:], **k))]:
        x.grad, xm.grad = None, None
        ref = fn_t(x, t, weight=w, reduction=reduction)
        got = fn_m(xm, on(t), weight=wm, reduction=reduction)
        same(got, ref, exact=False)
        g = _rand(ref.shape, torch.float64, seed=6)
        (ref * g).sum().backward()
        (got * on(g)).sum().backward()
        same(xm.grad, x.grad, exact=False)
    _raises_like(lambda: torch.nn.functional.cross_entropy(x, torch.full_like(t, 3)),
                 lambda: F.cross_entropy(xm, on(torch.full_like(t, 3))))


@pytest.mark.skipif(REAL_GPU, reason="counts the emulated driver's copies")
@pytest.mark.parametrize("weighted", [False, True])
def test_class_index_loss_backward_reads_nothing_back(cuda_device, weighted):
    """The forward reads the targets once (torch's bounds error at the call) and the picked
    log-probabilities; the backward reuses what the forward read: no device-to-host copy, so on
    a GPU it never waits for the device."""
    x = on(_rand((6, 4), torch.float32)).requires_grad_()
    t = on(torch.tensor([0, 3, 1, -100, 2, 0]))
    w = on(torch.tensor([0.5, 2.0, 1.0, 1.5])) if weighted else None
    loss = F.cross_entropy(x, t, weight=w)
    with spying_on_copies(cuda_device) as copies:
        loss.backward()
    assert [k for k, _ in copies if k == "d2h"] == []
    xt = torch.from_numpy(back(x.detach()).numpy()).requires_grad_()
    torch.nn.functional.cross_entropy(xt, torch.tensor([0, 3, 1, -100, 2, 0]),
                                      weight=torch.tensor([0.5, 2.0, 1.0, 1.5]) if weighted else None).backward()
    same(x.grad, xt.grad, exact=False)


def test_label_smoothing_and_a_classifier_trains_on_cuda():
    x = _rand((6, 4), torch.float32)
    t = torch.tensor([0, 3, 1, 1, 2, 0])
    same(F.cross_entropy(on(x), on(t), label_smoothing=0.1), torch.nn.functional.cross_entropy(x, t, label_smoothing=0.1),
         exact=False)
    mg.manual_seed(0)
    model = mg.nn.Linear(4, 4).cuda()
    ref = torch.nn.Linear(4, 4)
    with torch.no_grad():
        ref.weight.copy_(back(model.weight))
        ref.bias.copy_(back(model.bias))
    opt, opt_t = mg.optim.SGD(model.parameters(), lr=0.5), torch.optim.SGD(ref.parameters(), lr=0.5)
    xm, tm = on(x), on(t)
    for _ in range(5):
        opt.zero_grad()
        opt_t.zero_grad()
        loss = F.cross_entropy(model(xm), tm)
        loss_t = torch.nn.functional.cross_entropy(ref(x), t)
        loss.backward()
        loss_t.backward()
        opt.step()
        opt_t.step()
        assert abs(loss.item() - loss_t.item()) < 1e-5
    assert model.weight.device.type == "cuda" and model.weight.grad.device.type == "cuda"
    same(model.weight, ref.weight.detach(), exact=False)


@pytest.mark.parametrize("shape,dim,size,step", [((7,), 0, 3, 1), ((4, 9), 1, 3, 2), ((2, 6, 3), 1, 4, 1)])
def test_unfold_windows_and_their_summed_gradient(shape, dim, size, step):
    x = _rand(shape)
    m = on(x).requires_grad_()
    t = x.clone().requires_grad_()
    ym, yt = m.unfold(dim, size, step), t.unfold(dim, size, step)
    assert ym.stride() == yt.stride()
    same(ym.detach(), yt.detach())
    w = _rand(tuple(yt.shape), seed=3)
    (ym * on(w)).sum().backward()
    (yt * w).sum().backward()
    same(m.grad, t.grad, exact=False)
