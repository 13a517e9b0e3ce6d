"""float32 sums, means, 2-norms and softmax add in float32 lanes (rust/kernels/src/simd/sum.rs):
their error against a float64 reference is no worse than torch's (which also adds float32 in
float32), special values propagate as in torch, every layout goes through the same order, and
the result does not depend on the thread count."""

import numpy as np
import pytest
import torch

import minigrad as mg
from parity import assert_same, outputs_at_thread_counts



def ulp32(x):
    return np.spacing(np.abs(np.float32(x))).astype(np.float64)


def errors(mg_value, torch_value, ref):
    """|minigrad - ref| and |torch - ref| (ref in float64), elementwise."""
    ref = np.asarray(ref, dtype=np.float64)
    return (np.abs(np.asarray(mg_value, dtype=np.float64) - ref), np.abs(np.asarray(torch_value, dtype=np.float64) - ref))


def no_worse_than_torch(mg_value, torch_value, ref):
    """Over many outputs, minigrad's mean and largest error against float64 are at most torch's.
    (One float32 sum's rounding error is a random draw, so single values are not compared; the
    inputs are fixed, so the test is deterministic. Measured: 0.3-0.8x torch's.)"""
    em, et = errors(mg_value, torch_value, ref)
    assert em.mean() <= et.mean() and em.max() <= et.max(), (em.mean(), et.mean(), em.max(), et.max())


@pytest.fixture(scope="module")
def big():
    rng = np.random.default_rng(13)
    return {"randn": rng.standard_normal(10_000_000, dtype=np.float32),
            "uniform": rng.random(10_000_000, dtype=np.float32)}


@pytest.mark.parametrize("kind", ["randn", "uniform"])
def test_sum_and_mean_of_1e7_are_as_accurate_as_torch(big, kind):
    a = big[kind]
    # the whole 1e7: within 4e-10 of the magnitudes' sum (a running float32 sum is ~1e-7 off;
    # torch's cascade and ours ~1e-10), or within the rounding of the result
    ref, mag = a.astype(np.float64).sum(), np.abs(a.astype(np.float64)).sum()
    assert abs(mg.from_numpy(a).sum().item() - ref) <= max(4e-10 * mag, ulp32(ref))
    mean = ref / a.size
    assert abs(mg.from_numpy(a).mean().item() - mean) <= max(4e-10 * mag / a.size, ulp32(mean))
    # 40 full reductions of 250k elements each, against torch's on the same rows
    rows = a.reshape(40, 250_000)
    ref = rows.astype(np.float64).sum(1)
    for op, r in [("sum", ref), ("mean", ref / rows.shape[1])]:
        got = [getattr(mg.from_numpy(row), op)().item() for row in rows]
        want = [getattr(torch.from_numpy(row), op)().item() for row in rows]
        no_worse_than_torch(got, want, r)


@pytest.mark.parametrize("kind", ["randn", "uniform"])
@pytest.mark.parametrize("shape", [(10_000, 1000), (1000, 10_000), (100, 100_000), (10, 1_000_000)])
def test_sums_along_each_dim_are_as_accurate_as_torch(big, kind, shape):
    a = big[kind].reshape(shape)
    m, t = mg.from_numpy(a), torch.from_numpy(a)
    for dim in (0, 1):
        ref = a.astype(np.float64).sum(axis=dim)
        no_worse_than_torch(m.sum(dim).numpy(), t.sum(dim).numpy(), ref)
        no_worse_than_torch(m.mean(dim).numpy(), t.mean(dim).numpy(), ref / shape[dim])


@pytest.mark.parametrize("kind", ["randn", "uniform"])
@pytest.mark.parametrize("shape", [(1000, 1000), (100, 100_000)])
def test_norms_along_a_dim_are_as_accurate_as_torch(big, kind, shape):
    a = big[kind].reshape(-1)[: shape[0] * shape[1]].reshape(shape)
    m, t = mg.from_numpy(a), torch.from_numpy(a)
    for dim in (0, 1):
        ref = np.sqrt((a.astype(np.float64) ** 2).sum(axis=dim))
        no_worse_than_torch(m.norm(dim=dim).numpy(), t.norm(dim=dim).numpy(), ref)


