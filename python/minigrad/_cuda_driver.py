"""The driver the CUDA backend calls on a real GPU: CuPy owns memory (its pool, so users' own
CuPy code and pool limits share it), streams (kernels go on CuPy's current stream) and NVRTC
(through CuPy's NVRTC binding with the backend's own options, cached on disk in CuPy's cache
folder: _cuda_compile.py says why not `RawModule(code=...)`; loaded with `cupy.RawModule`). The Rust backend keeps the
function handles it gets and launches them itself: `entry_points()` gives it libcuda's
`cuLaunchKernel` and `cuGetErrorName` and CuPy's C function for the current stream, so a launch
calls no Python (rust/py/src/cuda/entry.rs). An allocation is one call of `alloc`.

The interface (the host emulation in tests/cuda_host/driver.py provides the same):
  alloc(nbytes) -> (address, owner)          owner keeps the block; dropping it frees it
  memset_zero(address, nbytes)
  copy(dst, src, nbytes, kind)               kind: "h2d", "d2h", "d2d"; synchronous
  function(source, expr, group) -> handle    compiles `group` (which includes expr) once
  entry_points() -> (launch_kernel, get_error_name, stream_of)
        launch_kernel: address of a C function with cuLaunchKernel's signature
        get_error_name: address of one with cuGetErrorName's (0: none)
        stream_of: the current stream of a device for the calling thread, either the address
                   of a C function `intptr_t (int device)` called with the GIL held (-1 with a
                   Python exception set on error) or a Python callable device -> int
        The addresses must stay valid while the driver object lives.
  matmul(dtype, dst, a, b)                   each (address, shape, strides in elements):
                                             dst[B] = a[B] @ b[B] through CuPy (integer dtypes,
                                             layouts cuBLAS cannot take)
  gemm(dtype, trans_a, trans_b, (m, n, k), (a, lda, stride_a), (b, ldb, stride_b),
       (c, ldc, stride_c), batch)            one cuBLAS {s,d}gemmStridedBatched with raw device
                                             addresses (column-major, strides in elements),
                                             alpha 1, beta 0 (rust/py/src/cuda/gemm.rs)
  synchronize(), device_name()
"""

from . import _cuda_compile
from ._errors import OutOfMemoryError


class CupyDriver:
    def __init__(self, cupy, index):
        from cupy_backends.cuda.api import driver, runtime
        from cupy_backends.cuda.libs import nvrtc

        from . import _C

        self._cupy, self._driver, self._runtime, self.index = cupy, driver, runtime, index
        self._nvrtc = nvrtc
        self._sources = {name: text for name, _, text, _ in _C._cuda_sources()}
        self._headers = dict(_C._cuda_headers())
        self._options = tuple(_C._cuda_nvrtc_options())
        self._modules = []  # keeps every compiled module (and so its functions) alive
        self._functions = {}
        # bound once: an allocation is on the per-op path
        self._get_device = runtime.getDevice
        self._pool_alloc = cupy.cuda.memory.alloc  # the current allocator (set_allocator is honoured)
        self._oom = cupy.cuda.memory.OutOfMemoryError
        self._cublas = None  # made at the first gemm

    def _device(self):
        return self._cupy.cuda.Device(self.index)

    def entry_points(self):
        return (*_libcuda_entries(), _stream_of(self._cupy))

    def alloc(self, nbytes):
        # The pool serves the current device: switch only when it is another one (a `with
        # Device` costs a cudaSetDevice on the way out, even when nothing changed).
        if self._get_device() != self.index:
            with self._device():
                return self.alloc(nbytes)
        try:
            mem = self._pool_alloc(nbytes)
        except self._oom as e:
            pool = self._cupy.get_default_memory_pool()
            raise OutOfMemoryError(
                f"CUDA out of memory. Tried to allocate {_human(nbytes)}. GPU {self.index}: "
                f"{_human(pool.used_bytes())} allocated by this process's pool, "
                f"{_human(pool.total_bytes())} reserved ({e})"
            ) from None
        return mem.ptr, mem

    def memset_zero(self, address, nbytes):
        with self._device():
            self._runtime.memsetAsync(address, 0, nbytes, self._cupy.cuda.get_current_stream().ptr)

    def copy(self, dst, src, nbytes, kind):
        rt = self._runtime
        code = {"h2d": rt.memcpyHostToDevice, "d2h": rt.memcpyDeviceToHost, "d2d": rt.memcpyDeviceToDevice}[kind]
        with self._device():
            stream = self._cupy.cuda.get_current_stream()
            rt.memcpyAsync(dst, src, nbytes, code, stream.ptr)
            if kind != "d2d":  # host memory is pageable and owned by the caller: finish now
                stream.synchronize()

    def function(self, source, expr, group):
        if expr not in self._functions:
            code = _cuda_compile.inline_headers(self._sources[source], self._headers)
            device = self._device()
            with device:
                # compiled here, not by RawModule(code=...): CuPy adds -ftz=true (_cuda_compile.py)
                arch, kind = _cuda_compile.target(self._nvrtc, device.compute_capability)
                path, lowered = _cuda_compile.compile_group(
                    self._nvrtc, code, list(group), self._options, arch, kind, filename=f"{source}.cu")
                module = self._cupy.RawModule(path=path)
                self._modules.append(module)
                for name in group:
                    # a RawKernel; its `kernel` is the loaded CUfunction
                    self._functions[name] = module.get_function(lowered[name]).kernel
        return self._functions[expr].ptr

    def _array(self, dtype, operand):
        """A CuPy view (no copy, not owning) of device memory described by the backend."""
        cupy = self._cupy
        address, shape, strides = operand
        dt = cupy.dtype(dtype)
        extent = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 0
        mem = cupy.cuda.UnownedMemory(address, extent * dt.itemsize, self, self.index)
        return cupy.ndarray(tuple(shape), dt, cupy.cuda.MemoryPointer(mem, 0), tuple(s * dt.itemsize for s in strides))

    def matmul(self, dtype, dst, a, b):
        with self._device():
            out = self._array(dtype, dst)
            self._cupy.matmul(self._array(dtype, a), self._array(dtype, b), out=out)

    def gemm(self, dtype, trans_a, trans_b, mnk, a, b, c, batch):
        """cuBLAS on raw pointers: no CuPy arrays. CuPy's cublas wrappers put the handle on
        CuPy's current stream before each call (as its own matmul does)."""
        if self._get_device() != self.index:
            with self._device():
                return self.gemm(dtype, trans_a, trans_b, mnk, a, b, c, batch)
        if self._cublas is None:
            self._cublas = _Cublas(self._cupy)
        self._cublas.gemm(dtype, trans_a, trans_b, mnk, a, b, c, batch)

    def synchronize(self):
        with self._device():
            self._cupy.cuda.get_current_stream().synchronize()

    def device_name(self):
        name = self._runtime.getDeviceProperties(self.index)["name"]
        return name.decode() if isinstance(name, bytes) else name


