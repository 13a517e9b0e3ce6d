"""minigrad.testing: differential tests of minigrad against torch, for your own programs.

    from minigrad.testing import compare_with_torch

    def f(lib, x):
        y = x * 2
        y.relu_()
        return y.sum(0)

    compare_with_torch(f, [[1.0, -2.0], [3.0, 4.0]])  # raises AssertionError on any difference

`compare_with_torch` runs `f` once with torch and once with minigrad and compares outputs,
gradients, versions, grad_fn names and exceptions; `assert_same` compares one result with
torch's. `minigrad.testing.strategies` holds hypothesis strategies (shapes, dtypes, values,
layouts) that build the same tensor in both libraries.

torch is imported when a comparison runs, hypothesis when `strategies` is imported: importing
minigrad.testing needs neither."""

from ._compare import Difference, diff_exceptions, diff_values, normalize_message
from ._dtypes import DTYPE_NAMES, FLOAT_DTYPE_NAMES, INT_DTYPE_NAMES, TORCH_TOLERANCES, dtype_name
from ._harness import ComparisonError, ComparisonReport, Run, assert_same, compare_with_torch
from ._layout import TensorSpec, apply_layout, layout_base_shape

__all__ = [
    "compare_with_torch", "ComparisonReport", "ComparisonError", "Run", "Difference", "assert_same",
    "diff_values", "diff_exceptions",
    "normalize_message", "TensorSpec", "apply_layout", "layout_base_shape", "dtype_name",
    "DTYPE_NAMES", "FLOAT_DTYPE_NAMES", "INT_DTYPE_NAMES", "TORCH_TOLERANCES",
]
