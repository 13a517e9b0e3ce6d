"""Reductions and softmax against torch: values, dtypes, shapes, strides and errors, for every
dtype, random dims (negative, tuples, repeats, out of range), keepdim, non-contiguous inputs,
0-d and empty tensors."""

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
import hypothesis.extra.numpy as hnp
from parity import (
    ALL_DTYPES, DTYPES, assert_same, assert_same_error, check_parity, make_pair, normalize_message, pairs,
    recipes, run_both, shapes, values,
)

INF = math.inf


def tol(t):
    """Tolerances for reductions: float32 sums of a few hundred values in [-10, 10] differ from
    torch's (float32 cascade) summation by well under 1e-3."""
    return dict(rtol=1e-4, atol=1e-3) if t.dtype == torch.float32 else dict(rtol=1e-9, atol=1e-9)


def same(fm, ft, *, loose=None, **kw):
    """check_parity with output strides checked (torch returns fresh row-major results)."""
    kind, m, t = run_both(fm, ft)
    if kind == "ok":
        if loose is None:
            loose = {}
        for a, b in zip(m if isinstance(t, tuple) else (m,), t if isinstance(t, tuple) else (t,)):
            extra = tol(b) if b.dtype.is_floating_point else {}
            extra.update(loose)
            extra.update(kw)
            assert_same(a, b, check_stride=True, **extra)
    return kind, m, t


@st.composite
def dims(draw, ndim, *, single=False, allow_none=True, allow_empty=True, bad=True):
    """A dim argument: None, an int (maybe negative or out of range), or a tuple/list of ints
    (maybe with repeats)."""
    n = max(ndim, 1)
    lo, hi = (-n - 1, n) if bad and draw(st.integers(0, 9)) == 0 else (-n, n - 1)
    kinds = ["int"] + ([] if single else ["tuple"]) + (["none"] if allow_none else [])
    kind = draw(st.sampled_from(kinds))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(lo, hi))
    size = draw(st.integers(0 if allow_empty else 1, ndim + (1 if bad else 0)))
    if size > ndim or (bad and draw(st.integers(0, 9)) == 0):
        ds = draw(st.lists(st.integers(lo, hi), min_size=size, max_size=size))
    else:
        ds = draw(st.permutations(range(ndim)))[:size]
        ds = [d - ndim if draw(st.booleans()) else d for d in ds]
    return tuple(ds) if draw(st.booleans()) else list(ds)


@st.composite
def nan_pairs(draw, dtypes=ALL_DTYPES, max_dims=4, max_side=5):
    """Like pairs(), with some float elements NaN (parity.values cannot mix NaN with bounds)."""
    key = draw(st.sampled_from(list(dtypes)))
    shp = draw(shapes(0, max_dims, 0, max_side))
    arr = draw(values(key, shp))
    if arr.dtype.kind == "f" and draw(st.booleans()):
        arr = np.where(draw(hnp.arrays(np.bool_, shp)), np.nan, arr).astype(arr.dtype)
    return make_pair(arr, draw(recipes(len(shp))))


def dims_kw(d, keepdim):
    return {} if d is None and not keepdim else dict(dim=d, keepdim=keepdim)


DTYPE_ARGS = [None, "float32", "float64", "int64", "int32", "bool"]


def dt(name, lib):
    return None if name is None else DTYPES[name][0 if lib is mg else 1]


# ----- sum, mean, prod -----

@given(pairs(), st.data())
def test_sum(pair, data):
    m, t = pair
    d = data.draw(dims(t.dim()))
    kd = data.draw(st.booleans())
    dtype = data.draw(st.sampled_from(DTYPE_ARGS))
    kw = dims_kw(d, kd)
    same(lambda: m.sum(**kw, dtype=dt(dtype, mg)), lambda: t.sum(**kw, dtype=dt(dtype, torch)))


@given(pairs(), st.data())
def test_mean(pair, data):
    m, t = pair
    d = data.draw(dims(t.dim()))
    kd = data.draw(st.booleans())
    dtype = data.draw(st.sampled_from(DTYPE_ARGS))
    kw = dims_kw(d, kd)
    same(lambda: m.mean(**kw, dtype=dt(dtype, mg)), lambda: t.mean(**kw, dtype=dt(dtype, torch)))


