"""The fast path of out-of-place unary ops (rust/core/src/ops/unary/fast.rs) against
torch and against minigrad's general path (the same data in a layout the fast path refuses):
bit-identical values including NaN, infinities and signed zeros, fresh row-major results,
views with offsets, size-1 dims, autograd through it, and the calls it must leave alone.
Sizes on the calling thread (below 32768 elements), above it, and split over the threads."""

import numpy as np
import pytest
import torch

import minigrad as mg

# ops with a per-element function in `with_float_fn!` (the fast path's ops), and the input
# range each is defined on
OPS = {
    "relu": None, "neg": None, "abs": None, "sign": None, "sqrt": "pos", "rsqrt": "pos",
    "sin": None, "cos": None, "log1p": "pos", "expm1": None, "reciprocal": None,
    "floor": None, "ceil": None, "round": None, "trunc": None,
}
# not bit-identical with torch: libm's sin, cos, log1p, expm1 against torch's SLEEF, and
# correctly rounded sqrt (as numpy's) against torch's float32 sqrt, which is an ulp off for
# about one value in six; within an ulp of torch (NaN signs may differ)
APPROX = {"sin", "cos", "log1p", "expm1", "sqrt", "rsqrt", "reciprocal"}
DTYPES = [(np.float32, torch.float32), (np.float64, torch.float64)]
# (40, 1000) is above the small-call size, (300, 1001) above the split (pieces start mid-row)
SHAPES = [(), (1,), (7,), (63,), (64,), (5, 33), (1, 100), (2, 1, 3, 17), (100, 327), (40, 1000), (300, 1001)]


def data(shape, npdt, domain, seed=0):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal(shape) * 3).astype(npdt)
    if domain == "pos":
        a = np.abs(a) + npdt(0.01)
    flat = a.reshape(-1)
    specials = [0.0, -0.0, 0.5, -0.5, 2.5, -2.5, np.inf, -np.inf, np.nan]
    k = min(len(specials), flat.size)
    flat[:k] = np.asarray(specials[:k], dtype=npdt)
    return np.asarray(a)


def same_values(got, want):
    """Equal values, signed zeros told apart, NaN where torch has NaN (the sign bit of a NaN,
    which x86 sets for sqrt of a negative number, is not compared)."""
    g, w = got.detach().numpy(), want.detach().numpy()
    assert g.shape == w.shape and g.dtype == w.dtype
    np.testing.assert_array_equal(g, w)
    assert np.array_equal(np.signbit(g) | np.isnan(g), np.signbit(w) | np.isnan(w))


def same_bits(x, y):
    xn, yn = np.ascontiguousarray(x.detach().numpy()), np.ascontiguousarray(y.detach().numpy())
    assert xn.shape == yn.shape and xn.dtype == yn.dtype
    assert np.array_equal(xn.view(np.uint8), yn.view(np.uint8)), (xn, yn)


def general(a):
    """The values of `a` in a layout the fast path refuses (every other element of a larger
    tensor: the last dim has stride 2); a 0-d tensor has no such layout."""
    return mg.tensor(np.stack([a, a], axis=-1))[..., 0]


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_matches_torch_and_the_general_path(op, shape, dt):
    a = data(shape, dt[0], OPS[op])
    x = mg.tensor(a)
    got = getattr(x, op)()
    want = getattr(torch.tensor(a), op)()
    if op in APPROX:
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=4e-7 if dt[0] == np.float32 else 1e-15, atol=0)
    else:
        same_values(got, want)
    g = general(a)
    assert g.dim() == 0 or g.stride()[-1] == 2
    same_bits(got, getattr(g, op)())
    assert got.is_contiguous() and got.stride() == x.stride()
    assert got.data_ptr() != x.data_ptr() and got._version == 0 and x._version == 0


@pytest.mark.parametrize("dt", DTYPES, ids=["f32", "f64"])
def test_views_with_offsets_and_odd_size_one_strides(dt):
    a = data((9, 40), dt[0], None)
    x, t = mg.tensor(a), torch.tensor(a)
    same_bits(x[3:].relu(), t[3:].relu())
    same_bits(x[2].neg(), t[2].neg())
    same_bits(x[:, 5:9].abs(), t[:, 5:9].abs())  # not row-major: the general path
    # a size-1 dim with a stride that is not row-major's: torch keeps the input's strides
    y, u = x[:1], t[:1]
    got, want = y.relu(), u.relu()
    same_bits(got, want)
    assert got.stride() == want.stride()
    xs = mg.as_strided(x, (1, 40), (7, 1))
    us = torch.as_strided(t, (1, 40), (7, 1))
    got, want = xs.abs(), us.abs()
    same_bits(got, want)
    assert got.stride() == want.stride()


def test_module_functions_and_operators():
    a = data((4, 50), np.float32, None)
    x, t = mg.tensor(a), torch.tensor(a)
    same_bits(mg.relu(x), torch.relu(t))
    same_bits(-x, -t)
    same_bits(abs(x), abs(t))
    same_bits(mg.nn.functional.relu(x), torch.nn.functional.relu(t))


def test_autograd_through_the_fast_path():
    a = data((6, 30), np.float64, None)[1:]  # no NaN/inf row
    a = np.where(np.isfinite(a), a, 1.0)
    x = mg.tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    y, u = x.relu(), t.relu()
    assert y.grad_fn.name() == u.grad_fn.name() == "ReluBackward0"
    same_bits(y, u)
    y.sum().backward()
    u.sum().backward()
    same_bits(x.grad, t.grad)
    with mg.no_grad():
        z = x.neg()
    assert z.grad_fn is None and not z.requires_grad


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool", "float16", "bfloat16"])
def test_other_dtypes_take_the_general_path(dtype):
    a = np.arange(-20, 20).reshape(4, 10)
    t = torch.tensor(a).to(getattr(torch, dtype))
    x = mg.tensor(a).to(getattr(mg, dtype))
    for op in ["abs", "neg", "relu", "sign"]:
        try:
            want = getattr(t, op)()
        except Exception as e:  # noqa: BLE001 - the error is what we compare
            with pytest.raises(type(e)):
                getattr(x, op)()
            continue
        got = getattr(x, op)()
        assert str(got.dtype).replace("minigrad", "torch") == str(want.dtype)
        np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


def test_empty_and_math_ops():
    x, t = mg.zeros(0, 3), torch.zeros(0, 3)
    assert x.relu().shape == t.relu().shape
    a = data((30, 31), np.float32, None)
    x, t = mg.tensor(a), torch.tensor(a)
    for op in ["exp", "tanh", "sigmoid"]:  # vectorised kernels: the general path
        np.testing.assert_allclose(getattr(x, op)().numpy(), getattr(t, op)().numpy(), rtol=2e-6, atol=1e-7)
