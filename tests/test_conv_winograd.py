"""conv2d on the Winograd F(2x2, 3x3) path (3x3 kernel, stride 1, dilation 1, groups 1, at
least 4 input and output channels; docs/kernels.md) and its fallbacks, against torch: values,
input/weight/bias gradients, double backward, and the float32 error against a float64
reference.

The f32 tolerance is the suite's (rtol = atol = 1e-4), widened for the weight and bias gradients
by sqrt(n*OH*OW / 64) (sums of many products). The documented bound for the Winograd path
itself: |f32 result - f64 reference| <= 1e-5 * (1 + |reference|) for the forward and the input
gradient at up to 64 channels (the weight gradient sums n*OH*OW products: 1e-5 * sqrt(n*OH*OW)).
"""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn.functional as MF
from parity import assert_same

TOL = {"float32": dict(rtol=1e-4, atol=1e-4), "float64": dict(rtol=1e-10, atol=1e-10)}


def _leaves(arr, transposed=False):
    m = mg.from_numpy(arr.copy()).requires_grad_()
    t = torch.from_numpy(arr.copy()).requires_grad_()
    if transposed:
        return m, t, m.transpose(-1, -2), t.transpose(-1, -2)
    return m, t, m, t


def _run(x_arr, w_arr, b_arr, padding, rng, transposed=False, tol=None, **kw):
    """conv2d forward and backward in both libraries; compares output and all gradients."""
    tol = tol or TOL[str(x_arr.dtype)]
    mx, tx, mxi, txi = _leaves(x_arr, transposed)
    mw, tw, _, _ = _leaves(w_arr)
    mb = tb = None
    if b_arr is not None:
        mb, tb, _, _ = _leaves(b_arr)
    m_out = MF.conv2d(mxi, mw, mb, padding=padding, **kw)
    t_out = TF.conv2d(txi, tw, tb, padding=padding, **kw)
    assert_same(m_out, t_out, **tol)
    assert m_out.grad_fn.name() == t_out.grad_fn.name()
    up = rng.standard_normal(tuple(t_out.shape)).astype(x_arr.dtype)
    m_out.backward(mg.from_numpy(up.copy()))
    t_out.backward(torch.from_numpy(up.copy()))
    # The weight and bias gradients sum n*OH*OW products: both libraries' float32 rounding
    # grows like the square root of that count (torch's own error vs float64 is the larger one
    # on the bench shape), so their tolerance scales with it.
    count = up.size // up.shape[-3]
    wide = {k: v * max(1.0, (count / 64) ** 0.5) for k, v in tol.items()}
    for m, t, tl in [(mx, tx, tol), (mw, tw, wide), (mb, tb, wide)]:
        if t is not None:
            assert_same(m.grad, t.grad, **tl)
    return m_out


@st.composite
def wino_cases(draw):
    padding = (draw(st.integers(0, 2)), draw(st.integers(0, 2)))
    h = draw(st.integers(max(1, 3 - 2 * padding[0]), 11))
    w = draw(st.integers(max(1, 3 - 2 * padding[1]), 11))
    n = draw(st.sampled_from([None, 1, 2, 5]))
    cin, cout = draw(st.integers(4, 12)), draw(st.integers(4, 12))
    return dict(
        x_shape=((n,) if n else ()) + (cin, h, w), w_shape=(cout, cin, 3, 3), padding=padding,
        bias=draw(st.booleans()), dtype=draw(st.sampled_from(["float32", "float64"])),
        transposed=draw(st.booleans()), seed=draw(st.integers(0, 2**16)),
    )


@settings(max_examples=40)
@given(wino_cases())
def test_winograd_path_matches_torch(case):
    rng = np.random.default_rng(case["seed"])
    dt = np.dtype(case["dtype"])
    xs = case["x_shape"]
    x = rng.standard_normal(xs[:-2] + (xs[-1], xs[-2]) if case["transposed"] else xs).astype(dt)
    w = rng.standard_normal(case["w_shape"]).astype(dt)
    b = rng.standard_normal(case["w_shape"][0]).astype(dt) if case["bias"] else None
    _run(x, w, b, case["padding"], rng, transposed=case["transposed"])


@pytest.mark.parametrize("shape,cout,padding", [
    ((64, 16, 8, 8), 16, 1),     # the bench shape and the digits net's residual convs
    ((1, 64, 9, 7), 32, 1),      # batch 1, many channels, odd sizes
    ((3, 32, 13, 10), 48, 0),    # padding 0
    ((2, 8, 5, 6), 12, 2),       # padding 2
    ((2, 8, 6, 5), 8, (0, 2)),   # mixed padding
    ((37, 16, 8, 8), 12, 1),     # several uneven chunks of images
])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_winograd_shapes(shape, cout, padding, dtype):
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(dtype)
    w = (rng.standard_normal((cout, shape[1], 3, 3)) * 0.3).astype(dtype)
    b = rng.standard_normal(cout).astype(dtype)
    _run(x, w, b, padding, rng)


