"""var_mean / std_mean against torch: every overload (dim and correction, legacy unbiased, the
bool-only form), the tuple of two results sharing one node, values for float dtypes and layouts,
the degrees-of-freedom warning in torch's words, and refusals. Gradients through either or both
outputs, gradcheck and saved arguments: tests/test_grad_ops.py, tests/test_saved_values.py."""

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

import minigrad as mg
from parity import assert_same, assert_same_error, pairs

CALLS = [
    lambda L, x: L.var_mean(x), lambda L, x: L.std_mean(x),
    lambda L, x: L.var_mean(x, 0), lambda L, x: L.std_mean(x, -1, keepdim=True),
    lambda L, x: L.var_mean(x, (0, -1), correction=0), lambda L, x: L.std_mean(x, None, correction=2.5),
    lambda L, x: L.var_mean(x, 0, False, True), lambda L, x: L.std_mean(x, False),
    lambda L, x: L.var_mean(x, unbiased=False), lambda L, x: L.std_mean(x, dim=1, unbiased=True, keepdim=False),
]


@pytest.mark.parametrize("call", range(len(CALLS)))
@given(pair=pairs(["float32", "float64"], min_dims=2, max_dims=3, max_side=4))
def test_values_match_torch(call, pair):
    m, t = pair
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got, want = CALLS[call](mg, m), CALLS[call](torch, t)
    assert type(got) is tuple and len(got) == 2 and type(want) is tuple
    for g, w in zip(got, want):
        assert_same(g, w)
    words = {str(w.message).split(" (Triggered internally")[0] for w in caught}
    assert len(words) <= 1, words  # the same warning from both, or none


def test_one_node_for_both_results():
    x = mg.tensor([[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]], requires_grad=True)
    v, m = mg.var_mean(x, 1)
    assert v.grad_fn is m.grad_fn and v.grad_fn.name() == "VarMeanBackward0"
    s, m = mg.std_mean(x)
    assert s.grad_fn is m.grad_fn and s.grad_fn.name() == "StdMeanBackward0"


def test_refusals_match_torch():
    cases = [
        lambda L: L.var_mean(L.tensor([1, 2])), lambda L: L.std_mean(L.tensor([1, 2])),
        lambda L: L.var_mean(L.ones(2, 3), 5),
    ]
    for case in cases:
        assert_same_error(lambda: case(mg), lambda: case(torch))
    # (the overload list torch prints names `Tensor input` in the function form; minigrad's lists
    # the method's signatures: the same TypeError)
    for lib in (mg, torch):
        with pytest.raises(TypeError, match="received an invalid combination of arguments"):
            lib.var_mean(lib.ones(2, 3), "a")
        with pytest.raises(TypeError):
            lib.var_mean(2.0)
        with pytest.raises(TypeError, match="received an invalid combination of arguments"):
            lib.std_mean(lib.ones(2), 0, True, correction=1)
    with pytest.raises(RuntimeError, match=r"^var_mean only support floating point and complex dtypes$"):
        mg.var_mean(mg.tensor([1, 2]))
    assert not hasattr(mg.Tensor, "var_mean") and not hasattr(torch.Tensor, "var_mean")


def test_empty_input_gives_nan_like_torch():
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        got = mg.var_mean(mg.ones(0, 3), 0)
    with pytest.warns(UserWarning, match="degrees of freedom is <= 0"):
        want = torch.var_mean(torch.ones(0, 3), 0)
    np.testing.assert_array_equal(got[0].numpy(), want[0].numpy())
    np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
