"""Materialising broadcast (stride-0) views: `contiguous()`, `clone()` and `copy_` of expanded
scalars, columns, rows and other stride-0 layouts, and of as_strided layouts with a zero stride,
against torch: values bit for bit, shape, strides, `_version` (the copy kernel fills a run whose
source has stride 0 instead of looping over it, rust/kernels/src/elementwise.rs `map`). Sizes on
both sides of the threading split, with casts and with NaN, -0.0 and inf values."""

import numpy as np
import pytest
import torch

import minigrad as mg

DTYPES = [(np.float32, torch.float32, mg.float32), (np.float64, torch.float64, mg.float64),
          (np.int64, torch.int64, mg.int64), (np.bool_, torch.bool, mg.bool)]
SIZES = [(3, 5), (1000, 1000), (70_000, 3), (5, 70_000)]


def pair(a):
    return mg.tensor(a), torch.tensor(a)


def same(m, t):
    mn, tn = np.ascontiguousarray(m.detach().numpy()), np.ascontiguousarray(t.detach().numpy())
    assert mn.shape == tn.shape and mn.dtype == tn.dtype
    assert np.array_equal(mn.view(np.uint8), tn.view(np.uint8))
    assert tuple(m.stride()) == tuple(t.stride())
    assert m._version == t._version


def values(npdt, n, seed=0):
    rng = np.random.default_rng(seed)
    v = (rng.standard_normal(n) * 5).astype(npdt) if npdt != np.bool_ else rng.random(n) < 0.5
    if npdt in (np.float32, np.float64) and n >= 3:
        v[:3] = [np.nan, -0.0, np.inf]
    return v


def layouts(lib, src, rows, cols):
    """(name, view) pairs: every view has a zero stride somewhere."""
    scalar, col, row = src
    return [
        ("scalar", scalar.expand(rows, cols)),
        ("column", col.reshape(rows, 1).expand(rows, cols)),
        ("row", row.reshape(1, cols).expand(rows, cols)),
        ("3d-middle", col.reshape(rows, 1, 1).expand(rows, 2, cols)),
        ("transposed-column", col.reshape(rows, 1).expand(rows, cols).t()),
    ]


@pytest.mark.parametrize("size", SIZES, ids=str)
@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64", "i64", "bool"])
@pytest.mark.parametrize("how", ["contiguous", "clone", "copy_", "copy_cast"])
def test_materialise_broadcast_views(size, dt, how):
    npdt, tdt, mdt = dt
    rows, cols = size
    s, c, r = values(npdt, 1)[0], values(npdt, rows, 1), values(npdt, cols, 2)
    msrc = (mg.tensor(s), mg.tensor(c), mg.tensor(r))
    tsrc = (torch.tensor(s), torch.tensor(c), torch.tensor(r))
    for (name, mv), (_, tv) in zip(layouts(mg, msrc, rows, cols), layouts(torch, tsrc, rows, cols)):
        if how == "contiguous":
            m, t = mv.contiguous(), tv.contiguous()
        elif how == "clone":
            m, t = mv.clone(), tv.clone()
        else:
            out_dt = (torch.float64, mg.float64) if how == "copy_cast" else (tdt, mdt)
            t = torch.empty(tv.shape, dtype=out_dt[0])
            m = mg.empty(tuple(mv.shape), dtype=out_dt[1])
            t.copy_(tv)
            m.copy_(mv)
        same(m, t)
        same(mv, tv)  # the source is untouched


@pytest.mark.parametrize("size", [(4, 6), (600, 700)], ids=str)
def test_as_strided_zero_strides(size):
    rows, cols = size
    a = values(np.float32, rows * 2 + cols * 3, 5)
    m, t = pair(a)
    for stride in [(0, 1), (1, 0), (0, 0), (2, 0), (0, 3)]:
        mv, tv = m.as_strided((rows, cols), stride, 1), t.as_strided((rows, cols), stride, 1)
        same(mv.contiguous(), tv.contiguous())
        same(mv.clone(), tv.clone())
        mo, to = mg.zeros(rows, cols), torch.zeros(rows, cols)
        mo.copy_(mv)
        to.copy_(tv)
        same(mo, to)


def test_expanded_into_strided_destination():
    """A stride-0 source copied into a non-contiguous destination (a transposed view)."""
    mb, tb = mg.zeros(300, 400), torch.zeros(300, 400)
    md, td = mb.t(), tb.t()
    md.copy_(mg.tensor(2.5).expand(400, 300))
    td.copy_(torch.tensor(2.5).expand(400, 300))
    same(mb, tb)
    same(md, td)


def test_expanded_with_grad():
    """contiguous()/clone() of an expanded leaf: same grad_fn names and gradients as torch."""
    mx, tx = mg.tensor([1.0, 2.0, 3.0], requires_grad=True), torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    my = mx.reshape(3, 1).expand(3, 500).contiguous() * mg.arange(500.0)
    ty = tx.reshape(3, 1).expand(3, 500).contiguous() * torch.arange(500.0)
    my.sum().backward()
    ty.sum().backward()
    np.testing.assert_allclose(mx.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
    mc, tc = mx.expand(2, 3).clone(), tx.expand(2, 3).clone()
    assert mc.grad_fn.name() == tc.grad_fn.name()
    assert mc.stride() == tc.stride()
