"""Scans (cumsum, cumprod, logcumsumexp) and sorting/selection (sort, argsort, msort, topk,
kthvalue, median) against torch: values, dtypes, shapes, strides, the indices torch picks for
ties, errors and their order, in-place variants with `_version`, and the saved-tensor checks of
their backward nodes. Inputs: every dtype, any layout (expanded included for ops that only
read), 0-d and empty tensors, NaN and infinities. Gradients are in test_grad_ops_more.py."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
from minigrad.testing import strategies as mst
from parity import ALL_DTYPES, DTYPES, assert_same, check_parity, make_pair, pairs, run_both

INF, NAN = math.inf, math.nan
FLOATS = ["float32", "float64"]


def same(fm, ft, *, check_stride=True, **kw):
    """Same result (values, dtype, shape, strides; each part of a (values, indices) result) or
    the same error."""
    kind, m, t = run_both(fm, ft)
    if kind == "ok":
        for a, b in zip(m if isinstance(t, tuple) else (m,), t if isinstance(t, tuple) else (t,)):
            assert_same(a, b, check_stride=check_stride, **kw)
    return kind, m, t


@st.composite
def specs(draw, dtypes=ALL_DTYPES, *, max_dims=3, max_side=5, nan=True, small=True):
    """A tensor of any layout (expanded too: these ops only read), with small integers in it
    (ties) and, for floats, NaN and infinities now and then."""
    name = draw(st.sampled_from(list(dtypes)))
    kw = dict(min_value=-3, max_value=3) if small and name != "bool" and draw(st.booleans()) else {}
    spec = draw(mst.tensors([name], max_dims=max_dims, max_side=max_side, allow_nan=nan and name in FLOATS, **kw))
    if nan and name in FLOATS and spec.base.size and draw(st.integers(0, 3)) == 0:
        flat = spec.base.reshape(-1)
        flat[draw(st.integers(0, flat.size - 1))] = draw(st.sampled_from([INF, -INF, -0.0]))
    return spec


def dim_arg(draw, ndim, bad=True):
    n = max(ndim, 1)
    return draw(st.integers(-n - 1, n) if bad and draw(st.integers(0, 9)) == 0 else st.integers(-n, n - 1))


DTYPE_ARGS = [None, "float32", "float64", "int64", "int32", "bool"]


def lib_dtype(L, name):
    return None if name is None else getattr(L, name)


# ----- scans -----

@given(specs(), st.data())
def test_cumsum_cumprod(spec, data):
    m, t = spec.build(mg), spec.build(torch)
    d = dim_arg(data.draw, m.dim())
    dt = data.draw(st.sampled_from(DTYPE_ARGS))
    for name in ("cumsum", "cumprod"):
        same(lambda: getattr(m, name)(d, dtype=lib_dtype(mg, dt)), lambda: getattr(t, name)(d, dtype=lib_dtype(torch, dt)),
             rtol=1e-6, atol=1e-6)
        same(lambda: getattr(mg, name)(m, d), lambda: getattr(torch, name)(t, d), rtol=1e-6, atol=1e-6)


@given(pairs(max_dims=3), st.data())
def test_cumsum_cumprod_in_place(pair, data):
    m, t = pair
    d = dim_arg(data.draw, m.dim())
    dt = data.draw(st.sampled_from(DTYPE_ARGS + [str(m.dtype).split(".")[-1]] * 3))
    name = data.draw(st.sampled_from(["cumsum_", "cumprod_"]))
    kind, rm, rt = same(lambda: getattr(m, name)(d, dtype=lib_dtype(mg, dt)), lambda: getattr(t, name)(d, dtype=lib_dtype(torch, dt)),
                        check_stride=False, rtol=1e-6, atol=1e-6)
    if kind == "ok":
        assert rm is m and rt is t
    assert m._version == t._version
    assert_same(m, t, rtol=1e-6, atol=1e-6)


@given(specs(FLOATS + ["int64", "bool"]), st.data())
def test_logcumsumexp(spec, data):
    m, t = spec.build(mg), spec.build(torch)
    d = dim_arg(data.draw, m.dim())
    same(lambda: m.logcumsumexp(d), lambda: t.logcumsumexp(d), rtol=1e-5, atol=1e-6)
    same(lambda: mg.logcumsumexp(m, d), lambda: torch.logcumsumexp(t, d), rtol=1e-5, atol=1e-6)


def test_scan_edges():
    cases = [  # (values, dtype, f(L, x))
        ([[1, 2], [3, 4]], "int32", lambda L, x: x.cumsum(0)),  # int -> int64
        ([True, False, True], "bool", lambda L, x: x.cumsum(0)),
        ([True, False, True], "bool", lambda L, x: x.cumprod(0)),
        ([True, False], "bool", lambda L, x: x.cumsum(0, dtype=L.bool)),  # a bool result has no kernel
        (True, "bool", lambda L, x: x.cumsum(0, dtype=L.bool)),  # ... but a 0-d one is filled
        ([2**31 - 1, 1, 1], "int32", lambda L, x: x.cumsum(0, dtype=L.int32)),  # wraps as int32
        ([1e8, 1, 1, 1, 1], "float32", lambda L, x: x.cumsum(0)),  # float32 accumulates in double
        ([3.0], "float32", lambda L, x: x.cumsum(1)),
        (3.0, "float32", lambda L, x: x.cumsum(-1)),
        (3.0, "float32", lambda L, x: x.cumsum(1)),
        ([[1.0, 2.0]], "float32", lambda L, x: x.cumsum(2)),
        ([-INF, -INF, 1.0, INF, INF, NAN, 2.0], "float32", lambda L, x: x.logcumsumexp(0)),
        ([[-INF, 0.0], [INF, -INF]], "float64", lambda L, x: x.logcumsumexp(1)),
        ([1, 2], "int64", lambda L, x: x.logcumsumexp(0)),
        ([], "int64", lambda L, x: x.logcumsumexp(0)),  # the dtype is checked even when empty
        (2.5, "float32", lambda L, x: x.logcumsumexp(0)),
        ([[1.0, 2.0]], "float32", lambda L, x: x.logcumsumexp(5)),  # dim before dtype
        ([[1, 2]], "int64", lambda L, x: x.logcumsumexp(5)),
        ([1.0, 2.0], "float32", lambda L, x: x.clone().cumsum_(0, dtype=L.float32)),
        ([1.0, 2.0], "float32", lambda L, x: x.clone().cumsum_(0, dtype=L.float64)),
        ([1, 2], "int64", lambda L, x: x.clone().cumprod_(0, dtype=L.float32)),
        ([1, 2], "int32", lambda L, x: x.clone().cumsum_(0)),  # stays int32 in place
        ([True, False], "bool", lambda L, x: x.clone().cumsum_(0)),
        ([[1.0, 2.0]], "float32", lambda L, x: x.clone().cumsum_(3, dtype=L.float64)),  # dim first
    ]
    for value, dtype, f in cases:
        m, t = make_pair(np.array(value, dtype=DTYPES[dtype][2]))
        same(lambda: f(mg, m), lambda: f(torch, t), check_stride=False)


def test_scan_in_place_refuses_overlapping_self():
    for L in (mg, torch):
        x = L.ones(3).expand(2, 3)
        with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
            x.cumsum_(0)


# ----- sort, argsort, msort -----

@given(specs(max_side=6), st.data())
def test_sort(spec, data):
    m, t = spec.build(mg), spec.build(torch)
    d = dim_arg(data.draw, m.dim())
    desc = data.draw(st.booleans())
    how = data.draw(st.sampled_from(["positional", "keywords", "stable", "unstable", "argsort", "argsort_stable", "msort"]))
    calls = {
        "positional": lambda x: x.sort(d, desc),
        "keywords": lambda x: x.sort(dim=d, descending=desc),
        "stable": lambda x: x.sort(stable=True, dim=d, descending=desc),
        "unstable": lambda x: x.sort(stable=False, dim=d, descending=desc),
        "argsort": lambda x: x.argsort(d, desc),
        "argsort_stable": lambda x: x.argsort(dim=d, descending=desc, stable=True),
        "msort": lambda x: x.msort(),
    }
    f = calls[how]
    same(lambda: f(m), lambda: f(t), equal_nan=True)


@st.composite
def long_rows(draw, dtypes=ALL_DTYPES):
    """1-d or 2-d tensors with rows long enough for introsort (> 16) and topk's partial sort
    (k * 64 <= n), full of ties and, for floats, NaNs."""
    name = draw(st.sampled_from(list(dtypes)))
    rows = draw(st.integers(1, 3))
    n = draw(st.integers(1, 300))
    arr = draw(mst.arrays(name, (rows, n), min_value=0, max_value=draw(st.integers(0, 4)), allow_nan=name in FLOATS))
    return arr if draw(st.booleans()) else arr[0]


@given(long_rows(), st.data())
def test_sort_ties_on_long_rows(arr, data):
    m, t = make_pair(arr)
    desc, stable = data.draw(st.booleans()), data.draw(st.booleans())
    same(lambda: m.sort(dim=-1, descending=desc, stable=stable), lambda: t.sort(dim=-1, descending=desc, stable=stable))
    same(lambda: m.sort(-1, desc), lambda: t.sort(-1, desc))


@pytest.mark.parametrize("n", [32767, 32768, 40000])
@pytest.mark.parametrize("dtype", ["int64", "int32", "float32"])
def test_sort_of_long_1d_tensors(n, dtype):
    """torch radix-sorts long 1-d integer tensors in ascending order (stable); the rest, and
    every descending sort, is an introsort whose tie order is libstdc++'s."""
    arr = np.random.default_rng(n).integers(-3, 3, size=n).astype(DTYPES[dtype][2])
    m, t = make_pair(arr)
    for desc in (False, True):
        same(lambda: m.sort(descending=desc), lambda: t.sort(descending=desc))