@given(pairs(max_dims=3, max_side=4, min_value=-2, max_value=2), st.data())
def test_prod(pair, data):
    m, t = pair
    d = data.draw(st.one_of(st.none(), dims(t.dim(), single=True)))
    kd = data.draw(st.booleans())
    dtype = data.draw(st.sampled_from(DTYPE_ARGS))
    if d is None:
        same(lambda: m.prod(dtype=dt(dtype, mg)), lambda: t.prod(dtype=dt(dtype, torch)))
    else:
        same(lambda: m.prod(d, kd, dtype=dt(dtype, mg)), lambda: t.prod(d, kd, dtype=dt(dtype, torch)))


def test_sum_prod_dtype_rules():
    for name in ALL_DTYPES:
        m, t = make_pair(np.arange(6).astype(DTYPES[name][2]).reshape(2, 3))
        same(lambda: m.sum(), lambda: t.sum())
        same(lambda: m.prod(1), lambda: t.prod(1))
        same(lambda: m.sum(0, dtype=mg.int32), lambda: t.sum(0, dtype=torch.int32))
    # Casting happens per element before summing; int32 sums wrap like torch's.
    same(lambda: mg.tensor([0.5, 0.7, 1.9]).sum(dtype=mg.int64), lambda: torch.tensor([0.5, 0.7, 1.9]).sum(dtype=torch.int64))
    big = [2**31 - 1, 1]
    same(lambda: mg.tensor(big, dtype=mg.int32).sum(dtype=mg.int32), lambda: torch.tensor(big, dtype=torch.int32).sum(dtype=torch.int32))
    same(lambda: mg.tensor([2**62, 2**62]).sum(), lambda: torch.tensor([2**62, 2**62]).sum())
    same(lambda: mg.tensor([True, True]).sum(dtype=mg.bool), lambda: torch.tensor([True, True]).sum(dtype=torch.bool))


def test_empty_and_zero_dim_sums():
    for shape in [(0,), (0, 3), (2, 0, 3)]:
        m, t = make_pair(np.zeros(shape, np.float32))
        for f in [lambda x: x.sum(), lambda x: x.sum(0), lambda x: x.sum(-1, True), lambda x: x.mean(),
                  lambda x: x.mean(0), lambda x: x.prod(), lambda x: x.prod(0), lambda x: x.long().sum(0)]:
            same(lambda: f(m), lambda: f(t))
    m, t = make_pair(np.array(3.5, np.float32))
    for f in [lambda x: x.sum(0), lambda x: x.sum(-1, keepdim=True), lambda x: x.sum((0,)), lambda x: x.mean(()),
              lambda x: x.prod(-1), lambda x: x.sum((0, -1)), lambda x: x.sum(1)]:
        same(lambda: f(m), lambda: f(t))


# ----- max, min, amax, amin, argmax, argmin -----

@given(nan_pairs(), st.data())
def test_max_min_all(pair, data):
    m, t = pair
    name = data.draw(st.sampled_from(["max", "min"]))
    same(lambda: getattr(m, name)(), lambda: getattr(t, name)())


@given(nan_pairs(), st.data())
def test_max_min_dim(pair, data):
    m, t = pair
    name = data.draw(st.sampled_from(["max", "min"]))
    d = data.draw(dims(t.dim(), single=True, allow_none=False))
    kd = data.draw(st.booleans())
    kind, rm, rt = same(lambda: getattr(m, name)(d, kd), lambda: getattr(t, name)(d, keepdim=kd))
    if kind == "ok":
        assert type(rm).__name__ == name and isinstance(rm, tuple)
        assert_same(rm.values, rt.values)
        assert_same(rm.indices, rt.indices)


@given(nan_pairs(), st.data())
def test_amax_amin(pair, data):
    m, t = pair
    name = data.draw(st.sampled_from(["amax", "amin"]))
    d = data.draw(dims(t.dim(), allow_none=False))
    kd = data.draw(st.booleans())
    same(lambda: getattr(m, name)(d, kd), lambda: getattr(t, name)(d, kd))


@given(nan_pairs(), st.data())
def test_argmax_argmin(pair, data):
    m, t = pair
    name = data.draw(st.sampled_from(["argmax", "argmin"]))
    d = data.draw(st.one_of(st.none(), dims(t.dim(), single=True)))
    kd = data.draw(st.booleans())
    same(lambda: getattr(m, name)(d, kd), lambda: getattr(t, name)(d, keepdim=kd))


