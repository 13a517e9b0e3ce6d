"""Gradient clipping: `clip_grad_norm_` (= `get_total_norm` + `clip_grads_with_norm_`) and
`clip_grad_value_`. Every gradient is changed by in-place ops under `no_grad`, one per write torch's
foreach kernels make, so `p.grad._version` moves exactly as in torch: `clip_grad_norm_` multiplies
each gradient once (by `min(max_norm / (total + 1e-6), 1)`, even when that is 1), `clip_grad_value_`
clamps each from below, then from above (two bumps). `foreach` is accepted and ignored (minigrad has
one implementation, and on CPU torch's two give the same results), except that the infinity norm of
an empty gradient is refused in the words of torch's foreach kernel unless `foreach=False`."""

import functools
import math
import types
import warnings

from ...autograd.grad_mode import no_grad

__all__ = ["clip_grad_norm", "clip_grad_norm_", "clip_grad_value_"]


def _no_grad(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with no_grad():
            return func(*args, **kwargs)
    return wrapper


def _Tensor():
    from ..._tensor import Tensor
    return Tensor


def _group_by_device_and_dtype(tensors):
    """Tensors grouped as torch's `_group_tensors_by_device_and_dtype` (first-seen order)."""
    groups = {}
    for t in tensors:
        groups.setdefault((str(t.device), t.dtype), []).append(t)
    return groups


@_no_grad
def _get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """The `norm_type`-norm of all `tensors` together, as if concatenated into one vector (the norm of
    the per-tensor norms). `norm_type` may be `inf` / `'inf'`."""
    from ..._ops.linalg import stack
    from ..._creation import tensor
    if isinstance(tensors, _Tensor()):
        tensors = [tensors]
    else:
        tensors = list(tensors)
    norm_type = float(norm_type)
    if len(tensors) == 0:
        return tensor(0.0)
    first_device = tensors[0].device
    if norm_type == math.inf and foreach is not False and any(t.numel() == 0 for t in tensors):
        # torch's CPU default is its foreach kernel, which words this error in its own name
        raise RuntimeError(
            "_foreach_norm cannot compute the infinity norm on an empty tensor because the operation does not "
            "have an identity"
        )
    norms = []
    for group in _group_by_device_and_dtype(tensors).values():
        norms.extend(t.norm(norm_type) for t in group)
    total_norm = stack([n.to(first_device) for n in norms]).norm(norm_type)
    if error_if_nonfinite and not math.isfinite(total_norm.item()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from "
            "`parameters` is non-finite, so it cannot be clipped. To disable "
            "this error and scale the gradients by the non-finite norm anyway, "
            "set `error_if_nonfinite=False`"
        )
    return total_norm


@_no_grad
def _clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scales every `.grad` in place by `min(max_norm / (total_norm + 1e-6), 1)`."""
    from ..._ops.elementwise import clamp
    if isinstance(parameters, _Tensor()):
        parameters = [parameters]
    grads = [p.grad for p in parameters if p.grad is not None]
    max_norm = float(max_norm)
    if len(grads) == 0:
        return
    clip_coef = max_norm / (total_norm + 1e-6)
    # multiplying by a coefficient clamped to 1 is a no-op in value but still one write, as torch's
    clip_coef_clamped = clamp(clip_coef, max=1.0)
    for (device, _), group in _group_by_device_and_dtype(grads).items():
        coef = clip_coef_clamped.to(device)
        for g in group:
            g.mul_(coef)


@_no_grad
def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Rescales the gradients of `parameters` in place so that their total norm is at most
    `max_norm`; returns the total norm before clipping."""
    if isinstance(parameters, _Tensor()):
        parameters = [parameters]
    else:
        is_generator = isinstance(parameters, types.GeneratorType)
        parameters = list(parameters)  # a generator is read once, for the norm and for the clipping
        if is_generator and len(parameters) == 0:
            warnings.warn("`parameters` is an empty generator, no gradient clipping will occur.", stacklevel=3)
    grads = [p.grad for p in parameters if p.grad is not None]
    total_norm = _get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    _clip_grads_with_norm_(parameters, max_norm, total_norm, foreach)
    return total_norm


def clip_grad_norm(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Deprecated spelling of `clip_grad_norm_`."""
    warnings.warn(
        "`minigrad.nn.utils.clip_grad_norm` is now deprecated in favor of `minigrad.nn.utils.clip_grad_norm_`.",
        FutureWarning, stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


@_no_grad
def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamps every `.grad` in place to [-clip_value, clip_value]."""
    if isinstance(parameters, _Tensor()):
        parameters = [parameters]
    clip_value = float(clip_value)
    grads = [p.grad for p in parameters if p.grad is not None]
    for group in _group_by_device_and_dtype(grads).values():
        # torch's foreach path: every gradient clamped from below, then every one from above
        for g in group:
            g.clamp_min_(-clip_value)
        for g in group:
            g.clamp_max_(clip_value)