def test_sort_results_are_named_tuples():
    x = mg.tensor([3.0, 1.0, 2.0])
    r = x.sort()
    assert type(r) is mg.return_types.sort and type(r).__module__ == "minigrad.return_types"
    assert r.values is r[0] and r.indices is r[1]
    assert repr(r).startswith("minigrad.return_types.sort(\nvalues=tensor([1., 2., 3.]),\nindices=tensor([1, 2, 0]))")
    for name in ("topk", "kthvalue", "median"):
        assert getattr(mg.return_types, name).__name__ == name
    assert type(x.topk(1)) is mg.return_types.topk
    assert type(x.kthvalue(1)) is mg.return_types.kthvalue
    assert type(x.median(0)) is mg.return_types.median


# ----- topk, kthvalue, median -----

@given(specs(max_side=6), st.data())
def test_topk(spec, data):
    m, t = spec.build(mg), spec.build(torch)
    d = dim_arg(data.draw, m.dim())
    size = m.shape[d] if m.dim() and -m.dim() <= d < m.dim() else 1
    k = data.draw(st.integers(-1, size + 1))
    largest, srt = data.draw(st.booleans()), data.draw(st.booleans())
    same(lambda: m.topk(k, d, largest, srt), lambda: t.topk(k, d, largest, srt))
    same(lambda: mg.topk(m, k, dim=d, largest=largest, sorted=srt), lambda: torch.topk(t, k, dim=d, largest=largest, sorted=srt))


