"""tensordot and inner against torch: values, dtypes and shapes for random shapes, dims in every
form (an int, two lists, a tensor), contracted dims of size 1 (summed first), full contractions
(dot, or mul + sum for non-contiguous operands), integer operands, the whole backward graph node
for node, gradients, and the errors of each check in torch's order."""

import warnings

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

import minigrad as mg
from parity import assert_same, assert_same_error, check_parity, make_pair, recipes


def graph(fn):
    """The backward graph under `fn` as (depth, node name) pairs, depth first."""
    out, stack = [], [(fn, 0)]
    while stack:
        node, depth = stack.pop()
        if node is None or type(node).__name__ == "AccumulateGrad":
            continue
        out.append((depth, type(node).__name__))
        stack.extend((n, depth + 1) for n, _ in reversed(node.next_functions))
    return out


@st.composite
def contraction(draw):
    """(a pair, b pair, dims) with matching contracted sizes; some contracted dims are 1 on one side."""
    k = draw(st.integers(0, 3))
    contracted = draw(st.lists(st.integers(1, 3), min_size=k, max_size=k))
    a_kept = draw(st.lists(st.integers(0, 3), max_size=2))
    b_kept = draw(st.lists(st.integers(0, 3), max_size=2))
    a_c = [1 if draw(st.integers(0, 4)) == 0 else c for c in contracted]
    b_c = [1 if (draw(st.integers(0, 4)) == 0 and a != 1) else c for a, c in zip(a_c, contracted)]
    a_order = draw(st.permutations(range(len(a_kept) + k)))
    b_order = draw(st.permutations(range(len(b_kept) + k)))
    a_sizes = a_kept + a_c
    b_sizes = b_kept + b_c
    a_shape = [a_sizes[i] for i in a_order]
    b_shape = [b_sizes[i] for i in b_order]
    dims_a = [a_order.index(len(a_kept) + i) for i in range(k)]
    dims_b = [b_order.index(len(b_kept) + i) for i in range(k)]
    dims_a = [d - len(a_shape) if draw(st.booleans()) else d for d in dims_a]
    key = draw(st.sampled_from(["float32", "float64", "int64"]))
    dt = np.dtype(key)
    elements = st.integers(-5, 5).map(float)
    a = draw(hnp.arrays(np.float64, tuple(a_shape), elements=elements)).astype(dt)
    b = draw(hnp.arrays(np.float64, tuple(b_shape), elements=elements)).astype(dt)
    pa = make_pair(np.asarray(a), draw(recipes(len(a_shape))))
    pb = make_pair(np.asarray(b), draw(recipes(len(b_shape))))
    return pa, pb, (dims_a, dims_b)


@given(data=contraction())
def test_tensordot_with_dim_lists(data):
    (ma, ta), (mb, tb), dims = data
    check_parity(lambda: mg.tensordot(ma, mb, dims), lambda: torch.tensordot(ta, tb, dims))


@pytest.mark.parametrize("n,b_shape", [(0, (3, 2)), (1, (4, 3, 2)), (2, (3, 4, 2))])
def test_tensordot_with_an_int_and_a_tensor(n, b_shape):
    a, b = np.arange(24.0).reshape(2, 3, 4), np.arange(float(np.prod(b_shape))).reshape(b_shape)
    ma, mb, ta, tb = mg.tensor(a), mg.tensor(b), torch.tensor(a), torch.tensor(b)
    assert_same(mg.tensordot(ma, mb, n), torch.tensordot(ta, tb, n))
    assert_same(mg.tensordot(ma, mb, dims=mg.tensor(n)), torch.tensordot(ta, tb, dims=torch.tensor(n)))
    assert_same(mg.tensordot(ma, mb), torch.tensordot(ta, tb)) if n == 2 else None
    c = np.arange(8.0).reshape(4, 2)
    assert_same(mg.tensordot(ma, mg.tensor(c), mg.tensor([[2], [0]])),
                torch.tensordot(ta, torch.tensor(c), torch.tensor([[2], [0]])))


