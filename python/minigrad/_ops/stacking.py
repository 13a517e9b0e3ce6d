"""Joins and reshapes torch builds from other ops (ATen's CompositeImplicitAutograd functions),
built the same way here so the graph shows torch's nodes: `atleast_1d/2d/3d` (views: ViewBackward0,
UnsqueezeBackward0), `hstack`, `vstack` / `row_stack`, `dstack`, `column_stack` (one cat:
CatBackward0), `outer` / `ger` (a view times a vector: MulBackward0), `fliplr` / `flipud` (flip).
Argument checks and errors are torch's, in its words.
"""

from .. import _C
from ._args import tensor_arg, tensors_arg, type_name
from .registry import add_function, function, method


def _atleast(op, tensors, one):
    """torch.atleast_Nd(*tensors): one tensor -> a tensor; several, or one list/tuple -> a tuple."""
    if len(tensors) == 1:
        tensors = tensors[0]
    if isinstance(tensors, _C.TensorBase):
        return one(tensors)
    if isinstance(tensors, (list, tuple)) and all(isinstance(t, _C.TensorBase) for t in tensors):
        return tuple(one(t) for t in tensors)
    got = ", ".join(type_name(t) for t in (tensors if isinstance(tensors, (list, tuple)) else [tensors]))
    raise TypeError(
        f"{op}() received an invalid combination of arguments - got ({got}), but expected one of:\n"
        " * (Tensor input)\n * (tuple of Tensors tensors)\n"
    )


def _at_least_1d(t):
    return t.reshape(1) if t.dim() == 0 else t


def _at_least_2d(t):
    if t.dim() == 0:
        return t.reshape(1, 1)
    return t.unsqueeze(0) if t.dim() == 1 else t


def _at_least_3d(t):
    if t.dim() == 0:
        return t.reshape(1, 1, 1)
    if t.dim() == 1:
        return t.unsqueeze(0).unsqueeze(-1)
    return t.unsqueeze(-1) if t.dim() == 2 else t


@function
def atleast_1d(*tensors):
    """Each tensor with at least one dim (a 0-d one reshaped to (1,))."""
    return _atleast("atleast_1d", tensors, _at_least_1d)


@function
def atleast_2d(*tensors):
    """Each tensor with at least two dims: (1, 1) for a 0-d one, (1, n) for a 1-d one."""
    return _atleast("atleast_2d", tensors, _at_least_2d)


@function
def atleast_3d(*tensors):
    """Each tensor with at least three dims: (1, 1, 1), (1, n, 1), (m, n, 1)."""
    return _atleast("atleast_3d", tensors, _at_least_3d)


def _non_empty(op, tensors):
    tensors = tensors_arg(op, tensors)
    if not tensors:
        raise RuntimeError(f"{op} expects a non-empty TensorList")
    return tensors


@function
def hstack(tensors):
    """Tensors joined column-wise: along dim 0 for 1-d (and 0-d) ones, along dim 1 otherwise."""
    parts = [_at_least_1d(t) for t in _non_empty("hstack", tensors)]
    return _C.cat(parts, 0 if parts[0].dim() == 1 else 1)


@function
def vstack(tensors):
    """Tensors joined row-wise: each made at least 2-d, then joined along dim 0."""
    return _C.cat([_at_least_2d(t) for t in _non_empty("vstack", tensors)], 0)


@function
def row_stack(tensors):
    """`vstack` under NumPy's other name."""
    return _C.cat([_at_least_2d(t) for t in _non_empty("row_stack", tensors)], 0)


@function
def dstack(tensors):
    """Tensors joined depth-wise: each made at least 3-d, then joined along dim 2."""
    return _C.cat([_at_least_3d(t) for t in _non_empty("dstack", tensors)], 2)


@function
def column_stack(tensors):
    """0-d and 1-d tensors as columns (n, 1), then `hstack`."""
    parts = [t.reshape(t.numel(), 1) if t.dim() <= 1 else t for t in _non_empty("column_stack", tensors)]
    return _C.cat(parts, 1)


def _outer(op, self, vec2, position=1):
    tensor_arg(op, "vec2", position, vec2)
    for arg, t in (("self", self), ("vec2", vec2)):
        if t.dim() != 1:
            raise RuntimeError(f"outer: Expected 1-D argument {arg}, but got {t.dim()}-D")
    return self.reshape(self.shape[0], 1) * vec2


@method()
def outer(self, vec2):
    """The outer product of two vectors: `self[i] * vec2[j]` (torch: a (n, 1) view times vec2)."""
    return _outer("outer", self, vec2)


@method()
def ger(self, vec2):
    """`outer` under its BLAS name."""
    return _outer("ger", self, vec2)


def _outer_function(op):
    def function(input, vec2):
        tensor_arg(op, "input", 1, input)
        return _outer(op, input, vec2, position=2)  # torch numbers a function's arguments from input

    function.__name__ = function.__qualname__ = op
    function.__doc__ = f"`input.{op}(vec2)`: the outer product of two vectors."
    add_function(op, function)


_outer_function("outer")
_outer_function("ger")


@method(function=True)
def fliplr(self):
    """The columns in reverse order (dim 1; at least 2-d)."""
    if self.dim() < 2:
        raise RuntimeError("Input must be >= 2-d.")
    return self.flip(1)


@method(function=True)
def flipud(self):
    """The rows in reverse order (dim 0; at least 1-d)."""
    if self.dim() < 1:
        raise RuntimeError("Input must be >= 1-d.")
    return self.flip(0)

