"""Linear layers' products against torch: addmm with beta = alpha = 1 runs as one product into a
copy of the broadcast bias (check the values, NaN/inf/-0.0 in the bias, every bias shape, both
float dtypes, same bits twice), and the gradient of a column-major operand (a weight's `.t()`)
comes back column-major as torch's mm_mat1_backward/mm_mat2_backward make it, so `.grad` is
taken as is: its strides and `_version` match torch's."""

import numpy as np
import pytest
import torch

import minigrad as mg
from parity import assert_same


def pair(arr, requires_grad=False):
    return (mg.tensor(arr).requires_grad_(requires_grad), torch.tensor(arr).requires_grad_(requires_grad))


def rand(*shape, seed=0, dtype="float32"):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bias_shape", [(), (1,), (7,), (5, 1), (5, 7), (1, 7)])
@pytest.mark.parametrize("k", [1, 3, 600])
def test_addmm_with_bias_matches_torch(dtype, bias_shape, k):
    (mb, tb), (mx, tx), (mw, tw) = pair(rand(*bias_shape, seed=1, dtype=dtype)), pair(rand(5, k, dtype=dtype)), pair(rand(7, k, seed=2, dtype=dtype))
    out = mg.addmm(mb, mx, mw.t())
    tol = {"rtol": 1e-5, "atol": 1e-5 * k} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-12 * k}
    assert_same(out, torch.addmm(tb, tx, tw.t()), check_stride=True, **tol)
    assert np.array_equal(out.numpy(), mg.addmm(mb, mx, mw.t()).numpy())  # same bits twice


def test_addmm_bias_specials_and_signed_zero():
    bias = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1.0], dtype="float32")
    x = np.array([[0.0, 0.0], [1.0, -1.0], [-0.0, 0.0]], dtype="float32")
    w = np.zeros((6, 2), dtype="float32")
    w[5] = [np.inf, 0.0]
    (mb, tb), (mx, tx), (mw, tw) = pair(bias), pair(x), pair(w)
    assert_same(mg.addmm(mb, mx, mw.t()), torch.addmm(tb, tx, tw.t()), check_stride=True)
    assert_same(mg.nn.functional.linear(mx, mw, mb), torch.nn.functional.linear(tx, tw, tb), check_stride=True)


def test_addmm_other_scales_and_dtypes_still_match():
    (mb, tb), (mx, tx), (mw, tw) = pair(rand(4, seed=1)), pair(rand(3, 5)), pair(rand(4, 5, seed=2))
    for beta, alpha in [(0.5, 1), (1, 2.0), (0, 1)]:
        assert_same(mg.addmm(mb, mx, mw.t(), beta=beta, alpha=alpha), torch.addmm(tb, tx, tw.t(), beta=beta, alpha=alpha), rtol=1e-5, atol=1e-5)
    ints = [np.arange(n).reshape(s) for n, s in [(4, (4,)), (15, (3, 5)), (20, (5, 4))]]
    (mb, tb), (mx, tx), (mw, tw) = (pair(a) for a in ints)
    assert_same(mg.addmm(mb, mx, mw), torch.addmm(tb, tx, tw))


def grads(lib, fn, arrays):
    ts = [lib.tensor(a).requires_grad_() for a in arrays]
    seen = {}
    out = fn(lib, ts, seen)
    (out * lib.tensor(rand(*out.shape, seed=9, dtype=arrays[0].dtype))).sum().backward()
    return out, ts, seen


def linear_fn(lib, ts, seen):
    x, w, b = ts
    wt = w.t()
    wt.register_hook(lambda g: seen.update(wt=tuple(g.stride())))
    return lib.nn.functional.linear(x, w, b)


def mm_fn(lib, ts, seen):
    a, b = ts
    at = a.t()  # both operands column-major
    at.register_hook(lambda g: seen.update(at=tuple(g.stride())))
    return lib.mm(at, b.t())


def addmm_fn(lib, ts, seen):
    s, a, b = ts
    return lib.addmm(s, a.t(), b, beta=0.5, alpha=2.0)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", [(linear_fn, [(6, 9), (4, 9), (4,)]), (mm_fn, [(9, 6), (4, 9)]),
                                  (addmm_fn, [(6, 4), (9, 6), (9, 4)])], ids=["linear", "mm", "addmm"])
def test_column_major_operand_gradients_match_torch_layout_and_version(dtype, case):
    fn, shapes = case
    arrays = [rand(*s, seed=i, dtype=dtype) for i, s in enumerate(shapes)]
    mo, mts, mseen = grads(mg, fn, arrays)
    to, tts, tseen = grads(torch, fn, arrays)
    assert mseen == tseen
    tol = {"rtol": 1e-5, "atol": 1e-5} if dtype == "float32" else {"rtol": 1e-12, "atol": 1e-12}
    assert_same(mo, to, check_stride=True, **tol)
    for i, (m, t) in enumerate(zip(mts, tts)):
        assert_same(m.grad, t.grad, check_stride=True, **tol)
        assert m.grad._version == t.grad._version
    assert mo.grad_fn.name() == to.grad_fn.name()


def test_double_backward_through_transposed_gradient():
    arrays = [rand(3, 4, dtype="float64"), rand(2, 4, seed=1, dtype="float64")]
    for lib in (mg, torch):
        w, x = (lib.tensor(a).requires_grad_() for a in arrays)
        (gw,) = lib.autograd.grad((x @ w.t()).pow(2).sum(), [w], create_graph=True)
        gw.sum().backward()
        if lib is mg:
            mgw, mxg = gw, x.grad
        else:
            assert_same(mgw, gw, check_stride=True)
            assert_same(mxg, x.grad, check_stride=True)
