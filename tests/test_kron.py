"""`kron` against torch: values, dtypes (promotion included) and strides over ranks 0-3 of both
operands, the graph torch's KronImpl builds (UnsafeViewBackward0 over MulBackward0 over one
UnsafeViewBackward0 per operand, with their saved sizes), first and second order gradients, the
error torch gives for a transposed operand, and argument errors. One divergence is tested as
minigrad's own behaviour (docs/divergences.md): an operand changed in place after kron is caught
at backward, where torch's `_unsafe_view` loses the version counter and reads the new values."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import minigrad as mg
from minigrad.testing import assert_same
from parity import assert_same_error

shapes = st.lists(st.integers(0, 3), min_size=0, max_size=3)


@settings(max_examples=80, deadline=None)
@given(a_shape=shapes, b_shape=shapes, dtypes=st.sampled_from([("float32", "float32"), ("float64", "float32"),
                                                             ("int64", "bool"), ("int32", "float64")]))
def test_values_dtypes_and_strides_match_torch(a_shape, b_shape, dtypes):
    rng = np.random.default_rng(len(a_shape) * 7 + len(b_shape))
    a = rng.integers(-3, 4, size=a_shape).astype(dtypes[0])
    b = rng.integers(-3, 4, size=b_shape).astype(dtypes[1])
    got = mg.kron(mg.tensor(a), mg.tensor(b))
    assert_same(got, torch.kron(torch.tensor(a), torch.tensor(b)), check_stride=True)
    assert_same(mg.tensor(a).kron(mg.tensor(b)), torch.tensor(a).kron(torch.tensor(b)), check_stride=True)
    assert got._base is None


def _graph(lib):
    a = lib.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
    b = lib.tensor(np.linspace(0.5, 2, 4).reshape(2, 1, 2), requires_grad=True)
    k = lib.kron(a, b)
    top = k.grad_fn
    mul = top.next_functions[0][0]
    views = [n for n, _ in mul.next_functions]
    nodes = (top.name(), tuple(top._saved_self_sym_sizes), mul.name(),
             [(v.name(), tuple(v._saved_self_sym_sizes)) for v in views])
    weights = lib.tensor(np.arange(float(k.numel())).reshape(tuple(k.shape)))
    ga, gb = lib.autograd.grad((k * k * weights).sum(), (a, b), create_graph=True)
    ha, hb = lib.autograd.grad((ga * gb.sum()).sum(), (a, b))
    return nodes, tuple(k.shape), ga.tolist(), gb.tolist(), ha.tolist(), hb.tolist()


def test_graph_saved_sizes_and_gradients_match_torch():
    (nodes_m, shape_m, *grads_m), (nodes_t, shape_t, *grads_t) = _graph(mg), _graph(torch)
    assert (nodes_m, shape_m) == (nodes_t, shape_t)
    for gm, gt in zip(grads_m, grads_t):  # sums over broadcast dims may round in another order
        np.testing.assert_allclose(gm, gt, rtol=1e-13, atol=0)


ERRORS = [
    ("transposed operand", lambda L: L.kron(L.ones(2, 3).t(), L.ones(2))),
    ("other a list", lambda L: L.kron(L.ones(2), [1])),
    ("input a list", lambda L: L.kron([1.0], L.ones(2))),
    ("method other a number", lambda L: L.ones(2).kron(2)),
]


@pytest.mark.parametrize("what,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(what, fn):
    assert_same_error(lambda: fn(mg), lambda: fn(torch))


def test_an_operand_changed_in_place_after_kron_is_caught():
    x = mg.ones(2, requires_grad=True)
    b = mg.arange(3.0, requires_grad=True)
    h = x * 2
    k = mg.kron(h, b)
    h.mul_(10)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        k.sum().backward()
