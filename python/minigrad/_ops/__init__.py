"""The op wrappers: one module per op family, each defining an op's Python wrappers (method,
in-place `_` variant, `minigrad.<name>` function) once and registering them through `registry`.

    registry.py     attaches methods to Tensor, collects FUNCTIONS (imports no family)
    elementwise.py  unary/binary math, comparisons, clamp, where, masked_fill, fills, operators
    views.py        module functions of the core's view methods, T / mT, is_tensor
    reduce.py       reductions and softmax
    linalg.py       products, joins, gathers and scatters
    indexing.py     x[key], x[key] = value, index_put_, nonzero
    scans.py        cumsum, cumprod (and _ variants), logcumsumexp
    sorting.py      sort, argsort, msort, topk, kthvalue, median
    shaping.py      flip, roll, tril/triu (and _ variants), repeat, tile
    view_composites.py  movedim/moveaxis, swapdims(_), broadcast_to, meshgrid, unflatten, tensor_split,
                    h/v/dsplit
    stacking.py     atleast_1d/2d/3d, hstack, vstack/row_stack, dstack, column_stack, outer/ger,
                    fliplr/flipud
    factories.py    Tensor.new_empty / new_zeros / new_ones / new_full / new_tensor
    gathers.py      take_along_dim, repeat_interleave
    histograms.py   bincount, histc
    searching.py    searchsorted, bucketize
    unique.py       unique, unique_consecutive
    differences.py  diff
    closeness.py    isclose, allclose, equal
    classify.py     isnan, isinf, isposinf, isneginf, isfinite, signbit
    diagonals.py    trace, diag, diag_embed, diagflat
    contractions.py tensordot, inner
    cross.py        cross, linalg.cross
    fused.py        addcmul, addcdiv, lerp (and _ variants), sgn
    einsum.py       einsum
    _args.py        argument checks in torch's words (used by the families above)

Importing this package registers everything; the package root exports FUNCTIONS as
`minigrad.<name>`. Autograd registers Tensor.backward and Tensor.register_hook the same way.
"""

from . import elementwise, indexing, linalg, reduce, views  # noqa: F401  (each registers on import)
from . import classify, closeness, contractions, cross, diagonals, differences, einsum, factories, fused, gathers, histograms  # noqa: F401  (likewise)
from . import scans, searching, shaping, sorting, stacking, unique, view_composites  # noqa: F401  (likewise)
from .registry import FUNCTIONS  # noqa: F401
