"""Scans along a dim: cumsum and cumprod (with `dtype=` and in-place `cumsum_`/`cumprod_`),
logcumsumexp, cummax and cummin (named (values, indices) results, `minigrad.return_types`). Each is written once, as torch's function `name(input, ...)` with its argument
positions shifted for the method (see linalg.py, `_method_and_function`); the work and every
value error are in `_C` (rust/py/src/scan_sort.rs -> rust/core/src/ops/scan.rs)."""

from .. import _C
from ._args import MISSING, dtype_arg, int_arg, required
from .linalg import _method_and_function, _need_tensor
from .registry import method
from .sorting import _named


def _cum(op, shift):
    def scan(input, dim=MISSING, *, dtype=None):
        if shift:
            _need_tensor(op, "input", 1, input)
        d = int_arg(op, "dim", 1 + shift, required(op, "dim", dim))
        return _C.cum(input, op, d, dtype_arg(op, dtype))

    scan.__name__ = op
    scan.__doc__ = f"{op} along `dim`; integers and bool give int64 unless `dtype=` says otherwise."
    return scan


@_method_and_function
def cumsum(shift):
    return _cum("cumsum", shift)


@_method_and_function
def cumprod(shift):
    return _cum("cumprod", shift)


def _cum_(op):
    def scan_(self, dim=MISSING, *, dtype=None):
        d = int_arg(op, "dim", 1, required(op, "dim", dim))
        return _C.cum(self, op[:-1], d, dtype_arg(op, dtype), True)

    scan_.__name__ = op
    scan_.__doc__ = f"In-place {op[:-1]}: keeps the tensor's dtype (a different `dtype=` is refused)."
    return method()(scan_)


cumsum_ = _cum_("cumsum_")
cumprod_ = _cum_("cumprod_")


@_method_and_function
def logcumsumexp(shift):
    def logcumsumexp(input, dim=MISSING):
        """log(cumsum(exp(x))) along `dim`, computed stably; floating dtypes only."""
        if shift:
            _need_tensor("logcumsumexp", "input", 1, input)
        d = int_arg("logcumsumexp", "dim", 1 + shift, required("logcumsumexp", "dim", dim))
        return _C.logcumsumexp(input, d)

    return logcumsumexp


def _cum_extreme(op, is_max, result):
    def scan(shift):
        def cum_extreme(input, dim=MISSING):
            if shift:
                _need_tensor(op, "input", 1, input)
            d = int_arg(op, "dim", 1 + shift, required(op, "dim", dim))
            return result(_C.cum_extreme(input, d, is_max))

        cum_extreme.__name__ = op
        cum_extreme.__doc__ = (f"(values, indices) of the running {'maximum' if is_max else 'minimum'} along `dim`: "
                               "ties and NaNs take the later index, and a NaN, once seen, stays.")
        return cum_extreme

    scan.__name__ = op
    return scan


cummax = _method_and_function(_cum_extreme("cummax", True, _named("cummax")))
cummin = _method_and_function(_cum_extreme("cummin", False, _named("cummin")))
