"""`searchsorted` and `bucketize` (module functions only, as in torch): torch's two overloads each
(the values a tensor, or a Python number, which like torch's wrapped number does not widen the
sequence's dtype), their argument kinds checked with torch's "invalid combination" TypeError;
the checks on values and the search are in `_C` (rust/py/src/scan_sort.rs ->
rust/core/src/ops/searchsorted.rs)."""

import numbers

from .. import _C
from ._args import type_name
from .registry import add_function

_SEARCHSORTED_KW = "*, bool out_int32 = False, bool right = False, str side = None, Tensor sorter = None, Tensor out = None"
_BUCKETIZE_KW = "*, bool out_int32 = False, bool right = False"


def _invalid(op, args, kwargs, options):
    got = [type_name(a) for a in args] + [f"{k}={type_name(v)}" for k, v in kwargs.items()]
    text = "".join(f" * ({o})\n" for o in options)
    return TypeError(f"{op}() received an invalid combination of arguments - got ({', '.join(got)}), but expected one of:\n{text}")


def _is_number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, _C.TensorBase)


def searchsorted(sorted_sequence, input, *, out_int32=False, right=False, side=None, sorter=None):
    """For each value of `input`, the index where it would go in the last dim of
    `sorted_sequence` to keep it sorted: the first such place (or, with `right=True` /
    `side="right"`, the last). `sorter` gives the sorting order of an unsorted sequence."""
    kwargs = {k: v for k, v in (("out_int32", out_int32), ("right", right), ("side", side), ("sorter", sorter))
              if v is not (False if k in ("out_int32", "right") else None)}
    ok = (isinstance(sorted_sequence, _C.TensorBase) and (isinstance(input, _C.TensorBase) or _is_number(input))
          and isinstance(out_int32, bool) and isinstance(right, bool) and (side is None or isinstance(side, str))
          and (sorter is None or isinstance(sorter, _C.TensorBase)))
    if not ok:
        raise _invalid("searchsorted", (sorted_sequence, input), kwargs,
                       [f"Tensor sorted_sequence, Tensor input, {_SEARCHSORTED_KW}",
                        f"Tensor sorted_sequence, Number self, {_SEARCHSORTED_KW}"])
    return _C.searchsorted(sorted_sequence, input, out_int32, right, side, sorter)


def bucketize(input, boundaries, *, out_int32=False, right=False):
    """The bucket of each value of `input` among the sorted 1-D `boundaries`: the index i with
    boundaries[i-1] < x <= boundaries[i] (with `right=True`, boundaries[i-1] <= x < boundaries[i])."""
    kwargs = {k: v for k, v in (("out_int32", out_int32), ("right", right)) if v is not False}
    ok = ((isinstance(input, _C.TensorBase) or _is_number(input)) and isinstance(boundaries, _C.TensorBase)
          and isinstance(out_int32, bool) and isinstance(right, bool))
    if not ok:
        raise _invalid("bucketize", (input, boundaries), kwargs,
                       [f"Tensor input, Tensor boundaries, {_BUCKETIZE_KW}, Tensor out = None",
                        f"Number self, Tensor boundaries, {_BUCKETIZE_KW}"])
    return _C.bucketize(input, boundaries, out_int32, right)


add_function("searchsorted", searchsorted)
add_function("bucketize", bucketize)