def test_ties_and_nan_pick_the_first():
    rows = [[1.0, 3.0, 3.0, 1.0], [math.nan, 2.0, math.nan, 9.0], [2.0, 2.0, 2.0, 2.0]]
    m, t = make_pair(np.array(rows, np.float32))
    for f in [lambda x: x.argmax(1), lambda x: x.argmin(1), lambda x: x.argmax(), lambda x: x.max(1),
              lambda x: x.min(0), lambda x: x.t().argmax(0), lambda x: x.amax(1), lambda x: x.argmin(0)]:
        same(lambda: f(m), lambda: f(t))
    mb, tb = make_pair(np.array([[False, True, True], [True, False, False]]))
    for f in [lambda x: x.max(1), lambda x: x.min(1), lambda x: x.amax(0), lambda x: x.max(), lambda x: x.amin()]:
        same(lambda: f(mb), lambda: f(tb))


def test_max_binary_form():
    m, t = make_pair(np.arange(6, dtype=np.int64).reshape(2, 3))
    mo, to = make_pair(np.array([[2.5], [4.0]], np.float32))
    same(lambda: m.max(mo), lambda: t.max(to))
    same(lambda: m.min(other=mo), lambda: t.min(other=to))
    same(lambda: mg.max(m, mo), lambda: torch.max(t, to))
    same(lambda: mg.minimum(m, mo), lambda: torch.minimum(t, to))
    assert_same_error(lambda: m.max(mo, True), lambda: t.max(to, True))


def test_max_result_type():
    m, t = make_pair(np.array([[1.0, 5.0], [4.0, 2.0]], np.float32))
    rm, rt = m.max(0), t.max(0)
    values, indices = rm
    assert_same(values, rt.values)
    assert_same(indices, rt.indices)
    assert len(rm) == 2 and rm[0] is rm.values
    assert normalize_message(repr(rt)) == repr(rm)
    assert type(mg.min(m, 1, keepdim=True)).__name__ == "min"
    assert isinstance(rm, mg.return_types.max) and not isinstance(rm, mg.return_types.min)


# ----- var, std -----

def run_warned(f):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        try:
            r = f()
        except Exception:  # noqa: BLE001 - compared by run_both
            r = None
    return r, [str(x.message).split(" (Triggered")[0] for x in w if issubclass(x.category, UserWarning)]


@st.composite
def var_calls(draw, ndim):
    """Argument forms of var/std: (), (dim), (dim, unbiased), (dim, correction=), (unbiased), ..."""
    d = draw(dims(ndim))
    kd = draw(st.booleans())
    form = draw(st.sampled_from(["none", "dim", "unbiased_pos", "unbiased_kw", "correction", "bool"]))
    if form == "none":
        return (), {}
    if form == "dim":
        return (d,), {"keepdim": kd}
    if form == "unbiased_pos":
        return (d, draw(st.booleans()), kd), {}
    if form == "unbiased_kw":
        return (), {"dim": d, "unbiased": draw(st.booleans()), "keepdim": kd}
    if form == "correction":
        return (), {"dim": d, "correction": draw(st.sampled_from([0, 1, 2, 0.5, -1, 10, True])), "keepdim": kd}
    return (draw(st.booleans()),), {}


@given(pairs(), st.data())
def test_var_std(pair, data):
    m, t = pair
    name = data.draw(st.sampled_from(["var", "std"]))
    args, kwargs = data.draw(var_calls(t.dim()))
    same(lambda: getattr(m, name)(*args, **kwargs), lambda: getattr(t, name)(*args, **kwargs), loose=dict(rtol=1e-4, atol=1e-4))
    # torch warns when the degrees of freedom are <= 0; so must we, with the same words.
    _, wm = run_warned(lambda: getattr(m, name)(*args, **kwargs))
    _, wt = run_warned(lambda: getattr(t, name)(*args, **kwargs))
    assert wm == wt


def test_var_special_values():
    for row in [[math.inf, 1.0], [math.nan, 1.0], [1.0], [2.0, 2.0, 2.0]]:
        m, t = make_pair(np.array(row, np.float64))
        for f in [lambda x: x.var(), lambda x: x.std(correction=0), lambda x: x.var(0, correction=5)]:
            same(lambda: f(m), lambda: f(t))
    m, t = make_pair(np.zeros((0, 3), np.float32))
    for f in [lambda x: x.var(), lambda x: x.std(0), lambda x: x.var(1, keepdim=True)]:
        same(lambda: f(m), lambda: f(t))


