"""Op families that add methods to `Tensor`, one file each (reductions, linear algebra,
indexing). Each mixin is a plain class of methods calling `_C`; order here is the MRO order."""

from ._indexing_methods import IndexingMethods
from ._linalg_methods import LinalgMethods
from ._reduce_methods import ReductionMethods

MIXINS = (ReductionMethods, LinalgMethods, IndexingMethods)
