"""Joining and gathering against torch: cat/concat/concatenate, stack, gather, scatter(_),
scatter_add(_), index_select, index_add(_), masked_select. Random shapes, layouts and dtypes;
in-place identity and `_version`; torch's error types and texts, out-of-range indices included."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
from parity import (
    ALL_DTYPES, DTYPES, assert_same, assert_same_error, check_parity, make_pair, recipes,
    run_both, shapes, values,
)

INDEX_DTYPES = ["int64", "int32"]


@st.composite
def operand(draw, key, shape, **value_kw):
    """A (minigrad, torch) pair of `shape` with a random layout (transposed, strided, offset)."""
    arr = draw(values(key, tuple(shape), **value_kw))
    return make_pair(arr, draw(recipes(len(shape))))


def pairs_of(items):
    return [p[0] for p in items], [p[1] for p in items]


def check_inplace(fm, ft, m, t):
    """Runs an in-place op on both; it must return `self`, bump `_version` as torch does (once,
    or not at all when it raises), and leave equal values and strides."""
    vm, vt = m._version, t._version
    kind, rm, rt = run_both(lambda: fm(m), lambda: ft(t))
    if kind == "ok":
        assert rm is m and rt is t
        assert_same(m, t, check_stride=True)
    assert m._version - vm == t._version - vt


def bad_index_value(draw, size):
    return draw(st.sampled_from([size, size + 3, -1, -size - 1]))


# ----- cat / stack -----

@st.composite
def cat_inputs(draw, compatible=True):
    ndim = draw(st.integers(1, 4))
    base = list(draw(shapes(ndim, ndim, 0, 4)))
    dim = draw(st.integers(-ndim, ndim - 1))
    items = []
    for _ in range(draw(st.integers(1, 4))):
        if draw(st.integers(0, 7)) == 0:
            shape = [0]  # legacy empty: skipped by torch whatever the others' shapes
        else:
            shape = list(base)
            shape[dim] = draw(st.integers(0, 4))
            if not compatible and draw(st.integers(0, 3)) == 0:
                if draw(st.booleans()):
                    shape.append(2)
                else:
                    shape[draw(st.integers(0, ndim - 1))] += 1
        items.append(draw(operand(draw(st.sampled_from(ALL_DTYPES)), shape)))
    return items, dim


@given(cat_inputs())
def test_cat_matches_torch(case):
    items, dim = case
    ms, ts = pairs_of(items)
    check_parity(lambda: mg.cat(ms, dim), lambda: torch.cat(ts, dim), check_stride=True)
    check_parity(lambda: mg.cat(tuple(ms), dim=dim), lambda: torch.cat(tuple(ts), dim=dim), check_stride=True)
    check_parity(lambda: mg.concat(ms, dim), lambda: torch.concat(ts, dim))
    check_parity(lambda: mg.concatenate(ms, axis=dim), lambda: torch.concatenate(ts, axis=dim))


@given(cat_inputs(compatible=False))
def test_cat_errors_match_torch(case):
    items, dim = case
    ms, ts = pairs_of(items)
    check_parity(lambda: mg.cat(ms, dim), lambda: torch.cat(ts, dim), check_stride=True)


@st.composite
def stack_inputs(draw, compatible=True):
    shape = list(draw(shapes(0, 3, 0, 4)))
    dim = draw(st.integers(-len(shape) - 1, len(shape)))
    items = []
    for _ in range(draw(st.integers(1, 4))):
        s = list(shape)
        if not compatible and draw(st.integers(0, 3)) == 0:
            s = s[1:] if s and draw(st.booleans()) else s + [1]
        items.append(draw(operand(draw(st.sampled_from(ALL_DTYPES)), s)))
    return items, dim


@given(stack_inputs())
def test_stack_matches_torch(case):
    items, dim = case
    ms, ts = pairs_of(items)
    check_parity(lambda: mg.stack(ms, dim), lambda: torch.stack(ts, dim), check_stride=True)


@given(stack_inputs(compatible=False))
def test_stack_errors_match_torch(case):
    items, dim = case
    ms, ts = pairs_of(items)
    check_parity(lambda: mg.stack(ms, dim=dim), lambda: torch.stack(ts, dim=dim), check_stride=True)


def channels_last(shape, key="float32"):
    """A (minigrad, torch) pair whose memory walks C innermost (NHWC / NDHWC)."""
    perm = (0,) + tuple(range(2, len(shape))) + (1,)
    inverse = tuple(int(i) for i in np.argsort(perm))
    arr = np.arange(np.prod(shape), dtype=DTYPES[key][2]).reshape([shape[p] for p in perm])
    m, t = make_pair(arr)
    return m.permute(*inverse), t.permute(*inverse)


@pytest.mark.parametrize("shape", [(2, 3, 4, 5), (2, 1, 4, 5), (2, 3, 1, 1), (1, 3, 2, 2), (2, 3, 2, 2, 2)])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_channels_last_inputs_keep_their_memory_format(shape, dim):
    (m1, t1), (m2, t2) = channels_last(shape), channels_last(shape, "float64")
    assert_same(mg.cat([m1, m2], dim), torch.cat([t1, t2], dim), check_stride=True)
    plain = make_pair(np.ones(shape, np.float32))
    assert_same(mg.cat([m1, plain[0]], dim), torch.cat([t1, plain[1]], dim), check_stride=True)
    for d in (0, 2, len(shape)):
        assert_same(mg.stack([m1, m1], d), torch.stack([t1, t1], d), check_stride=True)


JOIN_ERRORS = [
    ("cat", lambda lib: lib.cat([])),
    ("cat", lambda lib: lib.cat([lib.ones(2, 3), lib.ones(2, 3)], dim=2)),
    ("cat", lambda lib: lib.cat([lib.ones(0), lib.ones(2, 3)], dim=2)),
    ("cat", lambda lib: lib.cat([lib.tensor(1.0), lib.tensor(2.0)])),
    ("cat", lambda lib: lib.cat([lib.ones(2), lib.ones(3, 4), lib.tensor(2.0)])),
    ("cat", lambda lib: lib.cat([lib.ones(2, 3), 3])),
    ("cat", lambda lib: lib.cat(lib.ones(2))),
    ("cat", lambda lib: lib.cat([lib.ones(3)], dim=0.5)),
    ("cat", lambda lib: lib.cat([lib.ones(2, 3), lib.ones(0, 0)])),
    ("stack", lambda lib: lib.stack([])),
    ("stack", lambda lib: lib.stack([lib.ones(2), 3])),
    ("stack", lambda lib: lib.stack(lib.ones(2, 2))),
    ("stack", lambda lib: lib.stack([lib.tensor(1.0), lib.ones(1)], dim=1)),
    ("stack", lambda lib: lib.stack([lib.ones(2, 3), lib.ones(2, 3)], dim=-4)),
]


@pytest.mark.parametrize("op,call", JOIN_ERRORS)
def test_join_errors_match_torch(op, call):
    assert_same_error(lambda: call(mg), lambda: call(torch))


def test_cat_of_only_legacy_empty_tensors_ignores_dim():
    assert_same(mg.cat([mg.ones(0), mg.ones(0, dtype=mg.float64)], dim=5),
                torch.cat([torch.ones(0), torch.ones(0, dtype=torch.float64)], dim=5), check_stride=True)


# ----- gather / scatter -----

@st.composite
def gather_case(draw, valid=True):
    """(x pair, dim, index pair): index no larger than x off `dim`, values in range unless not
    `valid`, where one bad value (repeated) makes the message independent of scan order."""
    ndim = draw(st.integers(0, 3))
    xshape = list(draw(shapes(ndim, ndim, 0, 4)))
    n = max(ndim, 1)
    dim = draw(st.integers(-n, n - 1))
    d = dim % n
    ishape = [draw(st.integers(0, s)) for s in xshape]
    if ndim:
        ishape[d] = draw(st.integers(0, 5))
    size = xshape[d] if ndim else 1
    ikey = draw(st.sampled_from(INDEX_DTYPES))
    arr = draw(values(ikey, tuple(ishape), min_value=0, max_value=max(size - 1, 0)))
    if not valid and arr.size:
        bad = bad_index_value(draw, size)
        mask = draw(values("bool", arr.shape))
        mask.flat[draw(st.integers(0, arr.size - 1))] = True
        arr = np.where(mask, np.asarray(bad, arr.dtype), arr)
    index = make_pair(arr, draw(recipes(len(ishape))))
    x = draw(operand(draw(st.sampled_from(ALL_DTYPES)), xshape))
    return x, dim, index


@given(gather_case())
def test_gather_matches_torch(case):
    (m, t), dim, (mi, ti) = case
    check_parity(lambda: m.gather(dim, mi), lambda: t.gather(dim, ti), check_stride=True)
    check_parity(lambda: mg.gather(m, dim, mi), lambda: torch.gather(t, dim, ti))


@given(gather_case(valid=False))
def test_gather_out_of_range_raises_like_torch(case):
    (m, t), dim, (mi, ti) = case
    check_parity(lambda: m.gather(dim, mi), lambda: t.gather(dim, ti))


@st.composite
def scatter_case(draw, valid=True, tensor_src=None):
    (m, t), dim, (mi, ti) = draw(gather_case(valid))
    key = str(t.dtype).split(".")[-1]
    if tensor_src if tensor_src is not None else draw(st.booleans()):
        sshape = [s + draw(st.integers(0, 2)) for s in ti.shape]
        src = draw(operand(key, sshape))
    else:
        v = draw(values(key, ()))
        src = (v.item(), v.item())
    return (m, t), dim, (mi, ti), src


@pytest.mark.filterwarnings("ignore:The reduce argument of torch.scatter")
@given(scatter_case(), st.sampled_from([None, "add", "multiply"]))
def test_scatter_matches_torch(case, reduce):
    (m, t), dim, (mi, ti), (ms, ts) = case
    kw = {} if reduce is None else {"reduce": reduce}
    check_parity(lambda: m.scatter(dim, mi, ms, **kw), lambda: t.scatter(dim, ti, ts, **kw), check_stride=True)
    check_inplace(lambda x: x.scatter_(dim, mi, ms, **kw), lambda x: x.scatter_(dim, ti, ts, **kw), m, t)


@given(scatter_case(valid=False))
def test_scatter_out_of_range_raises_and_writes_nothing(case):
    (m, t), dim, (mi, ti), (ms, ts) = case
    before = m.clone()
    check_inplace(lambda x: x.scatter_(dim, mi, ms), lambda x: x.scatter_(dim, ti, ts), m, t)
    assert_same(m, torch.from_numpy(before.numpy()))


@given(scatter_case(tensor_src=True))
def test_scatter_add_matches_torch(case):
    (m, t), dim, (mi, ti), (ms, ts) = case
    check_parity(lambda: m.scatter_add(dim, mi, ms), lambda: t.scatter_add(dim, ti, ts), check_stride=True)
    check_parity(lambda: mg.scatter_add(m, dim, mi, ms), lambda: torch.scatter_add(t, dim, ti, ts))
    check_inplace(lambda x: x.scatter_add_(dim, mi, ms), lambda x: x.scatter_add_(dim, ti, ts), m, t)


@given(st.data())
def test_scatter_shape_and_dtype_errors_match_torch(data):
    """Random ranks and sizes for self, index and src: mostly invalid combinations."""
    def tensor(key, nd):
        return data.draw(operand(key, list(data.draw(shapes(nd, nd, 0, 3)))))
    key = data.draw(st.sampled_from(ALL_DTYPES))
    (m, t) = tensor(key, data.draw(st.integers(0, 3)))
    (mi, ti) = tensor(data.draw(st.sampled_from(INDEX_DTYPES + ["float32"])), data.draw(st.integers(0, 3)))
    (ms, ts) = tensor(data.draw(st.sampled_from([key, key, "float64"])), data.draw(st.integers(0, 3)))
    dim = data.draw(st.integers(-3, 2))
    check_parity(lambda: m.scatter(dim, mi, ms), lambda: t.scatter(dim, ti, ts))
    check_parity(lambda: m.scatter(dim, mi, 1), lambda: t.scatter(dim, ti, 1))
    check_parity(lambda: m.gather(dim, mi), lambda: t.gather(dim, ti))


# ----- index_select / index_add -----

@st.composite
def index_case(draw, valid=True):
    ndim = draw(st.integers(0, 3))
    xshape = list(draw(shapes(ndim, ndim, 0, 4)))
    n = max(ndim, 1)
    dim = draw(st.integers(-n, n - 1))
    size = xshape[dim % n] if ndim else 1
    ishape = () if draw(st.integers(0, 4)) == 0 else (draw(st.integers(0, 5)),)
    if ndim == 0:
        ishape = draw(st.sampled_from([(), (1,)]))
    arr = draw(values(draw(st.sampled_from(INDEX_DTYPES)), ishape, min_value=0, max_value=max(size - 1, 0)))
    if not valid and arr.size:
        arr = arr.copy()
        arr.flat[draw(st.integers(0, arr.size - 1))] = bad_index_value(draw, size)
    index = make_pair(arr, draw(recipes(len(ishape))))
    x = draw(operand(draw(st.sampled_from(ALL_DTYPES)), xshape))
    return x, dim, index


@given(index_case())
def test_index_select_matches_torch(case):
    (m, t), dim, (mi, ti) = case
    check_parity(lambda: m.index_select(dim, mi), lambda: t.index_select(dim, ti), check_stride=True)
    check_parity(lambda: mg.index_select(m, dim, mi), lambda: torch.index_select(t, dim, ti))


@given(index_case(valid=False))
def test_index_select_out_of_range_raises_like_torch(case):
    """torch's three CPU paths (dim 1, other dims, 0-/1-D) each have their own message."""
    (m, t), dim, (mi, ti) = case
    check_parity(lambda: m.index_select(dim, mi), lambda: t.index_select(dim, ti))


