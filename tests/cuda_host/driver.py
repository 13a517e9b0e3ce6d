"""A CUDA device emulated on the host, for the backend's tests on machines without a GPU.

`HostDriver` provides what minigrad's CUDA backend asks of CuPy (see
python/minigrad/_cuda_driver.py), over host memory and the g++ build of the very `.cu` kernels
(harness.py: each CUDA thread a fiber, parameters packed as cuLaunchKernel receives them). The
Rust backend, its launch packing, the kernels' arithmetic and the engine's device rules all run
as they do on a GPU; only CUDA itself (NVRTC's code, the driver, real concurrency) does not.
Registered as `cuda:0` by the `cuda_device` fixture (tests/cuda_host/backend.py) of the tests/test_cuda_backend*.py modules and removed
after, so the rest of the suite sees the machine as it is.
"""

import ctypes

import numpy as np

from minigrad._errors import OutOfMemoryError

_ALIGN = 256  # CuPy's pool hands out 512-byte aligned blocks; the kernels need 16


class HostDriver:
    def __init__(self, host, limit_bytes=None):
        self._host = host
        self._functions = {}
        self.limit_bytes = limit_bytes
        self.live_bytes = 0
        self.launches = 0
        self.compiled_groups = []

    def alloc(self, nbytes):
        if self.limit_bytes is not None and self.live_bytes + nbytes > self.limit_bytes:
            raise OutOfMemoryError(
                f"CUDA out of memory. Tried to allocate {nbytes} bytes (host emulation limit "
                f"{self.limit_bytes} bytes, {self.live_bytes} in use)"
            )
        buf = np.empty(nbytes + _ALIGN, np.uint8)
        # poison: a kernel that reads memory it never wrote shows up as garbage, not zeros
        buf.fill(0xA5)
        address = -(-buf.ctypes.data // _ALIGN) * _ALIGN
        return address, _Block(self, buf, nbytes)

    def memset_zero(self, address, nbytes):
        ctypes.memset(address, 0, nbytes)

    def copy(self, dst, src, nbytes, kind):
        assert kind in ("h2d", "d2h", "d2d")
        ctypes.memmove(dst, src, nbytes)

    def function(self, source, expr, group):
        assert expr in group, (expr, group)
        if expr not in self._functions:
            self.compiled_groups.append((source, tuple(group)))
            for name in group:
                f = self._host.kernel(name)
                self._functions[name] = (ctypes.cast(f, ctypes.c_void_p).value, f)
        handle, f = self._functions[expr]
        self._by_handle = getattr(self, "_by_handle", {})
        self._by_handle[handle] = f
        return handle

    def launch(self, handle, grid, block, shared_bytes, params):
        assert grid >= 1 and block >= 1 and shared_bytes == 0
        self.launches += 1
        self._by_handle[handle](grid, block, ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p)))

    def matmul(self, dtype, dst, a, b):
        """cuBLAS's part (outside minigrad's code) done by NumPy on the same memory."""
        view = lambda op: _view(dtype, op)  # noqa: E731
        out = view(dst)
        out[...] = np.matmul(view(a), view(b))

    def synchronize(self):
        pass

    def device_name(self):
        return "minigrad host emulation (g++ build of the CUDA kernels)"


def _view(dtype, operand):
    address, shape, strides = operand
    dt = np.dtype(dtype)
    extent = 1 + sum((n - 1) * st for n, st in zip(shape, strides)) if all(shape) else 0
    raw = (ctypes.c_char * max(extent * dt.itemsize, 1)).from_address(address)
    flat = np.frombuffer(raw, dtype=dt, count=extent)
    return np.lib.stride_tricks.as_strided(flat, shape=tuple(shape), strides=tuple(st * dt.itemsize for st in strides))


class _Block:
    """Keeps a host buffer alive as CuPy's MemoryPointer keeps a pool block."""

    def __init__(self, driver, buf, nbytes):
        self.buf, self.nbytes, self._driver = buf, nbytes, driver
        driver.live_bytes += nbytes

    def __del__(self):
        self._driver.live_bytes -= self.nbytes