@pytest.mark.parametrize("case", [
    dict(padding=3),                    # input gradient falls back (padding > 2), forward does not
    dict(padding=1, stride=2),
    dict(padding=2, dilation=2),
    dict(padding=1, groups=2),
    dict(padding="same"),
    dict(padding="valid"),
])
def test_fallbacks_and_string_padding(case):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 8, 7, 9)).astype(np.float32)
    w = rng.standard_normal((6, 8 // case.get("groups", 1), 3, 3)).astype(np.float32)
    kw = {k: v for k, v in case.items() if k != "padding"}
    _run(x, w, None, case["padding"], rng, **kw)


@pytest.mark.parametrize("cin,cout", [(1, 16), (3, 8), (8, 3), (16, 1)])
def test_too_few_channels_use_im2col(cin, cout):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, cin, 8, 8)).astype(np.float32)
    w = rng.standard_normal((cout, cin, 3, 3)).astype(np.float32)
    _run(x, w, rng.standard_normal(cout).astype(np.float32), 1, rng)


def test_float32_error_against_float64_reference():
    """The documented bound, and no worse than 20x torch's own float32 error on the same data."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((4, 64, 12, 12))
    w = rng.standard_normal((32, 64, 3, 3)) * 0.2
    up = rng.standard_normal((4, 32, 12, 12))
    x32, w32, up32 = (a.astype(np.float32) for a in (x, w, up))
    ref_x, ref_w = (torch.from_numpy(a.astype(np.float64)).requires_grad_() for a in (x32, w32))
    ref = TF.conv2d(ref_x, ref_w, padding=1)
    ref.backward(torch.from_numpy(up32.astype(np.float64)))
    mx, mw = mg.from_numpy(x32).requires_grad_(), mg.from_numpy(w32).requires_grad_()
    out = MF.conv2d(mx, mw, padding=1)
    out.backward(mg.from_numpy(up32))
    tx, tw = torch.from_numpy(x32).requires_grad_(), torch.from_numpy(w32).requires_grad_()
    tout = TF.conv2d(tx, tw, padding=1)
    tout.backward(torch.from_numpy(up32))

    def rel(a, b):
        b = b.detach().numpy()
        return float(np.max(np.abs(np.asarray(a, dtype=np.float64) - b) / (1 + np.abs(b))))

    n_sum = 4 * 12 * 12
    for ours, theirs, want, bound in [
        (out.detach().numpy(), tout.detach().numpy(), ref, 1e-5),
        (mx.grad.numpy(), tx.grad.numpy(), ref_x.grad, 1e-5),
        (mw.grad.numpy(), tw.grad.numpy(), ref_w.grad, 1e-5 * n_sum ** 0.5),
    ]:
        assert rel(ours, want) <= bound
        assert rel(ours, want) <= 20 * rel(theirs, want) + 1e-7


def test_double_backward_on_winograd_path():
    rng = np.random.default_rng(2)
    x_arr = rng.standard_normal((2, 6, 7, 7))
    w_arr = rng.standard_normal((5, 6, 3, 3))
    up = rng.standard_normal((2, 5, 7, 7))
    res = []
    for L, F in [(mg, MF), (torch, TF)]:
        x = L.from_numpy(x_arr.copy()).requires_grad_()
        w = L.from_numpy(w_arr.copy()).requires_grad_()
        y = F.conv2d(x, w, padding=1)
        gx, gw = L.autograd.grad(y, [x, w], L.from_numpy(up.copy()), create_graph=True)
        ((gx * gx).sum() + (gw * gw * gw).sum()).backward()
        res.append((gx, gw, x.grad, w.grad))
    for a, b in zip(*res):
        assert_same(a, b, **TOL["float64"])


def test_deterministic():
    rng = np.random.default_rng(4)
    x_arr = rng.standard_normal((33, 16, 8, 8)).astype(np.float32)
    w_arr = rng.standard_normal((16, 16, 3, 3)).astype(np.float32)
    runs = []
    for _ in range(2):
        x = mg.from_numpy(x_arr.copy()).requires_grad_()
        w = mg.from_numpy(w_arr.copy()).requires_grad_()
        y = MF.conv2d(x, w, padding=1)
        (y * y).sum().backward()
        runs.append((y.detach().numpy(), x.grad.numpy(), w.grad.numpy()))
    for a, b in zip(*runs):
        assert np.array_equal(a, b)
