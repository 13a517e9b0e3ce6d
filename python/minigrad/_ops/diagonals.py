"""Ops that make new tensors from or onto diagonals: `trace`, `diag`, `diag_embed`, `diagflat`
(the view `diagonal` is in views.py). The work and the value errors are in `_C`
(rust/py/src/composite.rs -> rust/core/src/ops/diag.rs); diagflat is composed as ATen composes
it, `self.contiguous().view(-1).diag(offset)`, so its graph shows torch's nodes."""

from .. import _C
from ._args import int_arg, is_int, tensor_arg, wrong
from .registry import add_function, method


def _ints(op, named, first):
    """torch's parser: every argument's type checked before any is unpacked. `first` is the
    position of the first one in torch's messages (1 after a method's self, 2 after `input`)."""
    for i, (name, v) in enumerate(named):
        if not is_int(v):
            raise wrong(op, name, first + i, "int", v)
    return [int_arg(op, name, first + i, v) for i, (name, v) in enumerate(named)]


def _diag(x, diagonal, first):
    (diagonal,) = _ints("diag", [("diagonal", diagonal)], first)
    return _C.diag_op(x, "diag", diagonal)


def _diag_embed(x, offset, dim1, dim2, first):
    offset, dim1, dim2 = _ints("diag_embed", [("offset", offset), ("dim1", dim1), ("dim2", dim2)], first)
    return _C.diag_op(x, "diag_embed", offset, dim1, dim2)


def _diagflat(x, offset, first):
    (offset,) = _ints("diagflat", [("offset", offset)], first)
    return x.contiguous().view(-1).diag(offset)


@method()
def trace(self):
    """The sum of a matrix's main diagonal (integers sum to int64)."""
    return _C.diag_op(self, "trace")


@method()
def diag(self, diagonal=0):
    """A vector's elements on the `diagonal`-th diagonal of a square matrix, or a matrix's
    `diagonal`-th diagonal as a new vector."""
    return _diag(self, diagonal, 1)


@method()
def diag_embed(self, offset=0, dim1=-2, dim2=-1):
    """The last dim's elements on the `offset` diagonal of two new dims `dim1` and `dim2`."""
    return _diag_embed(self, offset, dim1, dim2, 1)


@method()
def diagflat(self, offset=0):
    """The flattened input on the `offset` diagonal of a square matrix."""
    return _diagflat(self, offset, 1)


def _trace_function(input):
    return tensor_arg("trace", "input", 1, input).trace()


def _diag_function(input, diagonal=0):
    return _diag(tensor_arg("diag", "input", 1, input), diagonal, 2)


def _diag_embed_function(input, offset=0, dim1=-2, dim2=-1):
    return _diag_embed(tensor_arg("diag_embed", "input", 1, input), offset, dim1, dim2, 2)


def _diagflat_function(input, offset=0):
    return _diagflat(tensor_arg("diagflat", "input", 1, input), offset, 2)


for _name, _f in (("trace", _trace_function), ("diag", _diag_function), ("diag_embed", _diag_embed_function),
                  ("diagflat", _diagflat_function)):
    _f.__name__ = _f.__qualname__ = _name
    _f.__doc__ = f"minigrad.{_name}(input, ...) is input.{_name}(...)."
    add_function(_name, _f)
