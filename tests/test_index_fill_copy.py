"""index_fill / index_fill_ / index_copy / index_copy_ against torch: values, dtype, strides (out of
place keeps self's layout), the in-place variants' returned object and single version bump on
tensors and views, repeated indices (the last copy wins), negative indices (index_fill wraps
them, index_copy refuses them), 0-d self/source/index, and every refusal in torch's order and
words. Gradients, gradcheck and graphs: tests/test_grad_ops.py."""

import hypothesis.extra.numpy as hnp
import numpy as np
import torch
from hypothesis import given, strategies as st

import minigrad as mg
from parity import ALL_DTYPES, DTYPES, assert_same_error, check_parity, make_pair, recipes


@st.composite
def case(draw, dtypes=ALL_DTYPES):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=4))
    key = draw(st.sampled_from(list(dtypes)))
    arr = draw(hnp.arrays(np.int64, shape, elements=st.integers(-5, 5))).astype(DTYPES[key][2])
    m, t = make_pair(np.asarray(arr), draw(recipes(len(shape))))
    n = max(len(shape), 1)
    dim = draw(st.integers(-n, n - 1))
    size = shape[dim % n] if shape else 1
    picks = draw(st.lists(st.integers(-size, size - 1), max_size=4))
    return m, t, dim, picks, key


def _index(lib, picks, zero_d):
    return lib.tensor(picks[0]) if zero_d and picks else lib.tensor(picks, dtype=lib.int64)


@given(c=case(), value=st.sampled_from([1.5, -2, True, "tensor"]), zero_d=st.booleans(), inplace=st.booleans())
def test_index_fill_matches_torch(c, value, zero_d, inplace):
    m, t, dim, picks, key = c
    mv, tv = (mg.tensor(3.0, dtype=m.dtype), torch.tensor(3.0, dtype=t.dtype)) if value == "tensor" else (value, value)
    mi, ti = _index(mg, picks, zero_d), _index(torch, picks, zero_d)
    if inplace:
        before = t._version
        kind, rm, rt = check_parity(lambda: m.index_fill_(dim, mi, mv), lambda: t.index_fill_(dim, ti, tv), check_stride=True)
        if kind == "ok":
            assert rm is m and rt is t and m._version == t._version == before + 1
    else:
        check_parity(lambda: m.index_fill(dim, mi, mv), lambda: t.index_fill(dim, ti, tv), check_stride=True)
        check_parity(lambda: mg.index_fill(m, dim, mi, mv), lambda: torch.index_fill(t, dim, ti, tv), check_stride=True)


@given(c=case(), inplace=st.booleans(), data=st.data())
def test_index_copy_matches_torch(c, inplace, data):
    m, t, dim, picks, key = c
    shape = list(t.shape)
    if shape:
        shape[dim] = len(picks)
    src = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape).astype(DTYPES[key][2]) if shape else \
        np.asarray(7).astype(DTYPES[key][2])
    ms, ts = make_pair(np.asarray(src), data.draw(recipes(len(shape))))
    mi, ti = mg.tensor(picks, dtype=mg.int64), torch.tensor(picks, dtype=torch.int64)
    if inplace:
        before = t._version
        kind, rm, rt = check_parity(lambda: m.index_copy_(dim, mi, ms), lambda: t.index_copy_(dim, ti, ts), check_stride=True)
        if kind == "ok":
            assert rm is m and rt is t and m._version == t._version == before + 1
    else:
        check_parity(lambda: m.index_copy(dim, mi, ms), lambda: t.index_copy(dim, ti, ts), check_stride=True)
        check_parity(lambda: mg.index_copy(m, dim, mi, ms), lambda: torch.index_copy(t, dim, ti, ts), check_stride=True)


def test_repeated_indices_keep_the_last_copy_and_views_see_writes():
    for lib in (mg, torch):
        base = lib.zeros(3, 4)
        view = base[:, 1:]
        out = view.index_copy_(0, lib.tensor([0, 0, 2]), lib.arange(9.0).reshape(3, 3))
        assert out is view and base._version == 1 and view._version == 1
        assert base.tolist() == [[0, 3, 4, 5], [0, 0, 0, 0], [0, 6, 7, 8]]
        base.index_fill_(1, lib.tensor([-1, 0, -1]), -1.0)
        assert base[:, 0].tolist() == base[:, 3].tolist() == [-1, -1, -1] and base._version == 2


def test_filling_an_expanded_tensor_warns_and_fills_as_torch():
    import pytest

    for lib in (mg, torch):
        base = lib.zeros(1, 4)
        with pytest.warns(UserWarning, match="Use of index_fill_ on expanded tensors is deprecated"):
            out = base.expand(3, 4).index_fill_(1, lib.tensor([0, 2]), 5.0)
        assert out.tolist() == [[5, 0, 5, 0]] * 3 and base.tolist() == [[5, 0, 5, 0]] and base._version == 1


def test_refusals_match_torch():
    t = (mg.zeros(3, 4), torch.zeros(3, 4))
    i = (mg.tensor([2, 0]), torch.tensor([2, 0]))
    fills = [
        lambda L, x, i: x.index_fill(0, L.tensor([3]), 1), lambda L, x, i: x.index_fill(0, L.tensor([[0]]), 1),
        lambda L, x, i: x.index_fill(0, L.tensor([0.0]), 1), lambda L, x, i: x.index_fill(2, i, 1),
        lambda L, x, i: x.index_fill(0, i, L.ones(2)),
        lambda L, x, i: x.index_fill(0, i.int(), 1), lambda L, x, i: x.index_fill(0, L.tensor([-4]), 1),
        lambda L, x, i: x.index_copy(0, i, L.ones(3, 4)), lambda L, x, i: x.index_copy(0, i, L.ones(2, 3)),
        lambda L, x, i: x.index_copy(0, i, L.ones(2, 4).double()), lambda L, x, i: x.index_copy(0, L.tensor([5, 0]), L.ones(2, 4)),
        lambda L, x, i: x.index_copy(0, i.int(), L.ones(2, 4)), lambda L, x, i: x.index_copy(0, L.tensor([-1, 0]), L.ones(2, 4)),
        lambda L, x, i: x.index_copy(1, L.tensor([1]), L.ones(3)), lambda L, x, i: x.index_copy(0, L.tensor([[0]]), L.ones(1, 4)),
        lambda L, x, i: x.index_copy(0, i, L.tensor(1.0)), lambda L, x, i: x.index_copy(0, i, 2.0),
        lambda L, x, i: L.zeros(4, requires_grad=True).index_fill_(0, i, 1.0),
        lambda L, x, i: x[:1].expand(3, 4).index_copy_(0, i, L.ones(2, 4)),
    ]
    for f in fills:
        assert_same_error(lambda: f(mg, t[0], i[0]), lambda: f(torch, t[1], i[1]))
    # torch lists its two overloads here; minigrad names the argument: the same TypeError
    for f in (lambda L, x, i: x.index_fill(0, i, "a"), lambda L, x, i: x.index_fill("0", i, 1),
              lambda L, x, i: L.index_fill(2, 0, i, 1)):
        for lib, x, idx in ((mg, t[0], i[0]), (torch, t[1], i[1])):
            try:
                f(lib, x, idx)
            except TypeError:
                continue
            raise AssertionError("expected a TypeError")
