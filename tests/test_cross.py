"""`cross` / `Tensor.cross` / `linalg.cross` against torch: values for every dtype, the dim rules
(torch.cross's first dim of size 3 with its one-time deprecation warning, linalg.cross's -1),
broadcast batch dims, the errors with torch's texts, the node (LinalgCrossBackward0 with its
saved self, other and dim), gradients (including of broadcast operands, summed back by the
engine), gradcheck and the graph of the backward under create_graph."""

import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from parity import assert_same_error
from minigrad.testing import assert_same


def both(values, dtype="float64", requires_grad=False):
    return (mg.tensor(values, dtype=getattr(mg, dtype), requires_grad=requires_grad),
            torch.tensor(values, dtype=getattr(torch, dtype), requires_grad=requires_grad))


def quiet(fn):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn()


@st.composite
def operands(draw):
    """Two operands with a dim of size 3 somewhere, batch dims that broadcast against each other."""
    ndim = draw(st.integers(1, 4))
    dim = draw(st.integers(0, ndim - 1))
    batch = [draw(st.integers(1, 3)) for _ in range(ndim)]
    shape_a, shape_b = list(batch), list(batch)
    for i in range(ndim):
        if i != dim and draw(st.booleans()):
            (shape_a if draw(st.booleans()) else shape_b)[i] = 1
    shape_a[dim] = shape_b[dim] = 3
    dtype = draw(st.sampled_from(["float32", "float64", "int64", "int32"]))
    rng = np.random.default_rng(draw(st.integers(0, 2**31)))
    a, b = rng.integers(-9, 10, shape_a), rng.integers(-9, 10, shape_b)
    if dtype.startswith("float"):
        a, b = a + rng.uniform(-1, 1, shape_a), b + rng.uniform(-1, 1, shape_b)
    neg = draw(st.booleans())
    return a, b, (dim - ndim if neg else dim), dtype


@settings(max_examples=60, deadline=None)
@given(operands())
def test_values_and_shapes_match_torch(case):
    a, b, dim, dtype = case
    (ma, ta), (mb, tb) = both(a, dtype), both(b, dtype)
    assert_same(mg.linalg.cross(ma, mb, dim=dim), torch.linalg.cross(ta, tb, dim=dim), check_stride=True)
    assert_same(mg.cross(ma, mb, dim), torch.cross(ta, tb, dim), check_stride=True)
    assert_same(ma.cross(mb, dim=dim), ta.cross(tb, dim=dim), check_stride=True)


