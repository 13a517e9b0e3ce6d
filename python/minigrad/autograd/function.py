"""Custom autograd Functions: `forward`/`backward` staticmethods, `ctx.save_for_backward`
(version-checked like built-in saves), `ctx.mark_dirty`, `ctx.mark_non_differentiable`,
`ctx.needs_input_grad`. The node recorded for a call is the `ctx` object itself, an instance of
`<Name>Backward`, exactly as `type(y.grad_fn).__name__` shows in torch."""

from .. import _C
from .._creation import zeros
from .._tensor import Tensor
from .grad_mode import no_grad
from .graph import Node

__all__ = ["Function", "FunctionCtx", "once_differentiable"]


class FunctionCtx:
    def save_for_backward(self, *tensors):
        self.to_save = tensors

    def mark_dirty(self, *tensors):
        self.dirty_tensors = tensors

    def mark_non_differentiable(self, *tensors):
        self.non_differentiable = tensors

    def set_materialize_grads(self, value):
        self.materialize_grads = bool(value)


class BackwardCFunction(Node, FunctionCtx):
    """The ctx of one call, and the graph node of that call."""

    _forward_cls = None

    def __init__(self):
        self.to_save = ()
        self.dirty_tensors = ()
        self.non_differentiable = ()
        self.materialize_grads = True
        self.needs_input_grad = ()
        self._input_shapes = ()

    @property
    def saved_tensors(self):
        unpacked = self.__dict__.get("_unpacked")
        if unpacked is not None:
            return unpacked
        if not self.to_save:
            return ()
        return _C._function_saved(self)

    def apply(self, *grads):
        return self._forward_cls.backward(self, *grads)

    def _call_backward(self, grads, saved):
        """Called by the engine with one gradient (or None) per forward output, and the saved
        tensors already unpacked (and version-checked) by the core."""
        self._unpacked = saved
        try:
            return self._run_backward(grads)
        finally:
            self._unpacked = None

    def _run_backward(self, grads):
        if self.materialize_grads:
            grads = tuple(
                zeros(*shape, dtype=dtype) if g is None and shape is not None else g
                for g, (shape, dtype) in zip(grads, self._output_shapes)
            )
        out = self._forward_cls.backward(self, *grads)
        if not isinstance(out, tuple):
            out = (out,)
        n = len(self._input_shapes)
        if len(out) > n and all(g is None for g in out[n:]):
            out = out[:n]
        if len(out) != n:
            raise RuntimeError(
                f"function {type(self).__name__} returned an incorrect number of gradients (expected {n}, got {len(out)})"
            )
        return out


class FunctionMeta(type):
    """Gives every Function subclass its `<Name>Backward` node class."""

    def __init__(cls, name, bases, attrs):
        backward_cls = type(name + "Backward", (BackwardCFunction,), {"_forward_cls": cls})
        cls._backward_cls = backward_cls
        super().__init__(name, bases, attrs)


class Function(FunctionCtx, metaclass=FunctionMeta):
    """Base class for custom differentiable operations (use `MyFn.apply(*args)`)."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError("You must implement the forward function for custom autograd.Function.")

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError("You must implement either the backward or vjp method for your custom autograd.Function to use it with backward mode AD.")

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = cls._backward_cls()
        ctx.needs_input_grad = tuple(isinstance(a, Tensor) and a.requires_grad for a in args)
        ctx._input_shapes = tuple(a.shape if isinstance(a, Tensor) else None for a in args)
        with no_grad():
            outputs = cls.forward(ctx, *args, **kwargs)
        single = not isinstance(outputs, tuple)
        outs = (outputs,) if single else outputs
        ctx._output_shapes = tuple((tuple(o.shape), o.dtype) if isinstance(o, Tensor) else (None, None) for o in outs)
        inputs = [a if isinstance(a, Tensor) else None for a in args]
        result = _C._record_function(
            ctx, cls.__name__ + "Backward", inputs, list(outs),
            list(ctx.dirty_tensors), list(ctx.non_differentiable), list(ctx.to_save or ()),
        )
        return result[0] if single else tuple(result)


def once_differentiable(fn):
    """Marks a backward that is not itself differentiable (runs it under no_grad)."""
    import functools

    @functools.wraps(fn)
    def wrapper(ctx, *args):
        with no_grad():
            return fn(ctx, *args)
    return wrapper
