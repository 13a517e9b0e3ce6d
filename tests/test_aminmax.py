"""aminmax against torch: the named (min, max) result for every dtype and layout, NaN and ties,
dim and keepdim, the one node both results share, and torch's refusals. Gradients (ties share
them evenly), gradcheck and saved arguments: tests/test_grad_ops.py, tests/test_saved_values.py."""

import math

import hypothesis.extra.numpy as hnp
import numpy as np
import torch
from hypothesis import given, strategies as st

import minigrad as mg
from parity import ALL_DTYPES, DTYPES, assert_same, assert_same_error, check_parity, make_pair, recipes


@given(data=st.data())
def test_values_match_torch(data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    key = data.draw(st.sampled_from(ALL_DTYPES))
    arr = data.draw(hnp.arrays(np.float64, shape, elements=st.sampled_from([1.0, -2.0, 3.0, 0.0, math.nan, math.inf])))
    if DTYPES[key][2].kind in "iub":
        arr = np.nan_to_num(np.asarray(arr), nan=2.0, posinf=5.0)
    m, t = make_pair(np.asarray(arr).astype(DTYPES[key][2]), data.draw(recipes(len(shape))))
    n = max(len(shape), 1)
    dim = data.draw(st.sampled_from([None] + list(range(-n, n))))
    keepdim = data.draw(st.booleans())
    kind, got, want = check_parity(lambda: m.aminmax(dim=dim, keepdim=keepdim), lambda: t.aminmax(dim=dim, keepdim=keepdim))
    if kind == "ok":
        assert type(got).__name__ == "aminmax" and got._fields == ("min", "max")
        assert_same(got.min, want.min)
        assert_same(got.max, want.max)


def test_one_node_and_the_named_result():
    x = mg.tensor([[1.0, 3.0, 3.0], [2.0, 2.0, 0.0]], requires_grad=True)
    r = mg.aminmax(x, dim=1)
    assert r.min.grad_fn is r.max.grad_fn and r.min.grad_fn.name() == "AminmaxBackward0"
    assert repr(r).startswith("minigrad.return_types.aminmax(\nmin=tensor([1., 0.]")
    lo, hi = r
    assert lo.tolist() == [1.0, 0.0] and hi.tolist() == [3.0, 2.0]


def test_refusals_match_torch():
    cases = [
        lambda L: L.aminmax(L.zeros(0)), lambda L: L.aminmax(L.zeros(0, 3), dim=0), lambda L: L.zeros(2).aminmax(0),
        lambda L: L.aminmax(L.ones(2), dim="a"), lambda L: L.aminmax(L.ones(2), keepdim=1), lambda L: L.aminmax(L.ones(2), 0),
        lambda L: L.aminmax(L.ones(2), dim=2), lambda L: L.aminmax([1.0]),
    ]
    for case in cases:
        assert_same_error(lambda: case(mg), lambda: case(torch))
    check_parity(lambda: mg.aminmax(mg.zeros(0, 3), dim=1), lambda: torch.aminmax(torch.zeros(0, 3), dim=1))