def test_default_dims():
    """torch.cross: the first dim of size 3 (here dim 1), linalg.cross: the last."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3, 3)), rng.standard_normal((2, 3, 3))
    (ma, ta), (mb, tb) = both(a), both(b)
    assert_same(quiet(lambda: mg.cross(ma, mb)), quiet(lambda: torch.cross(ta, tb)))
    assert_same(mg.linalg.cross(ma, mb), torch.linalg.cross(ta, tb))
    assert not np.allclose(mg.linalg.cross(ma, mb).numpy(), quiet(lambda: mg.cross(ma, mb)).numpy())


def test_cross_without_dim_warns_once():
    import minigrad._ops.cross as impl

    impl._warned = False
    x = mg.ones(3)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        mg.cross(x, x)
        x.cross(x)
        mg.cross(x, x, 0)
    assert len(w) == 1 and w[0].category is UserWarning
    assert str(w[0].message).startswith("Using torch.cross without specifying the dim arg is deprecated.")


ERRORS = [
    ("different ranks", lambda L: L.linalg.cross(L.ones(2, 3), L.ones(3))),
    ("dim not of size 3", lambda L: L.linalg.cross(L.ones(3, 2), L.ones(3, 2))),
    ("one side not 3", lambda L: L.linalg.cross(L.ones(2, 3), L.ones(2, 4), dim=0)),
    ("batch mismatch", lambda L: L.linalg.cross(L.ones(2, 3), L.ones(4, 3))),
    ("dim out of range", lambda L: L.linalg.cross(L.ones(2, 3), L.ones(2, 3), dim=2)),
    ("no dim of size 3", lambda L: quiet(lambda: L.cross(L.ones(2, 4), L.ones(2, 4)))),
    ("0-d inputs", lambda L: L.linalg.cross(L.ones(()), L.ones(()))),
    ("0-d inputs, dim past the end", lambda L: L.ones(()).cross(L.ones(()), 1)),
    ("dtypes differ", lambda L: L.linalg.cross(L.ones(3), L.ones(3, dtype=L.float64))),
    ("bool", lambda L: L.linalg.cross(L.ones(3, dtype=L.bool), L.ones(3, dtype=L.bool))),
    ("other not a tensor", lambda L: L.cross(L.ones(3), [1, 2, 3], 0)),
    ("dim not an int", lambda L: L.linalg.cross(L.ones(3), L.ones(3), dim=0.5)),
]


@pytest.mark.parametrize("what,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(what, fn):
    assert_same_error(lambda: fn(mg), lambda: fn(torch))


def test_node_saved_values_and_gradients_of_broadcast_operands():
    rng = np.random.default_rng(1)
    a, b, w = rng.standard_normal((4, 1, 3)), rng.standard_normal((2, 3)), rng.standard_normal((4, 2, 3))
    got = {}
    for lib in (torch, mg):
        x = lib.tensor(a, requires_grad=True)
        y = lib.tensor(b, requires_grad=True)
        z = lib.linalg.cross(x, y.expand(1, 2, 3))  # batch dims (4, 1) and (1, 2) broadcast
        fn = z.grad_fn
        # torch shows a negative saved int as its unsigned pattern (docs/divergences.md): compared modulo 2**64
        saved = (fn.name(), fn._saved_dim % 2**64, fn._saved_self.tolist(), list(fn._saved_other.shape))
        z.backward(lib.tensor(w))
        got[lib.__name__] = (*saved, x.grad.tolist(), y.grad.tolist())
    (nm, dm, sm, om, gxm, gym), (nt, dt, st_, ot, gxt, gyt) = got["minigrad"], got["torch"]
    assert (nm, dm, om) == (nt, dt, ot) == ("LinalgCrossBackward0", 2**64 - 1, [1, 2, 3])
    assert sm == st_
    np.testing.assert_allclose(gxm, gxt, rtol=1e-14)
    np.testing.assert_allclose(gym, gyt, rtol=1e-14)


def test_gradcheck_and_gradgradcheck():
    rng = np.random.default_rng(2)
    x = mg.tensor(rng.standard_normal((2, 3)), requires_grad=True)
    y = mg.tensor(rng.standard_normal((1, 3)), requires_grad=True)
    assert mg.autograd.gradcheck(lambda a, b: mg.linalg.cross(a, b), (x, y))
    assert mg.autograd.gradgradcheck(lambda a, b: mg.linalg.cross(a, b, dim=1), (x, y))


def test_the_backward_graph_has_torchs_nodes():
    rng = np.random.default_rng(3)
    a, b, w = rng.standard_normal((2, 3)), rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    names = {}
    for lib in (torch, mg):
        x, y = lib.tensor(a, requires_grad=True), lib.tensor(b, requires_grad=True)
        gx, gy = lib.autograd.grad(lib.linalg.cross(x, y), (x, y), lib.tensor(w), create_graph=True)
        names[lib.__name__] = (gx.grad_fn.name(), gy.grad_fn.name(),
                               [n.name() for n, _ in gx.grad_fn.next_functions if n is not None])
    assert names["minigrad"] == names["torch"]


def test_in_place_changes_to_saved_operands_are_caught():
    for lib in (torch, mg):
        x = lib.ones(3, requires_grad=True)
        y = lib.tensor([1.0, 2.0, 3.0]) * 1
        z = lib.linalg.cross(x, y)
        y.add_(1)
        with pytest.raises(RuntimeError, match="modified by an inplace operation"):
            z.sum().backward()
