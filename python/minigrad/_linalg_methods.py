"""Linear algebra, joining and gathering: Tensor methods and their `minigrad.<name>` functions.

Products (matmul/@, mm, bmm, mv, dot), joins (cat/concat/concatenate, stack) and index ops
(gather, scatter, scatter_add, index_select, index_add, masked_select), with in-place `_`
variants that return `self`. Argument kinds are checked here with torch's TypeError texts;
everything else (shapes, dtypes, indices) is checked in the Rust core.
"""

import warnings

from . import _C


def _type_name(value):
    return type(value).__name__


def _need_tensor(op, name, position, value):
    if not isinstance(value, _C.TensorBase):
        raise TypeError(f"{op}(): argument '{name}' (position {position}) must be Tensor, not {_type_name(value)}")


def _need_int(op, name, value):
    if isinstance(value, bool) or not isinstance(value, int) and not hasattr(value, "__index__"):
        raise TypeError(f"{op}(): argument '{name}' must be int, not {_type_name(value)}")
    return value.__index__()


def _tensor_list(op, tensors):
    if isinstance(tensors, _C.TensorBase) or not isinstance(tensors, (list, tuple)):
        raise TypeError(f"{op}(): argument 'tensors' (position 1) must be tuple of Tensors, not {_type_name(tensors)}")
    for i, t in enumerate(tensors):
        if not isinstance(t, _C.TensorBase):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {_type_name(t)}")
    return list(tensors)


def _scatter_source(op, src, value):
    """scatter's third argument: a tensor `src` or a number `value` (positionally, either)."""
    if src is not None and value is not None:
        raise TypeError(f"{op}() got multiple values for the source (pass src or value, not both)")
    source = src if src is not None else value
    if source is None:
        raise TypeError(f"{op}() missing 1 required positional argument: 'src'")
    if not isinstance(source, (_C.TensorBase, bool, int, float)) and not hasattr(source, "__float__"):
        raise TypeError(f"{op}(): argument 'src' (position 3) must be Tensor, not {_type_name(source)}")
    return source


_REDUCE_WARNED = []


def _warn_reduce_once(reduce, source):
    """torch warns (once per process) that scatter's reduce= with a Tensor src is deprecated."""
    if reduce is not None and isinstance(source, _C.TensorBase) and not _REDUCE_WARNED:
        _REDUCE_WARNED.append(True)
        warnings.warn(
            "The reduce argument of torch.scatter with Tensor src is deprecated and will be removed in a "
            "future PyTorch release. Use torch.scatter_reduce instead for more reduction options.",
            UserWarning, stacklevel=3,
        )


class LinalgMethods:
    """Products, joins and index ops as Tensor methods (mixed into minigrad.Tensor)."""

    # ----- products -----

    def matmul(self, other):
        _need_tensor("matmul", "other", 1, other)
        return _C.matmul(self, other, "matmul")

    def __matmul__(self, other):
        if not isinstance(other, _C.TensorBase):
            return NotImplemented
        return _C.matmul(self, other, "matmul")

    def __rmatmul__(self, other):
        if not isinstance(other, _C.TensorBase):
            return NotImplemented
        return _C.matmul(other, self, "matmul")

    def mm(self, mat2):
        _need_tensor("mm", "mat2", 1, mat2)
        return _C.matmul(self, mat2, "mm")

    def bmm(self, mat2):
        _need_tensor("bmm", "mat2", 1, mat2)
        return _C.matmul(self, mat2, "bmm")

    def mv(self, vec):
        _need_tensor("mv", "vec", 1, vec)
        return _C.matmul(self, vec, "mv")

    def dot(self, tensor):
        _need_tensor("dot", "tensor", 1, tensor)
        return _C.matmul(self, tensor, "dot")

    def addmm(self, mat1, mat2, *, beta=1, alpha=1):
        """beta·self + alpha·(mat1 @ mat2), self broadcast to the product (AddmmBackward0)."""
        _need_tensor("addmm", "mat1", 1, mat1)
        _need_tensor("addmm", "mat2", 2, mat2)
        return _C.addmm(self, mat1, mat2, beta, alpha)

    # ----- gathering -----

    def gather(self, dim, index, *, sparse_grad=False):
        _need_tensor("gather", "index", 2, index)
        return _C.gather(self, _need_int("gather", "dim", dim), index)

    def index_select(self, dim, index):
        _need_tensor("index_select", "index", 2, index)
        return _C.index_select(self, _need_int("index_select", "dim", dim), index)

    def masked_select(self, mask):
        _need_tensor("masked_select", "mask", 1, mask)
        return _C.masked_select(self, mask)

    # ----- scattering (each with its in-place twin, which returns self) -----

    def scatter(self, dim, index, src=None, value=None, *, reduce=None):
        _need_tensor("scatter", "index", 2, index)
        source = _scatter_source("scatter", src, value)
        out = _C.scatter(self, _need_int("scatter", "dim", dim), index, source, reduce)
        _warn_reduce_once(reduce, source)
        return out

    def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
        _need_tensor("scatter_", "index", 2, index)
        source = _scatter_source("scatter_", src, value)
        out = _C.scatter(self, _need_int("scatter_", "dim", dim), index, source, reduce, True)
        _warn_reduce_once(reduce, source)
        return out

    def scatter_add(self, dim, index, src):
        _need_tensor("scatter_add", "index", 2, index)
        _need_tensor("scatter_add", "src", 3, src)
        return _C.scatter_add(self, _need_int("scatter_add", "dim", dim), index, src)

    def scatter_add_(self, dim, index, src):
        _need_tensor("scatter_add_", "index", 2, index)
        _need_tensor("scatter_add_", "src", 3, src)
        return _C.scatter_add(self, _need_int("scatter_add_", "dim", dim), index, src, True)

    def index_add(self, dim, index, source, *, alpha=1):
        _need_tensor("index_add", "index", 2, index)
        _need_tensor("index_add", "source", 3, source)
        return _C.index_add(self, _need_int("index_add", "dim", dim), index, source, alpha)

    def index_add_(self, dim, index, source, *, alpha=1):
        _need_tensor("index_add_", "index", 2, index)
        _need_tensor("index_add_", "source", 3, source)
        return _C.index_add(self, _need_int("index_add_", "dim", dim), index, source, alpha, True)

    # Every method here also exists as `minigrad.<name>(input, ...)`; those are written out
    # below (not forwarded) so that argument positions in TypeErrors count `input`, as torch's do.
    FUNCTIONS = ()


