"""`minigrad.cuda`: torch.cuda's names for the GPU side.

A CUDA device is usable when three things hold: CuPy is installed (`pip install minigrad[cuda]`),
CuPy sees a GPU with a working driver, and the engine has a CUDA backend registered for it. When
one is missing, `is_available()` is False and anything that needs the GPU raises a RuntimeError
that names the missing piece (`why_unavailable()` gives the same sentence). See docs/gpu.md.
"""

from .. import _C
from .._cuda_probe import driver as _driver, probe as _probe, require as _require
from .._errors import OutOfMemoryError

__all__ = [
    "is_available", "why_unavailable", "device_count", "current_device", "synchronize",
    "get_device_name", "manual_seed", "manual_seed_all", "seed", "initial_seed", "get_rng_state",
    "set_rng_state", "OutOfMemoryError",
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


def manual_seed(seed):
    """Seeds the current GPU's generator (a counter-based Philox stream; docs/gpu.md). As
    torch's, it may be called before any GPU is used, or on a machine without one."""
    _C._cuda_manual_seed(0, int(seed))


def manual_seed_all(seed):
    """Seeds every GPU's generator (`minigrad.manual_seed` does this too)."""
    _C._cuda_manual_seed_all(int(seed))


def seed():
    """Seeds the current GPU's generator from the operating system's entropy."""
    import os

    manual_seed(int.from_bytes(os.urandom(8), "little") >> 1)


def initial_seed():
    """The seed of the current GPU's generator."""
    _require()
    return _C._cuda_rng_state(0)[0]


def get_rng_state(device="cuda"):
    """The generator's state, `(seed, offset)`: the offset counts the numbers drawn so far (torch
    returns the same two numbers packed in a uint8 tensor)."""
    return _C._cuda_rng_state(_index(device))


def set_rng_state(new_state, device="cuda"):
    seed, offset = new_state
    _C._cuda_set_rng_state(_index(device), int(seed), int(offset))