@given(long_rows([n for n in ALL_DTYPES if n != "bool"]), st.data())
def test_topk_ties_on_long_rows(arr, data):
    m, t = make_pair(arr)
    n = arr.shape[-1]
    k = data.draw(st.sampled_from(sorted({0, 1, max(n // 64, 1), min(n, 3), n // 2, n})))
    largest, srt = data.draw(st.booleans()), data.draw(st.booleans())
    same(lambda: m.topk(k, -1, largest, srt), lambda: t.topk(k, -1, largest, srt))


@given(specs(max_side=6), st.data())
def test_kthvalue(spec, data):
    m, t = spec.build(mg), spec.build(torch)
    d = dim_arg(data.draw, m.dim())
    size = m.shape[d] if m.dim() and -m.dim() <= d < m.dim() else 1
    k = data.draw(st.integers(0, size + 1))
    keepdim = data.draw(st.booleans())
    same(lambda: m.kthvalue(k, d, keepdim), lambda: t.kthvalue(k, d, keepdim))


@given(long_rows([n for n in ALL_DTYPES if n != "bool"]), st.data())
def test_kthvalue_and_median_ties_on_long_rows(arr, data):
    m, t = make_pair(arr)
    k = data.draw(st.integers(1, arr.shape[-1]))
    same(lambda: m.kthvalue(k), lambda: t.kthvalue(k))
    same(lambda: m.median(-1), lambda: t.median(-1))
    same(lambda: m.median(), lambda: t.median())


@given(specs(max_side=6), st.data())
def test_median(spec, data):
    m, t = spec.build(mg), spec.build(torch)
    if data.draw(st.booleans()):
        same(lambda: m.median(), lambda: t.median())
        same(lambda: mg.median(m), lambda: torch.median(t))
    elif not any(step[0] == "expand" for step in spec.layout):
        # (torch's median(dim) reads a stride-0 dim past the tensor's memory: docs/divergences.md)
        d = dim_arg(data.draw, m.dim())
        keepdim = data.draw(st.booleans())
        same(lambda: m.median(d, keepdim), lambda: t.median(d, keepdim))
        same(lambda: mg.median(m, dim=d, keepdim=keepdim), lambda: torch.median(t, dim=d, keepdim=keepdim))


def test_selection_edges():
    """Empty and 0-d inputs, bool inputs, and the order of torch's checks."""
    cases = [
        ((2, 0), "float32", lambda x: x.sort(0)),
        ((0,), "bool", lambda x: x.sort()),
        ((), "float32", lambda x: x.sort(-1)),
        ((), "float32", lambda x: x.sort(1)),
        ((), "float32", lambda x: x.topk(0)),  # a 0-d input is itself whatever k (0 or 1)
        ((), "float32", lambda x: x.topk(2)),
        ((2, 2), "bool", lambda x: x.topk(5)),  # k before dtype
        ((2, 2), "bool", lambda x: x.topk(1)),
        ((2, 2), "bool", lambda x: x.topk(5, 7)),  # dim before k
        ((2, 0), "float32", lambda x: x.topk(0)),
        ((2, 0), "float32", lambda x: x.topk(1)),
        ((2, 2), "bool", lambda x: x.kthvalue(5)),  # k before dtype
        ((2, 2), "bool", lambda x: x.kthvalue(1)),
        ((2, 0), "bool", lambda x: x.kthvalue(1)),  # an empty reduction dim first
        ((2, 0), "bool", lambda x: x.kthvalue(1, 0)),  # the dtype even when empty
        ((2, 0), "float32", lambda x: x.kthvalue(1, 0)),
        ((0,), "float32", lambda x: x.kthvalue(1)),
        ((), "int64", lambda x: x.kthvalue(1)),
        ((), "int64", lambda x: x.kthvalue(2)),
        ((2, 2), "float32", lambda x: x.kthvalue(0)),
        ((2, 2), "bool", lambda x: x.median()),
        ((2, 2), "bool", lambda x: x.median(0)),
        ((0,), "bool", lambda x: x.median()),  # empty: NaN cast to the dtype (True)
        ((0,), "int64", lambda x: x.median()),  # (int64's minimum)
        ((0,), "float32", lambda x: x.median()),
        ((2, 0), "bool", lambda x: x.median(1)),
        ((2, 0), "float64", lambda x: x.median(0)),
        ((), "float32", lambda x: x.median()),
        ((), "float32", lambda x: x.median(0, True)),
    ]
    rng = np.random.default_rng(0)
    for shape, dtype, f in cases:
        arr = rng.integers(0, 3, size=shape).astype(DTYPES[dtype][2])
        m, t = make_pair(arr)
        same(lambda: f(m), lambda: f(t))


# ----- argument errors in torch's words -----

ARG_ERRORS = [
    lambda L, x: x.cumsum(),
    lambda L, x: x.cumsum(1.5),
    lambda L, x: L.cumsum(x, 1.5),
    lambda L, x: x.cumsum(True),
    lambda L, x: x.cumsum_("a"),
    lambda L, x: x.cumprod(0, dtype=3),
    lambda L, x: x.logcumsumexp(),
    lambda L, x: x.logcumsumexp(1.5),
    lambda L, x: x.sort(1.5),
    lambda L, x: L.sort(x, 1.5),
    lambda L, x: x.sort(True),
    lambda L, x: x.argsort(1.5),
    lambda L, x: x.topk(),
    lambda L, x: x.topk(1.5),
    lambda L, x: L.topk(x, 1.5),
    lambda L, x: x.kthvalue(),
    lambda L, x: x.kthvalue(1, 1.5),
    lambda L, x: x.median(1.5),
    lambda L, x: L.median(x, 1.5),
    lambda L, x: x.median(0, 1),
    lambda L, x: x.median(keepdim=True),
]


@pytest.mark.parametrize("f", ARG_ERRORS, ids=range(len(ARG_ERRORS)))
def test_argument_errors(f):
    m, t = make_pair(np.ones((2, 2), np.float32))
    kind, em, et = run_both(lambda: f(mg, m), lambda: f(torch, t))
    assert kind == "err" and isinstance(em, TypeError)


# ----- backward: saved tensors and their versions -----

def _version_case(what, L):
    leaf = L.tensor([[1.5, -2.0], [0.5, 3.0], [2.0, 1.0]], requires_grad=True)
    x = leaf * 1  # a non-leaf, so in-place changes are allowed
    if what == "cumprod's input":
        out = x.cumprod(0)
        x.mul_(2)
    elif what == "cumprod's result":
        out = x.cumprod(0)
        out.add_(1)
    elif what == "logcumsumexp's result":
        out = x.logcumsumexp(0)
        out.add_(1)
    elif what == "sort's indices":
        out, indices = x.sort(0)
        indices.add_(1)
    elif what == "topk's indices":
        out, indices = x.topk(2, 0)
        indices.add_(1)
    elif what == "median's input":
        out = x.median()
        x.add_(1)
    elif what == "cumsum saves nothing":
        out = x.cumsum(0)
        x.add_(1)
    elif what == "cumprod_ saved its input before the write":
        out = x.cumprod_(0)
        out.add_(1)
    out.sum().backward()
    return leaf.grad


VERSION_CASES = ["cumprod's input", "cumprod's result", "logcumsumexp's result", "sort's indices", "topk's indices",
                 "median's input", "cumsum saves nothing", "cumprod_ saved its input before the write"]


@pytest.mark.parametrize("what", VERSION_CASES)
def test_saved_tensor_versions(what):
    """Modifying what a node saved makes backward fail with torch's message; what it did not
    save is free to change."""
    check_parity(lambda: _version_case(what, mg), lambda: _version_case(what, torch))


@pytest.mark.parametrize("values", [[0.0, -0.0, 0.0, -0.0, 0.0], [-0.0, 0.0, -0.0, 0.0], [-0.0, 0.0, 0.0, -0.0, 0.0, -0.0, -0.0],
                                    [1.0, -0.0, 2.0, 0.0, -0.0, 0.0, 3.0, -1.0] * 5])
def test_median_of_all_elements_picks_torchs_zero(values):
    # median() takes whatever std::nth_element leaves at the middle: -0.0 or 0.0 is torch's pick
    got, want = mg.tensor(values).median(), torch.tensor(values).median()
    assert got.item() == want.item() and math.copysign(1, got.item()) == math.copysign(1, want.item())