@given(data=contraction())
def test_tensordot_graph_and_gradients(data):
    (ma, ta), (mb, tb), dims = data
    if ta.dtype == torch.int64:
        return
    ma, mb = ma.detach().requires_grad_(), mb.detach().requires_grad_()
    ta, tb = ta.detach().requires_grad_(), tb.detach().requires_grad_()
    rm, rt = mg.tensordot(ma, mb, dims), torch.tensordot(ta, tb, dims)
    assert graph(rm.grad_fn) == graph(rt.grad_fn)
    g = np.linspace(-1, 1, rt.numel()).reshape(tuple(rt.shape)).astype(np.dtype(str(rt.dtype).split(".")[-1]))
    rm.backward(mg.tensor(g))
    rt.backward(torch.tensor(g))
    assert_same(ma.grad, ta.grad)
    assert_same(mb.grad, tb.grad)


@given(data=st.data())
def test_inner(data):
    shapes = data.draw(st.tuples(hnp.array_shapes(min_dims=0, max_dims=3, max_side=3),
                                 hnp.array_shapes(min_dims=0, max_dims=3, max_side=3)))
    sa, sb = shapes
    if sa and sb and data.draw(st.booleans()):
        sb = sb[:-1] + sa[-1:]  # mostly matching last dims
    a = np.asarray(np.arange(np.prod(sa), dtype=np.float64).reshape(sa) - 3)
    b = np.asarray(np.arange(np.prod(sb), dtype=np.float64).reshape(sb) * 0.5)
    ma, ta = make_pair(a, data.draw(recipes(len(sa))))
    mb, tb = make_pair(b, data.draw(recipes(len(sb))))
    check_parity(lambda: ma.inner(mb), lambda: ta.inner(tb))
    kind, rm, rt = check_parity(lambda: mg.inner(ma.requires_grad_(), mb), lambda: torch.inner(ta.requires_grad_(), tb))
    if kind == "ok":
        assert graph(rm.grad_fn) == graph(rt.grad_fn)


def test_errors_match_torch():
    a, b = np.ones((2, 3)), np.ones((3, 4))
    ma, mb, ta, tb = mg.tensor(a), mg.tensor(b), torch.tensor(a), torch.tensor(b)
    for dims in ([1, 0], ([1],), "x", (["a"], [0]), ([1], [5]), ([1, 1], [0, 0]), ([0], [0]), 3, -1, ([1, 0], [0]),
                 (1, [0]), ([1.0], [0]), True):
        check_parity(lambda: mg.tensordot(ma, mb, dims), lambda: torch.tensordot(ta, tb, dims))
    assert_same_error(lambda: mg.tensordot(ma, mb.int(), 1), lambda: torch.tensordot(ta, tb.int(), 1))
    assert_same_error(lambda: mg.tensordot(ma, 2, 1), lambda: torch.tensordot(ta, 2, 1))
    assert_same_error(lambda: mg.inner(ma, mb), lambda: torch.inner(ta, tb))
    assert_same_error(lambda: mg.inner(ma, 2), lambda: torch.inner(ta, 2))
    assert_same_error(lambda: ma.inner(mb.t().int()), lambda: ta.inner(tb.t().int()))
    with pytest.raises(RuntimeError, match=r"^contracted dimensions need to match, but first has size 2 in dim 0 and "
                                           r"second has size 3 in dim 0$"):
        mg.tensordot(ma, mb, ([0], [0]))


def test_out_is_resized_and_written_as_torch_does():
    a, b = np.ones((2, 3)), np.arange(12.0).reshape(3, 4)
    for make_out in (lambda L: L.empty(0, dtype=L.float64), lambda L: L.zeros(2, 4, dtype=L.float64),
                     lambda L: L.zeros(3, dtype=L.float64)):
        mo, to = make_out(mg), make_out(torch)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            rm = mg.tensordot(mg.tensor(a), mg.tensor(b), 1, out=mo)
            rt = torch.tensordot(torch.tensor(a), torch.tensor(b), 1, out=to)
        # (torch's C++ warnings end with where they were triggered)
        resized = [str(w.message).split(" (Triggered internally")[0] for w in caught if "was resized" in str(w.message)]
        assert len(resized) == (2 if to.numel() == 8 and make_out(torch).numel() == 3 else 0)
        assert len(set(resized)) <= 1  # the same words from both
        assert rm is mo and rt is to
        assert_same(mo, to)
        assert mo._version == to._version
    assert_same_error(lambda: mg.tensordot(mg.tensor(a), mg.tensor(b), 1, out=mg.zeros(2, 4, dtype=mg.int64)),
                      lambda: torch.tensordot(torch.tensor(a), torch.tensor(b), 1, out=torch.zeros(2, 4, dtype=torch.int64)))
