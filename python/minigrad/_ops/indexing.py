"""Indexing: `x[key]`, `x[key] = value`, index_put_/index_put, nonzero (masked_select is with the
other gathers in linalg.py; its kernel is ops/mask.rs).

Keys are read and applied in Rust (`_C.getitem`/`_C.setitem`), with torch's rules: ints,
slices, None and `...` give views; tensors, lists and bool masks copy on read and write
through index_put_. Every `x[key] = value` bumps `_version` once (R1).
"""

from .. import _C
from .registry import method


@method()
def __getitem__(self, key):
    return _C.getitem(self, key)


@method()
def __setitem__(self, key, value):
    _C.setitem(self, key, value)


@method()
def __delitem__(self, key):
    raise TypeError("Tensor does not support deleting items")


@method(function=True)
def index_put_(self, indices, values, accumulate=False):
    """Writes `values` at `indices` (a tuple of index tensors); sums duplicates when
    `accumulate`, in index order. Returns self."""
    return _C.index_put_(self, indices, values, accumulate)


@method(function=True)
def index_put(self, indices, values, accumulate=False):
    return _C.index_put(self, indices, values, accumulate)


@method(function=True)
def nonzero(self, *, as_tuple=False):
    return _C.nonzero(self, as_tuple)
