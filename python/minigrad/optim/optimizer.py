"""The `Optimizer` base class: parameter groups, per-parameter state, state dicts.

Mirrors `torch.optim.Optimizer` (torch 2.13): the same group layout, the same
state-dict format (parameters packed into integer ids in group order) and the
same error texts. Subclasses implement `step`; each update runs under
`minigrad.no_grad()`; SGD, Adam and AdamW run one fused Rust call per parameter
group (`_C._sgd_step`, `_C._adam_step`, docs/optim.md) that bumps the parameters'
`_version` counters exactly as torch's for-loop path does.
"""

import functools
import warnings
from collections import defaultdict
from copy import deepcopy
from itertools import chain

from .._tensor import Tensor
from ..autograd.grad_mode import enable_grad, no_grad

__all__ = ["Optimizer", "required"]


class _RequiredParameter:
    """Singleton marking a default that every parameter group must supply."""

    def __repr__(self):
        return "<required parameter>"


required = _RequiredParameter()


def _typename(obj):
    """The type name shown in error texts, spelled like `torch.typename`."""
    if isinstance(obj, Tensor):
        return "minigrad.Tensor"
    cls = type(obj)
    module = cls.__module__
    return cls.__qualname__ if module in ("builtins", None) else f"{module}.{cls.__qualname__}"


def _run_without_grad(step):
    """Run an optimizer's `step` with autograd off (the update is not differentiable)."""

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        with no_grad():
            return step(self, *args, **kwargs)

    return wrapper


def _check_unsupported(optimizer_name, **flags):
    """minigrad runs only the for-loop algorithm on the CPU; refuse the other modes loudly."""
    for name, value in flags.items():
        if value:
            raise ValueError(f"{optimizer_name}: {name}=True is not supported by minigrad")


# The dtypes the fused step kernels run in; other parameters are stepped op by op.
_FUSED_DTYPES = frozenset()
_FUSED_DEVICES = ["mps", "cuda", "xpu", "hpu", "cpu", "mtia", "privateuseone"]


def _fused_dtypes():
    global _FUSED_DTYPES
    if not _FUSED_DTYPES:
        from .._C import float32, float64
        _FUSED_DTYPES = frozenset((float32, float64))
    return _FUSED_DTYPES


def _check_fused_flags(fused, foreach, differentiable):
    """torch's constructor checks of `fused=True`."""
    if fused:
        if differentiable:
            raise RuntimeError("`fused` does not support `differentiable`")
        if foreach:
            raise RuntimeError("`fused` and `foreach` cannot be `True` together.")


def _device_dtype_check_for_fused(p):
    """torch's check of each parameter of a `fused=True` step."""
    if not p.is_floating_point():
        raise RuntimeError(
            "`fused=True` requires all the params to be floating point Tensors of "
            f"supported devices: {_FUSED_DEVICES} but {p.dtype} and {p.device.type}"
        )


def _call_closure(closure):
    """The closure re-evaluates the loss, so it needs autograd even inside `step`."""
    if closure is None:
        return None
    with enable_grad():
        return closure()


