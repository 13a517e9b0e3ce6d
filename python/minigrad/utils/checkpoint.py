"""`minigrad.utils.checkpoint`: activation checkpointing (torch.utils.checkpoint).

`checkpoint(fn, *args, use_reentrant=False)` runs `fn` keeping none of the tensors its ops save
for backward (only the inputs); backward re-runs `fn` to get them back. It trades compute for
memory, the other way to save activation memory besides in-place ops. Two variants, as in torch:

* `use_reentrant=False` (recommended): built on saved-tensor hooks (`_checkpoint_frame.py`);
  works with `autograd.grad`, `backward(inputs=...)`, keyword arguments and nested checkpoints,
  and stops recomputing as soon as backward has what it needs.
* `use_reentrant=True`: a custom Function whose backward re-runs `fn` and calls backward on it.

Not passing `use_reentrant` warns and picks the reentrant variant, as torch 2.13 does. With
`preserve_rng_state=True` (the default) the global generator's state is restored for the re-run,
so dropout drops the same elements. minigrad runs on the CPU only: there are no device RNG
states or autocast modes to carry over, and `debug=True` (torch's operator logs) is not available.
"""

import contextlib
import warnings

from .. import _C
from .._random import fork_rng, get_rng_state, set_rng_state
from ..autograd import engine as _engine
from ..autograd.function import Function
from ..autograd.grad_mode import enable_grad, is_grad_enabled, no_grad
from ._checkpoint_frame import (
    CheckpointError, _allowed_determinism_checks_to_fns, _checkpoint_hook, _CheckpointFrame,
)

__all__ = [
    "checkpoint", "checkpoint_sequential", "CheckpointError", "CheckpointFunction", "check_backward_validity",
    "detach_variable", "get_device_states", "set_device_states", "noop_context_fn", "set_checkpoint_early_stop",
    "DefaultDeviceType", "set_checkpoint_debug_enabled",
]

