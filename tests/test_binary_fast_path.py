"""The small-call fast path of + - * / (rust/core/src/ops/binary/fast.rs), out of place and in
place, against torch: bit-identical values (the general path's closures), row broadcasts in both
operand orders, Python numbers, aliasing operands, version counters, autograd and the errors the
fast path must leave to the general path. Sizes stay below 32768 elements (the calling thread),
with one case above (split over the threads: the same path since issue 13)."""

import numpy as np
import pytest
import torch

import minigrad as mg

OPS = ["add", "sub", "mul", "div"]
DTYPES = [(np.float32, torch.float32, mg.float32), (np.float64, torch.float64, mg.float64)]

# (shape of a, shape of b): same shape, rows on either side, leading 1s, 0-d and 1-element rows
SHAPES = [
    ((7,), (7,)),
    ((5, 33), (33,)),
    ((33,), (5, 33)),
    ((1, 100), (100,)),
    ((100,), (1, 100)),
    ((2, 3, 17), (3, 17)),
    ((2, 3, 17), (1, 1, 17)),
    ((4, 9), (1,)),
    ((4, 9), ()),
    ((), (4, 9)),
    ((40, 1000), (1000,)),  # above 32768 elements: split over the threads
]


def pair(shape_a, shape_b, npdt, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape_a).astype(npdt)
    b = rng.standard_normal(shape_b).astype(npdt)
    b[np.abs(b) < 0.1] = 0.5  # no tiny divisors
    return np.asarray(a), np.asarray(b)


def close(x, y):
    """For gradients summed over broadcast rows: the reduction order may differ by an ulp."""
    np.testing.assert_allclose(x.detach().numpy(), y.detach().numpy(), rtol=1e-6, atol=0)


def same_bits(x, y):
    xn, yn = np.ascontiguousarray(x.detach().numpy()), np.ascontiguousarray(y.detach().numpy())
    assert xn.shape == yn.shape and xn.dtype == yn.dtype
    assert np.array_equal(xn.view(np.uint8), yn.view(np.uint8)), (xn, yn)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shapes", SHAPES)
@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_out_of_place_matches_torch(op, shapes, dt):
    a, b = pair(*shapes, dt[0])
    got = getattr(mg, op)(mg.tensor(a), mg.tensor(b))
    want = getattr(torch, op)(torch.tensor(a), torch.tensor(b))
    same_bits(got, want)
    assert got.is_contiguous() and got.stride() == want.stride()


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("number", [2, -3, 0.1, 1e-3, float("inf")])
@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_numbers_both_sides(op, number, dt):
    a, _ = pair((3, 50), (1,), dt[0])
    x, t = mg.tensor(a), torch.tensor(a)
    same_bits(getattr(x, op)(number), getattr(t, op)(number))
    sym = {"add": "__radd__", "sub": "__rsub__", "mul": "__rmul__", "div": "__rtruediv__"}[op]
    same_bits(getattr(x, sym)(number), getattr(t, sym)(number))


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("shapes", [s for s in SHAPES if len(s[1]) <= len(s[0]) and s[0] != ()])
@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_in_place_matches_torch_and_bumps_once(op, shapes, dt):
    a, b = pair(*shapes, dt[0])
    x, t = mg.tensor(a), torch.tensor(a)
    y, u = mg.tensor(b), torch.tensor(b)
    rx = getattr(x, op + "_")(y)
    rt = getattr(t, op + "_")(u)
    assert rx is x and rt is t
    same_bits(x, t)
    assert x._version == t._version == 1
    assert y._version == u._version == 0


@pytest.mark.parametrize("op", OPS)
def test_in_place_with_itself_and_operators(op):
    a, _ = pair((6, 20), (1,), np.float32)
    x, t = mg.tensor(a), torch.tensor(a)
    getattr(x, op + "_")(x)
    getattr(t, op + "_")(t)
    same_bits(x, t)
    assert x._version == t._version == 1
    x2, t2 = mg.tensor(a), torch.tensor(a)
    x2 += 1.5
    x2 *= x2
    t2 += 1.5
    t2 *= t2
    same_bits(x2, t2)
    assert x2._version == t2._version == 2


def test_in_place_partial_overlap_raises_like_torch():
    a = np.arange(20, dtype=np.float32)
    x, t = mg.tensor(a), torch.tensor(a)
    with pytest.raises(RuntimeError) as e_t:
        t[2:12].add_(t[:10])
    with pytest.raises(RuntimeError) as e_m:
        x[2:12].add_(x[:10])
    assert str(e_m.value) == str(e_t.value)
    # a row that is a view of the destination's first row: partial overlap as well
    m, u = mg.tensor(a.reshape(4, 5)), torch.tensor(a.reshape(4, 5))
    with pytest.raises(RuntimeError) as e_t:
        u.add_(u[0])
    with pytest.raises(RuntimeError) as e_m:
        m.add_(m[0])
    assert str(e_m.value) == str(e_t.value)
    assert m._version == u._version == 0


