"""`unique` and `unique_consecutive` against torch: values, inverse and counts (and their
dtypes, shapes and strides) over all elements and over the slices along each dim, -0.0/0.0 as
one value and each NaN its own, every dtype, the tuple each flag combination returns, the nodes
torch records for an input that requires grad (whose backward raises), and torch's errors."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import minigrad as mg
from minigrad.testing import assert_same
from parity import assert_same_error


def _same(got, want):
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            assert_same(g, w, check_stride=True, equal_nan=True)
    else:
        assert_same(got, want, check_stride=True, equal_nan=True)


shapes = st.lists(st.integers(1, 4), min_size=0, max_size=3)


@settings(max_examples=100, deadline=None)
@given(shape=shapes, data=st.data(), flags=st.tuples(st.booleans(), st.booleans()),
       dtype=st.sampled_from(["int64", "int32", "float32", "float64", "bool", "uint8"]))
def test_unique_and_unique_consecutive_match_torch(shape, data, flags, dtype):
    n = int(np.prod(shape, dtype=int))
    raw = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    x = np.array(raw).reshape(shape).astype(dtype)
    dims = [None] + list(range(-len(shape), len(shape)))
    dim = data.draw(st.sampled_from(dims))
    m, t = mg.tensor(x), torch.tensor(x)
    inverse, counts = flags
    _same(mg.unique(m, return_inverse=inverse, return_counts=counts, dim=dim),
          torch.unique(t, return_inverse=inverse, return_counts=counts, dim=dim))
    _same(m.unique(return_inverse=inverse, return_counts=counts, dim=dim),
          t.unique(return_inverse=inverse, return_counts=counts, dim=dim))
    _same(mg.unique_consecutive(m, return_inverse=inverse, return_counts=counts, dim=dim),
          torch.unique_consecutive(t, return_inverse=inverse, return_counts=counts, dim=dim))


@pytest.mark.parametrize("consecutive", [False, True])
def test_signed_zeros_merge_and_nans_stay_apart(consecutive):
    x = [2.0, float("nan"), 1.0, float("nan"), -0.0, 0.0, 0.0, -0.0, float("inf")]
    for dtype in ("float32", "float64", "float16"):
        m, t = mg.tensor(x, dtype=getattr(mg, dtype)), torch.tensor(x, dtype=getattr(torch, dtype))
        f = "unique_consecutive" if consecutive else "unique"
        (gv, *g_rest), (wv, *w_rest) = (getattr(mg, f)(m, return_inverse=True, return_counts=True),
                                        getattr(torch, f)(t, return_inverse=True, return_counts=True))
        assert str(gv.dtype).split(".")[-1] == str(wv.dtype).split(".")[-1]
        _same((gv.double(), *g_rest), (wv.double(), *w_rest))  # (NaNs compared through float64)


def test_slices_order_lexicographically():
    rows = np.array([[2, 1, 0], [1, 9, 9], [2, 0, 5], [1, 9, 9], [2, 1, 0], [0, 0, 0]])
    for dim in (0, 1):
        x = rows if dim == 0 else rows.T.copy()
        _same(mg.unique(mg.tensor(x), dim=dim, return_inverse=True, return_counts=True),
              torch.unique(torch.tensor(x), dim=dim, return_inverse=True, return_counts=True))


@pytest.mark.parametrize("call", [
    lambda L, x: L.unique(x),
    lambda L, x: L.unique(x, dim=0),
    lambda L, x: L.unique_consecutive(x),
    lambda L, x: L.unique_consecutive(x, dim=0),
])
def test_no_derivative_the_node_and_its_error_match_torch(call):
    got = {}
    for lib in (mg, torch):
        x = lib.tensor([2.0, 1.0, 2.0], requires_grad=True)
        y = call(lib, x)
        got[lib.__name__] = (y.requires_grad, y.grad_fn.name(), [n.name() for n, _ in y.grad_fn.next_functions])
    assert got["minigrad"] == got["torch"]
    assert_same_error(lambda: call(mg, mg.tensor([2.0, 1.0], requires_grad=True)).sum().backward(),
                      lambda: call(torch, torch.tensor([2.0, 1.0], requires_grad=True)).sum().backward())


ERRORS = [
    ("zero-sized dim not selected", lambda L: L.unique(L.ones(2, 0), dim=0)),
    ("two zero-sized dims", lambda L: L.unique(L.ones(0, 0), dim=0)),
    ("0-d with dim", lambda L: L.unique(L.tensor(3.0), dim=0)),
    ("dim out of range", lambda L: L.unique(L.ones(2, 2), dim=2)),
    ("consecutive dim out of range", lambda L: L.unique_consecutive(L.ones(2, 2), dim=-3)),
    ("sorted an int", lambda L: L.unique(L.tensor([1, 2]), sorted=1)),
    ("return_counts None", lambda L: L.unique(L.tensor([1, 2]), return_counts=None)),
    ("dim a float", lambda L: L.unique(L.tensor([1, 2]), dim=1.0)),
    ("consecutive dim a float", lambda L: L.unique_consecutive(L.tensor([1, 2]), dim=0.5)),
    ("input a list", lambda L: L.unique([1, 2])),
    ("consecutive input a list", lambda L: L.unique_consecutive([1, 2])),
]


@pytest.mark.parametrize("what,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(what, fn):
    assert_same_error(lambda: fn(mg), lambda: fn(torch))