class Optimizer:
    """Base class for all optimizers.

    Args:
        params: an iterable of tensors, of `(name, tensor)` pairs, or of dicts
            defining parameter groups (each with a `"params"` entry).
        defaults: the default value of every hyperparameter, used by groups
            that do not set it.
    """

    def __init__(self, params, defaults):
        self.defaults = defaults
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be "
                "an iterable of Tensors or dicts, but got " + _typename(params)
            )
        self.state = defaultdict(dict)
        self.param_groups = []

        param_groups = list(params)
        if len(param_groups) == 0:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(param_groups[0], dict):
            param_groups = [{"params": param_groups}]
        for param_group in param_groups:
            self.add_param_group(param_group)

    def __getstate__(self):
        return {"defaults": self.defaults, "state": self.state, "param_groups": self.param_groups}

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.defaults.setdefault("differentiable", False)

    def __repr__(self):
        text = self.__class__.__name__ + " ("
        for i, group in enumerate(self.param_groups):
            text += f"\nParameter Group {i}\n"
            for key in sorted(group.keys()):
                if key != "params":
                    text += f"    {key}: {group[key]}\n"
        return text + ")"

    # -- parameter groups -------------------------------------------------------------

    def add_param_group(self, param_group):
        """Add a group of parameters (with its own hyperparameters) to `param_groups`."""
        if not isinstance(param_group, dict):
            raise TypeError(f"param_group must be a dict, but got {type(param_group)}")

        params = param_group["params"]
        if isinstance(params, Tensor):
            param_group["params"] = [params]
        elif isinstance(params, set):
            raise TypeError(
                "optimizer parameters need to be organized in ordered collections, but "
                "the ordering of tensors in sets will change between runs. Please use a list instead."
            )
        else:
            param_group["params"] = list(params)

        tensors, names = [], []
        for param in param_group["params"]:
            if isinstance(param, tuple):
                names.append(param[0])
                tensors.append(param[1])
            else:
                tensors.append(param)
        param_group["params"] = tensors
        if names:
            if len(names) != len(tensors):
                raise ValueError(
                    "all optimizer params should be with/without names. Some param names are missing"
                )
            param_group["param_names"] = names

        for param in param_group["params"]:
            if not isinstance(param, Tensor):
                raise TypeError(
                    "optimizer can only optimize Tensors, "
                    "but one of the params is " + _typename(param)
                )
            if not self.defaults.get("differentiable", None) and not (param.is_leaf or param.retains_grad):
                raise ValueError("can't optimize a non-leaf Tensor")

        for name, default in self.defaults.items():
            if default is required and name not in param_group:
                raise ValueError(
                    f"parameter group didn't specify a value of required optimization parameter {name}"
                )
            param_group.setdefault(name, default)

        params = param_group["params"]
        if len(params) != len(set(params)):
            warnings.warn(
                "optimizer contains a parameter group with duplicate parameters; "
                "in future, this will cause an error; "
                "see github.com/pytorch/pytorch/issues/40967 for more information",
                stacklevel=3,
            )

        seen = set()
        for group in self.param_groups:
            seen.update(set(group["params"]))
            if ("param_names" in param_group) != ("param_names" in group):
                which = "with names" if "param_names" in param_group else "without names"
                raise ValueError(
                    "all optimizer param groups should be with/without names. "
                    f"cannot add param group {which} to the optimizer"
                )
        if not seen.isdisjoint(set(param_group["params"])):
            raise ValueError("some parameters appear in more than one parameter group")

        self.param_groups.append(param_group)

    # -- gradients and steps ----------------------------------------------------------

    def zero_grad(self, set_to_none=True):
        """Reset every parameter's `.grad`: drop it (default) or fill it with zeros."""
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                if set_to_none:
                    p.grad = None
                    continue
                if p.grad.grad_fn is not None:
                    p.grad.detach_()
                else:
                    p.grad.requires_grad_(False)
                p.grad.zero_()

    def step(self, closure=None):
        """Perform a single optimization step (implemented by each optimizer)."""
        raise NotImplementedError

    # -- state dicts ------------------------------------------------------------------

    def state_dict(self):
        """Return `{"state": {id: {...}}, "param_groups": [{..., "params": [ids]}]}`.

        Parameters are replaced by integer ids numbered in group order, as in torch;
        the state tensors are the optimizer's own (not copies).
        """
        param_mappings = {}
        start_index = 0

        def pack_group(group):
            nonlocal start_index
            packed = {k: v for k, v in group.items() if k != "params"}
            param_mappings.update(
                {id(p): i for i, p in enumerate(group["params"], start_index) if id(p) not in param_mappings}
            )
            packed["params"] = [param_mappings[id(p)] for p in group["params"]]
            start_index += len(packed["params"])
            return packed

        param_groups = [pack_group(g) for g in self.param_groups]
        packed_state = {
            (param_mappings[id(k)] if isinstance(k, Tensor) else k): v for k, v in self.state.items()
        }
        return {"state": packed_state, "param_groups": param_groups}

    @staticmethod
    def _cast_state_value(param, value, key):
        """Floating state follows the parameter's dtype; `step` is kept as saved."""
        if key == "step":
            return value
        if param.is_floating_point():
            return value.to(dtype=param.dtype)
        return value

    def load_state_dict(self, state_dict):
        """Load a state dict produced by `state_dict()` (ids are matched by group order)."""
        state_dict = state_dict.copy()
        groups = self.param_groups
        saved_groups = deepcopy(state_dict["param_groups"])

        if len(groups) != len(saved_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        if any(len(g["params"]) != len(s["params"]) for g, s in zip(groups, saved_groups)):
            raise ValueError(
                "loaded state dict contains a parameter group "
                "that doesn't match the size of optimizer's group"
            )

        id_map = dict(
            zip(
                chain.from_iterable(g["params"] for g in saved_groups),
                chain.from_iterable(g["params"] for g in groups),
            )
        )

        def cast(param, value, key=None):
            if isinstance(value, Tensor):
                return Optimizer._cast_state_value(param, value, key)
            if isinstance(value, dict):
                return {k: cast(param, v, key=k) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return type(value)(cast(param, v) for v in value)
            return value

        state = defaultdict(dict)
        for k, v in state_dict["state"].items():
            if k in id_map:
                state[id_map[k]] = cast(id_map[k], v)
            else:
                state[k] = v  # state not tied to a parameter is kept as is (torch does the same)

        def update_group(group, new_group):
            new_group["params"] = group["params"]
            if "param_names" in group and "param_names" not in new_group:
                new_group["param_names"] = group["param_names"]
            return new_group

        param_groups = [update_group(g, ng) for g, ng in zip(groups, saved_groups)]
        self.__setstate__({"state": state, "param_groups": param_groups})
