"""The CUDA backend's sorting, selection and scans against torch (on the CPU, the reference):
sort/argsort (stable or not, descending), topk, kthvalue, median (along a dim and of all
elements), cumsum/cumprod (with dtype= and in place) and logcumsumexp -- values AND indices bit
for bit (ties and NaN placement included: the kernels run the CPU's algorithms, sort.cu), the
layouts (non-contiguous, 0-d, empty), the errors, gradients and `_version`. On a GPU when there
is one, else on the host-emulated device (tests/cuda_host/backend.py).

logcumsumexp uses the device's exp/log1p: exact against glibc on the host emulation, within
rounding on a GPU (docs/gpu.md, "Sorting and scans").
"""

import pytest
import torch

import minigrad as mg
from cuda_host.backend import REAL_GPU, back, cuda_device, on, same, to_mg  # noqa: F401  (cuda_device: autouse fixture)

NUMERIC = [torch.float32, torch.float64, torch.int32, torch.int64]
LONG = 3000  # longer than the bitonic path (2048): the multi-block stable sort
BITONIC_MAX = 2048  # rows up to this long run the CPU's algorithms; longer ones the stable order


def _ties(shape, dtype, seed=0, nan=True):
    """Few distinct values (many ties), with NaN, +-inf and -0.0 among the floats."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    x = torch.randint(-3, 4, shape, generator=g).to(dtype)
    if dtype.is_floating_point:
        specials = torch.tensor([float("nan") if nan else 1.5, float("inf"), float("-inf"), -0.0, 0.5], dtype=dtype)
        pick = torch.randint(0, 12, shape, generator=g)
        x = torch.where(pick < len(specials), specials[pick.clamp(max=len(specials) - 1)], x)
    return x


def _pair(mine, ref):
    """A (values, indices) result: both exact."""
    same(mine[0], ref[0])
    same(mine[1], ref[1])


def _raises_like(fn_t, fn_m):
    with pytest.raises(Exception) as ref:
        fn_t()
    with pytest.raises(type(ref.value)) as got:
        fn_m()
    assert str(got.value) == str(ref.value), (str(got.value), str(ref.value))


# ----- sort / argsort -----

@pytest.mark.parametrize("dtype", NUMERIC + [torch.bool])
@pytest.mark.parametrize("n", [1, 7, 40, 700, LONG])
@pytest.mark.parametrize("stable", [None, False, True])
def test_sort_values_and_indices_match_torch(dtype, n, stable):
    rows = 3 if n > 100 else 5
    x = _ties((rows, n), dtype, seed=n)
    for descending in (False, True):
        kw = {} if stable is None else {"stable": stable}
        # rows longer than BITONIC_MAX: the stable order whatever `stable` says (specified)
        ref = {"stable": True} if n > BITONIC_MAX else kw
        _pair(on(x).sort(dim=-1, descending=descending, **kw), x.sort(dim=-1, descending=descending, **ref))
    same(on(x).argsort(dim=1), x.argsort(dim=1, stable=n > BITONIC_MAX))


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
def test_sort_along_any_dim_of_non_contiguous_tensors(dim):
    x = _ties((6, 5, 9), torch.float32, seed=4)
    for view in (x, x.transpose(0, 2), x[:, ::2, 1:]):
        m, t = to_mg(view)
        _pair(m.sort(dim), t.sort(dim))
        _pair(m.sort(dim=dim, descending=True, stable=True), t.sort(dim=dim, descending=True, stable=True))
        # torch keeps the input's dense strides in sort's outputs
        assert m.sort(dim)[0].stride() == t.sort(dim)[0].stride()


def test_sort_of_a_long_1d_integer_tensor_is_stable_as_torchs_radix_sort():
    x = torch.randint(0, 5, (40000,), generator=torch.Generator().manual_seed(1))
    _pair(on(x).sort(), x.sort())


def test_sort_edges():
    _pair(on(torch.tensor(2.5)).sort(), torch.tensor(2.5).sort())
    e = torch.zeros(3, 0)
    for d in (0, 1):
        _pair(on(e).sort(d), e.sort(d))
    x = on(torch.tensor([3.0, 1.0]))
    _raises_like(lambda: torch.tensor([3.0, 1.0]).sort(1), lambda: x.sort(1))
    _raises_like(lambda: torch.tensor([3.0, 1.0]).sort(-2), lambda: x.sort(-2))
    assert x._version == 0


def test_sort_runs_to_the_same_bits_every_time():
    x = _ties((64, 300), torch.float64, seed=9)
    a, b = on(x).sort(stable=False), on(x).sort(stable=False)
    assert torch.equal(back(a[1]), back(b[1])) and torch.equal(back(a[0]).isnan(), back(b[0]).isnan())


# ----- topk, kthvalue, median -----

@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("n,k", [(7, 1), (7, 3), (7, 7), (200, 3), (300, 100), (LONG, 5)])
def test_topk_matches_torch_on_ties(dtype, n, k):
    x = _ties((4, n), dtype, seed=k)
    for largest in (True, False):
        for sorted_ in (True, False):
            if n > BITONIC_MAX:  # the first k of the stable order (tests/test_cuda_backend_sort_long.py)
                v, i = x.sort(descending=largest, stable=True)
                _pair(on(x).topk(k, largest=largest, sorted=sorted_), (v[:, :k], i[:, :k]))
            else:
                _pair(on(x).topk(k, largest=largest, sorted=sorted_), x.topk(k, largest=largest, sorted=sorted_))
    if n <= BITONIC_MAX:
        _pair(on(x).t().topk(k, dim=0), x.t().topk(k, dim=0))


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("n", [1, 2, 7, 64, LONG])
def test_kthvalue_and_median_match_torch_on_ties(dtype, n):
    x = _ties((5, n), dtype, seed=n + 1)
    long = n > BITONIC_MAX  # the stable order's pick (tests/test_cuda_backend_sort_long.py)
    asc = x.sort(dim=1, stable=True)
    for k in sorted({1, (n + 1) // 2, n}):
        want = (asc[0][:, k - 1], asc[1][:, k - 1]) if long else x.kthvalue(k, 1)
        _pair(on(x).kthvalue(k, 1), want)
        if not long:
            _pair(on(x).kthvalue(k, 1, keepdim=True), x.kthvalue(k, 1, keepdim=True))
    _pair(on(x).median(1), x.median(1))
    _pair(on(x).median(-1, keepdim=True), x.median(-1, keepdim=True))
    same(on(x).median(), x.median())
    _pair(on(x).t().median(0), x.t().median(0))
    xn = _ties((5, n), dtype, seed=n + 2, nan=False)  # no NaN: the value of rank (n - 1) / 2
    _pair(on(xn).median(1), xn.median(1))
    flat = xn.flatten().sort(stable=True)[0]
    same(on(xn).median(), flat[(flat.numel() - 1) // 2] if xn.numel() > BITONIC_MAX else xn.median())


def test_selection_edges():
    s = torch.tensor(4.0)
    _pair(on(s).topk(1), s.topk(1))
    _pair(on(s).kthvalue(1), s.kthvalue(1))
    _pair(on(s).median(0), s.median(0))
    same(on(s).median(), s.median())
    e = torch.zeros(0, 3)
    same(on(e).median(), e.median())
    _pair(on(e).median(1), e.median(1))  # an empty result along a non-empty dim
    _pair(on(e).topk(2, 1), e.topk(2, 1))
    _pair(on(e).topk(0, 0), e.topk(0, 0))
    x, t = on(torch.tensor([[1.0, 2.0]])), torch.tensor([[1.0, 2.0]])
    _raises_like(lambda: t.topk(3), lambda: x.topk(3))
    _raises_like(lambda: t.kthvalue(0), lambda: x.kthvalue(0))
    _raises_like(lambda: t.kthvalue(1, 2), lambda: x.kthvalue(1, 2))
    _raises_like(lambda: e.median(0), lambda: on(e).median(0))
    b, tb = on(torch.tensor([True, False])), torch.tensor([True, False])
    _raises_like(lambda: tb.topk(1), lambda: b.topk(1))
    _raises_like(lambda: tb.kthvalue(1), lambda: b.kthvalue(1))
    _raises_like(lambda: tb.median(0), lambda: b.median(0))


def _grad(fn, x, device):
    if device == "torch":
        t = x.clone().requires_grad_()
        out = fn(t)
        out.backward(torch.arange(out.numel(), dtype=x.dtype).reshape(out.shape) + 1)
        return t.grad
    m = on(x).requires_grad_()
    out = fn(m)
    g = on(torch.arange(out.numel(), dtype=x.dtype).reshape(tuple(out.shape)) + 1)
    out.backward(g)
    assert m.grad.device.type == "cuda"
    return m.grad


@pytest.mark.parametrize("name,fn", [
    ("sort", lambda x: x.sort(1, descending=True)[0]),
    ("sort stable", lambda x: x.sort(dim=0, stable=True)[0]),
    ("topk", lambda x: x.topk(2, 1)[0]),
    ("kthvalue", lambda x: x.kthvalue(3, 1)[0]),
    ("median dim", lambda x: x.median(0)[0]),
    ("median", lambda x: x.median()),
])
def test_selection_gradients(name, fn):
    x = _ties((4, 6), torch.float64, seed=5, nan=False)
    same(_grad(fn, x, "mg"), _grad(fn, x, "torch"))
    m = on(x).requires_grad_()
    assert fn(m).grad_fn.name() == fn(x.clone().requires_grad_()).grad_fn.name()


# ----- scans -----

SCAN_DTYPES = [torch.float32, torch.float64, torch.int32, torch.int64, torch.bool]


@pytest.mark.parametrize("dtype", SCAN_DTYPES)
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_cumsum_cumprod_match_torch_bit_for_bit(dtype, dim):
    g = torch.Generator().manual_seed(2)
    x = (torch.randn(7, 300, generator=g) * 3).to(dtype) if dtype != torch.bool else torch.randint(0, 2, (7, 300), generator=g).bool()
    same(on(x).cumsum(dim), x.cumsum(dim))
    small = (x / 2).to(dtype) if dtype.is_floating_point else x  # products that stay finite for a while
    same(on(small).cumprod(dim), small.cumprod(dim))
    for out in ("float64", "int64"):
        same(on(x).cumsum(dim, dtype=getattr(mg, out)), x.cumsum(dim, dtype=getattr(torch, out)))


def test_scans_of_integers_wrap_like_torch():
    x = torch.tensor([2**31 - 1, 1, 1, 3], dtype=torch.int32)
    same(on(x).cumsum(0, dtype=mg.int32), x.cumsum(0, dtype=torch.int32))
    y = torch.full((80,), 7, dtype=torch.int64)
    same(on(y).cumprod(0), y.cumprod(0))


def test_scans_of_long_rows_and_strided_inputs():
    g = torch.Generator().manual_seed(8)
    x = torch.randn(20000, generator=g, dtype=torch.float32) * 1e3
    same(on(x).cumsum(0), x.cumsum(0))
    base = torch.randn(9, 12, generator=g, dtype=torch.float64)
    for view in (base.t(), base[::2, 1::3], base[:, :1].expand(9, 5)):
        m, t = to_mg(view)
        for d in (0, 1):
            same(m.cumsum(d), t.cumsum(d))
            same(m.cumprod(d), t.cumprod(d))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_logcumsumexp_matches_torch(dtype):
    g = torch.Generator().manual_seed(4)
    x = torch.randn(5, 257, generator=g, dtype=dtype) * 20
    x[0, 3], x[1, :4], x[2, 7], x[3, :] = float("nan"), float("-inf"), float("inf"), float("-inf")
    for d in (0, 1):
        same(on(x).logcumsumexp(d), x.logcumsumexp(d), exact=not REAL_GPU)
    _raises_like(lambda: torch.tensor([1, 2]).logcumsumexp(0), lambda: on(torch.tensor([1, 2])).logcumsumexp(0))


def test_scan_edges_and_in_place():
    for t in (torch.tensor(2.5), torch.zeros(0, 3), torch.zeros(3, 0)):
        same(on(t).cumsum(0), t.cumsum(0))
        same(on(t).cumprod(-1), t.cumprod(-1))
        same(on(t).logcumsumexp(0), t.logcumsumexp(0))
    _raises_like(lambda: torch.ones(2).cumsum(1), lambda: on(torch.ones(2)).cumsum(1))
    _raises_like(lambda: torch.ones(2, dtype=torch.bool).cumsum_(0), lambda: on(torch.ones(2, dtype=torch.bool)).cumsum_(0))
    x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    m = on(x)
    m.cumsum_(1)
    assert m._version == 1
    same(m, x.clone().cumsum_(1))
    m.cumprod_(0)
    same(m, x.clone().cumsum_(1).cumprod_(0))
    assert m._version == 2


@pytest.mark.parametrize("name,fn", [
    ("cumsum", lambda x: x.cumsum(1)),
    ("cumprod", lambda x: x.cumprod(1)),
    ("cumprod dim 0", lambda x: x.cumprod(0)),
    ("logcumsumexp", lambda x: x.logcumsumexp(1)),
])
@pytest.mark.parametrize("zeros", [False, True])
def test_scan_gradients(name, fn, zeros):
    g = torch.Generator().manual_seed(6)
    x = torch.randn(4, 5, generator=g, dtype=torch.float64)
    if zeros:
        x[0, 1], x[2, 0], x[2, 3] = 0.0, 0.0, 0.0
    got, want = _grad(fn, x, "mg"), _grad(fn, x, "torch")
    torch.testing.assert_close(back(got), want, rtol=1e-12, atol=1e-12)


def test_cumprod_double_backward_with_zeros():
    # create_graph: torch's differentiable formula for inputs with zeros (cat, narrow, ones)
    x = torch.tensor([[1.5, 0.0, -2.0, 0.5], [3.0, 0.0, 0.0, 1.0]], dtype=torch.float64)
    t = x.clone().requires_grad_()
    (gt,) = torch.autograd.grad(t.cumprod(1).sum(), t, create_graph=True)
    gt.sum().backward()
    m = on(x).requires_grad_()
    (gm,) = mg.autograd.grad(m.cumprod(1).sum(), m, create_graph=True)
    gm.sum().backward()
    torch.testing.assert_close(back(gm.detach()), gt.detach())
    torch.testing.assert_close(back(m.grad), t.grad)
