"""`Tensor.new_empty` / `new_zeros` / `new_ones` / `new_full` / `new_tensor`: the factories with
the tensor's dtype and device as defaults (what module code writes to make a buffer like an input
without naming its device). The result is a new leaf: it shares nothing with `self`, not even a
graph."""

import warnings

from .. import _C
from .. import _creation
from .._size import Size
from .registry import method


def _like_self(self, dtype, device):
    return (self.dtype if dtype is None else dtype), (self.device if device is None else device)


@method()
def new_empty(self, *args, size=None, dtype=None, device=None, requires_grad=False):
    """An uninitialised tensor of `size` (default dtype and device: self's)."""
    shape = _creation._factory_size("new_empty", args, size, dtype, device)
    dtype, device = _like_self(self, dtype, device)
    return _creation.empty(shape, dtype=dtype, device=device, requires_grad=requires_grad)


@method()
def new_zeros(self, *args, size=None, dtype=None, device=None, requires_grad=False):
    """Zeros of `size` (default dtype and device: self's)."""
    shape = _creation._factory_size("new_zeros", args, size, dtype, device)
    dtype, device = _like_self(self, dtype, device)
    return _creation.zeros(shape, dtype=dtype, device=device, requires_grad=requires_grad)


@method()
def new_ones(self, *args, size=None, dtype=None, device=None, requires_grad=False):
    """Ones of `size` (default dtype and device: self's)."""
    shape = _creation._factory_size("new_ones", args, size, dtype, device)
    dtype, device = _like_self(self, dtype, device)
    return _creation.ones(shape, dtype=dtype, device=device, requires_grad=requires_grad)


@method()
def new_full(self, size, fill_value, *, dtype=None, device=None, requires_grad=False):
    """`fill_value` everywhere in a tensor of `size` (a tuple or list; dtype and device: self's)."""
    if not isinstance(size, (tuple, list, Size)):
        raise TypeError(f"new_full(): argument 'size' (position 1) must be tuple of ints, not {type(size).__name__}")
    fill_value = _creation._fill_value("new_full", fill_value)  # parsed before the size is read, as torch
    dtype, device = _like_self(self, dtype, device)
    return _creation.full(size, fill_value, dtype=dtype, device=device, requires_grad=requires_grad)


@method()
def new_tensor(self, data, *, dtype=None, device=None, requires_grad=False):
    """A copy of `data` (nested sequences, a number, an array or a tensor) with self's dtype and
    device unless given; a tensor's values are copied and detached (with torch's warning)."""
    dtype, device = _like_self(self, dtype, device)
    if isinstance(data, _C.TensorBase):
        warnings.warn(
            "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
            "sourceTensor.detach().clone().requires_grad_(True), rather than tensor.new_tensor(sourceTensor).",
            UserWarning,
            stacklevel=2,
        )
        out = data.detach().to(device=device, dtype=dtype, copy=True)
        return out.requires_grad_() if requires_grad else out
    return _creation.tensor(data, dtype=dtype, device=device, requires_grad=requires_grad)
