"""Linear algebra, joining and gathering: each op's Tensor method and `minigrad.<name>` function
written once.

Products (matmul/@, mm, bmm, mv, dot, addmm, addmm_, kron), joins (cat/concat/concatenate, stack) and index ops
(gather, scatter, scatter_add, index_select, index_add, index_fill, index_copy, take, put, masked_select, masked_scatter), with in-place `_`
variants that return `self`. Argument kinds are checked here with torch's TypeError texts;
everything else (shapes, dtypes, indices) is checked in the Rust core (rust/py/src/linalg.rs ->
rust/core/src/ops/linalg.rs, join.rs, gather.rs, mask.rs, mask_scatter.rs).

torch numbers a method's arguments from the first one after `self`, and a function's from
`input`, so `x.gather(0, "i")` and `minigrad.gather(x, 0, "i")` name different positions. An op
with both forms is therefore written once, inside a maker `name(shift)` that returns it written
as torch's function `name(input, ...)` with its argument positions shifted by `shift`:
`_method_and_function` makes the method with shift 0 and the module function with shift 1 (which
also checks `input` first; a method's self is a tensor already). Both are plain functions with
their own signature, so neither form pays for a wrapper call.
"""

import inspect
import numbers
import warnings

from .. import _C
from ._args import bool_arg, tensors_arg
from .registry import add_function, function, method


def _type_name(value):
    return type(value).__name__


def _need_tensor(op, name, position, value):
    if not isinstance(value, _C.TensorBase):
        raise TypeError(f"{op}(): argument '{name}' (position {position}) must be Tensor, not {_type_name(value)}")


def _need_int(op, name, value):
    if isinstance(value, bool) or not isinstance(value, int) and not hasattr(value, "__index__"):
        raise TypeError(f"{op}(): argument '{name}' must be int, not {_type_name(value)}")
    return value.__index__()


def _method_and_function(make):
    """Registers make(0) as Tensor.<name> and make(1) as `minigrad.<name>`; returns the latter."""
    as_method, as_function = make(0), make(1)
    name = as_method.__name__
    params = list(inspect.signature(as_method).parameters.values())
    as_method.__signature__ = inspect.Signature([params[0].replace(name="self"), *params[1:]])
    method()(as_method)
    as_function.__qualname__ = name
    add_function(name, as_function)
    return as_function


# ----- products -----

@_method_and_function
def matmul(shift):
    def matmul(input, other):
        if shift:
            _need_tensor("matmul", "input", 1, input)
        _need_tensor("matmul", "other", 1 + shift, other)
        return _C.matmul(input, other, "matmul")
    return matmul


@_method_and_function
def mm(shift):
    def mm(input, mat2):
        if shift:
            _need_tensor("mm", "input", 1, input)
        _need_tensor("mm", "mat2", 1 + shift, mat2)
        return _C.matmul(input, mat2, "mm")
    return mm


@_method_and_function
def bmm(shift):
    def bmm(input, mat2):
        if shift:
            _need_tensor("bmm", "input", 1, input)
        _need_tensor("bmm", "mat2", 1 + shift, mat2)
        return _C.matmul(input, mat2, "bmm")
    return bmm


@_method_and_function
def mv(shift):
    def mv(input, vec):
        if shift:
            _need_tensor("mv", "input", 1, input)
        _need_tensor("mv", "vec", 1 + shift, vec)
        return _C.matmul(input, vec, "mv")
    return mv


@_method_and_function
def dot(shift):
    def dot(input, tensor):
        if shift:
            _need_tensor("dot", "input", 1, input)
        _need_tensor("dot", "tensor", 1 + shift, tensor)
        return _C.matmul(input, tensor, "dot")
    return dot


@_method_and_function
def addmm(shift):
    def addmm(input, mat1, mat2, *, beta=1, alpha=1):
        """beta·self + alpha·(mat1 @ mat2), self broadcast to the product (AddmmBackward0)."""
        if shift:
            _need_tensor("addmm", "input", 1, input)
        _need_tensor("addmm", "mat1", 1 + shift, mat1)
        _need_tensor("addmm", "mat2", 2 + shift, mat2)
        return _C.addmm(input, mat1, mat2, beta, alpha)
    return addmm


@method()
def addmm_(self, mat1, mat2, *, beta=1, alpha=1):
    """In-place addmm: the product must have self's shape (AddmmBackward0)."""
    _need_tensor("addmm_", "mat1", 1, mat1)
    _need_tensor("addmm_", "mat2", 2, mat2)
    return _C.addmm_(self, mat1, mat2, beta, alpha)


