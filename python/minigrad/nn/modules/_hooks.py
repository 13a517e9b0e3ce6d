"""Calling a module with its hooks, and the global module hooks (torch.nn.modules.module's
`register_module_forward_pre_hook`, `register_module_forward_hook`,
`register_module_backward_hook`, `register_module_full_backward_pre_hook`,
`register_module_full_backward_hook`).

`call_with_hooks` is torch's `Module._call_impl` slow path, in torch's order: global forward
pre-hooks then the module's, the inputs wrapped for backward hooks, forward, global forward hooks
then the module's, the outputs wrapped for backward hooks; `always_call` forward hooks still run
(with a silenced error) when forward raised. Full backward hooks and pre-hooks work through
`utils.hooks.BackwardHook`; the deprecated non-full ones are hooks on the output's grad_fn."""

import functools
import warnings
import weakref
from collections import OrderedDict

from ... import _C
from ...utils.hooks import BackwardHook, RemovableHandle

__all__ = [
    "register_module_forward_pre_hook", "register_module_forward_hook", "register_module_backward_hook",
    "register_module_full_backward_pre_hook", "register_module_full_backward_hook",
]

_global_backward_pre_hooks = OrderedDict()
_global_backward_hooks = OrderedDict()
_global_is_full_backward_hook = None
_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()
_global_forward_hooks_always_called = OrderedDict()
_global_forward_hooks_with_kwargs = OrderedDict()


def register_module_forward_pre_hook(hook):
    """`hook(module, args)` before every module's forward (before its own pre-hooks)."""
    handle = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[handle.id] = hook
    return handle


def register_module_forward_hook(hook, *, with_kwargs=False, always_call=False):
    """`hook(module, args, output)` after every module's forward (before its own hooks)."""
    handle = RemovableHandle(_global_forward_hooks, extra_dict=_global_forward_hooks_always_called)
    _global_forward_hooks[handle.id] = hook
    if with_kwargs:
        _global_forward_hooks_with_kwargs[handle.id] = True
    if always_call:
        _global_forward_hooks_always_called[handle.id] = True
    return handle


def register_module_backward_hook(hook):
    """The deprecated non-full backward hook, for every module."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is True:
        raise RuntimeError(
            "Cannot use both regular backward hooks and full backward hooks as a global Module hook. Please use only one of them."
        )
    _global_is_full_backward_hook = False
    handle = RemovableHandle(_global_backward_hooks)
    _global_backward_hooks[handle.id] = hook
    return handle


def register_module_full_backward_pre_hook(hook):
    """`hook(module, grad_output)` when the gradients w.r.t. any module's outputs are known."""
    handle = RemovableHandle(_global_backward_pre_hooks)
    _global_backward_pre_hooks[handle.id] = hook
    return handle


def register_module_full_backward_hook(hook):
    """`hook(module, grad_input, grad_output)` when any module's input gradients are known."""
    global _global_is_full_backward_hook
    if _global_is_full_backward_hook is False:
        raise RuntimeError(
            "Cannot use both regular backward hooks and full backward hooks as a global Module hook. Please use only one of them."
        )
    _global_is_full_backward_hook = True
    handle = RemovableHandle(_global_backward_hooks)
    _global_backward_hooks[handle.id] = hook
    return handle


class _WrappedHook:
    """A hook called with its module (held weakly) in front of the node hook's arguments."""

    def __init__(self, hook, module=None):
        self.hook = hook
        functools.update_wrapper(self, hook)
        self.with_module = False
        if module is not None:
            self.module = weakref.ref(module)
            self.with_module = True

    def __call__(self, *args, **kwargs):
        if self.with_module:
            module = self.module()
            if module is None:
                raise RuntimeError("You are trying to call the hook of a dead Module!")
            return self.hook(module, *args, **kwargs)
        return self.hook(*args, **kwargs)


def has_hooks(module):
    return bool(
        module._backward_hooks or module._backward_pre_hooks or module._forward_hooks or module._forward_pre_hooks
        or _global_backward_pre_hooks or _global_backward_hooks or _global_forward_hooks or _global_forward_pre_hooks
    )


def backward_hooks_of(module):
    """(full, non-full) backward hooks: the global ones first, then the module's."""
    full, non_full = [], []
    if _global_is_full_backward_hook is True:
        full += _global_backward_hooks.values()
    if module._is_full_backward_hook is True:
        full += module._backward_hooks.values()
    if _global_is_full_backward_hook is False:
        non_full += _global_backward_hooks.values()
    if module._is_full_backward_hook is False:
        non_full += module._backward_hooks.values()
    return full, non_full


def backward_pre_hooks_of(module):
    return list(_global_backward_pre_hooks.values()) + list(module._backward_pre_hooks.values())


