"""`unique` and `unique_consecutive` (method and function, torch's signatures and tuple returns).
Argument kinds are checked here in torch's words, named after the operator torch's Python
function calls (`_unique2`, `unique_dim`, `unique_consecutive`, which take everything but the
input and `unique_dim`'s dim by keyword); values and the work are in `_C`
(rust/py/src/composite.rs -> rust/core/src/ops/unique.rs)."""

from .. import _C
from ._args import bool_arg, int_arg, tensor_arg
from .registry import add_function, method


def _results(values, inverse, counts, return_inverse, return_counts):
    if return_inverse and return_counts:
        return values, inverse, counts
    if return_inverse:
        return values, inverse
    if return_counts:
        return values, counts
    return values


def _branch_on_flags(return_inverse, return_counts):
    """torch's Python functions pick their return form with `if return_inverse:` and `if
    return_counts:` before anything is checked (a tensor of several elements raises there)."""
    bool(return_inverse)
    bool(return_counts)


def _unique(input, sorted, return_inverse, return_counts, dim):
    _branch_on_flags(return_inverse, return_counts)
    op = "_unique2" if dim is None else "unique_dim"
    tensor_arg(op, "input", 1, input)
    if dim is not None:
        dim = int_arg(op, "dim", 2, dim)
    for name, value in (("sorted", sorted), ("return_inverse", return_inverse), ("return_counts", return_counts)):
        bool_arg(op, name, None, value)
    return _results(*_C.unique(input, dim, False), return_inverse, return_counts)


def _unique_consecutive(input, return_inverse, return_counts, dim):
    _branch_on_flags(return_inverse, return_counts)
    op = "unique_consecutive"
    tensor_arg(op, "input", 1, input)
    bool_arg(op, "return_inverse", None, return_inverse)
    bool_arg(op, "return_counts", None, return_counts)
    if dim is not None:
        dim = int_arg(op, "dim", None, dim)
    return _results(*_C.unique(input, dim, True), return_inverse, return_counts)


@method()
def unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """The distinct elements (or slices along `dim`) in ascending order; with `return_inverse`,
    also where each element went, with `return_counts` how often each occurs. -0.0 and 0.0 are
    one value, each NaN its own. (Sorted whatever `sorted` says, as torch's CPU unique.)"""
    return _unique(self, sorted, return_inverse, return_counts, dim)


@method()
def unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    """Each run of equal neighbours (elements, or slices along `dim`) merged into one."""
    return _unique_consecutive(self, return_inverse, return_counts, dim)


def _unique_function(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    return _unique(input, sorted, return_inverse, return_counts, dim)


def _unique_consecutive_function(input, return_inverse=False, return_counts=False, dim=None):
    return _unique_consecutive(input, return_inverse, return_counts, dim)


for _name, _fn in (("unique", _unique_function), ("unique_consecutive", _unique_consecutive_function)):
    _fn.__name__ = _fn.__qualname__ = _name
    _fn.__doc__ = globals()[_name].__doc__
    add_function(_name, _fn)
