"""Writes and reads through one bool mask on the device (compact.cu's mg_compact_rank,
mg_masked_put, mg_masked_take): `x[mask] = v`, index_put_ with a mask (with and without
accumulate), `x[:, mask]` and `x[mask]` of non-contiguous x, and the backward of masked_select
and of `x[mask]`, against torch on the CPU -- values, layouts, every dtype (the narrow ones
too), empty / all-true / broadcast masks, strided destinations, torch's error texts, versions,
grad_fn names, and (on the emulated device) that only the 8-byte count comes back to the host.
"""

import pytest
import torch

import minigrad as mg
from cuda_host.backend import spying_on_copies
from cuda_host.backend import on_any as cu, same_any as _same_any  # any dtype, bit for bit
from cuda_host.backend import ALL, on, same, to_mg  # noqa: F401
from cuda_host.backend import cuda_device  # noqa: F401  (autouse fixture)

NARROW = [torch.float16, torch.bfloat16, torch.uint8, torch.int8, torch.int16]
CHUNK = 4096  # compact.cu's MG_COMPACT_CHUNK


def _mask(shape, seed, density=0.4):
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed)) < density


def _vals(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) < 0.5
    x = torch.randint(-40, 40, shape, generator=g)
    if dtype.is_floating_point:
        x = x.to(torch.float64) / 4
        x[x == 0] = -0.0  # signs of zero must survive a plain write
    return x.to(dtype)


# ----- writes: x[mask] = v, index_put_ -----

@pytest.mark.parametrize("dtype", ALL + NARROW)
def test_mask_write_matches_torch_for_every_dtype(dtype):
    x = _vals((5, 3, 70), dtype, seed=1)
    cases = [
        ((_mask((5,), 2),), None),            # leading rows
        ((_mask((5, 3), 3),), None),          # two leading dims
        ((_mask((5, 3, 70), 4),), None),      # every dim
        ((slice(None), _mask((3,), 5)), None),  # x[:, mask]
        ((slice(None), slice(None), _mask((70,), 6)), None),
    ]
    for key, _ in cases:
        ref = x.clone()
        n = ref[key].shape
        v = _vals(tuple(n), dtype, seed=7)
        ref[key] = v
        got = cu(x)
        mkey = tuple(k if isinstance(k, slice) else cu(k) for k in key)
        got[mkey] = cu(v)
        _same_any(got, ref)
        if isinstance(key[0], slice):
            continue  # index_put_ takes no None from Python (torch's neither): setitem above
        for acc in (False, True):  # index_put_ itself, with and without accumulate
            ref, got = x.clone(), cu(x)
            ref.index_put_(key, v, accumulate=acc)
            got.index_put_((cu(key[0]),), cu(v), accumulate=acc)
            _same_any(got, ref)


def test_broadcast_values_scalars_and_one_element_device_values():
    x = _vals((6, 4, 9), torch.float32, seed=8)
    m = _mask((6,), 9, 0.6)
    for v in (torch.arange(9.0), torch.arange(36.0).reshape(4, 9), torch.tensor([[2.5]]), torch.tensor([-0.0])):
        ref, got = x.clone(), on(x)
        ref[m] = v
        got[on(m)] = on(v)  # a device tensor: the masked write, not masked_fill (torch's rule)
        same(got, ref)
    for acc in (False, True):
        ref, got = x.clone(), on(x)
        ref.index_put_((m,), torch.tensor(1.5), accumulate=acc)
        got.index_put_((on(m),), mg.tensor(1.5), accumulate=acc)  # a CPU 0-d value
        same(got, ref)
    ref, got = x.clone(), on(x)
    ref[m] = 7.0
    got[on(m)] = 7.0
    same(got, ref)


def test_masks_across_chunks_empty_and_all_true():
    n = 2 * CHUNK + 300
    x = _vals((3, n), torch.float64, seed=11)
    for m in (_mask((3, n), 12, 0.5), torch.zeros(3, n, dtype=torch.bool), torch.ones(3, n, dtype=torch.bool)):
        v = _vals((int(m.sum()),), torch.float64, seed=13)
        ref, got = x.clone(), on(x)
        ref[m] = v
        got[on(m)] = on(v)
        same(got, ref)
        ref, got = x.clone(), on(x)
        ref.index_put_((m,), v, accumulate=True)
        got.index_put_((on(m),), on(v), accumulate=True)
        same(got, ref)
    e = torch.zeros(0, 4)
    got = on(e)
    got[on(torch.zeros(0, dtype=torch.bool))] = on(torch.zeros(0, 4))
    assert got._version == 1  # torch bumps for an empty write too
    got = on(torch.zeros(3, 0))
    got[on(torch.ones(3, dtype=torch.bool))] = on(torch.zeros(3, 0))