@pytest.mark.parametrize("rows, n", [(1, 1000), (100, 1000), (1000, 1000), (7, 4099), (30, 65)])
def test_softmax_rows_are_as_accurate_as_torch(rows, n):
    rng = np.random.default_rng(rows * n)
    a = (rng.standard_normal((rows, n)) * 4).astype(np.float32)
    m, t = mg.from_numpy(a), torch.from_numpy(a)
    x = a.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    ref = e / e.sum(axis=1, keepdims=True)
    log_ref = x - x.max(axis=1, keepdims=True) - np.log(e.sum(axis=1, keepdims=True))
    for got, want, r in [(m.softmax(-1), t.softmax(-1), ref), (m.log_softmax(-1), t.log_softmax(-1), log_ref)]:
        # relative errors, over all the elements (single ones are random draws)
        no_worse_than_torch(got.numpy() / r, want.numpy() / r, np.ones_like(r))
        assert_same(got, want, rtol=1e-5, atol=1e-6)  # log_softmax: ~1 ulp of the row's log-sum


LAYOUTS = {
    "contiguous": lambda x: x,
    "transposed": lambda x: x.t(),
    "stepped": lambda x: x[::2, 1::3],
    "expanded": lambda x: x[:1].expand(300, x.shape[1]),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("special", ["nan", "inf", "-inf", "inf-inf", "-0.0"])
def test_special_values_propagate_as_in_torch(layout, special):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((600, 1100)).astype(np.float32)
    if special == "-0.0":
        a[:] = -0.0
    elif special == "inf-inf":
        a[5, 7] = np.inf
        a[400, 7] = -np.inf
        a[5, 900] = np.inf
        a[5, 901] = -np.inf
    else:
        a[5, 7] = a[300, 1000] = a[599, 0] = float(special)
    m, t = LAYOUTS[layout](mg.from_numpy(a)), LAYOUTS[layout](torch.from_numpy(a))
    for f in [lambda x: x.sum(), lambda x: x.sum(0), lambda x: x.sum(1), lambda x: x.mean(1),
              lambda x: x.mean(0), lambda x: x.norm(dim=1), lambda x: x.norm(dim=0), lambda x: x.norm()]:
        got, want = f(m), f(t)
        assert_same(got, want, rtol=1e-4, atol=1e-3)
        g, w = np.asarray(got.numpy()), np.asarray(want.numpy())
        # NaN where torch has NaN, the same infinities, and the sign of every zero
        assert np.array_equal(np.isnan(g), np.isnan(w))
        assert np.array_equal(g[np.isinf(w)], w[np.isinf(w)])
        assert np.array_equal(np.signbit(g[w == 0]), np.signbit(w[w == 0]))


def test_squares_overflow_in_float32_as_in_torch():
    # torch squares float32 in float32: a row of 3e20s has norm inf along a dim
    a = np.full((4, 100), 3e20, dtype=np.float32)
    assert_same(mg.from_numpy(a).norm(dim=1), torch.from_numpy(a).norm(dim=1))


@pytest.mark.parametrize("shape", [(0,), (0, 5), (5, 0), ()])
def test_empty_and_zero_dim(shape):
    a = np.full(shape, -0.0 if shape == () else 2.5, dtype=np.float32)
    m, t = mg.from_numpy(a), torch.from_numpy(a)
    for f in [lambda x: x.sum(), lambda x: x.mean(), lambda x: x.norm()] + (
            [lambda x: x.sum(-1), lambda x: x.sum(0), lambda x: x.norm(dim=-1), lambda x: x.mean(0)] if shape else []):
        got, want = f(m), f(t)
        assert_same(got, want)
        assert np.array_equal(np.signbit(np.asarray(got.numpy())), np.signbit(np.asarray(want.numpy())))


SCRIPT = """
import sys, numpy as np, minigrad as mg
a = np.random.default_rng(3).standard_normal((1000, 1000)).astype(np.float32)
x = mg.from_numpy(a)
outs = [x.sum(), x.sum(0), x.sum(1), x.mean(1), x.norm(dim=1), x[:100].softmax(1), x[:100].log_softmax(1),
        x.t().sum(1), x[::3, ::2].sum(0), x.amax(1)]
sys.stdout.write("".join(np.asarray(o.numpy()).tobytes().hex() for o in outs))
"""


def test_results_do_not_depend_on_the_thread_count():
    outs = outputs_at_thread_counts(SCRIPT, ("1", "2", "3"))
    assert outs[0] and outs[0] == outs[1] == outs[2]