class _Cublas:
    """CuPy's low-level cuBLAS binding (`cupy_backends.cuda.libs.cublas`), called with raw
    addresses. alpha and beta are host pointers (cuBLAS's default pointer mode, which CuPy
    restores after any call that changes it)."""

    def __init__(self, cupy):
        import ctypes

        from cupy_backends.cuda.libs import cublas

        self._handle = cupy.cuda.device.get_cublas_handle  # the current device's, CuPy's own
        self._scalars = {"float32": (ctypes.c_float(1.0), ctypes.c_float(0.0)), "float64": (ctypes.c_double(1.0), ctypes.c_double(0.0))}
        one_zero = {k: (ctypes.addressof(o), ctypes.addressof(z)) for k, (o, z) in self._scalars.items()}
        self._calls = {
            "float32": (cublas.sgemm, cublas.sgemmStridedBatched, *one_zero["float32"]),
            "float64": (cublas.dgemm, cublas.dgemmStridedBatched, *one_zero["float64"]),
        }
        self._op = (cublas.CUBLAS_OP_N, cublas.CUBLAS_OP_T)

    def gemm(self, dtype, trans_a, trans_b, mnk, a, b, c, batch):
        single, batched, one, zero = self._calls[dtype]
        m, n, k = mnk
        (pa, lda, sa), (pb, ldb, sb), (pc, ldc, sc) = a, b, c
        ta, tb, h = self._op[trans_a], self._op[trans_b], self._handle()
        if batch == 1:
            single(h, ta, tb, m, n, k, one, pa, lda, pb, ldb, zero, pc, ldc)
        else:
            batched(h, ta, tb, m, n, k, one, pa, lda, sa, pb, ldb, sb, zero, pc, ldc, sc, batch)


def _libcuda_entries():
    """(cuLaunchKernel, cuGetErrorName) of the driver library CuPy uses. CuPy (12.x and 13.x
    wheels alike) soft-links the driver API by opening `libcuda.so.1` and taking the un-suffixed
    symbols (`cuLaunchKernel`, `cuGetErrorName`: one ABI since CUDA 4 and 6); opening the same
    name returns the library already loaded, wherever it was found (the loader matches its
    soname), so these are the very functions CuPy's own `launchKernel` calls."""
    import ctypes

    lib = ctypes.CDLL("libcuda.so.1")
    return tuple(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value for name in ("cuLaunchKernel", "cuGetErrorName"))


def _stream_of(cupy):
    """CuPy's own reader of a device's current stream in the calling thread (what its kernels
    launch on; it follows `with cupy.cuda.Stream():`, `Stream.use()` and
    CUPY_CUDA_PER_THREAD_DEFAULT_STREAM): the C function `get_stream_ptr` that
    cupy_backends.cuda.stream exports to CuPy's other modules, taken from its capsule only when
    the capsule's signature is the one expected; otherwise CuPy's public (slower) Python call."""
    import ctypes

    try:
        from cupy_backends.cuda import stream

        capsule = stream.__pyx_capi__["get_stream_ptr"]
        get = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_GetPointer", ctypes.pythonapi))
        address = get(capsule, b"intptr_t (int)")  # ValueError when the signature differs
        if address:
            return address
    except (ImportError, AttributeError, KeyError, ValueError):
        pass
    return lambda device: cupy.cuda.get_current_stream(device).ptr


def _human(n):
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.2f} {unit}" if unit != "bytes" else f"{n} bytes"
        n /= 1024