def alpha_for(draw, key):
    if key == "bool":
        return draw(st.sampled_from([True, False, 1, 0]))
    return draw(st.sampled_from([1, 2, -3, 0.5, -2.5] if key.startswith("float") else [1, 2, -3, 2.5]))


@given(st.data(), st.booleans())
def test_index_add_matches_torch(data, valid):
    (m, t), dim, (mi, ti) = data.draw(index_case(valid))
    key = str(t.dtype).split(".")[-1]
    sshape = list(t.shape)
    if t.dim():
        sshape[dim % t.dim()] = ti.numel()
    (ms, ts) = data.draw(operand(key, sshape))
    alpha = alpha_for(data.draw, key)
    check_parity(lambda: m.index_add(dim, mi, ms, alpha=alpha), lambda: t.index_add(dim, ti, ts, alpha=alpha), check_stride=True)
    check_parity(lambda: mg.index_add(m, dim, mi, ms), lambda: torch.index_add(t, dim, ti, ts))
    check_inplace(lambda x: x.index_add_(dim, mi, ms, alpha=alpha), lambda x: x.index_add_(dim, ti, ts, alpha=alpha), m, t)


# ----- masked_select -----

@given(st.data())
def test_masked_select_matches_torch(data):
    shape = list(data.draw(shapes(0, 3, 0, 4)))
    mshape = [1 if data.draw(st.booleans()) else s for s in shape[data.draw(st.integers(0, len(shape))):]]
    if data.draw(st.booleans()):  # broadcast the other way round too
        shape, mshape = [1 if data.draw(st.booleans()) else s for s in shape], shape
    (m, t) = data.draw(operand(data.draw(st.sampled_from(ALL_DTYPES)), shape))
    (mm_, tm) = data.draw(operand("bool", mshape))
    check_parity(lambda: m.masked_select(mm_), lambda: t.masked_select(tm), check_stride=True)
    check_parity(lambda: mg.masked_select(m, mm_), lambda: torch.masked_select(t, tm))


