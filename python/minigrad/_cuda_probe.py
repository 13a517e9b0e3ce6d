"""Whether this process can use a CUDA device, and if not, which piece is missing: CuPy, a GPU
with its driver, or the engine's CUDA backend. The first time a GPU is asked for and CuPy sees
one, this registers the CUDA backend for every device (its driver: `_cuda_driver.CupyDriver`).
`minigrad._device` asks before placing a tensor on a GPU; `minigrad.cuda` reports it under
torch's names."""

import importlib

from . import _C

_INSTALL = (
    "CuPy is not installed. Install the GPU extra: `pip install minigrad[cuda]` (it brings "
    "cupy-cuda12x, for CUDA 12 drivers; on a CUDA 13 driver install cupy-cuda13x instead)"
)
_MAX_DEVICES = 16


def cupy_module():
    """The `cupy` module (from cupy-cuda12x or cupy-cuda13x, whichever is installed), or None."""
    try:
        return importlib.import_module("cupy")
    except ImportError:
        return None


def registered():
    """Ordinals with a backend registered (by this module, or by a test's host emulation)."""
    return [i for i in range(_MAX_DEVICES) if _C.has_backend("cuda", i)]


def probe():
    """(number of GPUs the engine can use, the reason when none)."""
    already = registered()
    if already:
        return len(already), None
    cupy = cupy_module()
    if cupy is None:
        return 0, _INSTALL
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # CUDARuntimeError without a driver, or a driver/toolkit mismatch
        return 0, f"CuPy is installed but cannot reach a GPU: {e}".rstrip()
    if count == 0:
        return 0, "CuPy is installed but this machine has no CUDA GPU"
    from ._cuda_driver import CupyDriver

    for i in range(min(count, _MAX_DEVICES)):
        _C._cuda_register(i, CupyDriver(cupy, i))
    return min(count, _MAX_DEVICES), None


def driver(index):
    """The driver object of `cuda:index` (after `require`)."""
    return _C._cuda_driver(index)


def require(index=None):
    """Raises the RuntimeError naming what is missing unless `cuda:index` is usable."""
    count, why = probe()
    if why is not None:
        raise RuntimeError(f"minigrad: CUDA is not available: {why}")
    if index is not None and not 0 <= index < count:
        raise RuntimeError("CUDA error: invalid device ordinal")
