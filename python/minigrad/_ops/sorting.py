"""Sorting and selection along a dim: sort, argsort, msort, topk, kthvalue, median, with their
named results (`minigrad.return_types.sort`, ...). Each is written once, as torch's function
with positions shifted for the method (see linalg.py, `_method_and_function`); the work, the
tie-breaking and every value error are in `_C` (rust/py/src/scan_sort.rs ->
rust/core/src/ops/sort.rs -> rust/kernels/src/sort/)."""

from .. import _C
from ._args import MISSING, bool_arg, int_arg, is_int, required, type_name
from .linalg import _method_and_function, _need_tensor
from .reduce import return_types


def _named(name):
    cls = type(name, (return_types._ValuesIndices,), {"__slots__": ()})
    cls.__module__ = "minigrad.return_types"
    cls.__qualname__ = name
    setattr(return_types, name, cls)
    return cls


_SortResult = _named("sort")
_TopkResult = _named("topk")
_KthvalueResult = _named("kthvalue")
_MedianResult = _named("median")


def _invalid(op, shift, got):
    """torch's TypeError for arguments that match none of sort/argsort's overloads."""
    if shift:
        got = ("Tensor",) + got
        out = "tuple of Tensors out = None" if op == "sort" else "Tensor out = None"
        options = [f"(Tensor input, *, bool stable, int dim = -1, bool descending = False, {out})",
                   "(Tensor input, int dim = -1, bool descending = False, *, tuple of Tensors out = None)" if op == "sort"
                   else "(Tensor input, int dim = -1, bool descending = False)"]
    else:
        options = ["(*, bool stable, int dim = -1, bool descending = False)", "(int dim = -1, bool descending = False)"]
    text = "".join(f" * {o}\n" for o in options)
    return TypeError(f"{op}() received an invalid combination of arguments - got ({', '.join(got)}), but expected one of:\n{text}")


def _sort_args(op, shift, args, kwargs):
    """(dim, descending, stable or None) from sort/argsort's two overloads, or torch's TypeError."""
    got = tuple(type_name(a) for a in args) + tuple(f"{k}={type_name(v)}" for k, v in kwargs.items())
    names = ["dim", "descending"]
    bound = dict(zip(names, args))
    # the `stable` overload takes dim and descending by keyword only
    ok = len(args) <= 2 and not (set(kwargs) - {"dim", "descending", "stable"}) and not (set(bound) & set(kwargs))
    ok = ok and not (args and "stable" in kwargs)
    bound.update(kwargs)
    dim, descending, stable = bound.get("dim", -1), bound.get("descending", False), bound.get("stable", MISSING)
    ok = ok and is_int(dim) and isinstance(descending, bool) and (stable is MISSING or stable is None or isinstance(stable, bool))
    if not ok:
        raise _invalid(op, shift, got)
    # None: the overload without `stable` (SortBackward0); a bool: `sort.stable` (SortBackward1)
    return int(dim), descending, None if stable is MISSING else bool(stable)


@_method_and_function
def sort(shift):
    def sort(input, *args, **kwargs):
        """(values, indices) sorted along `dim` (default -1); NaN sorts as the largest value;
        `stable=True` keeps equal values in order (torch's `stable=False` order otherwise)."""
        if shift:
            _need_tensor("sort", "input", 1, input)
        dim, descending, stable = _sort_args("sort", shift, args, kwargs)
        return _SortResult(_C.sort(input, dim, descending, stable))

    return sort


@_method_and_function
def argsort(shift):
    def argsort(input, *args, **kwargs):
        """The indices `sort` would return."""
        if shift:
            _need_tensor("argsort", "input", 1, input)
        dim, descending, stable = _sort_args("argsort", shift, args, kwargs)
        return _C.sort(input, dim, descending, stable)[1]

    return argsort


@_method_and_function
def msort(shift):
    def msort(input):
        """`sort(dim=0).values`."""
        if shift:
            _need_tensor("msort", "input", 1, input)
        return _C.sort(input, 0, False)[0]

    return msort


@_method_and_function
def topk(shift):
    def topk(input, k=MISSING, dim=-1, largest=True, sorted=True):
        """(values, indices) of the `k` largest (or smallest) along `dim`."""
        if shift:
            _need_tensor("topk", "input", 1, input)
        k = int_arg("topk", "k", 1 + shift, required("topk", "k", k))
        dim = int_arg("topk", "dim", 2 + shift, dim)
        largest = bool_arg("topk", "largest", 3 + shift, largest)
        sorted = bool_arg("topk", "sorted", 4 + shift, sorted)
        return _TopkResult(_C.topk(input, k, dim, largest, sorted))

    return topk


@_method_and_function
def kthvalue(shift):
    def kthvalue(input, k=MISSING, dim=-1, keepdim=False):
        """(value, index) of the `k`-th smallest (k counts from 1) along `dim`."""
        if shift:
            _need_tensor("kthvalue", "input", 1, input)
        k = int_arg("kthvalue", "k", 1 + shift, required("kthvalue", "k", k))
        dim = int_arg("kthvalue", "dim", 2 + shift, dim)
        keepdim = bool_arg("kthvalue", "keepdim", 3 + shift, keepdim)
        return _KthvalueResult(_C.kthvalue(input, k, dim, keepdim))

    return kthvalue


@_method_and_function
def median(shift):
    def median(input, dim=MISSING, keepdim=MISSING):
        """median() -> the lower median (0-d); median(dim, keepdim) -> (values, indices)."""
        if shift:
            _need_tensor("median", "input", 1, input)
        if dim is MISSING:
            if keepdim is not MISSING:
                raise TypeError('median() missing 1 required positional arguments: "dim"')
            return _C.median(input)
        dim = int_arg("median", "dim", 1 + shift, dim)
        keepdim = bool_arg("median", "keepdim", 2 + shift, False if keepdim is MISSING else keepdim)
        return _MedianResult(_C.median(input, dim, keepdim))

    return median