@method()
def __matmul__(self, *args, **kwargs):
    # torch answers NotImplemented to any call it cannot take (`x.__matmul__()` too)
    if len(args) != 1 or kwargs or not isinstance(args[0], _C.TensorBase):
        return NotImplemented
    return _C.matmul(self, args[0], "matmul")


@method()
def __rmatmul__(self, *args, **kwargs):
    if len(args) != 1 or kwargs or not isinstance(args[0], _C.TensorBase):
        return NotImplemented
    return _C.matmul(args[0], self, "matmul")


@_method_and_function
def kron(shift):
    def kron(input, other):
        """The Kronecker product: block (i, j, ...) of the result is input[i, j, ...] * other, the
        shorter shape padded with leading 1s."""
        if shift:
            _need_tensor("kron", "input", 1, input)
        _need_tensor("kron", "other", 1 + shift, other)
        return _C.kron(input, other)
    return kron


# ----- gathering -----

@_method_and_function
def gather(shift):
    def gather(input, dim, index, *, sparse_grad=False):
        if shift:
            _need_tensor("gather", "input", 1, input)
        _need_tensor("gather", "index", 2 + shift, index)
        return _C.gather(input, _need_int("gather", "dim", dim), index)
    return gather


@_method_and_function
def index_select(shift):
    def index_select(input, dim, index):
        if shift:
            _need_tensor("index_select", "input", 1, input)
        _need_tensor("index_select", "index", 2 + shift, index)
        return _C.index_select(input, _need_int("index_select", "dim", dim), index)
    return index_select


@_method_and_function
def masked_select(shift):
    def masked_select(input, mask):
        if shift:
            _need_tensor("masked_select", "input", 1, input)
        _need_tensor("masked_select", "mask", 1 + shift, mask)
        return _C.masked_select(input, mask)
    return masked_select


@_method_and_function
def masked_scatter(shift):
    def masked_scatter(input, mask, source):
        if shift:
            _need_tensor("masked_scatter", "input", 1, input)
        _need_tensor("masked_scatter", "mask", 1 + shift, mask)
        _need_tensor("masked_scatter", "source", 2 + shift, source)
        return _C.masked_scatter(input, mask, source, False)
    return masked_scatter


@method()
def masked_scatter_(self, mask, source):
    """Writes source's first elements, in order, where the (broadcast) mask is true. Returns self."""
    _need_tensor("masked_scatter_", "mask", 1, mask)
    _need_tensor("masked_scatter_", "source", 2, source)
    return _C.masked_scatter(self, mask, source, True)


# ----- scattering (each with its in-place twin, a method only, which returns self) -----

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
            UserWarning, stacklevel=4,  # the caller of scatter(_), which called _scatter, which called this
        )


def _scatter(op, input, dim, index, src, value, reduce, shift, inplace):
    if shift:
        _need_tensor(op, "input", 1, input)
    _need_tensor(op, "index", 2 + shift, index)
    source = _scatter_source(op, src, value)
    out = _C.scatter(input, _need_int(op, "dim", dim), index, source, reduce, inplace)
    _warn_reduce_once(reduce, source)
    return out


@_method_and_function
def scatter(shift):
    def scatter(input, dim, index, src=None, value=None, *, reduce=None):
        return _scatter("scatter", input, dim, index, src, value, reduce, shift, False)
    return scatter


@method()
def scatter_(self, dim, index, src=None, value=None, *, reduce=None):
    return _scatter("scatter_", self, dim, index, src, value, reduce, 0, True)


def _scatter_add(op, input, dim, index, src, shift, inplace):
    if shift:
        _need_tensor(op, "input", 1, input)
    _need_tensor(op, "index", 2 + shift, index)
    _need_tensor(op, "src", 3 + shift, src)
    return _C.scatter_add(input, _need_int(op, "dim", dim), index, src, inplace)


@_method_and_function
def scatter_add(shift):
    def scatter_add(input, dim, index, src):
        return _scatter_add("scatter_add", input, dim, index, src, shift, False)
    return scatter_add


@method()
def scatter_add_(self, dim, index, src):
    return _scatter_add("scatter_add_", self, dim, index, src, 0, True)


def _index_add(op, input, dim, index, source, alpha, shift, inplace):
    if shift:
        _need_tensor(op, "input", 1, input)
    _need_tensor(op, "index", 2 + shift, index)
    _need_tensor(op, "source", 3 + shift, source)
    return _C.index_add(input, _need_int(op, "dim", dim), index, source, alpha, inplace)