_DEFAULT_DETERMINISM_MODE = "default"
_checkpoint_debug_enabled = None
_enable_checkpoint_early_stop = None


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Overrides `debug=` of every checkpoint in the block (None: each call's own value)."""
    global _checkpoint_debug_enabled
    prev = _checkpoint_debug_enabled
    try:
        _checkpoint_debug_enabled = enabled
        yield
    finally:
        _checkpoint_debug_enabled = prev


@contextlib.contextmanager
def set_checkpoint_early_stop(enable):
    """Whether non-reentrant checkpoints made in the block stop recomputing early."""
    global _enable_checkpoint_early_stop
    prev = _enable_checkpoint_early_stop
    try:
        _enable_checkpoint_early_stop = enable
        yield
    finally:
        _enable_checkpoint_early_stop = prev


def noop_context_fn():
    return contextlib.nullcontext(), contextlib.nullcontext()


def detach_variable(inputs):
    if isinstance(inputs, tuple):
        out = []
        for inp in inputs:
            if not isinstance(inp, _C.TensorBase):
                out.append(inp)
                continue
            x = inp.detach()
            x.requires_grad = inp.requires_grad
            out.append(x)
        return tuple(out)
    raise RuntimeError(f"Only tuple of tensors is supported. Got Unsupported input type: {type(inputs).__name__}")


def check_backward_validity(inputs):
    if not any(inp.requires_grad for inp in inputs if isinstance(inp, _C.TensorBase)):
        warnings.warn("None of the inputs have requires_grad=True. Gradients will be None", stacklevel=2)


class DefaultDeviceType:
    """The device type whose RNG states checkpointing stashes: "cpu" (minigrad has no other)."""

    _default_device_type = None

    @staticmethod
    def set_device_type(device="cuda"):
        DefaultDeviceType._default_device_type = device

    @staticmethod
    def get_device_type():
        return DefaultDeviceType._default_device_type or "cpu"


def get_device_states(*args):
    """Device ids and RNG states of the non-CPU tensors among `args`: none in minigrad."""
    return [], []


def set_device_states(devices, states, *, device_type=None):
    """Nothing to restore: minigrad's tensors are on the CPU, whose state `set_rng_state` sets."""


class CheckpointFunction(Function):
    """The reentrant variant: forward under no_grad; backward re-runs and backpropagates."""

    @staticmethod
    def forward(ctx, run_function, preserve_rng_state, *args):
        check_backward_validity(args)
        ctx.run_function = run_function
        ctx.preserve_rng_state = preserve_rng_state
        if preserve_rng_state:
            ctx.fwd_cpu_state = get_rng_state()
        ctx.inputs = []
        ctx.tensor_indices = []
        tensor_inputs = []
        for i, arg in enumerate(args):
            if isinstance(arg, _C.TensorBase):
                tensor_inputs.append(arg)
                ctx.tensor_indices.append(i)
                ctx.inputs.append(None)
            else:
                ctx.inputs.append(arg)
        ctx.save_for_backward(*tensor_inputs)
        with no_grad():
            outputs = run_function(*args)
        return outputs

    @staticmethod
    def backward(ctx, *args):
        if not _engine._is_checkpoint_valid():
            raise RuntimeError(
                "When use_reentrant=True, minigrad.utils.checkpoint is incompatible"
                " with .grad() or passing an `inputs` parameter to .backward()."
                " To resolve this error, you can either set use_reentrant=False,"
                " or call .backward() without passing the `inputs` argument."
            )
        inputs = list(ctx.inputs)
        for i, idx in enumerate(ctx.tensor_indices):
            inputs[idx] = ctx.saved_tensors[i]
        with fork_rng(enabled=ctx.preserve_rng_state):
            if ctx.preserve_rng_state:
                set_rng_state(ctx.fwd_cpu_state)
            detached_inputs = detach_variable(tuple(inputs))
            with enable_grad():
                outputs = ctx.run_function(*detached_inputs)
        if isinstance(outputs, _C.TensorBase):
            outputs = (outputs,)
        outputs_with_grad, args_with_grad = [], []
        for i in range(len(outputs)):
            if isinstance(outputs[i], _C.TensorBase) and outputs[i].requires_grad:
                outputs_with_grad.append(outputs[i])
                args_with_grad.append(args[i])
        if len(outputs_with_grad) == 0:
            raise RuntimeError("none of output has requires_grad=True, this checkpoint() is not necessary")
        _engine.backward(outputs_with_grad, args_with_grad)
        grads = tuple(inp.grad if isinstance(inp, _C.TensorBase) else None for inp in detached_inputs)
        return (None, None) + grads


def checkpoint(function, *args, use_reentrant=None, context_fn=noop_context_fn, determinism_check=_DEFAULT_DETERMINISM_MODE,
               debug=False, early_stop=True, **kwargs):
    """Runs `function(*args, **kwargs)` without keeping its saved tensors; backward recomputes
    them (see the module docstring). `preserve_rng_state=True` may be passed as a keyword."""
    if use_reentrant is None:
        warnings.warn(
            "minigrad.utils.checkpoint: the use_reentrant parameter should be "
            "passed explicitly. Starting in PyTorch 2.9, calling checkpoint "
            "without use_reentrant will raise an exception. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs and use_reentrant:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))
    if use_reentrant:
        if context_fn is not noop_context_fn or debug is not False:
            raise ValueError("Passing `context_fn` or `debug` is only supported when use_reentrant=False.")
        return CheckpointFunction.apply(function, preserve, *args)
    gen = _checkpoint_without_reentrant_generator(
        function, preserve, context_fn, determinism_check, debug, early_stop, *args, **kwargs
    )
    next(gen)  # pre-forward: stash state, save inputs, push the hooks
    try:
        ret = function(*args, **kwargs)
    except BaseException as e:
        try:
            gen.throw(e)
        except StopIteration as stop:
            raise RuntimeError(
                "minigrad.utils.checkpoint: the forward context provided by "
                "context_fn suppressed an exception raised during the "
                "checkpointed forward. This is not supported because "
                "checkpoint cannot return a value for a failed forward."
            ) from stop
        raise
    try:
        next(gen)  # post-forward: pop the hooks
    except StopIteration:
        return ret
    raise AssertionError(
        "minigrad.utils.checkpoint: expected context_fn generator to yield "
        "exactly twice, but it yielded more than twice."
    )


def _checkpoint_without_reentrant_generator(fn, preserve_rng_state=True, context_fn=noop_context_fn,
                                            determinism_check=_DEFAULT_DETERMINISM_MODE, debug=False,
                                            early_stop=True, *args, **kwargs):
    if _checkpoint_debug_enabled if _checkpoint_debug_enabled is not None else debug:
        if context_fn is not noop_context_fn:
            raise ValueError("debug=True is incompatible with non-default context_fn")
        raise NotImplementedError(
            "minigrad.utils.checkpoint: debug=True needs operator logs minigrad does not record; "
            "see docs/divergences.md"
        )
    if determinism_check in _allowed_determinism_checks_to_fns:
        metadata_fn = _allowed_determinism_checks_to_fns[determinism_check]
    else:
        raise ValueError(
            f"determinism_check should be one of {list(_allowed_determinism_checks_to_fns.keys())}, "
            f"but got {determinism_check}"
        )
    forward_context, recompute_context = context_fn()
    if preserve_rng_state:
        fwd_cpu_state = get_rng_state()

    def recompute_fn(*inputs):
        with fork_rng(enabled=preserve_rng_state):
            if preserve_rng_state:
                set_rng_state(fwd_cpu_state)
            with recompute_context:
                fn(*inputs, **kwargs)

    early = _enable_checkpoint_early_stop if _enable_checkpoint_early_stop is not None else early_stop
    new_frame = _CheckpointFrame(recompute_fn, early, metadata_fn)

    if not is_grad_enabled():
        yield
        return

    new_frame.save_inputs(*args)
    forward_context_suppressed_exc = False
    with _checkpoint_hook(new_frame), forward_context:
        try:
            yield
        except BaseException:
            forward_context_suppressed_exc = True
            raise
    if forward_context_suppressed_exc:
        raise RuntimeError(
            "minigrad.utils.checkpoint: the forward context provided by "
            "context_fn suppressed an exception raised during the "
            "checkpointed forward. This is not supported because checkpoint "
            "cannot return a value for a failed forward."
        )
    new_frame.forward_completed = True


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Checkpoints a sequential model in `segments` chunks (all but the last recomputed)."""
    if use_reentrant is None:
        warnings.warn(
            "minigrad.utils.checkpoint.checkpoint_sequential: the use_reentrant "
            "parameter should be passed explicitly. "
            "In version 2.9 we will raise an exception if use_reentrant "
            "is not passed. use_reentrant=False is "
            "recommended, but if you need to preserve the current default "
            "behavior, you can pass use_reentrant=True. Refer to docs for more "
            "details on the differences between the two variants.",
            stacklevel=2,
        )
        use_reentrant = True
    preserve = kwargs.pop("preserve_rng_state", True)
    if kwargs:
        raise ValueError("Unexpected keyword arguments: " + ",".join(arg for arg in kwargs))

    def run_function(start, end, functions):
        def forward(input):
            for j in range(start, end + 1):
                input = functions[j](input)
            return input
        return forward

    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    segment_size = len(functions) // segments
    end = -1
    for start in range(0, segment_size * (segments - 1), segment_size):
        end = start + segment_size - 1
        input = checkpoint(run_function(start, end, functions), input, use_reentrant=use_reentrant,
                           preserve_rng_state=preserve)
    return run_function(end + 1, len(functions) - 1, functions)(input)

