"""Rows longer than 2048 elements on the device (sort.cu: block-sorted runs, then merge passes by
many blocks) against torch on the CPU. What is specified there: sort gives the stable order
whatever `stable` says (equal values in index order; NaN last ascending, first descending), and
topk, kthvalue and median pick from that order -- so values AND indices are compared bit for
bit with torch's `sort(stable=True)`, and values with torch's own op (numerically: a -0.0 that
ties with 0.0 may be the other zero there; torch leaves ties unspecified). On a GPU when there is
one, else on the host-emulated device (tests/cuda_host/backend.py).
"""

import pytest
import torch

import minigrad as mg
from cuda_host.backend import back, cuda_device, on, same, to_mg  # noqa: F401  (cuda_device: autouse fixture)

NUMERIC = [torch.float32, torch.float64, torch.int32, torch.int64]


def _ties(shape, dtype, seed=0, nan=True):
    """Few distinct values (many ties), with NaN, +-inf, 0.0 and -0.0 among the floats."""
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    x = torch.randint(-50, 50, shape, generator=g).to(dtype)
    if dtype.is_floating_point:
        specials = torch.tensor([float("nan") if nan else 1.5, float("inf"), float("-inf"), -0.0, 0.0], dtype=dtype)
        pick = torch.randint(0, 40, shape, generator=g)
        x = torch.where(pick < len(specials), specials[pick.clamp(max=len(specials) - 1)], x)
    return x


def _pair(mine, ref):
    same(mine[0], ref[0])
    same(mine[1], ref[1])


def _numerically(mine, ref):
    got = back(mine)
    assert got.dtype == ref.dtype and got.shape == ref.shape
    assert torch.equal(got.isnan(), ref.isnan()) if ref.dtype.is_floating_point else True
    keep = ~ref.isnan() if ref.dtype.is_floating_point else torch.ones_like(ref, dtype=torch.bool)
    assert torch.equal(got[keep], ref[keep])


@pytest.mark.parametrize("dtype", NUMERIC + [torch.bool])
def test_one_long_row_with_ties_and_nans_sorts_stably(dtype):
    x = _ties((100_000,), dtype, seed=1)
    m = on(x)
    for descending in (False, True):
        want = x.sort(descending=descending, stable=True)
        _pair(m.sort(descending=descending, stable=True), want)
        _pair(m.sort(descending=descending), want)  # stable=False: the stable order too (specified)
        _pair(m.sort(descending=descending, stable=False), want)
        same(m.argsort(descending=descending), want[1])


@pytest.mark.parametrize("n", [2049, 4096, 4097, 6000, 3 * 2048 + 1])
def test_row_lengths_around_the_run_and_pass_edges(n):
    x = _ties((3, n), torch.float32, seed=n)
    for descending in (False, True):
        _pair(on(x).sort(dim=1, descending=descending), x.sort(dim=1, descending=descending, stable=True))


def test_long_rows_along_any_dim_of_non_contiguous_and_half_tensors():
    x = _ties((5000, 3), torch.float64, seed=2)
    m, _ = to_mg(x.t().contiguous().t())  # column-major storage
    _pair(m.sort(dim=0), x.sort(dim=0, stable=True))
    strided = _ties((2, 9000), torch.int64, seed=3)[:, ::2]
    m, _ = to_mg(strided)
    _pair(m.sort(dim=-1, descending=True), strided.sort(dim=-1, descending=True, stable=True))
    h = _ties((3000,), torch.float16, seed=4)
    got = mg.from_dlpack(h.clone()).cuda().sort()
    want = h.sort(stable=True)
    assert torch.equal(torch.from_dlpack(got[0].cpu()).view(torch.int16), want[0].view(torch.int16))
    assert torch.equal(back(got[1]), want[1])


def test_runs_to_the_same_bits_every_time():
    x = on(_ties((20_000,), torch.float32, seed=5))
    a, b = x.sort(), x.sort()
    assert torch.equal(back(a[1]), back(b[1]))


@pytest.mark.parametrize("dtype", NUMERIC)
def test_topk_kthvalue_and_median_of_long_rows(dtype):
    n = 30_000
    x = _ties((2, n), dtype, seed=6)
    m = on(x)
    for largest in (True, False):
        order = x.sort(dim=1, descending=largest, stable=True)
        for k in (1, 17, 3000):
            for sorted_ in (True, False):
                got = m.topk(k, dim=1, largest=largest, sorted=sorted_)
                _pair(got, (order[0][:, :k], order[1][:, :k]))
            _numerically(m.topk(k, dim=1, largest=largest)[0], x.topk(k, dim=1, largest=largest)[0])
    asc = x.sort(dim=1, stable=True)
    for k in (1, n // 2, n):
        got = m.kthvalue(k, 1)
        _pair(got, (asc[0][:, k - 1], asc[1][:, k - 1]))
        _numerically(got[0], x.kthvalue(k, 1)[0])
    _pair(m.median(1), x.median(1))  # the row's first NaN, else rank (n - 1) / 2 by (value, index)
    xn = _ties((2, n), dtype, seed=7, nan=False)
    _pair(on(xn).median(1), xn.median(1))
    _pair(on(xn).median(-1, keepdim=True), xn.median(-1, keepdim=True))
    flat = xn.flatten().sort(stable=True)[0]
    same(on(xn).median(), flat[(flat.numel() - 1) // 2])
    _numerically(on(xn).median(), xn.median())
    _numerically(on(x).median(), x.median())


def test_gradients_through_long_rows():
    g = torch.Generator().manual_seed(8)
    x = torch.randperm(5000, generator=g).double().reshape(1, 5000) / 7
    for fn in (lambda t: t.sort(1, descending=True)[0], lambda t: t.topk(40, 1)[0],
               lambda t: t.kthvalue(100, 1)[0], lambda t: t.median(1)[0], lambda t: t.median()):
        t = x.clone().requires_grad_()
        out = fn(t)
        w = torch.arange(out.numel(), dtype=torch.float64).reshape(out.shape) + 1
        (out * w).sum().backward()
        m = on(x).requires_grad_()
        mo = fn(m)
        (mo * on(w)).sum().backward()
        assert mo.grad_fn.name() == out.grad_fn.name()
        same(m.grad, t.grad)
