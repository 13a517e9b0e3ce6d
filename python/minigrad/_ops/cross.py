"""The cross product of 3-vectors: `torch.cross(input, other, dim=None)`, `Tensor.cross` and
`torch.linalg.cross(input, other, *, dim=-1)`. The work, the shape and dtype checks and the
node (LinalgCrossBackward0) are in `_C` (rust/py/src/linalg.rs -> rust/core/src/ops/cross.rs).
Without `dim`, `cross` takes the first dim of size 3 and warns once, as torch does (its default
is to change to linalg.cross's -1)."""

import warnings

from .. import _C
from ._args import int_arg, is_int, tensor_arg, wrong
from .registry import add_function, method

_DEPRECATION = ("Using torch.cross without specifying the dim arg is deprecated.\n"
                "Please either pass the dim explicitly or simply use torch.linalg.cross.\n"
                "The default value of dim will change to agree with that of linalg.cross in a future release.")
_warned = False


def _dim(op, dim, position):
    if not is_int(dim):
        raise wrong(op, "dim", position, "int", dim)
    return int_arg(op, "dim", position, dim)


def _cross(self, other, dim, first):
    global _warned
    tensor_arg("cross", "other", first, other)
    if dim is None:
        if not _warned:  # TORCH_WARN_ONCE
            _warned = True
            warnings.warn(_DEPRECATION, UserWarning, stacklevel=4)
        return _C.linalg_cross(self, other, None)
    return _C.linalg_cross(self, other, _dim("cross", dim, first + 1))


@method()
def cross(self, other, dim=None):
    """The cross product along `dim` (without it: the first dim of size 3, with a deprecation
    warning), batch dims broadcast."""
    return _cross(self, other, dim, 1)


def _cross_function(input, other, dim=None):
    return _cross(tensor_arg("cross", "input", 1, input), other, dim, 2)


def linalg_cross(input, other, *, dim=-1):
    """`torch.linalg.cross`: the cross product along `dim` (default the last), batch dims broadcast."""
    tensor_arg("linalg_cross", "input", 1, input)
    tensor_arg("linalg_cross", "other", 2, other)
    return _C.linalg_cross(input, other, _dim("linalg_cross", dim, None))  # keyword-only: no position


_cross_function.__name__ = _cross_function.__qualname__ = "cross"
linalg_cross.__name__ = linalg_cross.__qualname__ = "cross"
add_function("cross", _cross_function)
