"""`minigrad.nn.Parameter`: a Tensor subclass that modules register as a learnable leaf.

`Parameter(data)` shares `data`'s memory and version counter (torch's `_make_subclass` over
`data.detach()`), is a leaf, and requires grad unless told otherwise. Results of ops on it, its
`.data` and `detach()` are plain Tensors; in-place ops return the Parameter itself.
"""

from .. import _C
from .._creation import empty
from .._tensor import Tensor


class Parameter(Tensor):
    def __new__(cls, data=None, requires_grad=True):
        if data is None:
            data = empty(0)
        return _C._make_subclass(cls, data, requires_grad)

    def __repr__(self):
        return "Parameter containing:\n" + super().__repr__()
