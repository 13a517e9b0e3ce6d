"""selu and celu (F.selu/F.celu, their in-place forms, minigrad.selu/celu, nn.SELU/nn.CELU)
against torch: values on special inputs, gradients, grad_fn names, in-place versions, narrow
dtypes, errors. Their graphs of the backward (EluBackwardBackward0 with celu's float32
input_scale) and saved values are in test_higher_order_graphs.py."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from hypothesis import assume, given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn.functional as MF

SPECIALS = [0.0, -0.0, np.nan, np.inf, -np.inf, 1e-30, -1e-30, 88.0, -88.0, -1e4, 1e30]


def calls(lib, name, alpha):
    F = MF if lib is mg else TF
    return {
        "selu": lambda x: F.selu(x),
        "selu_": lambda x: F.selu(x, inplace=True),
        "minigrad.selu": lambda x: lib.selu(x),
        "celu": lambda x: F.celu(x, alpha),
        "celu_": lambda x: F.celu_(x, alpha),
        "minigrad.celu": lambda x: lib.celu(x, alpha=alpha),
        "elu": lambda x: F.elu(x, alpha),
    }[name]


@settings(max_examples=150, deadline=None)
@given(
    name=st.sampled_from(["selu", "selu_", "minigrad.selu", "celu", "celu_", "minigrad.celu", "elu"]),
    alpha=st.sampled_from([1.0, 0.6, 2.5, -0.5, 1e-3]),
    dtype=st.sampled_from(["float32", "float64"]),
    values=st.lists(st.one_of(st.floats(-30, 30), st.sampled_from(SPECIALS)), min_size=1, max_size=12),
)
def test_values_and_gradients_match_torch(name, alpha, dtype, values):
    assume(not (name == "celu_" and alpha < 0))  # its backward refuses (tested below)
    x = np.array(values)
    tx = torch.tensor(x, dtype=getattr(torch, dtype), requires_grad=True)
    mx = mg.tensor(x.tolist(), dtype=getattr(mg, dtype), requires_grad=True)
    # in place on a non-leaf, as torch requires
    ty, my = calls(torch, name, alpha)(tx * 1), calls(mg, name, alpha)(mx * 1)
    rtol = 1e-6 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(my.detach().numpy(), ty.detach().numpy(), rtol=rtol, atol=0, equal_nan=True)
    # -0.0 stays -0.0 (the negative branch of 0 * expm1(-0.0))
    assert np.array_equal(np.signbit(my.detach().numpy()), np.signbit(ty.detach().numpy()))
    assert my.grad_fn.name() == ty.grad_fn.name()
    w = np.linspace(-1, 1, len(values))
    ty.backward(torch.tensor(w, dtype=ty.dtype))
    my.backward(mg.tensor(w.tolist(), dtype=my.dtype))
    # the in-place forms' gradient reads the rounded result: `result + alpha * scale` cancels, so
    # one ulp of the result (minigrad rounds an f64 value once; torch computes in float32) is an
    # absolute error of about one ulp of alpha * scale
    atol = 4 * np.finfo(dtype).eps * max(1.0, abs(alpha) * 1.06) if name.endswith("_") else 1e-300
    np.testing.assert_allclose(mx.grad.numpy(), tx.grad.numpy(), rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("lib_name", ["selu", "celu"])
def test_in_place_bumps_the_version_and_reads_the_result(lib_name):
    for lib in (torch, mg):
        x = lib.tensor([-1.0, 0.5, -2.0], requires_grad=True)
        y = x * 2
        v = y._version
        out = getattr(lib.nn.functional, lib_name + "_")(y)
        assert out is y and y._version == v + 1
        assert y.grad_fn.name() == ("EluBackward1" if lib_name == "selu" else "CeluBackward1")
    with pytest.raises(RuntimeError) as theirs:
        TF.selu_(torch.ones(2, requires_grad=True))
    with pytest.raises(RuntimeError) as mine:
        MF.selu_(mg.ones(2, requires_grad=True))
    assert str(mine.value) == str(theirs.value)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("name", ["selu", "celu"])
def test_narrow_dtypes(name, dtype):
    x = np.array([-3.0, -1.0, -0.25, -0.0, 0.0, 0.75, 2.0, 40.0])
    ty = calls(torch, name, 0.7)(torch.tensor(x, dtype=getattr(torch, dtype)))
    my = calls(mg, name, 0.7)(mg.tensor(x.tolist(), dtype=getattr(mg, dtype)))
    assert str(my.dtype) == f"minigrad.{dtype}"
    # both round a float32 (torch) or float64-then-float32 (minigrad) value once more: one ulp
    ulp = 2 ** -10 if dtype == "float16" else 2 ** -7
    np.testing.assert_allclose(my.float().numpy(), ty.float().numpy(), rtol=ulp, atol=0)


def test_modules_match_torch():
    x = np.array([[-1.5, 0.25], [3.0, -0.0]])
    for m_mod, t_mod in [(mg.nn.SELU(), torch.nn.SELU()), (mg.nn.CELU(0.4), torch.nn.CELU(0.4)),
                         (mg.nn.SELU(inplace=True), torch.nn.SELU(inplace=True)),
                         (mg.nn.CELU(2.0, inplace=True), torch.nn.CELU(2.0, inplace=True))]:
        assert repr(m_mod) == repr(t_mod)
        np.testing.assert_allclose(m_mod(mg.tensor(x.tolist())).numpy(), t_mod(torch.tensor(x, dtype=torch.float32)).numpy(),
                                   rtol=1e-6)


ERRORS = {
    "celu alpha 0": lambda lib, F: F.celu(lib.ones(2), 0.0),
    "celu_ alpha 0": lambda lib, F: F.celu_(lib.ones(2), 0.0),
    "torch.celu alpha 0": lambda lib, F: lib.celu(lib.ones(2), alpha=0),
    "selu int64": lambda lib, F: F.selu(lib.ones(2, dtype=lib.int64)),
    "celu bool": lambda lib, F: lib.celu(lib.ones(2, dtype=lib.bool)),
    "selu_ int32": lambda lib, F: F.selu_(lib.ones(2, dtype=lib.int32)),
    "selu number": lambda lib, F: lib.selu(3),
    "celu number": lambda lib, F: F.celu(3.0),
    "celu alpha text": lambda lib, F: F.celu(lib.ones(2), "x"),
    # the module-level forms have no `inplace`
    "torch.selu inplace": lambda lib, F: lib.selu(lib.ones(2), True),
    "torch.celu inplace": lambda lib, F: lib.celu(lib.ones(2), 1.0, True),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_errors_match_torch(case):
    with pytest.raises(Exception) as theirs:
        ERRORS[case](torch, TF)
    with pytest.raises(Exception) as mine:
        ERRORS[case](mg, MF)
    assert type(mine.value).__name__ == type(theirs.value).__name__
    assert str(mine.value) == str(theirs.value)


@pytest.mark.parametrize("op", ["leaky_relu_", "elu_", "celu_"])
def test_in_place_backward_with_a_negative_slope_raises_torchs_error(op):
    """The result of an in-place leaky_relu/elu/celu with a negative slope does not tell which
    branch each input took: torch's backward refuses, and so does minigrad's (it used to give
    leaky_relu_'s gradient as if the slope were positive)."""
    msgs = {}
    for lib in (torch, mg):
        x = lib.tensor([-1.0, 2.0], requires_grad=True)
        y = getattr(lib.nn.functional, op)(x * 1, -0.5)
        with pytest.raises(RuntimeError) as e:
            y.sum().backward()
        msgs[lib.__name__] = str(e.value)
    assert msgs["minigrad"] == msgs["torch"]