# ----- norm -----

ORDS = [2, 1, INF, -INF, 0, 3, 0.5, -1, -2.5, "fro", None, True]


@given(pairs(), st.data())
def test_norm(pair, data):
    m, t = pair
    p = data.draw(st.sampled_from(ORDS))
    d = data.draw(dims(t.dim()))
    kd = data.draw(st.booleans())
    dtype = data.draw(st.sampled_from([None, None, "float32", "float64", "int64"]))
    same(lambda: m.norm(p, d, kd, dtype=dt(dtype, mg)), lambda: t.norm(p, d, kd, dtype=dt(dtype, torch)),
         loose=dict(rtol=1e-4, atol=1e-4))


def test_norm_errors():
    for shape, dtype in [((2, 0, 3), np.float32), ((0,), np.float64), ((2, 3), np.int64), ((3,), np.float32)]:
        m, t = make_pair(np.zeros(shape, dtype))
        for args in [(INF,), (-INF, 1), (-1, -2), (INF, (0, 1)), (INF, (2, 1)), (-0.5,), (-1.2345678, 0), ("nuc",),
                     ("abc", 0), ("fro", (0, 1, 2)), ("nuc", (0, 0)), ("nuc", 1), (2, (0, 0))]:
            check_parity(lambda: m.norm(*args), lambda: t.norm(*args))
    for shape in [(2, 3), (0,), (2, 0)]:
        m, t = make_pair(np.ones(shape, np.float64))
        for p in [2, INF, -1]:
            for kw in [{}, dict(dim=5), dict(dim=(0, 0)), dict(dim=-1)]:
                for dtype in ["float32", "int64"]:
                    check_parity(lambda: m.norm(p, dtype=dt(dtype, mg), **kw), lambda: t.norm(p, dtype=dt(dtype, torch), **kw))


# ----- logsumexp -----

@given(pairs(), st.data())
def test_logsumexp(pair, data):
    m, t = pair
    d = data.draw(dims(t.dim(), allow_none=False))
    kd = data.draw(st.booleans())
    same(lambda: m.logsumexp(d, kd), lambda: t.logsumexp(d, kd))


def test_logsumexp_infinities():
    rows = [[INF, 1.0], [-INF, -INF], [INF, -INF], [INF, INF], [math.nan, 0.0], [-INF, 2.0]]
    m, t = make_pair(np.array(rows, np.float32))
    same(lambda: m.logsumexp(1), lambda: t.logsumexp(1))
    m, t = make_pair(np.zeros((0, 3), np.float32))
    for d, kd in [(0, False), (1, True), ((), False), ((), True)]:
        same(lambda: m.logsumexp(d, kd), lambda: t.logsumexp(d, kd))


# ----- all, any, count_nonzero -----

@given(nan_pairs(), st.data())
def test_all_any(pair, data):
    m, t = pair
    name = data.draw(st.sampled_from(["all", "any"]))
    d = data.draw(dims(t.dim()))
    kd = data.draw(st.booleans())
    kw = dims_kw(d, kd)
    same(lambda: getattr(m, name)(**kw), lambda: getattr(t, name)(**kw))


@given(nan_pairs(), st.data())
def test_count_nonzero(pair, data):
    m, t = pair
    d = data.draw(dims(t.dim()))
    same(lambda: m.count_nonzero(d), lambda: t.count_nonzero(d))


# ----- softmax, log_softmax -----

@given(pairs(), st.data())
def test_softmax(pair, data):
    m, t = pair
    name = data.draw(st.sampled_from(["softmax", "log_softmax"]))
    d = data.draw(dims(t.dim(), single=True, allow_none=False))
    dtype = data.draw(st.sampled_from([None, None, "float32", "float64", "int64"]))
    same(lambda: getattr(m, name)(d, dtype=dt(dtype, mg)), lambda: getattr(t, name)(d, dtype=dt(dtype, torch)),
         loose=dict(rtol=1e-5, atol=1e-6))


