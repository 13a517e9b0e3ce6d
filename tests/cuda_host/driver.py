"""A CUDA device emulated on the host, for the backend's tests on machines without a GPU.

`HostDriver` provides what minigrad's CUDA backend asks of CuPy (see
python/minigrad/_cuda_driver.py), over host memory and the g++ build of the very `.cu` kernels
(harness.py: each CUDA thread a fiber, parameters packed as cuLaunchKernel receives them). The
Rust backend, its launch packing, the kernels' arithmetic and the engine's device rules all run
as they do on a GPU; only CUDA itself (NVRTC's code, the driver, real concurrency) does not.
Launches take the backend's one path: Rust calls `cuLaunchKernel` through a C function pointer
(rust/py/src/cuda/entry.rs); here that pointer is a ctypes callback with cuLaunchKernel's
signature that checks the configuration as the driver does and runs the g++-built kernel, so the
tests exercise the very code a GPU runs, with only the function pointer's origin different.
`cuGetErrorName` and CuPy's current-stream reader are callbacks too; the current stream is per
thread, as CuPy's (`use_stream`), and each launch records the stream it was given.
Registered as `cuda:0` by the `cuda_device` fixture (tests/cuda_host/backend.py) of the tests/test_cuda_backend*.py modules and removed
after, so the rest of the suite sees the machine as it is.
"""

import contextlib
import ctypes
import sys
import threading
import traceback

import numpy as np

from minigrad._errors import OutOfMemoryError

_ALIGN = 256  # CuPy's pool hands out 512-byte aligned blocks; the kernels need 16

_u = ctypes.c_uint
LAUNCH_KERNEL = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, _u, _u, _u, _u, _u, _u, _u, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)
GET_ERROR_NAME = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int, ctypes.POINTER(ctypes.c_char_p))
STREAM_OF = ctypes.CFUNCTYPE(ctypes.c_ssize_t, ctypes.c_int)

# CUresult codes the emulation returns (cuda.h), with the names cuGetErrorName gives them; the
# bytes live as long as the module, as the driver's strings are static.
CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_ILLEGAL_ADDRESS = 1, 400, 700
CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_NOT_SUPPORTED = 719, 801
ERROR_NAMES = {
    CUDA_ERROR_INVALID_VALUE: b"CUDA_ERROR_INVALID_VALUE",
    CUDA_ERROR_INVALID_HANDLE: b"CUDA_ERROR_INVALID_HANDLE",
    CUDA_ERROR_ILLEGAL_ADDRESS: b"CUDA_ERROR_ILLEGAL_ADDRESS",
    CUDA_ERROR_LAUNCH_FAILED: b"CUDA_ERROR_LAUNCH_FAILED",
    CUDA_ERROR_NOT_SUPPORTED: b"CUDA_ERROR_NOT_SUPPORTED",
}


