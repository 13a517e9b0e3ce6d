"""The trigonometric and hyperbolic ops and their inverses, log2/log10/exp2, the error function
family (erf, erfc, erfinv), frac, deg2rad/rad2deg and sinc, against torch: values at the edges
(±0, ±inf, NaN, the ends of each domain), dtypes (ints and bool compute in float32, frac refuses
them, in place they cannot be cast back), accuracy against a float64 reference (float32 within
0.5 ulp: computed in float64 and rounded once, docs/tensors.md), the nodes and the values they
save, and the in-place forms torch records without a derivative (asinh_, acosh_, atanh_).

Random values, gradients, gradcheck and in-place-on-view checks of the same ops run in the shared
tables: test_elementwise (UNARY_OPS), test_grad_ops (UNARY), test_edge_values (UNARY_GRAD),
test_higher_order_graphs (OPS), test_cuda_backend and the host build of the CUDA kernels."""

import math

import mpmath
import numpy as np
import pytest
import torch

import minigrad as mg

NAMES = ["tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2", "log10", "exp2", "erf",
         "erfc", "erfinv", "frac", "deg2rad", "rad2deg", "sinc"]
ALIASES = {"arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh", "arccosh": "acosh",
           "arctanh": "atanh"}
# computed by one C library function in float64 (float32 rounded from it)
LIBM = ["tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2", "log10", "exp2", "erf",
        "erfc", "erfinv"]
# torch's in-place forms whose backward is `not_implemented` in derivatives.yaml
NO_INPLACE_DERIVATIVE = ["asinh", "acosh", "atanh"]

EDGES = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e-30, -1e-30, 1e30, -1e30, 2.0, -3.0,
         1.5, 88.5, -100.0, 710.0, 1e-300, 0.999999, -0.9999999999, 1e-45]


def lib_dtype(lib, name):
    return getattr(lib, name)


def bits_equal_or_close(m, t, ulps):
    """Element by element: NaN where torch has NaN, the same infinities and zeros (with their
    signs), and finite nonzero values within `ulps` units in the last place of torch's."""
    a = m.numpy().astype(np.float64)
    b = t.numpy()
    spacing = np.spacing(np.abs(b)).astype(np.float64)
    b = b.astype(np.float64)
    same = (np.isnan(a) & np.isnan(b)) | ((a == b) & (np.signbit(a) == np.signbit(b)))
    finite = np.isfinite(a) & np.isfinite(b) & (a != 0) & (b != 0)
    with np.errstate(invalid="ignore"):
        close = finite & (np.abs(a - b) <= ulps * spacing)
    bad = ~(same | close)
    assert not bad.any(), f"minigrad {a[bad].tolist()} torch {b[bad].tolist()} at {np.nonzero(bad)[0].tolist()}"


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", NAMES + list(ALIASES))
def test_values_at_the_edges_match_torch(name, dtype):
    m = mg.tensor(EDGES, dtype=lib_dtype(mg, dtype))
    t = torch.tensor(EDGES, dtype=lib_dtype(torch, dtype))
    got, want = getattr(mg, name)(m), getattr(torch, name)(t)
    assert got.dtype == m.dtype and got.shape == m.shape
    # exact at NaN, the infinities and the zeros; within 2 ulp elsewhere (torch's SLEEF float32
    # math is 1-3.5 ulp from the true value, ours 0.5)
    bits_equal_or_close(got, want, ulps=2)
    # the method and the in-place method agree with the function
    bits_equal_or_close(getattr(m, name)(), want, ulps=2)
    m2, t2 = m.clone(), t.clone()
    assert getattr(m2, name + "_")() is m2
    getattr(t2, name + "_")()
    bits_equal_or_close(m2, t2, ulps=2)
    assert m2._version == t2._version == 1


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
@pytest.mark.parametrize("name", NAMES)
def test_integer_and_bool_inputs_follow_torch(name, dtype):
    vals = [0, 1, 1, 0] if dtype == "bool" else [0, 1, -1, 2, 45, -180]
    m = mg.tensor(vals, dtype=lib_dtype(mg, dtype))
    t = torch.tensor(vals, dtype=lib_dtype(torch, dtype))
    try:
        want = getattr(torch, name)(t)
    except Exception as e:  # frac: "frac_cpu" not implemented for 'Long'
        with pytest.raises(type(e)) as mine:
            getattr(mg, name)(m)
        assert str(mine.value) == str(e)
        return
    got = getattr(mg, name)(m)
    assert got.dtype == mg.float32 and want.dtype == torch.float32
    bits_equal_or_close(got, want, ulps=2)


@pytest.mark.parametrize("name", NAMES)
def test_in_place_on_integers_is_refused_as_torch_refuses_it(name):
    m, t = mg.tensor([1, 2], dtype=mg.int64), torch.tensor([1, 2])
    with pytest.raises(Exception) as theirs:
        getattr(t, name + "_")()
    with pytest.raises(type(theirs.value)) as mine:
        getattr(m, name + "_")()
    assert str(mine.value) == str(theirs.value)
    assert m.tolist() == [1, 2] and m._version == 0


@pytest.mark.parametrize("name", LIBM)
def test_float32_is_within_half_an_ulp_of_the_float64_result(name):
    """float32 results are the float64 function rounded once: at most 0.5 ulp from the float64
    reference (plus the reference's own error, far below a float32 ulp)."""
    lo, hi = {"asin": (-1, 1), "acos": (-1, 1), "atanh": (-1, 1), "erfinv": (-1, 1), "acosh": (1, 1e3),
              "log2": (0, 1e4), "log10": (0, 1e4), "sinh": (-80, 80), "cosh": (-80, 80), "exp2": (-120, 120),
              "tan": (-1.5, 1.5), "erfc": (-5, 10)}.get(name, (-50, 50))
    x = np.linspace(lo, hi, 20001).astype(np.float32)
    got = getattr(mg, name)(mg.tensor(x)).numpy().astype(np.float64)
    ref = getattr(torch, name)(torch.tensor(x, dtype=torch.float64)).numpy()
    ok = np.isfinite(ref) & (np.abs(ref) > 1e-37)
    ulp = np.spacing(np.abs(ref[ok]).astype(np.float32)).astype(np.float64)
    assert np.max(np.abs(got[ok] - ref[ok]) / ulp) <= 0.5 + 1e-6
    assert (np.isnan(got) == np.isnan(ref)).all()


