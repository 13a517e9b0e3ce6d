"""`cummax` and `cummin` against torch: values and indices along every dim of random tensors with
ties, NaN, infinities and signed zeros (ties and NaNs take the later index, a NaN stays once
seen), every dtype, strided inputs, the named result, CummaxBackward0 / CumminBackward0 with
their saved values, gradients (first and second order), and torch's errors."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import minigrad as mg
from minigrad.testing import assert_same
from parity import assert_same_error

ELEMENTS = st.one_of(st.integers(-2, 2).map(float), st.sampled_from([float("nan"), float("inf"), -0.0, 0.0]))


@settings(max_examples=100, deadline=None)
@given(shape=st.lists(st.integers(1, 9), min_size=0, max_size=3), data=st.data(),
       dtype=st.sampled_from(["float32", "float64", "int64", "int32", "bool", "float16"]), transpose=st.booleans())
def test_values_and_indices_match_torch(shape, data, dtype, transpose):
    n = int(np.prod(shape, dtype=int))
    x = np.array(data.draw(st.lists(ELEMENTS, min_size=n, max_size=n)), dtype=np.float64).reshape(shape)
    if dtype in ("int64", "int32", "bool"):
        x = np.nan_to_num(x, nan=1.0, posinf=3.0)
    t = torch.tensor(x).to(getattr(torch, dtype))
    m = mg.tensor(x.tolist(), dtype=getattr(mg, dtype)) if shape else mg.tensor(float(x), dtype=getattr(mg, dtype))
    if transpose and len(shape) >= 2:
        t, m = t.transpose(0, -1), m.transpose(0, -1)
    for dim in range(-max(len(shape), 1), max(len(shape), 1)):
        for op in ("cummax", "cummin"):
            got, want = getattr(mg, op)(m, dim), getattr(torch, op)(t, dim)
            assert type(got).__name__ == op and type(got).__module__ == "minigrad.return_types"
            assert_same(got.indices, want.indices)
            assert_same(got.values.double() if dtype == "float16" else got.values,
                        want.values.double() if dtype == "float16" else want.values, equal_nan=True)


def _graph(lib, op):
    x = lib.tensor([[1.0, 3.0, 2.0, 3.0], [0.0, 0.0, -1.0, 4.0]], dtype=lib.float64, requires_grad=True)
    r = getattr(x, op)(1)
    fn = r.values.grad_fn
    saved = (fn.name(), fn._saved_dim, fn._saved_indices.tolist(), fn._saved_self.tolist())
    (g,) = lib.autograd.grad((r.values * r.values).sum(), x, create_graph=True)
    (h,) = lib.autograd.grad((g * g).sum(), x)
    return saved, g.tolist(), h.tolist(), r.indices.requires_grad


@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_node_saved_values_and_gradients_match_torch(op):
    assert _graph(mg, op) == _graph(torch, op)


ERRORS = [
    ("dim out of range", lambda L: L.cummax(L.ones(2), 1)),
    ("no dim", lambda L: L.cummin(L.ones(2))),
    ("dim a float", lambda L: L.cummax(L.ones(2), 0.5)),
    ("input a list", lambda L: L.cummin([1.0], 0)),
]


@pytest.mark.parametrize("what,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(what, fn):
    assert_same_error(lambda: fn(mg), lambda: fn(torch))
