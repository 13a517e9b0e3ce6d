"""smooth_l1_loss and huber_loss (F and nn) against torch: values, gradients in input and
target, grad_fn names and saved parameters, second derivatives, the beta = 0 path (l1_loss),
NaN, broadcasting, legacy flags; their error cases are in test_nn_norm_loss.py's loss error table."""

import warnings

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn.functional as MF
from test_nn_norm_loss import check, pair

SHAPES = st.sampled_from([((3,), (3,)), ((2, 3), (2, 3)), ((2, 3), (3,)), ((), ()), ((4, 1), (1, 2)), ((0, 2), (0, 2))])


def call(lib_f, name, a, b, reduction, param):
    if name == "smooth_l1_loss":
        return lib_f.smooth_l1_loss(a, b, reduction=reduction, beta=param)
    return lib_f.huber_loss(a, b, reduction=reduction, delta=param)


@settings(max_examples=80)
@given(
    shapes=SHAPES,
    reduction=st.sampled_from(["mean", "sum", "none"]),
    name=st.sampled_from(["smooth_l1_loss", "huber_loss"]),
    param=st.sampled_from([1.0, 0.5, 2.0, 0.0]),
    target_grad=st.booleans(),
    dtype=st.sampled_from(["float32", "float64"]),
    seed=st.integers(0, 2**16),
)
def test_values_gradients_and_second_derivatives_match_torch(shapes, reduction, name, param, target_grad, dtype, seed):
    if name == "huber_loss" and param == 0.0:
        param = 0.25  # delta must be positive (the error is tested below)
    rng = np.random.default_rng(seed)
    # differences on both sides of the threshold, and some exactly at it
    a = rng.normal(scale=1.5, size=shapes[0])
    b = rng.normal(scale=1.5, size=shapes[1])
    inputs = [(a, True), (b, target_grad)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(lambda x, y: call(MF, name, x, y, reduction, param), lambda x, y: call(TF, name, x, y, reduction, param),
              inputs, dtype, seed, second_order=dtype == "float64")


@pytest.mark.parametrize("name,param", [("smooth_l1_loss", 1.0), ("smooth_l1_loss", 0.5), ("huber_loss", 1.0), ("huber_loss", 0.7)])
def test_differences_at_the_threshold_and_nan(name, param):
    d = np.array([-param, param, 0.0, -0.0, 2 * param, -3 * param, np.nan, np.inf, -np.inf])
    for reduction in ("none", "sum"):
        m, t = check(lambda x, y: call(MF, name, x, y, reduction, param), lambda x, y: call(TF, name, x, y, reduction, param),
                     [(d, True), (np.zeros_like(d), True)])


@pytest.mark.parametrize("name,param,node,saved", [
    ("smooth_l1_loss", 0.5, "SmoothL1LossBackward0", {"_saved_beta": "0.5"}),
    ("huber_loss", 2.0, "HuberLossBackward0", {"_saved_delta": "2.0"}),
])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nodes_and_saved_values_are_torchs(name, param, node, saved, reduction):
    got = {}
    for lib, F in ((torch, TF), (mg, MF)):
        x = lib.tensor([[0.3, -2.0], [1.0, 0.1]], dtype=lib.float64, requires_grad=True)
        y = lib.tensor([[0.0, 1.0], [-1.0, 0.4]], dtype=lib.float64)
        fn = call(F, name, x, y, reduction, param).grad_fn
        got[lib.__name__] = (fn.name(), {k: str(getattr(fn, k)) for k in saved}, str(fn._saved_reduction),
                             fn._saved_self.detach().numpy().tolist(), fn._saved_target.detach().numpy().tolist())
    assert got["minigrad"] == got["torch"]
    assert got["torch"][0] == node


def test_smooth_l1_with_beta_zero_is_l1_loss():
    for lib, F in ((torch, TF), (mg, MF)):
        x = lib.tensor([0.3, -2.0, 1.0], requires_grad=True)
        out = F.smooth_l1_loss(x, lib.zeros(3), beta=0.0)
        assert out.grad_fn.name() == "MeanBackward0"
        assert abs(out.item() - 1.1) < 1e-6


def test_modules_match_torch():
    rng = np.random.default_rng(3)
    a, b = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    for make in (lambda nn: nn.SmoothL1Loss(), lambda nn: nn.SmoothL1Loss(reduction="sum", beta=0.3),
                 lambda nn: nn.HuberLoss(), lambda nn: nn.HuberLoss(reduction="none", delta=0.4)):
        mm, tm = make(mg.nn), make(torch.nn)
        assert repr(mm) == repr(tm)
        assert (getattr(mm, "beta", None), getattr(mm, "delta", None), mm.reduction) == \
               (getattr(tm, "beta", None), getattr(tm, "delta", None), tm.reduction)
        check(lambda x, y: mm(x, y), lambda x, y: tm(x, y), [(a, True), (b, False)])


def test_legacy_flags_and_broadcast_warning():
    with pytest.warns(UserWarning, match="different to the input size"):
        MF.smooth_l1_loss(mg.zeros(3), mg.zeros(2, 3))
    with pytest.warns(UserWarning, match="different to the input size"):
        MF.huber_loss(mg.zeros(3), mg.zeros(2, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = MF.smooth_l1_loss(mg.tensor([1.0, 3.0]), mg.zeros(2), size_average=False)
        t = TF.smooth_l1_loss(torch.tensor([1.0, 3.0]), torch.zeros(2), size_average=False)
    assert m.item() == t.item()



def _outcome(lib, name, xdtype, tdtype, grad_of):
    """What a pointwise loss of mixed dtypes gives: (dtype, value, gradient) or the error."""
    x = lib.tensor([0.2, 0.7, -1.0, 3.0]).to(getattr(lib, xdtype))
    t = lib.tensor([0.0, 1.0, 1.0, 0.0]).to(getattr(lib, tdtype))
    leaf = {"x": x, "t": t}[grad_of]
    if leaf.dtype.is_floating_point:
        leaf.requires_grad_()
    f = getattr(lib.nn.functional, name)
    try:
        out = f(x, t, beta=0.5) if name == "smooth_l1_loss" else f(x, t, delta=0.5) if name == "huber_loss" else f(x, t)
    except Exception as e:  # noqa: BLE001 - the error is what is compared
        return ("forward", type(e).__name__, str(e))
    dtype = str(out.dtype).split(".")[-1]
    if not leaf.requires_grad:
        return (dtype, out.item())
    try:
        out.backward()
    except Exception as e:  # noqa: BLE001
        return (dtype, out.item(), "backward", type(e).__name__, str(e))
    return (dtype, out.item(), str(leaf.grad.dtype).split(".")[-1], leaf.grad.tolist())


@pytest.mark.parametrize("grad_of", ["x", "t"])
@pytest.mark.parametrize("xdtype,tdtype", [("float32", "bool"), ("bool", "float32"), ("float64", "bool"), ("float32", "float64"),
                                           ("float64", "float32"), ("float32", "int64"), ("int64", "float32")])
@pytest.mark.parametrize("name", ["mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"])
def test_mixed_dtypes_match_torch(name, xdtype, tdtype, grad_of):
    """torch's pointwise-loss kernels compute in the common dtype and read a bool as 0/1 (l1_loss,
    composed of `-`, refuses bools); huber's loss has the input's dtype and its backward kernel
    refuses any other dtype ("Found dtype Double but expected Float")."""
    mine, theirs = _outcome(mg, name, xdtype, tdtype, grad_of), _outcome(torch, name, xdtype, tdtype, grad_of)
    assert len(mine) == len(theirs), (mine, theirs)
    for m, t in zip(mine, theirs):
        if isinstance(t, (float, list)):
            np.testing.assert_allclose(m, t, rtol=1e-6)
        else:
            assert m == t, (mine, theirs)