def test_non_contiguous_destinations():
    base = _vals((8, 10, 6), torch.float32, seed=14)
    views = [lambda t: t.transpose(0, 2), lambda t: t[::2, 1::3], lambda t: t.permute(1, 2, 0)[:, 1:]]
    for view in views:
        want = base.clone()
        vt = view(want)
        m = _mask(tuple(vt.shape[:2]), 15, 0.5)
        v = _vals(tuple(vt[m].shape), torch.float32, seed=16)
        vt[m] = v
        mb = on(base)
        vm = view(mb)
        vm[on(m)] = on(v)
        same(mb, want)
        assert vm._version == mb._version == 1
        m2 = _mask((vt.shape[1],), 17, 0.5)
        vt[:, m2] = 3.25
        vm[:, on(m2)] = 3.25
        same(mb, want)
        w = _vals((int(m.sum()), vt.shape[2]), torch.float32, seed=18)
        vt.index_put_((m,), w, accumulate=True)
        vm.index_put_((on(m),), on(w), accumulate=True)
        same(mb, want)


def test_values_that_alias_the_destination_are_read_first():
    x = torch.arange(12.0).reshape(4, 3)
    m = torch.tensor([True, False, True, True])
    ref, got = x.clone(), on(x)
    ref[m] = ref[:3].flip(0)  # a copy in torch (flip copies)
    vals = got[:3].flip(0)
    got[on(m)] = vals
    same(got, ref)


def test_errors_are_torchs():
    x = torch.zeros(4, 3)
    m = torch.tensor([True, False, True, False])
    cases = [
        lambda t, mm, f: t.__setitem__(mm, f(torch.ones(3, 1))),
        lambda t, mm, f: t.__setitem__(mm, f(torch.ones(3, 3))),
        lambda t, mm, f: t.index_put_((mm,), f(torch.ones(2, 3, dtype=torch.float64))),
        lambda t, mm, f: t.index_put_((mm,), f(torch.ones(5, 3)), accumulate=True),
        lambda t, mm, f: t.__setitem__((slice(None), mm[:3]), f(torch.ones(4))),
        lambda t, mm, f: t.index_put_((mm[:2],), f(torch.ones(2, 3))),
        lambda t, mm, f: t.__getitem__((slice(None), mm)),
    ]
    for case in cases:
        with pytest.raises(Exception) as ref:
            case(x.clone(), m, lambda v: v)
        got_x = on(x)
        with pytest.raises(Exception) as got:
            case(got_x, on(m), on)
        assert type(got.value).__name__ == type(ref.value).__name__, (got.value, ref.value)
        assert str(got.value) == str(ref.value)
        assert got_x._version == 0  # nothing written
        same(got_x, x)


def test_versions_and_grad_fn_names():
    x = torch.randn(5, 4, dtype=torch.float64, requires_grad=True)
    mx = on(x.detach()).requires_grad_()
    m = _mask((5,), 19, 0.6)
    v = torch.randn(int(m.sum()), 4, dtype=torch.float64, requires_grad=True)
    mv = on(v.detach()).requires_grad_()
    y, my = x.clone(), mx.clone()
    y[m] = v
    my[on(m)] = mv
    assert my._version == y._version and my.grad_fn.name() == y.grad_fn.name()
    mk = _mask((5, 4), 20, 0.5)
    z, mz = y.index_put((mk,), torch.tensor(2.0, dtype=torch.float64), accumulate=True), \
        my.index_put((on(mk),), mg.tensor(2.0, dtype=mg.float64), accumulate=True)
    assert mz._version == z._version == 0 and mz.grad_fn.name() == z.grad_fn.name()
    w = torch.arange(20.0, dtype=torch.float64).reshape(5, 4)
    (z * w).sum().backward()
    (mz * on(w)).sum().backward()
    same(mx.grad, x.grad)
    same(mv.grad, v.grad)


# ----- reads through one mask, and gradients -----

