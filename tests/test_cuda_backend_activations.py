"""The float-parameterised activations (leaky_relu, elu, selu, celu; out of place and in place)
on the CUDA backend against torch (CPU): their forward kernel (unary.cu's LeakyRelu and Elu
functors with the op's slope / alpha, scale, input_scale), gradients and grad_fn names; on a GPU
when there is one, else on the host-emulated device (tests/cuda_host/backend.py). Before these,
leaky_relu and elu had no kernel on cuda."""

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import minigrad as mg
import minigrad.nn.functional as MF
from cuda_host.backend import back, cuda_device, on  # noqa: F401  (cuda_device: autouse fixture)

X = torch.tensor([[-3.0, -0.5, -0.0, 0.0], [0.25, 2.0, -1e-3, float("nan")], [-40.0, 7.0, float("-inf"), float("inf")]])
OPS = {
    "leaky_relu": lambda F, x: F.leaky_relu(x, 0.2),
    "leaky_relu_": lambda F, x: F.leaky_relu(x, 0.2, inplace=True),
    "elu": lambda F, x: F.elu(x, 0.7),
    "elu_": lambda F, x: F.elu_(x, 1.3),
    "elu negative alpha": lambda F, x: F.elu(x, -0.5),
    "selu": lambda F, x: F.selu(x),
    "selu_": lambda F, x: F.selu(x, inplace=True),
    "celu": lambda F, x: F.celu(x, 0.6),
    "celu_": lambda F, x: F.celu_(x, 2.0),
}


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16])
@pytest.mark.parametrize("name", list(OPS))
def test_activation_on_the_device_matches_torch(name, dtype, layout):
    x = X.to(dtype)
    tx = x.clone().requires_grad_()
    mx = on(x).requires_grad_()
    t_in, m_in = tx * 1, mx * 1
    if layout == "transposed":
        t_in, m_in = t_in.t(), m_in.t()
    ty, my = OPS[name](TF, t_in), OPS[name](MF, m_in)
    assert my.device.type == "cuda" and my.grad_fn.name() == ty.grad_fn.name()
    tol = {torch.float32: 1e-6, torch.float64: 1e-13, torch.float16: 2 ** -10}[dtype]
    got, want = back(my.detach()), ty.detach()
    torch.testing.assert_close(got, want, rtol=tol, atol=0, equal_nan=True)
    assert torch.equal(got.signbit(), want.signbit()), "the sign of zero"
    if dtype == torch.float16:
        return
    w = torch.linspace(-1, 1, ty.numel(), dtype=dtype).reshape(ty.shape)
    ty.backward(w)
    my.backward(on(w))
    # the in-place forms read the rounded result (result + alpha cancels): an ulp of alpha
    atol = 4 * torch.finfo(dtype).eps * 2 if name.endswith("_") else 0
    torch.testing.assert_close(back(mx.grad), tx.grad, rtol=tol, atol=atol, equal_nan=True)


def test_in_place_activation_keeps_the_tensor_and_bumps_its_version():
    x = on(X)
    v = x._version
    out = MF.selu_(x)
    assert out is x and x._version == v + 1
    torch.testing.assert_close(back(x), TF.selu(X), rtol=1e-6, atol=0, equal_nan=True)


def test_integer_input_raises_torchs_error_on_the_device():
    with pytest.raises(NotImplementedError, match="\"elu_cuda\" not implemented for 'Long'"):
        MF.celu(on(torch.ones(3, dtype=torch.int64)))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_nan_to_num_on_the_device(dtype):
    """nan_to_num's masks and fills run on the device (comparisons and masked fills), its
    gradient too; the values and gradient equal torch's."""
    vals = [math.nan, math.inf, -math.inf, 1.5, -0.0, 3e38]
    x = torch.tensor(vals, dtype=dtype, requires_grad=True)
    xm = on(x.detach()).requires_grad_()
    want, got = x.nan_to_num(nan=2.0, neginf=-5.0), xm.nan_to_num(nan=2.0, neginf=-5.0)
    assert got.device.type == "cuda" and type(got.grad_fn).__name__ == "NanToNumBackward0"
    assert torch.equal(back(got.detach()), want.detach())
    g = torch.arange(1.0, 7.0, dtype=dtype)
    want.backward(g)
    got.backward(on(g))
    assert torch.equal(back(xm.grad), x.grad)
    y = on(x.detach())
    y.nan_to_num_()
    assert y._version == 1 and torch.equal(back(y), x.detach().nan_to_num())
