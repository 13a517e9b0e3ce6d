"""Stochastic gradient descent, optionally with (Nesterov) momentum — torch.optim.SGD."""

from .. import _C
from .optimizer import (
    Optimizer, _call_closure, _check_fused_flags, _check_unsupported, _device_dtype_check_for_fused, _fused_dtypes,
    _run_without_grad,
)

__all__ = ["SGD"]


class SGD(Optimizer):
    """torch.optim.SGD: the for-loop algorithm's numbers and version counts, run as one fused
    Rust call per parameter group (float32/float64 parameters; others step op by op).

    Per parameter: g = grad (negated if maximize) [+ weight_decay * p];
    with momentum, buf = g on the first step, else buf = momentum * buf + (1 - dampening) * g,
    and g = g + momentum * buf (nesterov) or g = buf; finally p -= lr * g in place.
    """

    def __init__(self, params, lr=1e-3, momentum=0, dampening=0, weight_decay=0, nesterov=False, *,
                 maximize=False, foreach=None, differentiable=False, fused=None):
        if lr < 0.0:
            raise ValueError(f"Invalid learning rate: {lr}")
        if momentum < 0.0:
            raise ValueError(f"Invalid momentum value: {momentum}")
        if weight_decay < 0.0:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        defaults = {
            "lr": lr, "momentum": momentum, "dampening": dampening, "weight_decay": weight_decay,
            "nesterov": nesterov, "maximize": maximize,
            "foreach": foreach, "differentiable": differentiable, "fused": fused,
        }
        if nesterov and (momentum <= 0 or dampening != 0):
            raise ValueError("Nesterov momentum requires a momentum and zero dampening")
        _check_fused_flags(fused, foreach, differentiable)
        _check_unsupported("SGD", differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("nesterov", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("differentiable", False)
            group.setdefault("fused", False)

    @_run_without_grad
    def step(self, closure=None):
        """Perform a single optimization step; returns the closure's loss if given."""
        loss = _call_closure(closure)
        for group in self.param_groups:
            self._step_group(group)
        return loss

    def _step_group(self, group):
        fused, momentum = group["fused"], group["momentum"]
        fused_dtypes = _fused_dtypes()
        params, grads, bufs = [], [], []
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            if fused:
                _device_dtype_check_for_fused(p)
            if p.dtype not in fused_dtypes:
                self._update(p, group)
                continue
            params.append(p)
            grads.append(grad)
            if momentum != 0:
                bufs.append(self.state[p].get("momentum_buffer"))
            else:
                bufs.append(None)
        if not params:
            return
        new_bufs = _C._sgd_step(params, grads, bufs, group["lr"], momentum, group["dampening"],
                                group["weight_decay"], group["nesterov"], group["maximize"], not fused)
        if momentum != 0:
            for p, old, new in zip(params, bufs, new_bufs):
                if old is None:
                    self.state[p]["momentum_buffer"] = new

    def _update(self, param, group):
        momentum, lr = group["momentum"], group["lr"]
        grad = param.grad if not group["maximize"] else -param.grad
        if group["weight_decay"] != 0:
            grad = grad.add(param, alpha=group["weight_decay"])
        if momentum != 0:
            state = self.state[param]
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = grad.detach().clone()
                state["momentum_buffer"] = buf
            else:
                buf.mul_(momentum).add_(grad, alpha=1 - group["dampening"])
            grad = grad.add(buf, alpha=momentum) if group["nesterov"] else buf
        param.add_(grad, alpha=-lr)