def test_reads_of_inner_masks_and_strided_sources():
    x = _vals((4, 6, 50), torch.float64, seed=21)
    m6, m50 = _mask((6,), 22, 0.5), _mask((50,), 23, 0.3)
    mm = _mask((6, 50), 24, 0.5)
    for key in [(slice(None), m6), (slice(None), slice(None), m50), (slice(None), mm), (Ellipsis, m50)]:
        mkey = tuple(k if not isinstance(k, torch.Tensor) else on(k) for k in key)
        got, want = on(x)[mkey], x[key]
        same(got, want)
        assert got.stride() == want.stride()
    for view in (lambda t: t.transpose(0, 2), lambda t: t[:, ::2, 3:40:3]):
        vt = view(x)
        m, _ = to_mg(vt)
        for key in [(_mask(tuple(vt.shape[:1]), 25, 0.5),), (slice(None), _mask(tuple(vt.shape[1:]), 26, 0.5))]:
            mkey = tuple(k if not isinstance(k, torch.Tensor) else on(k) for k in key)
            got, want = m[mkey], vt[key]
            same(got, want)
            assert got.stride() == want.stride()
    same(on(x)[:, on(torch.zeros(6, dtype=torch.bool))], x[:, torch.zeros(6, dtype=torch.bool)])
    for dtype in NARROW + [torch.bool, torch.int32]:
        t = _vals((3, 7, 5), dtype, seed=27)
        k = _mask((7,), 28, 0.5)
        _same_any(cu(t)[:, cu(k)], t[:, k])


_MASK, _ROWS, _COLS = _mask((6, 5, 40), 30), _mask((6,), 31, 0.6), _mask((40,), 32, 0.5)
GRAD_CASES = {
    "masked_select": (lambda t: torch.masked_select(t, _MASK), lambda t: mg.masked_select(t, on(_MASK))),
    "masked_select broadcast mask": (lambda t: torch.masked_select(t, _COLS), lambda t: mg.masked_select(t, on(_COLS))),
    "masked_select broadcast source": (lambda t: t[:, :1].masked_select(_MASK), lambda t: t[:, :1].masked_select(on(_MASK))),
    "x[rows]": (lambda t: t[_ROWS], lambda t: t[on(_ROWS)]),
    "x[:, :, cols]": (lambda t: t[:, :, _COLS], lambda t: t[:, :, on(_COLS)]),
    "x.T[cols]": (lambda t: t.transpose(0, 2)[_COLS], lambda t: t.transpose(0, 2)[on(_COLS)]),
}


@pytest.mark.parametrize("case", list(GRAD_CASES))
def test_gradients_scatter_on_the_device(case):
    fn_t, fn_m = GRAD_CASES[case]
    g = torch.Generator().manual_seed(29)
    x = torch.randn(6, 5, 40, dtype=torch.float64, generator=g)
    t = x.clone().requires_grad_()
    out_t = fn_t(t)
    w = torch.randn(out_t.shape, dtype=torch.float64, generator=g)
    (out_t * w).sum().backward()
    m = on(x).requires_grad_()
    out = fn_m(m)
    assert out.grad_fn.name() == out_t.grad_fn.name()
    (out * on(w)).sum().backward()
    assert m.grad.device.type == "cuda"
    # A broadcast source sums its gradient (sum_to) in minigrad's reducer order, not torch's:
    # the CPU build differs from torch there by an ulp as well.
    same(m.grad, t.grad, exact=case != "masked_select broadcast source")


def test_no_mask_or_offsets_go_through_the_host(cuda_device):
    if cuda_device is None:
        pytest.skip("spies on the emulated driver's copies; a real GPU run has no driver object to spy on")
    x0 = _vals((3, 2 * CHUNK + 7, 2), torch.float32, seed=33)
    rows, inner = on(_mask((3, 2 * CHUNK + 7), 34)), on(_mask((2 * CHUNK + 7,), 35))
    x = on(x0)
    xt = on(x0).transpose(0, 1)  # not contiguous
    vals = on(_vals((int(_mask((3, 2 * CHUNK + 7), 34).sum()), 2), torch.float32, seed=36))
    leaf = on(x0).requires_grad_()
    with spying_on_copies(cuda_device) as copies:
        x[rows] = vals                                  # 1 count
        x.index_put_((rows,), vals, accumulate=True)    # 1
        a = x[:, inner]                                 # 1
        b = xt[inner]                                   # 1
        mg.masked_select(leaf, rows[..., None]).sum().backward()  # 2: forward and backward
        leaf[:, inner].sum().backward()                 # 2
    assert a.numel() > 0 and b.numel() > 0
    assert [c for c in copies if c[0] == "d2h"] == [("d2h", 8)] * 8, copies
    assert not [c for c in copies if c[0] == "h2d"], copies