INDEX_ERRORS = [
    lambda lib: lib.arange(12.0).reshape(3, 4).gather(1, lib.tensor([[0.0]])),
    lambda lib: lib.arange(12.0).reshape(3, 4).gather(2, lib.tensor([[0]])),
    lambda lib: lib.arange(12.0).reshape(3, 4).gather(1, lib.tensor([0])),
    lambda lib: lib.arange(12.0).reshape(3, 4).gather(1, lib.zeros(4, 2, dtype=lib.int64)),
    lambda lib: lib.arange(12.0).reshape(3, 4).gather(1, [0]),
    lambda lib: lib.zeros(3, 0).gather(1, lib.zeros(3, 1, dtype=lib.int64)),
    lambda lib: lib.zeros(3, 4).scatter(1, lib.tensor([[0]]), lib.ones(1, 1, dtype=lib.float64)),
    lambda lib: lib.zeros(3, 4).scatter(1, lib.tensor([[0, 1], [2, 0]]), lib.ones(1, 1)),
    lambda lib: lib.zeros(3, 4).scatter(1, lib.zeros(2, 2, dtype=lib.int64), lib.ones(2)),
    lambda lib: lib.zeros(3, 4).scatter(1, lib.zeros(2, dtype=lib.int64), 1.0),
    lambda lib: lib.zeros(3, 4).scatter(1, lib.tensor([[0]]), lib.tensor(3.0)),
    lambda lib: lib.zeros(3, 4).scatter(1, lib.tensor([[0]]), 1.0, reduce="max"),
    lambda lib: lib.zeros(3, 4).scatter(1, lib.tensor([[0]]), lib.ones(1, 1), reduce="mean"),
    lambda lib: lib.zeros(3, 4).scatter(1, lib.zeros(1, 1, dtype=lib.float32), lib.ones(2, dtype=lib.float64)),
    lambda lib: lib.zeros(3, 4).scatter_add(1, lib.tensor([[0]]), 7.0),
    lambda lib: lib.zeros(1, 4).expand(3, 4).scatter_(1, lib.tensor([[0]]), 1.0, reduce="bad"),
    lambda lib: lib.zeros(1, 4).expand(3, 4).scatter_add_(1, lib.tensor([[0]]), lib.ones(1, 1)),
    lambda lib: lib.zeros(1, 4).expand(3, 4).index_add_(1, lib.tensor([0]), lib.ones(3, 1)),
    lambda lib: lib.zeros(3, 4).index_select(1, lib.tensor([[1]])),
    lambda lib: lib.zeros(3, 4).index_select(1, lib.tensor([1.0])),
    lambda lib: lib.zeros(()).index_select(0, lib.tensor([0, 0])),
    lambda lib: lib.zeros(0, 3).index_select(0, lib.tensor([0])),
    lambda lib: lib.zeros(0, 3).index_select(1, lib.tensor([5])),
    lambda lib: lib.zeros(3, 0).index_select(1, lib.tensor([0])),
    lambda lib: lib.zeros(3, 4).index_add(1, lib.tensor([0]), lib.ones(3, 2)),
    lambda lib: lib.zeros(3, 4).index_add(1, lib.tensor([0]), lib.ones(2, 1)),
    lambda lib: lib.zeros(3, 4).index_add(1, lib.tensor([0]), lib.ones(3)),
    lambda lib: lib.zeros(3, 4).index_add(1, lib.tensor([[0]]), lib.ones(3, 1)),
    lambda lib: lib.zeros(3).index_add(0, lib.tensor([[0]], dtype=lib.int32), lib.ones(1)),
    lambda lib: lib.zeros(3, 4).index_add(1, lib.tensor([0.0]), lib.ones(3, 1)),
    lambda lib: lib.zeros(3, 4).index_add(1, lib.tensor([0]), lib.ones(3, 1, dtype=lib.float64)),
    lambda lib: lib.zeros(3).index_add(0, lib.tensor([0, 1]), lib.tensor(1.0)),
    lambda lib: lib.zeros(3, 4).index_add(1, lib.tensor([0]), lib.tensor(1.0)),
    lambda lib: lib.zeros(()).index_add(0, lib.tensor([0]), lib.ones(1)),
    lambda lib: lib.zeros(0).index_add(0, lib.tensor([0]), lib.ones(1)),
    lambda lib: lib.zeros(2, 3, 4).index_add(1, lib.tensor([3]), lib.ones(2, 1, 4)),
    lambda lib: lib.zeros(3, 4).masked_select(lib.tensor([1, 0, 1, 0])),
    lambda lib: lib.zeros(3, 4).masked_select(lib.tensor([True, False])),
    lambda lib: lib.zeros(3).masked_select(lib.ones(2, dtype=lib.int64)),
]


