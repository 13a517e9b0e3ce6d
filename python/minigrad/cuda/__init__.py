"""`minigrad.cuda`: torch.cuda's names for the GPU side.

A CUDA device is usable when three things hold: CuPy is installed (`pip install minigrad[cuda]`),
CuPy sees a GPU with a working driver, and the engine has a CUDA backend registered for it. When
one is missing, `is_available()` is False and anything that needs the GPU raises a RuntimeError
that names the missing piece (`why_unavailable()` gives the same sentence). See docs/gpu.md.
"""

from .._cuda_probe import cupy_module as _cupy, probe as _probe, require as _require

__all__ = [
    "is_available", "why_unavailable", "device_count", "current_device", "synchronize",
    "get_device_name", "manual_seed", "manual_seed_all", "initial_seed",
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
    return _cupy().cuda.runtime.getDevice()


def synchronize(device=None):
    _require()
    _cupy().cuda.runtime.deviceSynchronize()


def get_device_name(device=None):
    _require()
    from .._device import device as _device
    index = 0 if device is None else (device if isinstance(device, int) else (_device(device).index or 0))
    _require(index)
    return _cupy().cuda.runtime.getDeviceProperties(index)["name"].decode()


_seed = [None]


def manual_seed(seed):
    """Seeds the GPU generator; as torch's, it may be called without a GPU (it is kept for later)."""
    _seed[0] = int(seed)


def manual_seed_all(seed):
    manual_seed(seed)


def initial_seed():
    _require()
    return _seed[0]
