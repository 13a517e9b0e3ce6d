"""`take`, `put` and `put_` against torch: the tensor read and written in its logical (row-major)
order whatever its strides, negative positions, every dtype, `accumulate` with repeated
positions, versions and in-place writes through views, the nodes TakeBackward0 / PutBackward0
with their saved values, gradients (first and second order), and torch's errors in its order."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import minigrad as mg
from minigrad.testing import assert_same
from parity import DTYPES, assert_same_error


def _pair(array):
    return mg.tensor(array), torch.tensor(array)


@settings(max_examples=60, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=0, max_size=3),
    transpose=st.booleans(),
    data=st.data(),
)
def test_take_reads_the_logical_order_of_any_layout(shape, transpose, data):
    x = np.arange(float(np.prod(shape, dtype=int))).reshape(shape) - 3
    n = x.size
    picks = data.draw(st.lists(st.integers(-n, n - 1), min_size=0, max_size=7))
    index = np.array(picks, dtype=np.int64).reshape(data.draw(st.sampled_from([(len(picks),), (1, len(picks))])))
    m, t = _pair(x)
    if transpose and len(shape) >= 2:
        m, t = m.transpose(0, -1), t.transpose(0, -1)
    assert_same(mg.take(m, mg.tensor(index)), torch.take(t, torch.tensor(index)), check_stride=True)
    assert_same(m.take(mg.tensor(index)), t.take(torch.tensor(index)), check_stride=True)


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("accumulate", [False, True])
def test_put_every_dtype_with_repeated_positions(dtype, accumulate):
    mdt, tdt, _ = DTYPES[dtype]
    base = torch.tensor([[1, 0, 3], [4, 5, 1]]).to(tdt)
    src = torch.tensor([2, 1, 7, 1]).to(tdt)
    idx = torch.tensor([0, -1, 0, 4])  # position 0 twice: accumulated, or the last one wins
    t = base.clone()
    m = mg.tensor(base.tolist(), dtype=mdt)
    got = m.put_(mg.tensor(idx.tolist()), mg.tensor(src.tolist(), dtype=mdt), accumulate)
    want = t.put_(idx, src, accumulate)
    assert got is m
    assert_same(m, t)
    assert m._version == t._version == 1
    out = mg.put(mg.tensor(base.tolist(), dtype=mdt), mg.tensor(idx.tolist()), mg.tensor(src.tolist(), dtype=mdt), accumulate)
    assert_same(out, torch.put(base, idx, src, accumulate))
    assert want is t


def test_put_writes_through_strides_views_and_keeps_the_layout():
    x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    idx, src = [1, 5, -2], [10.0, 20.0, 30.0]
    m, t = _pair(x)
    mv, tv = m.t(), t.t()
    mv.put_(mg.tensor(idx), mg.tensor(src))
    tv.put_(torch.tensor(idx), torch.tensor(src))
    assert_same(m, t)
    assert (m._version, mv._version) == (t._version, tv._version)
    # out of place: torch's clone(preserve_format), then put_
    assert_same(mg.put(mg.tensor(x).t(), mg.tensor(idx), mg.tensor(src)),
                torch.put(torch.tensor(x).t(), torch.tensor(idx), torch.tensor(src)), check_stride=True)
    # an empty index still counts as a write
    for lib in (mg, torch):
        e = lib.zeros(3)
        e.put_(lib.tensor([], dtype=lib.int64), lib.tensor([]))
        assert e._version == 1


def _nodes(lib, accumulate):
    x = lib.tensor(np.linspace(-1, 1, 12).reshape(3, 4), requires_grad=True)
    s = lib.tensor([[0.5, -1.0], [2.0, 3.0]], dtype=lib.float64, requires_grad=True)
    idx = lib.tensor([[0, 5], [5, -1]] if accumulate else [[0, 5], [7, -1]])
    taken = lib.take(x, idx)
    put = lib.put(x * 1, idx, s * 2, accumulate=accumulate)
    fn = put.grad_fn
    saved = (fn.name(), fn._saved_accumulate, fn._saved_index.tolist(), fn._saved_source.tolist(),
             taken.grad_fn.name(), taken.grad_fn._saved_index.tolist(), taken.grad_fn._saved_self.tolist(),
             [n.name() if n else None for n, _ in fn.next_functions])
    weights = lib.arange(12.0, dtype=lib.float64).reshape(3, 4)
    loss = (put * put * weights).sum() + (taken * taken).sum()
    gx, gs = lib.autograd.grad(loss, (x, s), create_graph=True)
    graph = (gx.grad_fn.name(), gs.grad_fn.name())
    hx, hs = lib.autograd.grad((gx * gx).sum() + (gs * gs).sum(), (x, s))
    return saved, graph, gx.tolist(), gs.tolist(), hx.tolist(), hs.tolist()


@pytest.mark.parametrize("accumulate", [False, True])
def test_nodes_saved_values_and_gradients_match_torch(accumulate):
    assert _nodes(mg, accumulate) == _nodes(torch, accumulate)


def test_put_into_a_view_of_a_graph_records_copy_slices():
    names = {}
    for lib in (mg, torch):
        x = lib.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
        y = x * 1
        y[1].put_(lib.tensor([0]), lib.tensor([5.0]))
        (g,) = lib.autograd.grad((y * y).sum(), x)
        names[lib.__name__] = (y.grad_fn.name(), y._version, g.tolist())
    assert names["minigrad"] == names["torch"]


ERRORS = [
    ("take index float", lambda L: L.take(L.arange(6.0), L.tensor([1.0]))),
    ("take index int32", lambda L: L.take(L.arange(6.0), L.tensor([1], dtype=L.int32))),
    ("take index bool", lambda L: L.take(L.arange(6.0), L.tensor([True]))),
    ("take past the end", lambda L: L.take(L.arange(6.0), L.tensor([6]))),
    ("take before the start", lambda L: L.take(L.arange(6.0), L.tensor([-7]))),
    ("take from empty", lambda L: L.take(L.zeros(0), L.tensor([0]))),
    ("take index a list", lambda L: L.take(L.arange(6.0), [0])),
    ("take input a list", lambda L: L.take([1.0], L.tensor([0]))),
    ("put index float and dtype", lambda L: L.zeros(3).put_(L.tensor([0.0]), L.tensor([1]))),
    ("put dtype", lambda L: L.zeros(3).put_(L.tensor([0]), L.tensor([1], dtype=L.float64))),
    ("put numel", lambda L: L.zeros(3).put_(L.tensor([0, 1]), L.tensor([1.0]))),
    ("put into empty", lambda L: L.zeros(0).put_(L.tensor([0]), L.tensor([1.0]))),
    ("put past the end", lambda L: L.zeros(3).put_(L.tensor([3]), L.tensor([1.0]))),
    ("put overlapping self", lambda L: L.zeros(3).expand(2, 3).put_(L.tensor([0]), L.tensor([1.0]))),
    ("put source overlaps self", lambda L: (lambda z: z.put_(L.tensor([0]), z[1:2]))(L.zeros(3))),
    ("put accumulate an int", lambda L: L.zeros(3).put_(L.tensor([0]), L.tensor([1.0]), 1)),
    ("put function accumulate None", lambda L: L.put(L.zeros(3), L.tensor([0]), L.tensor([1.0]), None)),
    ("put source a number", lambda L: L.put(L.zeros(3), L.tensor([0]), 1.0)),
]


@pytest.mark.parametrize("what,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(what, fn):
    assert_same_error(lambda: fn(mg), lambda: fn(torch))


def test_a_refused_put_writes_nothing():
    m = mg.zeros(3)
    with pytest.raises(IndexError):
        m.put_(mg.tensor([0, 1, 3]), mg.tensor([1.0, 2.0, 3.0]))
    assert m.tolist() == [0.0, 0.0, 0.0] and m._version == 0