@pytest.mark.parametrize("call", INDEX_ERRORS)
def test_index_op_errors_match_torch(call):
    assert_same_error(lambda: call(mg), lambda: call(torch))


@pytest.mark.parametrize("op", ["scatter_", "scatter_add_", "index_add_"])
def test_sources_aliasing_self_are_refused_like_torch(op):
    def run(lib):
        x = lib.arange(6.0)
        idx = lib.tensor([1, 0, 2])
        call = {"scatter_": lambda: x.scatter_(0, idx, x.narrow(0, 3, 3)),
                "scatter_add_": lambda: x.scatter_add_(0, idx, x.narrow(0, 2, 3)),
                "index_add_": lambda: x.index_add_(0, idx, x.narrow(0, 0, 3))}[op]
        return call()
    assert_same_error(lambda: run(mg), lambda: run(torch))


def test_index_aliasing_self_is_refused_like_torch():
    def run(lib):
        x = lib.zeros(3, dtype=lib.int64)
        return x.scatter_(0, x.narrow(0, 0, 1), 1)
    assert_same_error(lambda: run(mg), lambda: run(torch))


def test_inplace_with_empty_index_still_bumps_version():
    for lib in (mg, torch):
        x = lib.zeros(3)
        x.scatter_(0, lib.tensor([], dtype=lib.int64), 1.0)
        x.index_add_(0, lib.tensor([], dtype=lib.int64), lib.ones(0))
        x.scatter_add_(0, lib.tensor([0]), lib.ones(1))
        assert x._version == 3


