"""`bincount` and `histc` against torch: counts and weighted sums (the weights' dtype decides
the result's: float32 stays, the rest sum in float64), `minlength`, histc's bins over the data's
extremes or a given range with elements on the very edges (each bin computed in the input's
dtype, as torch's kernel does), NaN and out-of-range elements left out, every floating dtype,
no gradient (NotImplemented node / no grad), and torch's errors in its order."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import minigrad as mg
from minigrad.testing import assert_same
from parity import assert_same_error


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.integers(0, 12), max_size=30), minlength=st.integers(0, 15),
       weights=st.sampled_from([None, "float32", "float64", "int64", "float16", "bool"]),
       dtype=st.sampled_from(["int64", "int32", "uint8", "int16"]))
def test_bincount_matches_torch(values, minlength, weights, dtype):
    x = np.array(values, dtype=dtype)
    args = {}
    if weights is not None:
        w = (np.arange(len(values)) * 0.37 - 2.1).astype(weights) if weights != "bool" else np.arange(len(values)) % 3 == 0
        args = {"m": mg.tensor(w), "t": torch.tensor(w)}
    got = mg.bincount(mg.tensor(x), args.get("m"), minlength=minlength)
    want = torch.bincount(torch.tensor(x), args.get("t"), minlength=minlength)
    assert_same(got, want)
    assert_same(mg.tensor(x).bincount(args.get("m"), minlength), torch.tensor(x).bincount(args.get("t"), minlength))


def test_float32_weights_sum_in_float32_in_order():
    w = np.array([1e8, 1.0, -1e8, 1.0] * 5, dtype=np.float32)
    x = np.zeros(20, dtype=np.int64)
    assert_same(mg.bincount(mg.tensor(x), mg.tensor(w)), torch.bincount(torch.tensor(x), torch.tensor(w)))


@settings(max_examples=80, deadline=None)
@given(
    data=st.lists(st.one_of(st.integers(-20, 20).map(lambda v: v / 10), st.floats(-3, 3, width=32),
                            st.just(float("nan"))), max_size=40),
    bins=st.integers(1, 12),
    edges=st.sampled_from([(0, 0), (-1, 1), (0, 1), (-2, 0.3), (0.1, 0.7), (-1.5, 2.5)]),
    dtype=st.sampled_from(["float32", "float64", "float16", "bfloat16"]),
)
def test_histc_matches_torch(data, bins, edges, dtype):
    t = torch.tensor(data, dtype=getattr(torch, dtype))
    m = mg.tensor(t.double().tolist(), dtype=getattr(mg, dtype))
    lo, hi = edges
    if lo == hi and t.numel() and t.isnan().any():
        return  # a NaN makes the data's range NaN: an error, tested below
    _same_counts(mg.histc(m, bins, lo, hi), torch.histc(t, bins, lo, hi))
    _same_counts(m.histc(bins=bins, min=lo, max=hi), t.histc(bins=bins, min=lo, max=hi))


def _same_counts(got, want):
    """Counts compared as float32 (NumPy has no bfloat16), dtypes by name."""
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    assert_same(got.float(), want.float())


def test_histc_puts_edge_values_where_torch_does():
    # multiples of the bin width: (x - min) * bins / (max - min) rounds up or down per dtype
    for dtype in ("float32", "float64", "float16"):
        x = torch.arange(0, 101, dtype=getattr(torch, dtype)) / 100
        m = mg.tensor(x.double().tolist(), dtype=getattr(mg, dtype))
        for bins in (3, 7, 10, 100):
            _same_counts(mg.histc(m, bins, 0, 1), torch.histc(x, bins, 0, 1))


def test_no_gradient_flows():
    for lib in (mg, torch):
        x = lib.tensor([1.0, 2.0], requires_grad=True)
        assert not lib.histc(x, 3).requires_grad
        w = lib.tensor([0.5, 1.0], requires_grad=True)
        y = lib.bincount(lib.tensor([0, 1]), w)
        assert y.requires_grad and y.grad_fn.name() == "torch::autograd::NotImplemented"
    assert_same_error(lambda: mg.bincount(mg.tensor([0, 1]), mg.tensor([0.5, 1.0], requires_grad=True)).sum().backward(),
                      lambda: torch.bincount(torch.tensor([0, 1]), torch.tensor([0.5, 1.0], requires_grad=True)).sum().backward())


ERRORS = [
    ("bincount negative", lambda L: L.bincount(L.tensor([-1, 2]))),
    ("bincount 2-d", lambda L: L.bincount(L.tensor([[1, 2]]))),
    ("bincount 0-d", lambda L: L.bincount(L.tensor(3))),
    ("bincount float", lambda L: L.bincount(L.tensor([1.0]))),
    ("bincount bool", lambda L: L.bincount(L.tensor([True]))),
    ("bincount minlength", lambda L: L.bincount(L.tensor([1]), minlength=-1)),
    ("bincount float and minlength", lambda L: L.bincount(L.tensor([1.0]), minlength=-1)),
    ("bincount weights length", lambda L: L.bincount(L.tensor([0, 1]), L.tensor([1.0]))),
    ("bincount weights 2-d", lambda L: L.bincount(L.tensor([0, 1]), L.tensor([[1.0, 2.0]]))),
    ("bincount weights a list", lambda L: L.bincount(L.tensor([0, 1]), [1, 2])),
    ("histc bins 0", lambda L: L.histc(L.tensor([1.0]), 0)),
    ("histc min above max", lambda L: L.histc(L.tensor([1.0]), 3, 3, 1)),
    ("histc infinite min", lambda L: L.histc(L.tensor([1.0]), 3, float("-inf"), 1)),
    ("histc NaN max", lambda L: L.histc(L.tensor([1.0]), 3, 0, float("nan"))),
    ("histc NaN data", lambda L: L.histc(L.tensor([1.0, float("nan")]), 3)),
    ("histc infinite data", lambda L: L.histc(L.tensor([1.0, float("inf")]), 3)),
    ("histc integers", lambda L: L.histc(L.tensor([1, 2]), 3)),
    ("histc bool", lambda L: L.histc(L.tensor([True, False]), 3)),
    ("histc integers, bins 0", lambda L: L.histc(L.tensor([1, 2]), 0)),
    ("histc max a string", lambda L: L.histc(L.tensor([1.0]), 3, 0, "3")),
    ("histc huge max", lambda L: L.histc(L.tensor([1.0]), 3, 0, 2**70)),
]


@pytest.mark.parametrize("what,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(what, fn):
    assert_same_error(lambda: fn(mg), lambda: fn(torch))
