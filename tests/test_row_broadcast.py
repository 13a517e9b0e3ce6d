"""Binary ops on a plan of rows (rust/kernels/src/elementwise.rs `ZipRows`: one operand is a row
repeated over the other's leading dims, `x + bias`), out of place and in place, against torch
bit for bit, and against minigrad's general strided path (the same values in a layout that is
not a plan of rows). Sizes on both sides of the split threshold, rows on either side, rows that
are views with offsets, row lengths that do not divide the split pieces, and in-place aliasing."""

import numpy as np
import pytest
import torch

import minigrad as mg

OPS = ["add", "sub", "mul", "div", "maximum", "eq", "lt"]
DTYPES = [(np.float32, torch.float32), (np.float64, torch.float64), (np.int64, torch.int64)]
# (rows, cols): below the fast path's limit, between it and the split, and split over threads
SIZES = [(3, 5), (40, 1000), (100, 1000), (1000, 1000), (777, 129), (70_000, 2), (300, 337)]


def arrays(rows, cols, npdt, seed=0):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((rows, cols)) * 10).astype(npdt)
    b = (rng.standard_normal(cols) * 10).astype(npdt)
    if npdt == np.int64:  # no integer division by zero, either way round
        a[a == 0] = 7
        b[b == 0] = 3
    else:
        b[np.abs(b) < 0.1] = 0.5
    return a, b


def same_bits(x, y):
    xn, yn = np.ascontiguousarray(x.detach().numpy()), np.ascontiguousarray(y.detach().numpy())
    assert xn.shape == yn.shape and xn.dtype == yn.dtype
    assert np.array_equal(xn.view(np.uint8), yn.view(np.uint8))


def call(lib, op, x, y):
    if op == "div" and x.dtype in (torch.int64, mg.int64):
        return getattr(lib, "div")(x, y, rounding_mode="floor")
    return getattr(lib, op)(x, y)


def strided(a):
    """`a`'s values in a layout that is no plan of rows (every other element of a larger tensor)."""
    return mg.tensor(np.stack([a, a], axis=-1))[..., 0]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("size", SIZES, ids=str)
@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64", "i64"])
def test_row_on_either_side(op, size, dt):
    a, b = arrays(*size, dt[0])
    x, y, t, u = mg.tensor(a), mg.tensor(b), torch.tensor(a), torch.tensor(b)
    same_bits(call(mg, op, x, y), call(torch, op, t, u))
    same_bits(call(mg, op, y, x), call(torch, op, u, t))
    same_bits(call(mg, op, x, y), call(mg, op, strided(a), y))


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
@pytest.mark.parametrize("size", SIZES, ids=str)
@pytest.mark.parametrize("dt", DTYPES[:2], ids=["f32", "f64"])
def test_in_place_with_a_row(op, size, dt):
    a, b = arrays(*size, dt[0])
    x, t = mg.tensor(a), torch.tensor(a)
    getattr(x, op + "_")(mg.tensor(b))
    getattr(t, op + "_")(torch.tensor(b))
    same_bits(x, t)
    assert x._version == t._version == 1


def test_views_with_offsets_and_a_leading_dim():
    rng = np.random.default_rng(1)
    big = rng.standard_normal((5, 200, 1000)).astype(np.float32)
    x, t = mg.tensor(big), torch.tensor(big)
    # the row is a row of another tensor; the full operand starts mid-storage
    same_bits(x[1, 7:] + x[3, 2], t[1, 7:] + t[3, 2])
    same_bits(x[2:] * x[0, 0], t[2:] * t[0, 0])
    same_bits(x[1:, 3:] - x[0, 1], t[1:, 3:] - t[0, 1])
    # (1, cols) rows and 3-d broadcasts that merge into rows
    same_bits(x + x[0, :1], t + t[0, :1])
    same_bits(x + x[4, :5, :1].reshape(5, 1, 1), t + t[4, :5, :1].reshape(5, 1, 1))  # a column: general path
    same_bits(x[:, 0] + x[4, 1:2], t[:, 0] + t[4, 1:2])
    # in place into a view with an offset, the row from the same storage but elsewhere
    w, v = x[1:3], t[1:3]
    w.add_(x[0, 0])
    v.add_(t[0, 0])
    same_bits(x, t)


def test_in_place_row_that_overlaps_the_destination():
    # the row aliases the destination's first row: torch refuses; so must we, with its error
    a, _ = arrays(50, 1000, np.float32)
    x, t = mg.tensor(a), torch.tensor(a)
    with pytest.raises(RuntimeError) as want:
        t.add_(t[0])
    with pytest.raises(RuntimeError) as got:
        x.add_(x[0])
    assert str(got.value) == str(want.value)


def test_autograd_of_a_row_broadcast():
    a, b = arrays(200, 1000, np.float64)
    x, y = mg.tensor(a, requires_grad=True), mg.tensor(b, requires_grad=True)
    t, u = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (x * y + y).sum().backward()
    (t * u + u).sum().backward()
    same_bits(x.grad, t.grad)
    np.testing.assert_allclose(y.grad.numpy(), u.grad.numpy(), rtol=1e-12)