# ----- masked_scatter_ / masked_scatter (new here: on every device, through the same ranks) -----

@pytest.mark.parametrize("dtype", ALL + NARROW)
def test_masked_scatter_matches_torch_for_every_dtype(dtype):
    x = _vals((4, CHUNK + 9), dtype, seed=40)
    m = _mask((4, CHUNK + 9), 41, 0.5)
    src = _vals((4, CHUNK + 9), dtype, seed=42)
    ref, got = x.clone(), cu(x)
    ref.masked_scatter_(m, src)
    assert got.masked_scatter_(cu(m), cu(src)) is got
    _same_any(got, ref)
    assert got._version == 1
    _same_any(mg.masked_scatter(cu(x), cu(m[:1]), cu(src)), torch.masked_scatter(x, m[:1], src))  # broadcast mask


def test_masked_scatter_layouts_edges_and_errors():
    x = _vals((6, 8), torch.float32, seed=43)
    src = _vals((6, 9), torch.float32, seed=44)
    for m in (_mask((8,), 45, 0.5), torch.zeros(6, 8, dtype=torch.bool), torch.ones(6, 8, dtype=torch.bool), _mask((6, 1), 46)):
        ref, got = x.clone(), on(x)
        ref.masked_scatter_(m, src)
        got.masked_scatter_(on(m), on(src))
        same(got, ref)
    base, mb = x.clone(), on(x)
    base.t().masked_scatter_(_mask((8, 6), 47), src.t())  # strided destination and source
    mb.t().masked_scatter_(on(_mask((8, 6), 47)), on(src).t())
    same(mb, base)
    same(on(x)[:1].masked_scatter(on(_mask((6, 8), 48)), on(src)), x[:1].masked_scatter(_mask((6, 8), 48), src))
    s = torch.tensor(1.5)
    same(on(s).masked_scatter_(on(torch.tensor(True)), on(torch.tensor([5.0, 6.0]))), s.clone().masked_scatter_(torch.tensor(True), torch.tensor([5.0, 6.0])))
    e = torch.zeros(0, 3)
    same(on(e).masked_scatter_(on(torch.zeros(3, dtype=torch.bool)), on(torch.zeros(0))), e.clone().masked_scatter_(torch.zeros(3, dtype=torch.bool), torch.zeros(0)))
    cases = [
        (torch.ones(6, 8, dtype=torch.bool), torch.ones(47)),
        (torch.ones(6, 8, dtype=torch.bool), torch.ones(48, dtype=torch.float64)),
        (torch.ones(6, 8, dtype=torch.int64), torch.ones(48)),
        (torch.ones(7, 8, dtype=torch.bool), torch.ones(56)),
    ]
    for m, v in cases:
        with pytest.raises(RuntimeError) as ref:
            x.clone().masked_scatter_(m, v)
        got_x = on(x)
        with pytest.raises(RuntimeError) as got:
            got_x.masked_scatter_(on(m), on(v))
        assert str(got.value) == str(ref.value)
        assert got_x._version == 0


@pytest.mark.parametrize("inplace", [False, True])
def test_masked_scatter_gradients(inplace):
    g = torch.Generator().manual_seed(49)
    x = torch.randn(5, 30, dtype=torch.float64, generator=g)
    src = torch.randn(7, 30, dtype=torch.float64, generator=g)
    m = _mask((5, 30), 50, 0.5)
    w = torch.randn(5, 30, dtype=torch.float64, generator=g)
    t, ts = x.clone().requires_grad_(), src.clone().requires_grad_()
    mx, ms = on(x).requires_grad_(), on(src).requires_grad_()
    if inplace:
        out_t, out = t.clone().masked_scatter_(m, ts), mx.clone().masked_scatter_(on(m), ms)
    else:
        out_t, out = t.masked_scatter(m, ts), mx.masked_scatter(on(m), ms)
    assert out.grad_fn.name() == out_t.grad_fn.name() == "MaskedScatterBackward0"
    same(out, out_t.detach())
    (out_t * w).sum().backward()
    (out * on(w)).sum().backward()
    same(mx.grad, t.grad)
    same(ms.grad, ts.grad)