@_method_and_function
def index_add(shift):
    def index_add(input, dim, index, source, *, alpha=1):
        return _index_add("index_add", input, dim, index, source, alpha, shift, False)
    return index_add


@method()
def index_add_(self, dim, index, source, *, alpha=1):
    return _index_add("index_add_", self, dim, index, source, alpha, 0, True)


def _index_fill(op, input, dim, index, value, shift, inplace):
    if shift:
        _need_tensor(op, "input", 1, input)
    dim = _need_int(op, "dim", dim)
    _need_tensor(op, "index", 2 + shift, index)
    if not isinstance(value, (_C.TensorBase, numbers.Number)) or isinstance(value, complex):
        raise TypeError(f"{op}(): argument 'value' (position {3 + shift}) must be Number, not {type(value).__name__}")
    return _C.index_fill(input, dim, index, value, inplace)


@_method_and_function
def index_fill(shift):
    def index_fill(input, dim, index, value):
        """Slices along `dim` at `index` set to `value` (a number or a 0-d tensor)."""
        return _index_fill("index_fill", input, dim, index, value, shift, False)
    return index_fill


@method()
def index_fill_(self, dim, index, value):
    return _index_fill("index_fill_", self, dim, index, value, 0, True)


def _index_copy(op, input, dim, index, source, shift, inplace):
    if shift:
        _need_tensor(op, "input", 1, input)
    dim = _need_int(op, "dim", dim)
    _need_tensor(op, "index", 2 + shift, index)
    _need_tensor(op, "source", 3 + shift, source)
    return _C.index_copy(input, dim, index, source, inplace)


@_method_and_function
def index_copy(shift):
    def index_copy(input, dim, index, source):
        """Slices along `dim` at `index` replaced by source's slices, in order (the last of
        repeated indices wins)."""
        return _index_copy("index_copy", input, dim, index, source, shift, False)
    return index_copy


@method()
def index_copy_(self, dim, index, source):
    return _index_copy("index_copy_", self, dim, index, source, 0, True)


@_method_and_function
def take(shift):
    def take(input, index):
        """input's elements at `index` (int64, any shape; negatives count from the end), read
        as if input were 1-D in row-major order; shaped like `index`."""
        if shift:
            _need_tensor("take", "input", 1, input)
        _need_tensor("take", "index", 1 + shift, index)
        return _C.take(input, index)
    return take


def _put(op, input, index, source, accumulate, shift, inplace):
    if shift:
        _need_tensor(op, "input", 1, input)
    _need_tensor(op, "index", 1 + shift, index)
    _need_tensor(op, "source", 2 + shift, source)
    # (torch leaves the position out of this message when accumulate came by keyword; a
    # parameter with a default cannot tell, so the position is always named)
    return _C.put(input, index, source, bool_arg(op, "accumulate", 3 + shift, accumulate), inplace)


@_method_and_function
def put(shift):
    def put(input, index, source, accumulate=False):
        """A copy of input with source's elements written at `index` (as `take` reads it); with
        `accumulate=True` they are added, repeated positions included."""
        return _put("put", input, index, source, accumulate, shift, False)
    return put


@method()
def put_(self, index, source, accumulate=False):
    """In-place `put`; returns self."""
    return _put("put_", self, index, source, accumulate, 0, True)


# ----- joining (module functions only) -----


@function
def cat(tensors, dim=0, *, axis=None):
    """Concatenates tensors along an existing dim (torch.cat)."""
    tensors = tensors_arg("cat", tensors)
    dim = axis if axis is not None else dim
    return _C.cat(tensors, _need_int("cat", "dim", dim))


@function
def concat(tensors, dim=0, *, axis=None):
    """Alias of cat."""
    tensors = tensors_arg("concat", tensors)
    dim = axis if axis is not None else dim
    return _C.cat(tensors, _need_int("concat", "dim", dim))


@function
def concatenate(tensors, axis=0):
    """Alias of cat, with NumPy's argument name."""
    tensors = tensors_arg("concatenate", tensors)
    return _C.cat(tensors, _need_int("concatenate", "axis", axis))


@function
def stack(tensors, dim=0, *, axis=None):
    """Joins equally shaped tensors along a new dim (torch.stack)."""
    tensors = tensors_arg("stack", tensors)
    dim = axis if axis is not None else dim
    return _C.stack(tensors, _need_int("stack", "dim", dim))