def test_softmax_special_values():
    rows = [[-INF, -INF], [INF, 1.0], [-INF, 1.0], [math.nan, 1.0], [1e30, -1e30]]
    m, t = make_pair(np.array(rows, np.float32))
    for f in [lambda x: x.softmax(1), lambda x: x.log_softmax(1), lambda x: x.softmax(0), lambda x: x.log_softmax(0)]:
        same(lambda: f(m), lambda: f(t))
    for shape in [(), (1,), (2, 3), (2, 1), (0, 3)]:
        for dtype in [np.int64, np.int32, np.bool_]:
            m, t = make_pair(np.zeros(shape, dtype))
            for d in [0, -1]:
                same(lambda: m.softmax(d), lambda: t.softmax(d))
                same(lambda: m.log_softmax(d), lambda: t.log_softmax(d))


# ----- errors, argument forms, module functions -----

def test_error_parity():
    m, t = make_pair(np.arange(6, dtype=np.float32).reshape(2, 3))
    mi, ti = make_pair(np.arange(6, dtype=np.int64).reshape(2, 3))
    me, te = make_pair(np.zeros((0, 3), np.float32))
    mz, tz = make_pair(np.zeros((2, 0, 3), np.float32))
    mb, tb = make_pair(np.zeros((2, 3), np.bool_))
    cases = [
        (m, t, lambda x: x.sum(2)), (m, t, lambda x: x.sum((0, 0))), (m, t, lambda x: x.sum((0, -2))),
        (m, t, lambda x: x.sum((0, 0, 5))), (m, t, lambda x: x.var((0, 0, 5))), (m, t, lambda x: x.norm(2, (0, 0, 5))),
        (mi, ti, lambda x: x.mean()), (mi, ti, lambda x: x.mean(5)), (m, t, lambda x: x.mean(dtype=x.long().dtype)),
        (mi, ti, lambda x: x.var()), (mi, ti, lambda x: x.std(1)), (mi, ti, lambda x: x.norm()),
        (mi, ti, lambda x: x.softmax(0)), (mi, ti, lambda x: x.log_softmax(1)), (mb, tb, lambda x: x.softmax(-1)),
        (mb, tb, lambda x: x.argmax()), (mb, tb, lambda x: x.argmin(0)),
        (me, te, lambda x: x.max()), (me, te, lambda x: x.min()), (me, te, lambda x: x.max(0)), (me, te, lambda x: x.min(-2)),
        (me, te, lambda x: x.amax()), (me, te, lambda x: x.amin(-2)), (me, te, lambda x: x.amax((0, 0))),
        (me, te, lambda x: x.argmax()), (me, te, lambda x: x.argmin(0)), (me, te, lambda x: x.argmax(5)),
        (mz, tz, lambda x: x.amax((1, 0))), (mz, tz, lambda x: x.max(-2)), (mz, tz, lambda x: x.argmin(-2)),
        (m, t, lambda x: x.logsumexp(())), (m, t, lambda x: x.logsumexp(5)),
        (m, t, lambda x: x.softmax(2)), (m, t, lambda x: x.all(2)), (m, t, lambda x: x.count_nonzero((0, 0))),
    ]
    for mm, tt, f in cases:
        assert_same_error(lambda: f(mm), lambda: f(tt))


def test_argument_errors():
    m, t = make_pair(np.arange(6, dtype=np.float32).reshape(2, 3))
    cases = [
        lambda x: x.sum(keepdim=True), lambda x: x.mean(keepdim=True), lambda x: x.sum(True), lambda x: x.sum((True,)),
        lambda x: x.prod((0, 1)), lambda x: x.prod(None), lambda x: x.argmax((0,)), lambda x: x.argmax(True),
        lambda x: x.argmax(1.0), lambda x: x.amax(True), lambda x: x.var(True, True), lambda x: x.logsumexp(),
        lambda x: x.logsumexp(1.5), lambda x: x.logsumexp(None), lambda x: x.softmax(), lambda x: x.softmax(None),
        lambda x: x.softmax(1.0), lambda x: x.log_softmax(), lambda x: x.logsumexp(1, dtype=None),
        lambda x: x.softmax(1, None, 3), lambda x: x.amin(0, 0, 0, 0), lambda x: x.argmin(0, 0, 0, 0),
        lambda x: x.log_softmax(0, 0, 0, 0), lambda x: x.count_nonzero(0, -2),
    ]
    for f in cases:
        assert_same_error(lambda: f(m), lambda: f(t))
    # Same exception type where torch's wording depends on its argument parser's internals.
    for f in [lambda x: x.max((0, 1)), lambda x: x.all(True), lambda x: x.max(dim=None), lambda x: x.var(unbiased=None)]:
        with pytest.raises(TypeError):
            f(t)
        with pytest.raises(TypeError):
            f(m)


