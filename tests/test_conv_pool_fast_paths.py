"""The fast paths of the CPU conv and pooling kernels against torch, at sizes the small
hypothesis cases of test_nn_conv.py do not reach: max pooling without indices (values only
when nothing records a gradient), inputs large enough to be split over threads, NaNs, and
convolutions whose output planes are large enough (>= 256 pixels) for the per-image product
(the 3-channel stem conv of the bench among them)."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import minigrad as mg
import minigrad.nn.functional as MF
from parity import assert_same

TOL = {"float32": dict(rtol=1e-4, atol=1e-4), "float64": dict(rtol=1e-10, atol=1e-10)}


def pair(arr, requires_grad=False, transposed=False):
    m, t = mg.from_numpy(arr.copy()), torch.from_numpy(arr.copy())
    if requires_grad:
        m.requires_grad_()
        t.requires_grad_()
    if transposed:
        return m, t, m.transpose(-1, -2), t.transpose(-1, -2)
    return m, t, m, t


POOLS = [
    # shape, kernel, stride, padding, dilation, ceil_mode
    ((64, 16, 8, 8), 2, None, 0, 1, False),  # the bench case
    ((8, 16, 33, 31), 3, 2, 1, 1, True),
    ((4, 20, 17, 19), (2, 3), (1, 2), (1, 1), (2, 1), False),
    ((3, 2, 40, 40), 3, 3, 1, 2, True),
    ((2, 64, 16, 16), 2, 2, 0, 1, False),
]


@pytest.mark.parametrize("case", POOLS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("transposed", [False, True])
def test_max_pool2d_values_indices_and_grad(case, dtype, transposed):
    shape, k, s, p, d, ceil = case
    rng = np.random.default_rng(abs(hash((shape, dtype))) % 2**32)
    if transposed:
        shape = shape[:-2] + (shape[-1], shape[-2])
    # small integers: many exact ties, where the first maximum must win as in torch
    arr = rng.integers(-3, 4, shape).astype(dtype)
    arr.flat[rng.integers(0, arr.size, 5)] = np.nan
    kw = dict(stride=s, padding=p, dilation=d, ceil_mode=ceil)
    m, t, mi, ti = pair(arr, transposed=transposed)
    # values only, no autograd: the kernel without indices
    assert_same(MF.max_pool2d(mi, k, **kw), TF.max_pool2d(ti, k, **kw))
    with mg.no_grad():
        assert_same(MF.max_pool2d(mi, k, **kw), TF.max_pool2d(ti, k, **kw))
    mv, mix = MF.max_pool2d(mi, k, return_indices=True, **kw)
    tv, tix = TF.max_pool2d(ti, k, return_indices=True, **kw)
    assert_same(mv, tv)
    assert_same(mix, tix)
    assert np.isnan(tv.numpy()).any() and np.array_equal(np.isnan(mv.numpy()), np.isnan(tv.numpy()))
    # with a gradient recorded, return_indices=False still backpropagates through the indices
    m, t, mi, ti = pair(arr, requires_grad=True, transposed=transposed)
    my, ty = MF.max_pool2d(mi, k, **kw), TF.max_pool2d(ti, k, **kw)
    assert my.grad_fn.name() == ty.grad_fn.name()
    up = rng.standard_normal(tuple(ty.shape)).astype(dtype)
    my.backward(mg.from_numpy(up.copy()))
    ty.backward(torch.from_numpy(up.copy()))
    assert_same(m.grad, t.grad, **TOL[dtype])


@pytest.mark.parametrize("shape", [(64, 16, 8, 8), (8, 16, 33, 31), (2, 64, 16, 16)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_avg_and_adaptive_pools_on_large_inputs(shape, dtype):
    rng = np.random.default_rng(7)
    arr = rng.standard_normal(shape).astype(dtype)
    tol = TOL[dtype]
    for m_fn, t_fn in (
        (lambda x: MF.avg_pool2d(x, 2), lambda x: TF.avg_pool2d(x, 2)),
        (lambda x: MF.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), lambda x: TF.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)),
        (lambda x: MF.avg_pool2d(x, 3, 1, 1, divisor_override=4), lambda x: TF.avg_pool2d(x, 3, 1, 1, divisor_override=4)),
        (lambda x: MF.adaptive_avg_pool2d(x, (3, 5)), lambda x: TF.adaptive_avg_pool2d(x, (3, 5))),
    ):
        m, t, mi, ti = pair(arr, requires_grad=True, transposed=True)
        my, ty = m_fn(mi), t_fn(ti)
        assert_same(my, ty, **tol)
        up = rng.standard_normal(tuple(ty.shape)).astype(dtype)
        my.backward(mg.from_numpy(up.copy()))
        ty.backward(torch.from_numpy(up.copy()))
        assert_same(m.grad, t.grad, **tol)


def test_avg_pool_propagates_nan_like_torch():
    arr = np.random.default_rng(2).standard_normal((4, 8, 16, 16)).astype(np.float32)
    arr[1, 2, 5, 5] = np.nan
    m, t = MF.avg_pool2d(mg.from_numpy(arr.copy()), 3, 1, 1), TF.avg_pool2d(torch.from_numpy(arr.copy()), 3, 1, 1)
    assert np.array_equal(np.isnan(m.numpy()), np.isnan(t.numpy()))
    assert_same(m, t, **TOL["float32"])


CONVS = [
    # x shape, weight shape, stride, padding, dilation, groups, bias
    ((32, 3, 32, 32), (32, 3, 3, 3), 1, 1, 1, 1, True),  # the bench's stem conv
    ((3, 3, 20, 24), (8, 3, 3, 3), 1, 0, 1, 1, False),
    ((2, 4, 17, 18), (6, 2, 3, 2), 1, (1, 2), (2, 1), 2, True),
    ((5, 1, 16, 16), (4, 1, 5, 5), 1, 2, 1, 1, True),
    ((1, 6, 36, 36), (5, 6, 3, 3), 2, 1, 1, 1, True),  # batch of one: gemm splits the product
]


@pytest.mark.parametrize("case", CONVS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("transposed", [False, True])
def test_conv2d_large_planes_values_and_grads(case, dtype, transposed):
    xs, ws, s, p, d, groups, has_bias = case
    rng = np.random.default_rng(sum(xs) + sum(ws))
    if transposed:
        xs = xs[:-2] + (xs[-1], xs[-2])
    x = rng.standard_normal(xs).astype(dtype)
    w = (rng.standard_normal(ws) * 0.2).astype(dtype)
    b = rng.standard_normal(ws[0]).astype(dtype) if has_bias else None
    mx, tx, mxi, txi = pair(x, requires_grad=True, transposed=transposed)
    mw, tw, _, _ = pair(w, requires_grad=True)
    mb, tb = (pair(b, requires_grad=True)[:2]) if has_bias else (None, None)
    kw = dict(stride=s, padding=p, dilation=d, groups=groups)
    my, ty = MF.conv2d(mxi, mw, mb, **kw), TF.conv2d(txi, tw, tb, **kw)
    tol = TOL[dtype]
    assert_same(my, ty, **tol)
    up = rng.standard_normal(tuple(ty.shape)).astype(dtype)
    my.backward(mg.from_numpy(up.copy()))
    ty.backward(torch.from_numpy(up.copy()))
    assert_same(mx.grad, tx.grad, **tol)
    assert_same(mw.grad, tw.grad, **(tol if dtype == "float64" else dict(rtol=1e-3, atol=1e-3)))
    if has_bias:
        assert_same(mb.grad, tb.grad, **(tol if dtype == "float64" else dict(rtol=1e-3, atol=1e-3)))


def test_stem_conv_is_deterministic():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((16, 3, 32, 32)).astype(np.float32)
    w = rng.standard_normal((32, 3, 3, 3)).astype(np.float32)
    runs = []
    for _ in range(2):
        mx, mw = mg.from_numpy(x.copy()).requires_grad_(), mg.from_numpy(w.copy()).requires_grad_()
        y = MF.conv2d(mx, mw, padding=1)
        (y * y).sum().backward()
        runs.append((y.detach().numpy(), mx.grad.numpy(), mw.grad.numpy()))
    for a, b in zip(*runs):
        assert np.array_equal(a, b)
