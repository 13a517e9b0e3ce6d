"""`searchsorted` and `bucketize` against torch: lower and upper bounds (`right` / `side`) in
sorted rows with repeated values, NaN and infinities, batched rows, a `sorter` for an unsorted
row, values given as numbers or 0-d tensors (compared in torch's result type, so a Python float
does not widen a float32 sequence), `out_int32`, every dtype, and torch's errors in its order."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import minigrad as mg
from minigrad.testing import assert_same
from parity import assert_same_error

VALUES = st.one_of(st.integers(-3, 3).map(float), st.sampled_from([0.5, -0.0, float("inf"), float("-inf"), float("nan")]))


@settings(max_examples=100, deadline=None)
@given(seq=st.lists(st.integers(-3, 3).map(float), max_size=8), values=st.lists(VALUES, min_size=1, max_size=8),
       rows=st.integers(1, 3), right=st.booleans(), out_int32=st.booleans(),
       dtype=st.sampled_from(["float32", "float64", "int64", "int32", "float16"]))
def test_bounds_match_torch(seq, values, rows, right, out_int32, dtype):
    s = np.sort(np.array([seq] * rows, dtype=np.float64).reshape(rows, -1), axis=-1)
    v = np.array([values] * rows, dtype=np.float64)
    if dtype.startswith("int"):
        v = np.nan_to_num(v, nan=0.0, posinf=9.0, neginf=-9.0)
    s, v = s.astype(dtype), v.astype(dtype)
    for ss, vv in ((s[0], v[0]), (s, v), (s[0], v)):
        want = torch.searchsorted(torch.tensor(ss), torch.tensor(vv), right=right, out_int32=out_int32)
        assert_same(mg.searchsorted(mg.tensor(ss), mg.tensor(vv), right=right, out_int32=out_int32), want)
        side = "right" if right else "left"
        assert_same(mg.searchsorted(mg.tensor(ss), mg.tensor(vv), side=side), torch.searchsorted(torch.tensor(ss), torch.tensor(vv), side=side))
    assert_same(mg.bucketize(mg.tensor(v), mg.tensor(s[0]), right=right, out_int32=out_int32),
                torch.bucketize(torch.tensor(v), torch.tensor(s[0]), right=right, out_int32=out_int32))


@settings(max_examples=50, deadline=None)
@given(seq=st.lists(st.integers(-5, 5), min_size=1, max_size=8), values=st.lists(st.integers(-6, 6), min_size=1, max_size=5),
       right=st.booleans())
def test_sorter_orders_an_unsorted_row(seq, values, right):
    s = np.array(seq, dtype=np.float32)
    order = np.argsort(s, kind="stable")
    want = torch.searchsorted(torch.tensor(s), torch.tensor(values, dtype=torch.float32), right=right, sorter=torch.tensor(order))
    got = mg.searchsorted(mg.tensor(s), mg.tensor(values, dtype=mg.float32), right=right, sorter=mg.tensor(order))
    assert_same(got, want)


@pytest.mark.parametrize("value", [0.1, 2, True, 2.5, -1e300])
@pytest.mark.parametrize("seq", [[0.1, 0.2, 2.5], [1, 2, 3]])
def test_numbers_and_0d_tensors_do_not_widen_the_sequence(seq, value):
    for right in (False, True):
        assert_same(mg.searchsorted(mg.tensor(seq), value, right=right), torch.searchsorted(torch.tensor(seq), value, right=right))
        assert_same(mg.bucketize(value, mg.tensor(seq), right=right), torch.bucketize(value, torch.tensor(seq), right=right))
        if not isinstance(value, bool):
            z = np.array(value, dtype=np.float64)
            assert_same(mg.searchsorted(mg.tensor(seq), mg.tensor(z), right=right),
                        torch.searchsorted(torch.tensor(seq), torch.tensor(z), right=right))


def test_no_gradient_and_empty_inputs():
    for lib in (mg, torch):
        assert not lib.searchsorted(lib.tensor([1.0, 2.0]), lib.tensor([1.5], requires_grad=True)).requires_grad
    assert_same(mg.searchsorted(mg.tensor([]), mg.tensor([1.0, 2.0])), torch.searchsorted(torch.tensor([]), torch.tensor([1.0, 2.0])))
    assert_same(mg.searchsorted(mg.tensor([1.0]), mg.zeros(2, 0)), torch.searchsorted(torch.tensor([1.0]), torch.zeros(2, 0)))


S = [1.0, 2.0, 3.0]
ERRORS = [
    ("side unknown", lambda L: L.searchsorted(L.tensor(S), L.tensor([2.0]), side="middle")),
    ("side and right opposite", lambda L: L.searchsorted(L.tensor(S), L.tensor([2.0]), side="left", right=True)),
    ("sorter size", lambda L: L.searchsorted(L.tensor(S), L.tensor([2.0]), sorter=L.tensor([0, 1]))),
    ("sorter dtype", lambda L: L.searchsorted(L.tensor(S), L.tensor([2.0]), sorter=L.tensor([0.0, 1.0, 2.0]))),
    ("sorter out of range", lambda L: L.searchsorted(L.tensor(S), L.tensor([2.0]), sorter=L.tensor([0, 1, 3]))),
    ("sorter negative", lambda L: L.searchsorted(L.tensor(S), L.tensor([2.0]), sorter=L.tensor([0, -1, 2]))),
    ("0-d sequence", lambda L: L.searchsorted(L.tensor(3.0), L.tensor([2.0]))),
    ("0-d value with 2-d rows", lambda L: L.searchsorted(L.ones(2, 3), L.tensor(2.0))),
    ("rows do not match", lambda L: L.searchsorted(L.ones(2, 3), L.ones(1, 3))),
    ("rank differs", lambda L: L.searchsorted(L.ones(2, 3), L.ones(2))),
    ("bool", lambda L: L.searchsorted(L.tensor([False, True]), L.tensor([True]))),
    ("right an int", lambda L: L.searchsorted(L.tensor(S), L.tensor([2.0]), right=1)),
    ("values a list", lambda L: L.searchsorted(L.tensor(S), [2.0])),
    ("sequence a list", lambda L: L.searchsorted(S, L.tensor([2.0]))),
    ("bucketize 2-d boundaries", lambda L: L.bucketize(L.tensor([2.0]), L.ones(2, 2))),
    ("bucketize 0-d boundaries", lambda L: L.bucketize(L.tensor([2.0]), L.tensor(1.0))),
    ("bucketize boundaries a list", lambda L: L.bucketize(L.tensor([2.0]), S)),
    ("bucketize out_int32 an int", lambda L: L.bucketize(L.tensor([2.0]), L.tensor(S), out_int32=0)),
]


@pytest.mark.parametrize("what,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(what, fn):
    assert_same_error(lambda: fn(mg), lambda: fn(torch))
