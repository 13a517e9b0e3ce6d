"""`rot90(k, dims)` against torch: values, strides (a transposed copy for odd k, not a view),
every k (negative and past 4) and dim pair, the node Rot90Backward0 with its saved k and dims,
gradients and the graph of the backward, and torch's errors."""

import numpy as np
import pytest
import torch

import minigrad as mg
from minigrad.testing import assert_same
from parity import assert_same_error

DIMS = [(0, 1), (1, 0), (-1, 0), (0, 2), (2, -2), (1, 2)]


@pytest.mark.parametrize("dims", DIMS)
@pytest.mark.parametrize("k", range(-5, 6))
def test_values_strides_node_and_gradient_match_torch(k, dims):
    rng = np.random.default_rng(k + 10)
    x = rng.standard_normal((2, 3, 4))
    got = {}
    for lib in (torch, mg):
        t = lib.tensor(x, requires_grad=True)
        y = t.rot90(k, dims)
        fn = y.grad_fn
        # torch shows negative saved ints as their unsigned pattern (docs/divergences.md)
        node = (fn.name(), fn._saved_k % 2**64, tuple(d % 2**64 for d in fn._saved_dims), y._base is None)
        seed = np.arange(float(np.prod(tuple(y.shape)))).reshape(tuple(y.shape))
        (g,) = lib.autograd.grad(y, t, lib.tensor(seed))
        got[lib.__name__] = (y, node, g)
    (ym, nm, gm), (yt, nt, gt) = got["minigrad"], got["torch"]
    assert_same(ym, yt, check_stride=True)
    assert nm == nt
    assert_same(gm, gt)


def test_function_form_and_defaults():
    x = np.arange(12.0).reshape(3, 4)
    assert_same(mg.rot90(mg.tensor(x)), torch.rot90(torch.tensor(x)), check_stride=True)
    assert_same(mg.rot90(mg.tensor(x), 3), torch.rot90(torch.tensor(x), 3), check_stride=True)
    assert_same(mg.tensor(x).t().rot90(0), torch.tensor(x).t().rot90(0), check_stride=True)


def test_the_backward_graph_has_torchs_nodes():
    names = {}
    for lib in (torch, mg):
        t = lib.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
        y = t.rot90(1) * t.rot90(1)
        (g,) = lib.autograd.grad(y, t, lib.ones(3, 2, dtype=lib.float64), create_graph=True)
        names[lib.__name__] = (g.grad_fn.name(), [n.name() for n, _ in g.grad_fn.next_functions])
        (h,) = lib.autograd.grad(g.sum(), t)
        names[lib.__name__] += (h.tolist(),)
    assert names["minigrad"] == names["torch"]


ERRORS = [
    ("one dim tensor", lambda L: L.ones(3).rot90()),
    ("one rotation dim", lambda L: L.ones(2, 2).rot90(1, [0])),
    ("dim out of range", lambda L: L.ones(2, 2).rot90(1, [0, 2])),
    ("same dim twice by wrap", lambda L: L.ones(2, 2).rot90(1, [0, -2])),
    ("same dim twice", lambda L: L.ones(2, 2).rot90(1, [1, 1])),
    ("negative dim out of range", lambda L: L.ones(2, 2).rot90(1, [-3, 1])),
    ("k a float", lambda L: L.ones(2, 2).rot90(1.5)),
    ("dims an int", lambda L: L.ones(2, 2).rot90(1, 0)),
    ("function input not a tensor", lambda L: L.rot90([[1, 2]])),
]


@pytest.mark.parametrize("what,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(what, fn):
    assert_same_error(lambda: fn(mg), lambda: fn(torch))