def test_large_scatter_add_and_gather_are_deterministic():
    """Sizes that take the parallel paths; float sums must not depend on scheduling."""
    rng = np.random.default_rng(0)
    src = rng.standard_normal((400, 700)).astype(np.float32)
    index = rng.integers(0, 50, (400, 700))
    (ms, ts), (mi, ti) = make_pair(src, [("permute", (1, 0))]), make_pair(index)
    first = mg.zeros(400, 50).scatter_add(1, mi, ms)
    assert_same(first, torch.zeros(400, 50).scatter_add(1, ti, ts), rtol=1e-4, atol=1e-4)
    assert np.array_equal(first.numpy(), mg.zeros(400, 50).scatter_add(1, mi, ms).numpy())
    g = ms.gather(0, mg.from_numpy(rng.integers(0, 400, (300, 700))))
    assert g.shape == (300, 700)


def test_scatter_reduce_with_tensor_src_warns_once_like_torch():
    from minigrad._ops import linalg

    linalg._REDUCE_WARNED.clear()
    with pytest.warns(UserWarning, match="reduce argument of torch.scatter with Tensor src is deprecated"):
        mg.zeros(3).scatter(0, mg.tensor([0]), mg.ones(1), reduce="add")
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mg.zeros(3).scatter_(0, mg.tensor([0]), mg.ones(1), reduce="multiply")
        mg.zeros(3).scatter(0, mg.tensor([0]), 2.0, reduce="add")  # a number never warns


@pytest.mark.parametrize("key,value", [
    ("int64", 2.7), ("int32", -2.7), ("bool", 0.5), ("bool", 0), ("float32", True), ("float64", 3), ("int64", True),
])
@pytest.mark.parametrize("reduce", [None, "add", "multiply"])
def test_scatter_value_is_cast_to_self_dtype_like_torch(key, value, reduce):
    m, t = make_pair(np.ones((2, 3), DTYPES[key][2]))
    mi, ti = make_pair(np.array([[2, 0, 0]]))
    kw = {} if reduce is None else {"reduce": reduce}
    check_parity(lambda: m.scatter(1, mi, value, **kw), lambda: t.scatter(1, ti, value, **kw), check_stride=True)
    check_parity(lambda: mg.scatter(m, 1, mi, value=value, **kw), lambda: torch.scatter(t, 1, ti, value=value, **kw))