def call_with_hooks(module, forward_call, args, kwargs):
    result = None
    called_always_called_hooks = set()

    def inner():
        nonlocal result, args, kwargs
        full_backward_hooks, non_full_backward_hooks = [], []
        backward_pre_hooks = []
        if module._backward_pre_hooks or _global_backward_pre_hooks:
            backward_pre_hooks = backward_pre_hooks_of(module)
        if module._backward_hooks or _global_backward_hooks:
            full_backward_hooks, non_full_backward_hooks = backward_hooks_of(module)

        for hook_id, hook in (*_global_forward_pre_hooks.items(), *module._forward_pre_hooks.items()):
            if hook_id in module._forward_pre_hooks_with_kwargs:
                args_kwargs_result = hook(module, args, kwargs)
                if args_kwargs_result is not None:
                    if isinstance(args_kwargs_result, tuple) and len(args_kwargs_result) == 2:
                        args, kwargs = args_kwargs_result
                    else:
                        raise RuntimeError(
                            "forward pre-hook must return None or a tuple "
                            f"of (new_args, new_kwargs), but got {args_kwargs_result}."
                        )
            else:
                args_result = hook(module, args)
                if args_result is not None:
                    if not isinstance(args_result, tuple):
                        args_result = (args_result,)
                    args = args_result

        bw_hook = None
        if full_backward_hooks or backward_pre_hooks:
            bw_hook = BackwardHook(module, full_backward_hooks, backward_pre_hooks)
            args = bw_hook.setup_input_hook(args)

        result = forward_call(*args, **kwargs)
        for hook_id, hook in (*_global_forward_hooks.items(), *module._forward_hooks.items()):
            if hook_id in module._forward_hooks_always_called or hook_id in _global_forward_hooks_always_called:
                called_always_called_hooks.add(hook_id)
            if hook_id in module._forward_hooks_with_kwargs or hook_id in _global_forward_hooks_with_kwargs:
                hook_result = hook(module, args, kwargs, result)
            else:
                hook_result = hook(module, args, result)
            if hook_result is not None:
                result = hook_result

        if bw_hook:
            if not isinstance(result, (_C.TensorBase, tuple)):
                warnings.warn("For backward hooks to be called,"
                              " module output should be a Tensor or a tuple of Tensors"
                              f" but received {type(result)}", stacklevel=2)
            result = bw_hook.setup_output_hook(result)

        if non_full_backward_hooks:
            var = result
            while not isinstance(var, _C.TensorBase):
                if isinstance(var, dict):
                    var = next(v for v in var.values() if isinstance(v, _C.TensorBase))
                else:
                    var = var[0]
            grad_fn = var.grad_fn
            if grad_fn is not None:
                for hook in non_full_backward_hooks:
                    grad_fn.register_hook(_WrappedHook(hook, module))
                _maybe_warn_non_full_backward_hook(args, result, grad_fn)
        return result

    try:
        return inner()
    except Exception:
        for hook_id, hook in _global_forward_hooks.items():
            if hook_id in _global_forward_hooks_always_called and hook_id not in called_always_called_hooks:
                try:
                    hook_result = hook(module, args, result)
                    if hook_result is not None:
                        result = hook_result
                except Exception as e:
                    warnings.warn("global module forward hook with ``always_call=True`` raised an exception "
                                  f"that was silenced as another error was raised in forward: {str(e)}", stacklevel=2)
                    continue
        for hook_id, hook in module._forward_hooks.items():
            if hook_id in module._forward_hooks_always_called and hook_id not in called_always_called_hooks:
                try:
                    if hook_id in module._forward_hooks_with_kwargs:
                        hook_result = hook(module, args, kwargs, result)
                    else:
                        hook_result = hook(module, args, result)
                    if hook_result is not None:
                        result = hook_result
                except Exception as e:
                    warnings.warn("module forward hook with ``always_call=True`` raised an exception "
                                  f"that was silenced as another error was raised in forward: {str(e)}", stacklevel=2)
                    continue
        raise


def _maybe_warn_non_full_backward_hook(inputs, result, grad_fn):
    """torch's FutureWarnings for the cases where a non-full backward hook misses gradients."""
    if not isinstance(result, _C.TensorBase):
        if not (isinstance(result, tuple) and all(isinstance(r, _C.TensorBase) for r in result)):
            warnings.warn(
                "Using non-full backward hooks on a Module that does not return a "
                "single Tensor or a tuple of Tensors is deprecated and will be removed "
                "in future versions. This hook will be missing some of the grad_output. "
                "Please use register_full_backward_hook to get the documented behavior.",
                FutureWarning, stacklevel=2,
            )
            return
    else:
        result = (result,)
    if not isinstance(inputs, _C.TensorBase):
        if not (isinstance(inputs, tuple) and all(isinstance(i, _C.TensorBase) for i in inputs)):
            warnings.warn(
                "Using non-full backward hooks on a Module that does not take as input a "
                "single Tensor or a tuple of Tensors is deprecated and will be removed "
                "in future versions. This hook will be missing some of the grad_input. "
                "Please use register_full_backward_hook to get the documented behavior.",
                FutureWarning, stacklevel=2,
            )
            return
    else:
        inputs = (inputs,)
    out_grad_fn = {r.grad_fn for r in result if r.grad_fn is not None}
    if len(out_grad_fn) == 0 or (len(out_grad_fn) == 1 and grad_fn not in out_grad_fn):
        warnings.warn(
            "Using a non-full backward hook when outputs are nested in python data structure "
            "is deprecated and will be removed in future versions. This hook will be missing "
            "some grad_output.",
            FutureWarning, stacklevel=2,
        )
    elif len(out_grad_fn) > 1:
        warnings.warn(
            "Using a non-full backward hook when outputs are generated by different autograd Nodes "
            "is deprecated and will be removed in future versions. This hook will be missing "
            "some grad_output. Please use register_full_backward_hook to get the documented behavior.",
            FutureWarning, stacklevel=2,
        )
    else:
        inputs_grad_fn = {i.grad_fn for i in inputs if i.grad_fn is not None}
        next_functions = {n[0] for n in grad_fn.next_functions}
        if inputs_grad_fn != next_functions:
            warnings.warn(
                "Using a non-full backward hook when the forward contains multiple autograd Nodes "
                "is deprecated and will be removed in future versions. This hook will be missing "
                "some grad_input. Please use register_full_backward_hook to get the documented "
                "behavior.",
                FutureWarning, stacklevel=2,
            )
