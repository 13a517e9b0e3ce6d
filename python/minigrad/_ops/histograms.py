"""Counting into bins: `bincount` and `histc`, each written once as torch's function with its
argument positions shifted for the method (see linalg.py, `_method_and_function`). Argument
kinds are checked here in torch's words; values, dtypes and the counting are in `_C`
(rust/py/src/composite.rs -> rust/core/src/ops/histograms.rs). Neither has a derivative."""

from .. import _C
from ._args import int_arg, is_int, number_arg
from .linalg import _method_and_function, _need_tensor


@_method_and_function
def bincount(shift):
    def bincount(input, weights=None, minlength=0):
        """How often each value of a 1-D tensor of non-negative integers occurs (int64), or the
        sum of `weights` at each value (float32 weights sum in float32, others in float64);
        at least `minlength` bins."""
        if shift:
            _need_tensor("bincount", "input", 1, input)
        if weights is not None:
            _need_tensor("bincount", "weights", 1 + shift, weights)
        return _C.bincount(input, weights, int_arg("bincount", "minlength", 2 + shift, minlength))
    return bincount


def _edge(op, name, position, value):
    value = number_arg(op, name, position, value)
    if is_int(value) and not -2**63 <= int(value) < 2**63:
        raise OverflowError("int too big to convert")  # torch's Scalar is an int64 or a double
    return float(value)


@_method_and_function
def histc(shift):
    def histc(input, bins=100, min=0, max=0):
        """Counts of input's elements in `bins` equal-width bins over [min, max] (the last bin
        includes max; elements outside and NaN are left out), in input's dtype. min == max
        takes the data's extremes. Floating dtypes only."""
        if shift:
            _need_tensor("histc", "input", 1, input)
        bins = int_arg("histc", "bins", 1 + shift, bins)
        low, high = _edge("histc", "min", 2 + shift, min), _edge("histc", "max", 3 + shift, max)
        return _C.histc(input, bins, low, high)
    return histc