def test_argument_forms():
    m, t = make_pair(np.arange(24, dtype=np.float32).reshape(2, 3, 4) % 5)
    forms = [
        lambda x: x.sum(dim=None, keepdim=True), lambda x: x.sum([0, 2]), lambda x: x.sum(()), lambda x: x.mean((-1, 0)),
        lambda x: x.prod(dim=1, keepdim=True), lambda x: x.max(dim=2), lambda x: x.min(0, True), lambda x: x.amax(),
        lambda x: x.amin(dim=[1]), lambda x: x.argmax(dim=None, keepdim=True), lambda x: x.var(None, False),
        lambda x: x.std(dim=(0, 2), unbiased=False, keepdim=True), lambda x: x.var(False), lambda x: x.var(correction=None),
        lambda x: x.norm(p=1, dim=(0, 1)), lambda x: x.norm("fro", [1]), lambda x: x.norm(dim=2, keepdim=True),
        lambda x: x.all(None, keepdim=True), lambda x: x.all(keepdim=True), lambda x: x.any(dim=(0,)),
        lambda x: x.count_nonzero(dim=None), lambda x: x.count_nonzero([0, 1]), lambda x: x.count_nonzero(0, 2),
        lambda x: x.softmax(dim=1),
        lambda x: x.log_softmax(-1, x.double().dtype),
    ]
    for f in forms:
        same(lambda: f(m), lambda: f(t))


def test_module_functions():
    m, t = make_pair(np.arange(6, dtype=np.float32).reshape(2, 3))
    for name, args in [("sum", (1,)), ("mean", ()), ("prod", (0,)), ("amax", ((0, 1),)), ("argmin", (1,)), ("var", (1,)),
                       ("std", ()), ("norm", (1,)), ("logsumexp", (0,)), ("all", ()), ("any", (1,)),
                       ("count_nonzero", ()), ("softmax", (1,)), ("log_softmax", (0,)), ("max", ()), ("min", (1,))]:
        same(lambda: getattr(mg, name)(m, *args), lambda: getattr(torch, name)(t, *args))


def test_softmax_module_function_call_forms():
    """minigrad.softmax / log_softmax take a direct path for (tensor, int dim); every other form
    goes through the generic forwarder: the same values and the same errors as torch either way."""
    m, t = make_pair(np.arange(12, dtype=np.float32).reshape(3, 4) % 5)
    p = mg.nn.Parameter(m.clone())
    forms = [
        lambda lib, x: lib.softmax(x, 1), lambda lib, x: lib.softmax(x, dim=-1), lambda lib, x: lib.log_softmax(x, 0),
        lambda lib, x: lib.log_softmax(x, dim=1), lambda lib, x: lib.softmax(input=x, dim=0),
        lambda lib, x: lib.softmax(x, 1, lib.float64), lambda lib, x: lib.log_softmax(x, dim=1, dtype=lib.float64),
        lambda lib, x: lib.softmax(x.t(), 1), lambda lib, x: lib.softmax(x, np.int64(1)),
    ]
    for f in forms:
        same(lambda: f(mg, m), lambda: f(torch, t))
    # a Tensor subclass (Parameter) takes the generic path, with autograd
    assert_same(mg.softmax(p, 1), torch.softmax(torch.nn.Parameter(t.clone()), 1), **tol(t))
    errors = [
        lambda lib, x: lib.softmax(x), lambda lib, x: lib.softmax(x, 2), lambda lib, x: lib.log_softmax(x, dim=-3),
        lambda lib, x: lib.softmax(3, 1), lambda lib, x: lib.softmax(x, dim=1, foo=2),
    ]
    for f in errors:
        assert_same_error(lambda: f(mg, m), lambda: f(torch, t))


# ----- larger inputs: the parallel and chunked paths -----