class HostDriver:
    def __init__(self, host, limit_bytes=None):
        self._host = host
        self._functions = {}
        self.limit_bytes = limit_bytes
        self.live_bytes = 0
        self.launches = 0
        self.compiled_groups = []
        self.launch_streams = []  # the stream of every launch, in order
        self.matmul_fallbacks = 0  # calls of `matmul` (CuPy's, for what cuBLAS cannot take)
        self.gemm_calls = []  # every cuBLAS call: (dtype, ta, tb, (m, n, k), (lda, sa), (ldb, sb), (ldc, sc), batch)
        self.fail_next = None  # a CUresult the next launch returns instead of running (error-path tests)
        self._by_handle = {}
        self._tls = threading.local()
        # the callbacks must live as long as the addresses handed out: as long as the driver
        self._entries = (LAUNCH_KERNEL(self._cu_launch_kernel), GET_ERROR_NAME(_cu_get_error_name), STREAM_OF(self._stream_of))

    def entry_points(self):
        return tuple(ctypes.cast(f, ctypes.c_void_p).value for f in self._entries)

    @contextlib.contextmanager
    def use_stream(self, stream):
        """Makes `stream` (any non-zero handle) current in this thread, as `with cupy.cuda.Stream()`."""
        prev = self._stream_of(0)
        self._tls.stream = stream
        try:
            yield
        finally:
            self._tls.stream = prev

    def _stream_of(self, device):
        return getattr(self._tls, "stream", 0)

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
        self._by_handle[handle] = f
        return handle

    def _cu_launch_kernel(self, f, gx, gy, gz, bx, by, bz, shared, stream, params, extra):
        """cuLaunchKernel: the driver's checks, then the kernel, run to completion (the host has
        one stream of execution; the handle is recorded). A Python exception cannot cross the C
        boundary: it is printed and becomes CUDA_ERROR_LAUNCH_FAILED."""
        try:
            kernel = self._by_handle.get(f)
            if kernel is None:
                return CUDA_ERROR_INVALID_HANDLE
            if min(gx, gy, gz, bx, by, bz) < 1 or bx * by * bz > 1024 or not params or extra:
                return CUDA_ERROR_INVALID_VALUE
            if gy != 1 or gz != 1 or by != 1 or bz != 1 or shared:
                return CUDA_ERROR_NOT_SUPPORTED  # the backend launches 1-d grids, static shared memory
            if self.fail_next is not None:
                rc, self.fail_next = self.fail_next, None
                return rc
            self.launches += 1
            self.launch_streams.append(stream or 0)
            kernel(gx, bx, ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p)))
            return 0
        except BaseException:  # noqa: BLE001  (nothing may unwind through the C caller)
            traceback.print_exc(file=sys.stderr)
            return CUDA_ERROR_LAUNCH_FAILED

    def matmul(self, dtype, dst, a, b):
        """CuPy's matmul (integer dtypes, layouts cuBLAS cannot take) done by NumPy on the same memory."""
        self.matmul_fallbacks += 1
        view = lambda op: _view(dtype, op)  # noqa: E731
        out = view(dst)
        out[...] = np.matmul(view(a), view(b))

    def gemm(self, dtype, trans_a, trans_b, mnk, a, b, c, batch):
        """cuBLAS's {s,d}gemmStridedBatched on raw addresses, as cuBLAS reads them: column-major
        matrices at `address + i * stride` (elements), op(X) = X or Xᵀ, C = op(A) op(B) (alpha 1,
        beta 0). cuBLAS's argument checks first (CUBLAS_STATUS_INVALID_VALUE), so a wrong leading
        dimension fails here as it would on a GPU instead of reading the wrong elements."""
        m, n, k = mnk
        (pa, lda, sa), (pb, ldb, sb), (pc, ldc, sc) = a, b, c
        self.gemm_calls.append((dtype, trans_a, trans_b, mnk, (lda, sa), (ldb, sb), (ldc, sc), batch))
        ra, rb = (k if trans_a else m), (n if trans_b else k)  # rows of A and B as stored
        if min(m, n, k, batch) < 0 or lda < max(1, ra) or ldb < max(1, rb) or ldc < max(1, m):
            raise RuntimeError(f"CUBLAS_STATUS_INVALID_VALUE (m={m} n={n} k={k} lda={lda} ldb={ldb} ldc={ldc})")
        dt = np.dtype(dtype)
        for i in range(batch):
            x = _colmajor(dt, pa + i * sa * dt.itemsize, ra, (m if trans_a else k), lda)
            y = _colmajor(dt, pb + i * sb * dt.itemsize, rb, (k if trans_b else n), ldb)
            out = _colmajor(dt, pc + i * sc * dt.itemsize, m, n, ldc)
            out[...] = np.matmul(x.T if trans_a else x, y.T if trans_b else y)

    def synchronize(self):
        pass

    def device_name(self):
        return "minigrad host emulation (g++ build of the CUDA kernels)"


def _cu_get_error_name(code, out):
    name = ERROR_NAMES.get(code)
    if name is None:
        out[0] = None
        return CUDA_ERROR_INVALID_VALUE
    out[0] = name
    return 0


def _colmajor(dt, address, rows, cols, ld):
    """A column-major `rows x cols` matrix with leading dimension `ld` at `address`."""
    return _view(dt, (address, (rows, cols), (1, ld)))


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
