"""The fused optimizer steps on cuda (rust/py/src/cuda/optim.rs, rust/core/src/ops/optim.cu): one
launch per group, whose arithmetic is the CPU kernel's, so a cuda step equals the CPU step bit
for bit, and torch's for-loop step as tests/test_optim_fused.py says. Without a GPU, cuda:0 is the
host emulation (tests/cuda_host/): the g++ build of the same .cu file.
"""

import numpy as np
import pytest
import torch

import minigrad as mg
from cuda_host.backend import cuda_device  # noqa: F401  (the module's autouse fixture)
from minigrad import optim

SHAPES = [(3, 4), (7,), (), (0, 2), (300,)]

CONFIGS = [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9, dampening=0.2, weight_decay=0.01)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, maximize=True)),
    ("Adam", dict(lr=1e-2)),
    ("Adam", dict(lr=1e-2, amsgrad=True, weight_decay=0.1, maximize=True)),
    ("Adam", dict(lr=1e-2, betas=(0.3, 0.9))),
    ("AdamW", dict(lr=1e-2, amsgrad=True)),
]


def _start(dtype, device, transposed):
    g = torch.Generator().manual_seed(0)
    ps = []
    for shape in SHAPES:
        v = torch.randn(shape, generator=g, dtype=dtype)
        ps.append(mg.from_numpy(v.numpy().copy()).to(device).requires_grad_())
    if transposed:
        v = torch.randn(3, 5, generator=g, dtype=dtype)
        ps.append(mg.from_numpy(v.numpy().copy()).to(device).t().detach().requires_grad_())
    return ps


def _steps(name, kwargs, dtype, device, steps=4, transposed=True):
    ps = _start(dtype, device, transposed)
    opt = getattr(optim, name)(ps, **kwargs)
    for step in range(steps):
        g = torch.Generator().manual_seed(100 + step)
        for p in ps:
            p.grad = mg.from_numpy(torch.randn(p.shape, generator=g, dtype=dtype).numpy().copy()).to(device)
        opt.step()
    return ps, opt


def _np(t):
    t = t.detach().cpu()
    return np.array(t.tolist()) if t.dim() == 0 else t.numpy()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name,kwargs", CONFIGS)
def test_cuda_step_equals_the_cpu_step_bit_for_bit(name, kwargs, dtype):
    cps, copt = _steps(name, kwargs, dtype, "cpu")
    gps, gopt = _steps(name, kwargs, dtype, "cuda")
    for c, g in zip(cps, gps):
        assert g.is_cuda and g._version == c._version
        np.testing.assert_array_equal(_np(g), _np(c))
        for key, value in copt.state[c].items():
            other = gopt.state[g][key]
            assert other._version == value._version, key
            np.testing.assert_array_equal(_np(other), _np(value), err_msg=key)


@pytest.mark.parametrize("name,kwargs", [CONFIGS[1], CONFIGS[4]])
def test_cuda_step_matches_torch(name, kwargs):
    gps, _ = _steps(name, kwargs, torch.float32, "cuda", transposed=False)
    g0 = torch.Generator().manual_seed(0)
    tps = [torch.randn(s, generator=g0).requires_grad_() for s in SHAPES]
    topt = getattr(torch.optim, name)(tps, **kwargs)
    for step in range(4):
        g = torch.Generator().manual_seed(100 + step)
        for p in tps:
            p.grad = torch.randn(p.shape, generator=g)
        topt.step()
    for tp, gp in zip(tps, gps):
        assert gp._version == tp._version
        np.testing.assert_allclose(_np(gp), _np(tp), rtol=1e-6, atol=1e-7)


def test_fused_true_on_cuda_runs_the_same_kernel_without_bumps():
    cps, _ = _steps("Adam", dict(lr=1e-2, fused=True), torch.float32, "cpu", transposed=False)
    gps, gopt = _steps("Adam", dict(lr=1e-2, fused=True), torch.float32, "cuda", transposed=False)
    for c, g in zip(cps, gps):
        assert g._version == c._version == 0
        np.testing.assert_array_equal(_np(g), _np(c))
