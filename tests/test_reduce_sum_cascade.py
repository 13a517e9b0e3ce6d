"""float32 sums along a dim in minigrad's fixed cascades (rust/kernels/src/simd/sum.rs for the
last dim, simd/sum_rows.rs for outer dims: 16-row float32 partials widened into f64 per
column): their error against a float64 reference is no worse than torch's on the same inputs
(which adds float32 in float32 too), over random and mixed-magnitude inputs, short and very
long reduced dims; and the bits do not depend on the thread count."""

import numpy as np
import pytest
import torch

import minigrad as mg
from parity import outputs_at_thread_counts

# torch's error is a random draw too: a small factor over it, on max abs and max relative error
FACTOR = 1.5


def inputs(kind, shape, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    if kind == "mixed":  # magnitudes from 1e-4 to 1e4 side by side, both signs
        a *= 10.0 ** rng.uniform(-4, 4, shape)
    elif kind == "positive":  # no cancellation: a long running sum grows large
        a = np.abs(a) + 1.0
    return a.astype(np.float32)


def max_errors(got, a64, dim):
    """(max abs error, max error relative to the sum of magnitudes) over the outputs."""
    ref = a64.sum(axis=dim)
    mag = np.abs(a64).sum(axis=dim)
    err = np.abs(np.asarray(got, dtype=np.float64) - ref)
    return err.max(), (err / np.maximum(mag, 1e-300)).max()


def assert_no_worse_than_torch(a, dim, op):
    a64 = a.astype(np.float64)
    got = getattr(mg.from_numpy(a), op)(dim).numpy()
    want = getattr(torch.from_numpy(a), op)(dim).numpy()
    if op == "mean":
        got, want = got * a.shape[dim], want * a.shape[dim]  # errors on the sum's scale
    (ma, mr), (ta, tr) = max_errors(got, a64, dim), max_errors(want, a64, dim)
    # within the rounding of the float32 result when both are that close
    ulp = np.spacing(np.abs(a64.sum(axis=dim)).max().astype(np.float32)).astype(np.float64)
    assert ma <= max(FACTOR * ta, ulp), (ma, ta)
    assert mr <= max(FACTOR * tr, ulp / np.abs(a64).sum(axis=dim).max()), (mr, tr)


# (shape, dim): the bench's (100, 1000) and (1000, 1000), tall and thin (row chunks in parallel),
# wide with few rows (a partial 16-row group), the middle axis, and rows along the last dim
SHAPES = [((100, 1000), 0), ((1000, 1000), 0), ((1_000_000, 3), 0), ((200_000, 10), 0), ((37, 2500), 0),
          ((20, 10_007, 7), 1), ((100, 1000), 1), ((1000, 1000), 1), ((3, 1_000_000), 1)]


@pytest.mark.parametrize("kind", ["randn", "mixed", "positive"])
@pytest.mark.parametrize("shape, dim", SHAPES, ids=[f"{s}-{d}" for s, d in SHAPES])
def test_sum_and_mean_error_no_worse_than_torch(kind, shape, dim):
    a = inputs(kind, shape, seed=len(shape) * 1000 + shape[0])
    for op in ("sum", "mean"):
        assert_no_worse_than_torch(a, dim, op)


def test_outer_sums_of_groups_and_specials():
    # every row count from 1 to 40 around the 16-row groups, columns around the 64-column strips
    rng = np.random.default_rng(1)
    for rows in range(1, 41):
        for cols in (1, 15, 64, 81):
            a = (rng.standard_normal((rows, cols)) * 10.0 ** rng.uniform(-3, 3, (rows, cols))).astype(np.float32)
            got = mg.from_numpy(a).sum(0).numpy()
            ref = a.astype(np.float64).sum(0)
            mag = np.abs(a.astype(np.float64)).sum(0)
            # 16-element float32 partials: at most ~16 roundings of the partial's magnitude
            assert np.all(np.abs(got - ref) <= 16 * np.finfo(np.float32).eps * mag + np.spacing(np.abs(ref).astype(np.float32))), (rows, cols)
    # inf, nan and signed zeros inside a group and across groups
    a = np.zeros((40, 70), np.float32)
    a[:, 1] = -0.0
    a[3, 2], a[20, 3], a[21, 3], a[5, 4], a[39, 5] = np.inf, np.inf, -np.inf, np.nan, -np.inf
    a[0, 6] = 3e38
    a[1, 6] = 3e38
    got, want = mg.from_numpy(a).sum(0).numpy(), torch.from_numpy(a).sum(0).numpy()
    assert np.array_equal(got, want, equal_nan=True)
    assert np.array_equal(np.signbit(got), np.signbit(want))


SCRIPT = """
import sys, numpy as np, minigrad as mg
rng = np.random.default_rng(11)
outs = []
for shape in [(100, 1000), (66, 1000), (300, 300), (1000, 1000), (1_000_000, 3), (37, 2500)]:
    a = rng.standard_normal(shape).astype(np.float32) * np.float32(10.0) ** rng.uniform(-4, 4, shape).astype(np.float32)
    x = mg.from_numpy(a)
    outs += [x.sum(0), x.mean(0), x.sum(1), x.mean(1), x.sum()]
sys.stdout.write("".join(np.asarray(o.numpy()).tobytes().hex() for o in outs))
"""


def test_cascades_do_not_depend_on_the_thread_count():
    outs = outputs_at_thread_counts(SCRIPT)
    assert outs[0] and all(o == outs[0] for o in outs[1:])
