"""batch_norm's fused first-order backward (CPU `Backend::batch_norm_backward`, docs/kernels.md)
against torch and against the composite formula that runs under create_graph."""

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import minigrad as mg
import minigrad.nn.functional as MF
from parity import assert_same

TOL = {"float32": dict(rtol=1e-4, atol=1e-4), "float64": dict(rtol=1e-10, atol=1e-10)}


def _grads(L, F, x_arr, w_arr, b_arr, up_arr, create_graph=False, transposed_up=False):
    x = L.from_numpy(x_arr.copy()).requires_grad_()
    w = L.from_numpy(w_arr.copy()).requires_grad_() if w_arr is not None else None
    b = L.from_numpy(b_arr.copy()).requires_grad_() if b_arr is not None else None
    y = F.batch_norm(x, None, None, w, b, training=True, eps=1e-5)
    up = L.from_numpy(up_arr.copy())
    if transposed_up:  # a non-contiguous upstream gradient
        up = L.from_numpy(np.ascontiguousarray(np.swapaxes(up_arr, -1, -2))).transpose(-1, -2)
    leaves = [t for t in (x, w, b) if t is not None]
    return L.autograd.grad(y, leaves, up, create_graph=create_graph)


@pytest.mark.parametrize("shape", [(64, 16, 8, 8), (5, 3), (2, 4, 7), (1, 3, 2, 2)])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_backward_matches_torch(shape, affine, dtype):
    rng = np.random.default_rng(3)
    x = (rng.standard_normal(shape) * 2 + 0.5).astype(dtype)
    c = shape[1]
    w = rng.standard_normal(c).astype(dtype) if affine else None
    b = rng.standard_normal(c).astype(dtype) if affine else None
    up = rng.standard_normal(shape).astype(dtype)
    transposed = len(shape) > 2
    m = _grads(mg, MF, x, w, b, up, transposed_up=transposed)
    t = _grads(torch, TF, x, w, b, up, transposed_up=transposed)
    for a, e in zip(m, t):
        assert_same(a, e, **TOL[dtype])


def test_fused_and_composite_agree():
    """create_graph=True runs the composite formula of differentiable ops; both are float64-exact
    to rounding."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((6, 4, 3, 3))
    w, b, up = rng.standard_normal(4), rng.standard_normal(4), rng.standard_normal((6, 4, 3, 3))
    fused = _grads(mg, MF, x, w, b, up)
    composite = _grads(mg, MF, x, w, b, up, create_graph=True)
    for a, e in zip(fused, composite):
        np.testing.assert_allclose(a.numpy(), e.detach().numpy(), rtol=1e-12, atol=1e-12)


def test_module_train_step_matches_torch():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((32, 8, 5, 5)).astype(np.float32)
    res = []
    for L in (mg, torch):
        L.manual_seed(0)
        bn = L.nn.BatchNorm2d(8)
        xt = L.from_numpy(x.copy()).requires_grad_()
        (bn(xt) ** 2).sum().backward()
        res.append((xt.grad, bn.weight.grad, bn.bias.grad, bn.running_mean, bn.running_var))
    for a, e in zip(*res):
        assert_same(a, e, **TOL["float32"])


_THREADS_SCRIPT = r"""
import sys
import numpy as np
import minigrad as mg
import minigrad.nn.functional as MF
rng = np.random.default_rng(5)
outs = []
# below and above the kernels' parallel threshold (2^15 elements), odd row lengths, both dtypes
for shape in ((4, 3, 5, 7), (64, 16, 8, 8), (8, 5, 33, 31)):
    for dt in (np.float32, np.float64):
        x = mg.tensor(rng.standard_normal(shape).astype(dt), requires_grad=True)
        w = mg.tensor(rng.standard_normal(shape[1]).astype(dt), requires_grad=True)
        b = mg.tensor(rng.standard_normal(shape[1]).astype(dt), requires_grad=True)
        rm, rv = mg.zeros(shape[1], dtype=x.dtype), mg.ones(shape[1], dtype=x.dtype)
        y = MF.batch_norm(x, rm, rv, w, b, training=True)
        y.backward(mg.tensor(rng.standard_normal(shape).astype(dt)))
        outs += [y, x.grad, w.grad, b.grad, rm, rv]
sys.stdout.write("".join(np.asarray(o.detach().numpy()).tobytes().hex() for o in outs))
"""


def test_results_do_not_depend_on_the_thread_count():
    from parity import outputs_at_thread_counts
    outs = outputs_at_thread_counts(_THREADS_SCRIPT)
    assert outs[0] and all(o == outs[0] for o in outs[1:])
