"""Reductions over outer dims (dim 0 of a matrix, the middle axis of a 3-D tensor: the engine's
outer shape, rust/kernels/src/reduce/outer.rs) against torch, at sizes that take both of its
parallel splits (whole columns per thread; fixed row chunks when outputs are few or the input
is larger than the caches): every
reducer that runs through it, every dtype, keepdim, strided layouts, special values, and the
same bits at 1, 2, 3 and 4 threads."""

import numpy as np
import pytest
import torch

import minigrad as mg
from parity import assert_same, outputs_at_thread_counts


# (name, shape, how to view it, dim): each reduces an outer dim of at least 2^17 elements
CASES = [
    ("dim0 many columns", (700, 333), lambda x: x, 0),
    ("dim0 few columns", (40_000, 5), lambda x: x, 0),
    ("dim0 beyond the caches", (4500, 1000), lambda x: x, 0),
    ("middle axis", (30, 200, 50), lambda x: x, 1),
    ("middle axis few outputs", (2, 30_000, 3), lambda x: x, 1),
    ("stepped", (1200, 900), lambda x: x[::2, ::3], 0),
    ("transposed, dim 1", (300, 800), lambda x: x.t(), 1),
    ("permuted 3-D, dims (0, 2)", (64, 300, 40), lambda x: x.permute(0, 2, 1), (0, 2)),
    ("offset rows", (800, 400), lambda x: x[100:], 0),
]
IDS = [c[0] for c in CASES]


def pair(shape, view, dtype=np.float32, seed=0):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        a = rng.integers(-1000, 1000, shape).astype(dtype)
    elif dtype == np.bool_:
        a = rng.random(shape) < 0.5
    else:
        a = rng.standard_normal(shape).astype(dtype)
        a[..., ::7] = np.round(a[..., ::7])  # ties, so first occurrences matter
    return view(mg.from_numpy(a)), view(torch.from_numpy(a))


def check(got, want, **tol):
    if isinstance(want, tuple):
        for g, w in zip(got, want):
            assert_same(g, w, **tol)
    else:
        assert_same(got, want, **tol)


def single(dim):
    return dim if isinstance(dim, int) else None


@pytest.mark.parametrize("case", CASES, ids=IDS)
@pytest.mark.parametrize("keepdim", [False, True])
def test_float_reductions_match_torch(case, keepdim):
    _, shape, view, dim = case
    m, t = pair(shape, view)
    loose = dict(rtol=1e-4, atol=1e-3)
    fs = [lambda x: x.sum(dim, keepdim=keepdim), lambda x: x.mean(dim, keepdim=keepdim),
          lambda x: x.amax(dim, keepdim=keepdim), lambda x: x.amin(dim, keepdim=keepdim),
          lambda x: x.var(dim, keepdim=keepdim), lambda x: x.std(dim, keepdim=keepdim),
          lambda x: x.norm(dim=dim, keepdim=keepdim), lambda x: x.norm(p=1, dim=dim, keepdim=keepdim),
          lambda x: x.logsumexp(dim, keepdim=keepdim), lambda x: x.count_nonzero(dim),
          lambda x: (x > 0).all(dim, keepdim=keepdim), lambda x: (x > 0).any(dim, keepdim=keepdim),
          lambda x: x.sum(dim, keepdim=keepdim, dtype=torch.float64 if isinstance(x, torch.Tensor) else mg.float64)]
    if single(dim) is not None:
        fs += [lambda x: x.argmax(dim, keepdim=keepdim), lambda x: x.argmin(dim, keepdim=keepdim),
               lambda x: x.max(dim, keepdim=keepdim), lambda x: x.min(dim, keepdim=keepdim)]
    for f in fs:
        check(f(m), f(t), **loose)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64, np.bool_])
@pytest.mark.parametrize("case", [CASES[i] for i in (0, 1, 3, 5)], ids=[IDS[i] for i in (0, 1, 3, 5)])
def test_other_dtypes_match_torch(case, dtype):
    _, shape, view, dim = case
    m, t = pair(shape, view, dtype)
    fs = [lambda x: x.sum(dim), lambda x: x.sum(dim, keepdim=True), lambda x: x.count_nonzero(dim),
          lambda x: x.all(dim), lambda x: x.any(dim)]
    if dtype != np.bool_:
        fs += [lambda x: x.amax(dim), lambda x: x.amin(dim), lambda x: x.argmax(dim), lambda x: x.max(dim)]
    if dtype == np.float64:
        fs += [lambda x: x.mean(dim), lambda x: x.var(dim), lambda x: x.norm(dim=dim)]
    if dtype != np.bool_:
        fs += [lambda x: x.prod(dim)]
    for f in fs:
        check(f(m), f(t), rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("shape", [(600, 300), (40_000, 4)])
def test_special_values_follow_torch(shape):
    rows, cols = shape
    a = np.where((np.arange(rows) % 2 == 0)[:, None], np.float32(-0.0), np.float32(0.0)) * np.ones(shape, np.float32)
    a[3, 1] = np.inf
    a[rows - 2, 1] = a[rows - 1, 1] = np.nan
    a[5, 2], a[rows // 2, 2] = np.inf, -np.inf
    a[rows - 1, 3] = -np.inf
    m, t = mg.from_numpy(a), torch.from_numpy(a)
    # torch's max/min of equal zeros of both signs returns either (its lanes decide); minigrad
    # returns the first, as a scan does (the Rust tests check that), so signs are compared for
    # the sums only, where IEEE fixes them.
    for f, signs in [(lambda x: x.sum(0), True), (lambda x: x.mean(0), True), (lambda x: x.norm(dim=0), True),
                     (lambda x: x.amax(0), False), (lambda x: x.amin(0), False), (lambda x: x.argmax(0), False),
                     (lambda x: x.argmin(0), False), (lambda x: x.max(0), False)]:
        got, want = f(m), f(t)
        check(got, want)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            g, w = np.asarray(g.numpy()), w.numpy()
            if w.dtype.kind == "f":
                assert np.array_equal(np.isnan(g), np.isnan(w))
                if signs:
                    assert np.array_equal(np.signbit(g[w == 0]), np.signbit(w[w == 0]))


SCRIPT = """
import sys, numpy as np, minigrad as mg
rng = np.random.default_rng(5)
outs = []
for shape, dim in [((700, 333), 0), ((40_000, 5), 0), ((30, 200, 50), 1), ((2, 30_000, 3), 1), ((1000, 1000), 0), ((4500, 1000), 0)]:
    x = mg.from_numpy(rng.standard_normal(shape).astype(np.float32))
    outs += [x.sum(dim), x.mean(dim), x.amax(dim), x.argmax(dim), x.var(dim), x.norm(dim=dim), x.logsumexp(dim),
             x.sum(dim, dtype=mg.float64)]
x = mg.from_numpy(rng.standard_normal((1200, 900)).astype(np.float32))[::2, ::3]
outs += [x.sum(0), x.amin(0)]
sys.stdout.write("".join(np.asarray(o.numpy()).tobytes().hex() for o in outs))
"""


def test_outer_results_do_not_depend_on_the_thread_count():
    outs = outputs_at_thread_counts(SCRIPT)
    assert outs[0] and all(o == outs[0] for o in outs[1:])
