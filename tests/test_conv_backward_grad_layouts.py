"""conv2d's backward with upstream gradients that are not contiguous, against torch.

The backward makes such a gradient contiguous once for both products, and fills (rather than
copies) a scalar broadcast to every element: the gradient of `y.sum()` or `y.mean()`. These
cases check the values of the input, weight and bias gradients for each kind of gradient, on
the Winograd path (16 channels) and the im2col paths (3 input channels; a strided conv), and
that double backward (where the gradient is in the graph) still matches torch.
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import minigrad as mg
import minigrad.nn.functional as MF
from parity import assert_same

TOL = {"float32": dict(rtol=1e-4, atol=1e-4), "float64": dict(rtol=1e-10, atol=1e-10)}

# (input shape, weight shape, stride, padding): Winograd, per-image im2col (3 channels, 16x16
# planes), chunked im2col (stride 2, small planes)
GEOMETRIES = [
    ((4, 16, 8, 8), (8, 16, 3, 3), 1, 1),
    ((3, 3, 16, 16), (5, 3, 3, 3), 1, 1),
    ((5, 4, 7, 7), (6, 4, 3, 3), 2, 0),
]


def _pairs(arr):
    return mg.from_numpy(arr.copy()).requires_grad_(), torch.from_numpy(arr.copy()).requires_grad_()


def _upstream(kind, lib, y):
    """A loss of y whose gradient with respect to y has the layout `kind`."""
    if kind == "sum":  # a scalar expanded to y's shape (all strides 0)
        return y.sum()
    if kind == "mean":  # the same, scaled by 1/numel
        return y.mean()
    if kind == "channel":  # [1, C, 1, 1] broadcast: some strides 0
        c = y.shape[1]
        scale = lib.from_numpy(np.linspace(-1.0, 2.0, c).astype(np.float64 if y.dtype == lib.float64 else np.float32))
        return (y * scale.reshape(1, c, 1, 1)).sum()
    if kind == "transposed":  # a permuted, dense gradient
        return (y * y.detach().transpose(2, 3).contiguous().transpose(2, 3)).sum()
    raise AssertionError(kind)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("kind", ["sum", "mean", "channel", "transposed"])
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=["winograd", "per_image", "chunked"])
@pytest.mark.parametrize("needs", ["both", "input", "weight"])
def test_gradients_match_torch(dtype, kind, geometry, needs):
    xs, ws, stride, padding = geometry
    rng = np.random.default_rng(7)
    x = rng.standard_normal(xs).astype(dtype)
    w = (rng.standard_normal(ws) * 0.3).astype(dtype)
    b = rng.standard_normal(ws[0]).astype(dtype)
    mx, tx = _pairs(x)
    mw, tw = _pairs(w)
    mb, tb = _pairs(b)
    if needs == "input":
        mw.requires_grad_(False), tw.requires_grad_(False), mb.requires_grad_(False), tb.requires_grad_(False)
    if needs == "weight":
        mx.requires_grad_(False), tx.requires_grad_(False)
    my = MF.conv2d(mx, mw, mb, stride=stride, padding=padding)
    ty = TF.conv2d(tx, tw, tb, stride=stride, padding=padding)
    _upstream(kind, mg, my).backward()
    _upstream(kind, torch, ty).backward()
    for m, t in [(mx, tx), (mw, tw), (mb, tb)]:
        if t.requires_grad:
            assert_same(m.grad, t.grad, **TOL[dtype])
        else:
            assert m.grad is None


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=["winograd", "per_image", "chunked"])
def test_double_backward_through_a_summed_conv(geometry):
    xs, ws, stride, padding = geometry
    rng = np.random.default_rng(3)
    x = rng.standard_normal(xs)
    w = rng.standard_normal(ws) * 0.3
    mx, tx = _pairs(x)
    mw, tw = _pairs(w)
    outs = []
    for lib, F, xx, ww in [(mg, MF, mx, mw), (torch, TF, tx, tw)]:
        y = F.conv2d(xx, ww, stride=stride, padding=padding)
        (gx,) = lib.autograd.grad(y.sum(), xx, create_graph=True)
        (gw,) = lib.autograd.grad((gx * gx).sum(), ww)
        outs.append((gx, gw))
    assert_same(outs[0][0], outs[1][0].detach(), **TOL["float64"])
    assert_same(outs[0][1], outs[1][1], **TOL["float64"])
