"""`minigrad.cuda`: torch.cuda's names for the GPU side.

A CUDA device is usable when three things hold: CuPy is installed (`pip install minigrad[cuda]`),
CuPy sees a GPU with a working driver, and the engine has a CUDA backend registered for it. When
one is missing, `is_available()` is False and anything that needs the GPU raises a RuntimeError
that names the missing piece (`why_unavailable()` gives the same sentence). See docs/gpu.md.
"""

from .._cuda_probe import driver as _driver, probe as _probe, require as _require
from .._errors import OutOfMemoryError

__all__ = [
    "is_available", "why_unavailable", "device_count", "current_device", "synchronize",
    "get_device_name", "manual_seed", "manual_seed_all", "initial_seed", "OutOfMemoryError",
    "memory_allocated", "max_memory_allocated", "reset_peak_memory_stats", "empty_cache",
]


def why_unavailable():
    """The sentence explaining why `is_available()` is False, or None when it is True."""
    return _probe()[1]


def is_available():
    return _probe()[0] > 0


def device_count():
    return _probe()[0]


def current_device():
    _require()
    return 0


def _index(device):
    from .._device import device as _device

    index = 0 if device is None else (device if isinstance(device, int) else (_device(device).index or 0))
    _require(index)
    return index


def synchronize(device=None):
    """Waits for every kernel queued on the device (`item()`, `tolist()`, `.cpu()` do it too)."""
    _driver(_index(device)).synchronize()


def get_device_name(device=None):
    return _driver(_index(device)).device_name()


def memory_allocated(device=None):
    """Bytes held by live tensors on the device, exact (counted by the engine, not the pool)."""
    from .. import memory

    return memory.allocated(f"cuda:{_index(device)}")


def max_memory_allocated(device=None):
    from .. import memory

    return memory.peak(f"cuda:{_index(device)}")


def reset_peak_memory_stats(device=None):
    from .. import memory

    memory.reset_peak(f"cuda:{_index(device)}")


def empty_cache():
    """Returns the free blocks of CuPy's memory pool to the driver."""
    from .._cuda_probe import cupy_module

    cupy = cupy_module()
    if cupy is not None and _probe()[0] > 0:
        try:
            cupy.get_default_memory_pool().free_all_blocks()
        except Exception:  # the host emulation: nothing is pooled
            pass


_seed = [None]


def manual_seed(seed):
    """Seeds the GPU generator; as torch's, it may be called without a GPU (it is kept for later)."""
    _seed[0] = int(seed)


def manual_seed_all(seed):
    manual_seed(seed)


def initial_seed():
    _require()
    return _seed[0]
