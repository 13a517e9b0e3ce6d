"""The op wrappers: one module per op family, each defining an op's Python wrappers (method,
in-place `_` variant, `minigrad.<name>` function) once and registering them through `registry`.

    registry.py     attaches methods to Tensor, collects FUNCTIONS (imports no family)
    elementwise.py  unary/binary math, comparisons, clamp, where, masked_fill, fills, operators
    views.py        module functions of the core's view methods, T / mT, is_tensor
    reduce.py       reductions and softmax
    linalg.py       products, joins, gathers and scatters
    indexing.py     x[key], x[key] = value, index_put_, nonzero

Importing this package registers everything; the package root exports FUNCTIONS as
`minigrad.<name>`. Autograd registers Tensor.backward and Tensor.register_hook the same way.
"""

from . import elementwise, indexing, linalg, reduce, views  # noqa: F401  (each registers on import)
from .registry import FUNCTIONS  # noqa: F401
