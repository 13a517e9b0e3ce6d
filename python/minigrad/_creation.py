"""Factory functions with torch's signatures: tensor, as_tensor, from_numpy, zeros/ones/full/empty
(and their `_like` forms), arange, linspace, eye, rand, randn, randint, manual_seed."""

import numpy as _np

from . import _C
from ._device import check_device


def _ndarray_to_tensor(arr, dtype):
    if not arr.flags.aligned or any(s < 0 for s in arr.strides):
        arr = arr.copy()
    if arr.dtype == _np.float16 or arr.dtype.kind in "uc":
        raise TypeError(
            f"can't convert np.ndarray of type numpy.{arr.dtype}. The only supported types are: "
            "float64, float32, int64, int32, and bool."
        )
    t = _C.from_numpy(arr)
    return t if dtype is None else t.to(dtype)


def tensor(data, *, dtype=None, device=None):
    """Copies `data` (nested lists/tuples of numbers, an ndarray or a tensor) into a new tensor."""
    check_device(device)
    if isinstance(data, _C.TensorBase):
        return data.to(dtype, copy=True) if dtype is not None else data.clone()
    if isinstance(data, _np.ndarray):
        return _ndarray_to_tensor(data, dtype).clone()
    if isinstance(data, _np.generic):
        return _ndarray_to_tensor(_np.asarray(data), dtype).clone()
    return _C.tensor_from_data(data, dtype)


def as_tensor(data, dtype=None, device=None):
    """Avoids a copy where it can: the same tensor, or an ndarray's memory shared."""
    check_device(device)
    if isinstance(data, _C.TensorBase):
        return data if dtype is None else data.to(dtype)
    if isinstance(data, _np.ndarray):
        return _ndarray_to_tensor(data, dtype)
    return tensor(data, dtype=dtype)


def from_numpy(ndarray):
    """A tensor sharing the array's memory (writes are visible both ways)."""
    if not isinstance(ndarray, _np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type(ndarray).__name__})")
    if not ndarray.flags.writeable:
        import warnings

        warnings.warn(
            "The given NumPy array is not writable, and minigrad does not support non-writable "
            "tensors. Writing to it through the tensor is undefined behaviour.",
            UserWarning,
            stacklevel=2,
        )
    return _C.from_numpy(ndarray)


def _size(size):
    return size[0] if len(size) == 1 and not isinstance(size[0], int) else size


def empty(*size, dtype=None, device=None):
    check_device(device)
    return _C.empty(*_size(size), dtype=dtype)


def zeros(*size, dtype=None, device=None):
    check_device(device)
    return _C.zeros(*_size(size), dtype=dtype)


def ones(*size, dtype=None, device=None):
    check_device(device)
    return _C.full(tuple(_size(size)), 1, dtype=dtype or _C.float32)


def full(size, fill_value, *, dtype=None, device=None):
    check_device(device)
    return _C.full(tuple(size) if not isinstance(size, int) else (size,), fill_value, dtype)


def empty_like(input, *, dtype=None, device=None):
    return empty(*input.shape, dtype=dtype or input.dtype, device=device)


def zeros_like(input, *, dtype=None, device=None):
    return zeros(*input.shape, dtype=dtype or input.dtype, device=device)


def ones_like(input, *, dtype=None, device=None):
    return ones(*input.shape, dtype=dtype or input.dtype, device=device)


def full_like(input, fill_value, *, dtype=None, device=None):
    return full(tuple(input.shape), fill_value, dtype=dtype or input.dtype, device=device)


def rand_like(input, *, dtype=None, device=None):
    return rand(*input.shape, dtype=dtype or input.dtype, device=device)


def randn_like(input, *, dtype=None, device=None):
    return randn(*input.shape, dtype=dtype or input.dtype, device=device)


def arange(start, end=None, step=1, *, dtype=None, device=None):
    check_device(device)
    if end is None:
        start, end = 0, start
    return _C.arange(start, end, step, dtype)


def linspace(start, end, steps, *, dtype=None, device=None):
    check_device(device)
    return _C.linspace(float(start), float(end), steps, dtype)


def eye(n, m=None, *, dtype=None, device=None):
    check_device(device)
    return _C.eye(n, m, dtype)


def rand(*size, dtype=None, device=None, generator=None):
    check_device(device)
    return _C.rand(*_size(size), dtype=dtype)


def randn(*size, dtype=None, device=None, generator=None):
    check_device(device)
    return _C.randn(*_size(size), dtype=dtype)


def randint(low=0, high=None, size=None, *, dtype=None, device=None, generator=None):
    """randint(high, size) or randint(low, high, size), as torch."""
    check_device(device)
    if size is None:
        low, high, size = 0, low, high
    return _C.randint(low, high, tuple(size), dtype)


def manual_seed(seed):
    """Seeds minigrad's generator (reproducible runs; not torch's random stream)."""
    _C.manual_seed(int(seed))
