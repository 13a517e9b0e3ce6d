"""Gathers torch builds from other ops, built the same way here so the graph shows torch's
nodes: `take_along_dim` (both operands broadcast against each other, then `gather`:
GatherBackward0 over ExpandBackward0) and `repeat_interleave` (an int count: unsqueeze, expand,
a contiguous clone and a view; a tensor of counts: `index_select` with the index that
`minigrad.repeat_interleave(counts)` makes). Argument checks and errors are torch's.
"""

from .. import _C, _creation
from ._args import MISSING, int_arg, is_int, scalar_name, tensor_arg, type_name, wrap_dim
from .registry import add_function, method


def _infer_size(a, b):
    """The broadcast of shapes `a` and `b` (ATen's infer_size, with its error)."""
    n = max(len(a), len(b))
    out = []
    for i in range(n):
        da = a[len(a) - n + i] if len(a) - n + i >= 0 else 1
        db = b[len(b) - n + i] if len(b) - n + i >= 0 else 1
        if da != db and da != 1 and db != 1:
            raise RuntimeError(
                f"The size of tensor a ({da}) must match the size of tensor b ({db}) at non-singleton dimension {i}"
            )
        out.append(db if da == 1 else da)
    return out


@method()
def take_along_dim(self, indices, dim=None):
    """`gather` along `dim` after broadcasting `self` and `indices` against each other in the other
    dims; with no dim, the flattened tensor indexed by the flattened indices."""
    op = "take_along_dim"
    tensor_arg(op, "indices", 1, indices)
    if dim is None:
        return self.view(-1).gather(0, indices.view(-1))
    dim = int_arg(op, "dim", 2, dim)
    if self.dim() != indices.dim():
        raise RuntimeError(
            f"torch.take_along_dim(): input and indices should have the same number of dimensions, but got "
            f"{self.dim()} dimensions for input, and {indices.dim()} dimensions for indices"
        )
    if indices.dtype != _C.int64:
        raise RuntimeError(f"torch.take_along_dim(): dtype of indices should be Long but got {scalar_name(indices.dtype)}")
    d = wrap_dim(dim, self.dim())
    sizes = list(self.shape)
    sizes[d] = indices.shape[d]
    indices = indices.expand(*_infer_size(sizes, list(indices.shape)))
    sizes = list(indices.shape)
    sizes[d] = self.shape[d]
    return self.expand(*_infer_size(sizes, list(self.shape))).gather(d, indices)


def _take_along_dim_function(input, indices, dim=None):
    tensor_arg("take_along_dim", "input", 1, input)
    return input.take_along_dim(indices, dim)


_take_along_dim_function.__name__ = _take_along_dim_function.__qualname__ = "take_along_dim"
add_function("take_along_dim", _take_along_dim_function)


def _counts_index(repeats, output_size):
    """`minigrad.repeat_interleave(repeats)`: each position i repeated repeats[i] times."""
    if repeats.dtype not in (_C.int64, _C.int32):  # torch dispatches on the dtype first
        raise NotImplementedError(f'"repeat_interleave_cpu" not implemented for \'{scalar_name(repeats.dtype)}\'')
    if repeats.dim() != 1:
        raise RuntimeError("repeat_interleave only accept 1D vector as repeat")
    counts = repeats.tolist()
    if any(c < 0 for c in counts):
        raise RuntimeError("repeats can not be negative")
    if output_size is not None and output_size != sum(counts):
        raise RuntimeError("allocated size does not match required size")
    index = [i for i, c in enumerate(counts) for _ in range(c)]
    return _creation.tensor(index, dtype=repeats.dtype, device=repeats.device)


@method()
def repeat_interleave(self, repeats=MISSING, dim=None, *, output_size=None):
    """Each element repeated `repeats` times along `dim` (the flattened tensor when None); `repeats`
    an int, or a tensor of counts (one, or one per element along `dim`)."""
    op = "repeat_interleave"
    if repeats is MISSING:
        raise _no_overload("")
    # overload resolution (types only) before any value is read
    int_repeats = is_int(repeats) and not isinstance(repeats, bool)
    if not (int_repeats or isinstance(repeats, _C.TensorBase)) or (dim is not None and not is_int(dim)):
        raise _no_overload(", ".join(type_name(a) for a in (repeats, dim) if a is not None))
    if dim is not None:
        dim = int_arg(op, "dim", 2, dim)
    if output_size is not None:
        output_size = int_arg(op, "output_size", None, output_size)
    if isinstance(repeats, _C.TensorBase):
        x = self if dim is not None else self.flatten()
        if repeats.dim() > 1:
            raise RuntimeError("repeats must be 0-dim or 1-dim tensor")
        d = _size_dim(x, 0 if dim is None else dim)  # read only now, as torch
        if repeats.dim() == 0 or repeats.shape[0] == 1:
            repeats = repeats.reshape(1).expand(x.shape[d])
        else:
            if repeats.shape[0] != x.shape[d]:
                raise RuntimeError(
                    f"repeats must have the same size as input along dim, but got repeats.size(0) = {repeats.shape[0]} "
                    f"and input.size({d}) = {x.shape[d]}"
                )
        return x.index_select(d, _counts_index(repeats, output_size))
    repeats = int_arg(op, "repeats", 1, repeats)
    x = self if dim is not None else self.flatten()
    d = wrap_dim(0 if dim is None else dim, self.dim())
    if repeats < 0:
        raise RuntimeError("Repeats must be non-negative")
    sizes = list(x.shape)
    if output_size is not None and output_size != sizes[d] * repeats:
        raise RuntimeError(f"repeat_interleave: Invalid output_size, expected {sizes[d] * repeats} but got {output_size}")
    expanded = x.unsqueeze(d + 1).expand(*sizes[: d + 1], repeats, *sizes[d + 1:])
    sizes[d] *= repeats
    return expanded.clone().view(*sizes)


def _size_dim(x, dim):
    """`dim` wrapped as `x.size(dim)` reads it (a 0-d tensor has no size to read)."""
    if x.dim() == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    return wrap_dim(dim, x.dim())


def _no_overload(got):
    return TypeError(
        f"repeat_interleave() received an invalid combination of arguments - got ({got}), but expected one of:\n"
        " * (Tensor repeats, int dim = None, *, int output_size = None)\n"
        " * (int repeats, int dim = None, *, int output_size = None)\n"
    )


def _repeat_interleave_function(input, repeats=MISSING, dim=MISSING, *, output_size=None):
    tensor_arg("repeat_interleave", "input", 1, input)
    if repeats is MISSING:  # torch.repeat_interleave(counts): the index the counts make
        if dim is not MISSING:  # that overload takes no dim, not even None
            raise _no_overload(f"Tensor, dim={type_name(dim)}")
        if output_size is not None:
            output_size = int_arg("repeat_interleave", "output_size", None, output_size)
        return _counts_index(input, output_size)
    return input.repeat_interleave(repeats, None if dim is MISSING else dim, output_size=output_size)


_repeat_interleave_function.__name__ = _repeat_interleave_function.__qualname__ = "repeat_interleave"
add_function("repeat_interleave", _repeat_interleave_function)
