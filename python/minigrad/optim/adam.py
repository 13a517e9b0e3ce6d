"""Adam (and, with decoupled weight decay, AdamW) — torch.optim.Adam."""

from .. import _C, _creation
from .._C import float32
from . import _inplace
from .optimizer import (
    Optimizer, _call_closure, _check_fused_flags, _check_unsupported, _device_dtype_check_for_fused, _fused_dtypes,
    _run_without_grad,
)

__all__ = ["Adam"]


class Adam(Optimizer):
    """torch.optim.Adam: the for-loop algorithm's numbers and version counts, run as one fused
    Rust call per parameter group (float32/float64 parameters; others step op by op).

    Per parameter, at step t: g = grad (negated if maximize) [+ weight_decay * p, or
    p *= 1 - lr * weight_decay when decoupled]; m.lerp_(g, 1 - beta1);
    v = beta2 * v + (1 - beta2) * g * g; [vmax = max(vmax, v) with amsgrad];
    p -= lr / (1 - beta1**t) * m / (sqrt(v) / sqrt(1 - beta2**t) + eps), in place.
    """

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0, amsgrad=False, *,
                 foreach=None, maximize=False, capturable=False, differentiable=False, fused=None,
                 decoupled_weight_decay=False):
        if not 0.0 <= lr:
            raise ValueError(f"Invalid learning rate: {lr}")
        if not 0.0 <= eps:
            raise ValueError(f"Invalid epsilon value: {eps}")
        if not 0.0 <= betas[0] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 0: {betas[0]}")
        if not 0.0 <= betas[1] < 1.0:
            raise ValueError(f"Invalid beta parameter at index 1: {betas[1]}")
        if not 0.0 <= weight_decay:
            raise ValueError(f"Invalid weight_decay value: {weight_decay}")
        if not (isinstance(betas[0], float) and isinstance(betas[1], float)):
            raise ValueError("betas must be either both floats or both Tensors")
        betas = tuple(betas)
        defaults = {
            "lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay, "amsgrad": amsgrad,
            "maximize": maximize, "foreach": foreach, "capturable": capturable,
            "differentiable": differentiable, "fused": fused,
            "decoupled_weight_decay": decoupled_weight_decay,
        }
        _check_fused_flags(fused, foreach, differentiable)
        _check_unsupported(type(self).__name__, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def __setstate__(self, state):
        super().__setstate__(state)
        for group in self.param_groups:
            group.setdefault("amsgrad", False)
            group.setdefault("maximize", False)
            group.setdefault("foreach", None)
            group.setdefault("capturable", False)
            group.setdefault("differentiable", False)
            group.setdefault("decoupled_weight_decay", False)
            group.setdefault("fused", None)
            for p in group["params"]:
                p_state = self.state.get(p, [])
                if len(p_state) != 0 and not hasattr(p_state["step"], "item"):
                    p_state["step"] = _creation.tensor(float(p_state["step"]), dtype=float32)

    def _state_for(self, param, group):
        """Lazily create a parameter's state on its first step, as torch does."""
        state = self.state[param]
        if len(state) == 0:
            # `step` is a float32 scalar tensor kept on the CPU, like torch's for-loop path
            state["step"] = _creation.tensor(0.0, dtype=float32)
            state["exp_avg"] = _creation.zeros_like(param)
            state["exp_avg_sq"] = _creation.zeros_like(param)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = _creation.zeros_like(param)
        return state

    @_run_without_grad
    def step(self, closure=None):
        """Perform a single optimization step; returns the closure's loss if given."""
        loss = _call_closure(closure)
        for group in self.param_groups:
            self._step_group(group)
        return loss

    def _step_group(self, group):
        fused, amsgrad = group["fused"], group["amsgrad"]
        fused_dtypes = _fused_dtypes()
        params, grads, exp_avgs, exp_avg_sqs, max_sqs, steps = [], [], [], [], [], []
        for p in group["params"]:
            grad = p.grad
            if grad is None:
                continue
            if fused:
                _device_dtype_check_for_fused(p)
            state = self._state_for(p, group)
            if p.dtype not in fused_dtypes:
                self._update(p, group, state)
                continue
            params.append(p)
            grads.append(grad)
            exp_avgs.append(state["exp_avg"])
            exp_avg_sqs.append(state["exp_avg_sq"])
            if amsgrad:
                max_sqs.append(state["max_exp_avg_sq"])
            steps.append(state["step"])
        if not params:
            return
        beta1, beta2 = group["betas"]
        _C._adam_step(params, grads, exp_avgs, exp_avg_sqs, max_sqs if amsgrad else None, steps, group["lr"], beta1, beta2,
                      group["eps"], group["weight_decay"], amsgrad, group["maximize"],
                      group["decoupled_weight_decay"], not fused)

    @staticmethod
    def _update(param, group, state):
        lr, eps, weight_decay = group["lr"], group["eps"], group["weight_decay"]
        beta1, beta2 = group["betas"]
        grad = param.grad if not group["maximize"] else -param.grad
        exp_avg, exp_avg_sq, step_t = state["exp_avg"], state["exp_avg_sq"], state["step"]

        step_t.add_(1)
        if weight_decay != 0:
            if group["decoupled_weight_decay"]:
                param.mul_(1 - lr * weight_decay)
            else:
                grad = grad.add(param, alpha=weight_decay)

        _inplace.lerp_(exp_avg, grad, 1 - beta1)
        _inplace.addcmul_(exp_avg_sq.mul_(beta2), grad, grad, value=1 - beta2)

        step = step_t.item()
        bias_correction1 = 1 - beta1**step
        bias_correction2 = 1 - beta2**step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2**0.5

        if group["amsgrad"]:
            max_exp_avg_sq = state["max_exp_avg_sq"]
            max_exp_avg_sq.copy_(max_exp_avg_sq.maximum(exp_avg_sq))
            denom = (max_exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
        else:
            denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)

        _inplace.addcdiv_(param, exp_avg, denom, value=-step_size)
