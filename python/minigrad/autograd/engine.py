"""The Python entry points to the core's engine: `backward`, `grad`, and `Tensor.backward` /
`Tensor.register_hook` (attached to the class through the op registry)."""

import threading

from .. import _C
from .._creation import ones_like as _ones_like, zeros_like as _zeros_like
from .._ops.registry import method as _method
from .._tensor import Tensor as _Tensor
from . import graph


def _as_tuple(x):
    if x is None:
        return ()
    if isinstance(x, (_Tensor, graph.GradientEdge)):
        return (x,)
    return tuple(x)


def _make_grads(outputs, grads, is_grads_batched=False):
    """torch's _make_grads: explicit gradients are shape-checked; implicit ones are ones for
    single-element outputs only (R51)."""
    new = []
    for out, g in zip(outputs, grads):
        if g is not None:
            if tuple(out.shape) != tuple(g.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output[{len(new)}] has a shape of {g.shape} and output[{len(new)}] has a shape of {out.shape}."
                )
            if out.dtype.is_floating_point != g.dtype.is_floating_point:
                raise TypeError(
                    f"For complex Tensors, both grad_output and output are required to have the same dtype. Mismatch in dtype: grad_output[{len(new)}] has a dtype of {g.dtype} and output[{len(new)}] has a dtype of {out.dtype}."
                )
            new.append(g)
        else:
            if out.requires_grad:
                if out.numel() != 1:
                    raise RuntimeError("grad can be implicitly created only for scalar outputs")
                if not out.dtype.is_floating_point:
                    raise RuntimeError(f"grad can be implicitly created only for real scalar outputs but got {out.dtype}")
                new.append(_ones_like(out))
            else:
                new.append(None)
    return new


_state = threading.local()


def _is_checkpoint_valid():
    """False inside a backward pass asked for particular `inputs` (autograd.grad, backward with
    inputs=), where a reentrant checkpoint cannot work (torch.autograd._is_checkpoint_valid)."""
    return getattr(_state, "checkpoint_valid", True)


def _run_engine(tensors, grads, retain_graph, create_graph, inputs, accumulate):
    prev = _is_checkpoint_valid()
    _state.checkpoint_valid = prev and not inputs
    try:
        return _C._run_backward(tensors, grads, retain_graph, create_graph, inputs, accumulate)
    finally:
        _state.checkpoint_valid = prev


def _check_outputs(outputs):
    for i, out in enumerate(outputs):
        if out._gradient_edge()[0] is None:
            raise RuntimeError(f"element {i} of tensors does not require grad and does not have a grad_fn")


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, grad_variables=None, inputs=None):
    """Accumulates gradients of `tensors` into the `.grad` of the leaves (or of `inputs`)."""
    tensors = _as_tuple(tensors)
    if grad_tensors is None:
        grad_tensors = grad_variables
    grads = list(_as_tuple(grad_tensors)) or [None] * len(tensors)
    if len(grads) != len(tensors):
        raise RuntimeError(f"grad can be implicitly created only for scalar outputs")
    inputs = _as_tuple(inputs)
    if inputs is not None and len(inputs) == 0 and isinstance(inputs, tuple) and inputs != ():
        raise RuntimeError("`inputs` argument to `backward()` cannot be empty.")
    grads = _make_grads(tensors, grads)
    if retain_graph is None:
        retain_graph = create_graph
    _check_outputs(tensors)
    _run_engine(list(tensors), grads, bool(retain_graph), bool(create_graph), list(inputs), True)


@_method(name="backward")
def _tensor_backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulates d(self)/d(leaf) into every leaf's `.grad` (see minigrad.autograd.backward)."""
    backward(self, gradient, retain_graph, create_graph, inputs=inputs)


@_method(name="register_hook")
def _tensor_register_hook(self, hook):
    """`hook(grad)` runs when this tensor's gradient is computed; it may return a new one."""
    return graph.RemovableHandle(self, self._register_hook(hook))


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False, only_inputs=True,
         allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """Gradients of `outputs` w.r.t. `inputs`, returned (`.grad` is not touched, R49)."""
    if materialize_grads and allow_unused is False:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: allow_unused=False.")
    if allow_unused is None:
        allow_unused = materialize_grads
    outputs = _as_tuple(outputs)
    inputs_tuple = _as_tuple(inputs)
    grads = list(_as_tuple(grad_outputs)) or [None] * len(outputs)
    if len(grads) != len(outputs):
        raise RuntimeError(f"grad requires one grad_output per output (got {len(grads)} for {len(outputs)})")
    grads = _make_grads(outputs, grads)
    if retain_graph is None:
        retain_graph = create_graph
    _check_outputs(outputs)
    for t in inputs_tuple:
        if not isinstance(t, graph.GradientEdge) and not t.requires_grad:
            raise RuntimeError("One of the differentiated Tensors does not require grad")
    result = _run_engine(list(outputs), grads, bool(retain_graph), bool(create_graph), list(inputs_tuple), False)
    result = list(result)
    for i, r in enumerate(result):
        if r is None:
            if materialize_grads:
                result[i] = _zeros_like(inputs_tuple[i])
            elif not allow_unused:
                raise RuntimeError(
                    f"The differentiated Tensor at index {i} appears to not have been used in the graph. Set allow_unused=True if this is the desired behavior."
                )
    return tuple(result)