def test_in_place_shape_and_dtype_errors_match_torch():
    x, t = mg.zeros(5, 3), torch.zeros(5, 3)
    for bad in [(mg.ones(2, 5, 3), torch.ones(2, 5, 3)), (mg.ones(1, 5, 3), torch.ones(1, 5, 3))]:
        with pytest.raises(RuntimeError) as e_t:
            t.add_(bad[1])
        with pytest.raises(RuntimeError) as e_m:
            x.add_(bad[0])
        assert str(e_m.value) == str(e_t.value)
    xi, ti = mg.zeros(4, dtype=mg.int64), torch.zeros(4, dtype=torch.int64)
    with pytest.raises(RuntimeError) as e_t:
        ti.add_(torch.ones(4))
    with pytest.raises(RuntimeError) as e_m:
        xi.add_(mg.ones(4))
    assert str(e_m.value) == str(e_t.value)


def test_in_place_on_leaf_and_under_no_grad():
    a = np.ones((3, 4), dtype=np.float32)
    x, t = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    with pytest.raises(RuntimeError) as e_t:
        t.add_(1.0)
    with pytest.raises(RuntimeError) as e_m:
        x.add_(1.0)
    assert str(e_m.value) == str(e_t.value)
    with mg.no_grad():
        x.mul_(mg.full((4,), 3.0))
    with torch.no_grad():
        t.mul_(torch.full((4,), 3.0))
    same_bits(x, t)
    assert x._version == t._version == 1 and x.grad_fn is None and x.is_leaf


def test_in_place_records_on_non_leaf():
    a, b = pair((3, 8), (8,), np.float32)
    x, t = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, u = mg.tensor(b, requires_grad=True), torch.tensor(b, requires_grad=True)
    h, k = x * 1.0, t * 1.0
    h.mul_(y)
    k.mul_(u)
    assert h.grad_fn.name() == k.grad_fn.name()
    h.sum().backward()
    k.sum().backward()
    same_bits(x.grad, t.grad)
    close(y.grad, u.grad)


@pytest.mark.parametrize("shapes", [((5, 33), (33,)), ((33,), (5, 33)), ((4, 9), ())])
def test_out_of_place_autograd_through_rows(shapes):
    a, b = pair(*shapes, np.float64)
    x, t = mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    y, u = mg.tensor(b, requires_grad=True), torch.tensor(b, requires_grad=True)
    for op in OPS:
        r, s = getattr(mg, op)(x, y), getattr(torch, op)(t, u)
        assert r.grad_fn.name() == s.grad_fn.name()
        r.sum().backward()
        s.sum().backward()
    close(x.grad, t.grad)
    close(y.grad, u.grad)


def test_alpha_one_and_other_alphas():
    a, b = pair((3, 10), (10,), np.float32)
    for alpha in [1, 1.0, 2, 0.5]:
        same_bits(mg.add(mg.tensor(a), mg.tensor(b), alpha=alpha), torch.add(torch.tensor(a), torch.tensor(b), alpha=alpha))
        x, t = mg.tensor(a), torch.tensor(a)
        x.sub_(mg.tensor(b), alpha=alpha)
        t.sub_(torch.tensor(b), alpha=alpha)
        same_bits(x, t)


def test_non_row_major_and_mixed_dtypes_take_the_general_path():
    a = np.random.default_rng(1).standard_normal((6, 8)).astype(np.float32)
    x, t = mg.tensor(a), torch.tensor(a)
    same_bits(x.t() + x.t(), t.t() + t.t())
    same_bits(x[:, ::2] * 3, t[:, ::2] * 3)
    same_bits(x + mg.tensor(a[0].astype(np.float64)), t + torch.tensor(a[0].astype(np.float64)))
    same_bits(x + True, t + True)
    y, u = x.clone(), t.clone()
    y.t().add_(mg.ones(6))
    u.t().add_(torch.ones(6))
    same_bits(y, u)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("n", [32768, 100_003, 1_000_000])
def test_split_sizes_numbers_and_aliasing(op, n):
    # above 32768 elements the fast path splits over the threads: pieces start mid-row
    a, b = pair((n,), (n,), np.float32)
    x, y, t, u = mg.tensor(a), mg.tensor(b), torch.tensor(a), torch.tensor(b)
    same_bits(getattr(x, op)(y), getattr(t, op)(u))
    same_bits(getattr(x, op)(x), getattr(t, op)(t))
    same_bits(getattr(x, op)(2.5), getattr(t, op)(2.5))
    sym = {"add": "__radd__", "sub": "__rsub__", "mul": "__rmul__", "div": "__rtruediv__"}[op]
    same_bits(getattr(x, sym)(3), getattr(t, sym)(3))
    rows, cols = n // 37, 37
    m, v = x[: rows * cols].reshape(rows, cols), t[: rows * cols].reshape(rows, cols)
    same_bits(getattr(m, op)(y[:cols]), getattr(v, op)(u[:cols]))
    same_bits(getattr(y[:cols], op)(m), getattr(u[:cols], op)(v))
    getattr(x, op + "_")(x)  # aliasing: `same`, read through the written slice
    getattr(t, op + "_")(t)
    same_bits(x, t)
    getattr(m, op + "_")(y[:cols])
    getattr(v, op + "_")(u[:cols])
    same_bits(x, t)
    assert x._version == t._version == 2