def test_erfinv_float64_is_within_an_ulp_of_the_true_value():
    """Against mpmath at 200 bits, from 0 to the last doubles below 1 (where erf(x) - y cancels
    and the residual is taken through erfc)."""
    mpmath.mp.prec = 200
    rng = np.random.default_rng(0)
    ys = np.concatenate([1 - np.exp2(-np.arange(1.0, 54.0)), rng.uniform(-1, 1, 500), [1e-300, 5e-324, -1e-20]])
    got = np.array(mg.erfinv(mg.tensor(ys, dtype=mg.float64)).tolist())
    ref = np.array([float(mpmath.erfinv(mpmath.mpf(float(y)))) for y in ys])
    assert np.max(np.abs(got - ref) / np.spacing(np.abs(ref))) <= 1.0


SAVED = {"tan": "result", "exp2": "result", "frac": None, "deg2rad": None, "rad2deg": None}


def domain_values(name):
    return {"acosh": [1.5, 2.0, 3.25], "asin": [-0.5, 0.25, 0.75], "acos": [-0.5, 0.25, 0.75],
            "atanh": [-0.5, 0.25, 0.75], "erfinv": [-0.5, 0.25, 0.75]}.get(name, [-1.5, 0.25, 2.0])


@pytest.mark.parametrize("name", NAMES + list(ALIASES))
def test_nodes_and_saved_values_match_torch(name):
    base = ALIASES.get(name, name)
    vals = domain_values(base)
    out = {}
    for lib in (torch, mg):
        x = lib.tensor(vals, dtype=lib.float64, requires_grad=True)
        y = getattr(x, name)()
        fn = y.grad_fn
        names = fn._saved_names() if lib is mg else [a[len("_saved_"):] for a in dir(fn) if a.startswith("_saved_")]
        saved = {"_saved_" + a: getattr(fn, "_saved_" + a) for a in names}
        out[lib.__name__] = (fn.name(), sorted(saved), {k: v.tolist() for k, v in saved.items()})
        if SAVED.get(base, "self") == "result":
            assert saved["_saved_result"].equal(y)
    assert out["minigrad"] == out["torch"]
    assert out["torch"][0] == {"deg2rad": "Deg2RadBackward0", "rad2deg": "Rad2DegBackward0"}.get(
        base, base[0].upper() + base[1:] + "Backward0")


@pytest.mark.parametrize("name", [n for n in NAMES if n not in NO_INPLACE_DERIVATIVE])
def test_in_place_on_a_non_leaf_records_the_same_node(name):
    vals = domain_values(name)
    got = {}
    for lib in (torch, mg):
        x = lib.tensor(vals, dtype=lib.float64, requires_grad=True)
        y = x * 1
        getattr(y, name + "_")()
        y.backward(lib.tensor([1.0, -2.0, 0.5], dtype=lib.float64))
        got[lib.__name__] = (y.grad_fn.name(), y._version, np.asarray(x.grad.tolist()))
    (nm, vm, gm), (nt, vt, gt) = got["minigrad"], got["torch"]
    assert (nm, vm) == (nt, vt)
    np.testing.assert_allclose(gm, gt, rtol=1e-14, atol=1e-300)


@pytest.mark.parametrize("name", NO_INPLACE_DERIVATIVE)
def test_in_place_forms_without_a_derivative_raise_at_backward(name):
    """torch records AsinhBackward1 (etc.) for asinh_ on a tensor that requires grad, and its
    backward raises NotImplementedError; the forward works, and without grad nothing is recorded."""
    vals = domain_values(name)
    errors = {}
    for lib in (torch, mg):
        x = lib.tensor(vals, dtype=lib.float64, requires_grad=True)
        y = x * 1
        assert getattr(y, name + "_")() is y
        assert y.grad_fn.name() == name[0].upper() + name[1:] + "Backward1"
        assert y.grad_fn.next_functions[0][0].name() == "MulBackward0"
        assert y.requires_grad and y._version == 1
        with pytest.raises(NotImplementedError) as e:
            y.sum().backward()
        errors[lib.__name__] = str(e.value)
        with lib.no_grad():
            z = lib.tensor(vals, dtype=lib.float64)
            getattr(z, name + "_")()
            assert z.grad_fn is None
    assert errors["minigrad"] == errors["torch"] == f"the derivative for 'inplace version of {name}' is not implemented."


@pytest.mark.parametrize("name", NAMES + list(ALIASES))
def test_the_same_names_exist_as_in_torch(name):
    for suffix in ("", "_"):
        assert hasattr(mg, name + suffix) == hasattr(torch, name + suffix), name + suffix
        assert hasattr(mg.Tensor, name + suffix) == hasattr(torch.Tensor, name + suffix), name + suffix
    # torch has no torch.erfinv_ (only the method)
    assert not hasattr(mg, "erfinv_")


def test_module_in_place_functions_write_the_argument():
    x = mg.tensor([0.25, -0.5], dtype=mg.float64)
    assert mg.tan_(x) is x and x._version == 1
    assert x.tolist() == torch.tan(torch.tensor([0.25, -0.5], dtype=torch.float64)).tolist()