# ----- module-level functions -----

def matmul(input, other):
    _need_tensor("matmul", "input", 1, input)
    _need_tensor("matmul", "other", 2, other)
    return _C.matmul(input, other, "matmul")


def mm(input, mat2):
    _need_tensor("mm", "input", 1, input)
    _need_tensor("mm", "mat2", 2, mat2)
    return _C.matmul(input, mat2, "mm")


def bmm(input, mat2):
    _need_tensor("bmm", "input", 1, input)
    _need_tensor("bmm", "mat2", 2, mat2)
    return _C.matmul(input, mat2, "bmm")


def mv(input, vec):
    _need_tensor("mv", "input", 1, input)
    _need_tensor("mv", "vec", 2, vec)
    return _C.matmul(input, vec, "mv")


def dot(input, tensor):
    _need_tensor("dot", "input", 1, input)
    _need_tensor("dot", "tensor", 2, tensor)
    return _C.matmul(input, tensor, "dot")


def addmm(input, mat1, mat2, *, beta=1, alpha=1):
    _need_tensor("addmm", "input", 1, input)
    _need_tensor("addmm", "mat1", 2, mat1)
    _need_tensor("addmm", "mat2", 3, mat2)
    return _C.addmm(input, mat1, mat2, beta, alpha)


def gather(input, dim, index, *, sparse_grad=False):
    _need_tensor("gather", "input", 1, input)
    _need_tensor("gather", "index", 3, index)
    return _C.gather(input, _need_int("gather", "dim", dim), index)


def index_select(input, dim, index):
    _need_tensor("index_select", "input", 1, input)
    _need_tensor("index_select", "index", 3, index)
    return _C.index_select(input, _need_int("index_select", "dim", dim), index)


def masked_select(input, mask):
    _need_tensor("masked_select", "input", 1, input)
    _need_tensor("masked_select", "mask", 2, mask)
    return _C.masked_select(input, mask)


def scatter(input, dim, index, src=None, value=None, *, reduce=None):
    _need_tensor("scatter", "input", 1, input)
    _need_tensor("scatter", "index", 3, index)
    source = _scatter_source("scatter", src, value)
    out = _C.scatter(input, _need_int("scatter", "dim", dim), index, source, reduce)
    _warn_reduce_once(reduce, source)
    return out


def scatter_add(input, dim, index, src):
    _need_tensor("scatter_add", "input", 1, input)
    _need_tensor("scatter_add", "index", 3, index)
    _need_tensor("scatter_add", "src", 4, src)
    return _C.scatter_add(input, _need_int("scatter_add", "dim", dim), index, src)


def index_add(input, dim, index, source, *, alpha=1):
    _need_tensor("index_add", "input", 1, input)
    _need_tensor("index_add", "index", 3, index)
    _need_tensor("index_add", "source", 4, source)
    return _C.index_add(input, _need_int("index_add", "dim", dim), index, source, alpha)


def cat(tensors, dim=0, *, axis=None):
    """Concatenates tensors along an existing dim (torch.cat)."""
    tensors = _tensor_list("cat", tensors)
    dim = axis if axis is not None else dim
    return _C.cat(tensors, _need_int("cat", "dim", dim))


def concat(tensors, dim=0, *, axis=None):
    """Alias of cat."""
    tensors = _tensor_list("concat", tensors)
    dim = axis if axis is not None else dim
    return _C.cat(tensors, _need_int("concat", "dim", dim))


def concatenate(tensors, axis=0):
    """Alias of cat, with NumPy's argument name."""
    tensors = _tensor_list("concatenate", tensors)
    return _C.cat(tensors, _need_int("concatenate", "axis", axis))


def stack(tensors, dim=0, *, axis=None):
    """Joins equally shaped tensors along a new dim (torch.stack)."""
    tensors = _tensor_list("stack", tensors)
    dim = axis if axis is not None else dim
    return _C.stack(tensors, _need_int("stack", "dim", dim))


LinalgMethods.MODULE_FUNCTIONS = {
    f.__name__: f
    for f in (matmul, mm, bmm, mv, dot, addmm, gather, index_select, masked_select, scatter, scatter_add,
              index_add, cat, concat, concatenate, stack)
}