@pytest.mark.parametrize("layout", ["contiguous", "transposed", "stepped", "expanded"])
def test_large_reductions_match_torch_and_are_deterministic(layout):
    rng = np.random.default_rng(0)
    base = rng.standard_normal((600, 700)).astype(np.float32)
    t = torch.from_numpy(base.copy())
    m = mg.from_numpy(base.copy())
    if layout == "transposed":
        t, m = t.t(), m.t()
    elif layout == "stepped":
        t, m = (x.as_strided((300, 233), (1400, 3), 1) for x in (t, m))
    elif layout == "expanded":
        t, m = (x.narrow(0, 0, 1).expand(500, 700) for x in (t, m))
    for f in [lambda x: x.sum(), lambda x: x.sum(0), lambda x: x.sum(1), lambda x: x.mean(), lambda x: x.amax(0),
              lambda x: x.argmax(), lambda x: x.argmin(1), lambda x: x.max(0), lambda x: x.var(), lambda x: x.std(0),
              lambda x: x.norm(), lambda x: x.logsumexp(1), lambda x: x.softmax(0), lambda x: x.log_softmax(1),
              lambda x: x.count_nonzero(0), lambda x: (x > 0).all(1)]:
        same(lambda: f(m), lambda: f(t), loose=dict(rtol=1e-4, atol=1e-3))
        a, b = f(m), f(m)
        for u, v in zip(a if isinstance(a, tuple) else (a,), b if isinstance(b, tuple) else (b,)):
            assert np.array_equal(u.numpy(), v.numpy(), equal_nan=True)


def test_large_full_sum_is_accurate():
    # 2^24 + 8 ones (exact in float32): a float32 running sum would stall at 2^24.
    n = (1 << 24) + 8
    assert mg.ones(n).sum().item() == float(n)
    assert mg.ones(n).mean().item() == 1.0
    x = mg.ones(n, dtype=mg.int32)
    assert x.sum().item() == n and x.sum().dtype == mg.int64
    assert mg.ones(3, n // 8).sum(1).tolist() == [float(n // 8)] * 3
    assert mg.ones(n // 8, 3).sum(0).tolist() == [float(n // 8)] * 3


@pytest.mark.parametrize("ord", [0, 0.5, 1, 2, 3, math.inf, -math.inf, -1, -2])
@pytest.mark.parametrize("shape, dim", [((), None), ((1,), None), ((2, 1), 1), ((1, 3), 0), ((2, 2), 1),
                                        ((), 0), ((), -1), ((), (0,)), ((), ()), ((1,), 0)])
def test_norm_of_single_elements_is_their_magnitude(ord, shape, dim):
    # torch skips the reduction when each output reduces one element, so a square that would
    # underflow (1e-200 ** 2) is not lost; larger reductions underflow in both libraries alike.
    # A 0-d tensor with an explicit dim is reduced (torch has no dim size to check there).
    values = np.resize(np.array([5e-300, -3.0, 1.65e-294, 0.0]), shape)
    t = torch.tensor(values, dtype=torch.float64, requires_grad=True)
    m = mg.tensor(values, dtype=mg.float64, requires_grad=True)
    tn, mn = t.norm(ord, dim), m.norm(ord, dim)
    np.testing.assert_array_equal(mn.detach().numpy(), tn.detach().numpy())
    if ord != 0:
        tn.sum().mul(-5).backward()
        mn.sum().mul(-5).backward()
        np.testing.assert_allclose(m.grad.numpy(), t.grad.numpy(), rtol=1e-15, atol=0)  # formulas may round apart by an ulp


@pytest.mark.parametrize("layout", ["0-d", "strided", "contiguous"])
@pytest.mark.parametrize("value", [4.916867e-23, 1e-30, 3e20, 1.5])
def test_float32_two_norm_squares_round_to_float32(value, layout):
    # torch squares float32 in float32: 4.9e-23 squared is a subnormal (its norm is 5.3e-23, not
    # 4.9e-23) and 3e20 squared is inf. Every kernel path (one element, a strided walk, a
    # contiguous vector run) must round each square the same way.
    base = np.array([value, -value, value * 0.5, 0.0], dtype=np.float32)
    if layout == "0-d":
        t, m = torch.tensor(base[0], requires_grad=True), mg.tensor(base[0], requires_grad=True)
        tx, mx, dim = t, m, 0
    else:
        t = torch.tensor(np.tile(base, (3, 1)), requires_grad=True)
        m = mg.tensor(np.tile(base, (3, 1)), requires_grad=True)
        tx, mx, dim = (t.t(), m.t(), 0) if layout == "strided" else (t, m, 1)
    tn, mn = tx.norm(2, dim), mx.norm(2, dim)
    np.testing.assert_array_equal(mn.detach().numpy(), tn.detach().numpy())
    tn.sum().mul(-5).backward()
    mn.sum().mul(-5).backward()
    np.testing.assert_allclose(m.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=0)
