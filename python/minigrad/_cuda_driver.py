"""The driver the CUDA backend calls on a real GPU: CuPy owns memory (its pool, so users' own
CuPy code and pool limits share it), streams (kernels go on CuPy's current stream) and NVRTC
(`cupy.RawModule`, with CuPy's in-memory and on-disk caches). The Rust backend keeps the
function handles it gets, so a launch is one call here and one `cuLaunchKernel`.

The interface (the host emulation in tests/cuda_host/driver.py provides the same):
  alloc(nbytes) -> (address, owner)          owner keeps the block; dropping it frees it
  memset_zero(address, nbytes)
  copy(dst, src, nbytes, kind)               kind: "h2d", "d2h", "d2d"; synchronous
  function(source, expr, group) -> handle    compiles `group` (which includes expr) once
  launch(handle, grid, block, shared_bytes, params_address)
  matmul(dtype, dst, a, b)                   each (address, shape, strides in elements):
                                             dst[B] = a[B] @ b[B] through cuBLAS
  synchronize(), device_name()
"""

from ._errors import OutOfMemoryError


class CupyDriver:
    def __init__(self, cupy, index):
        from cupy_backends.cuda.api import driver, runtime

        from . import _C

        self._cupy, self._driver, self._runtime, self.index = cupy, driver, runtime, index
        self._sources = {name: text for name, _, text, _ in _C._cuda_sources()}
        self._headers = dict(_C._cuda_headers())
        self._options = tuple(_C._cuda_nvrtc_options())
        self._modules = []  # keeps every compiled module (and so its functions) alive
        self._launch = driver.launchKernel  # bound once: a launch is on the per-op path
        self._current_stream = cupy.cuda.get_current_stream
        self._functions = {}

    def _device(self):
        return self._cupy.cuda.Device(self.index)

    def alloc(self, nbytes):
        with self._device():
            try:
                mem = self._cupy.cuda.alloc(nbytes)
            except self._cupy.cuda.memory.OutOfMemoryError as e:
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
            code = "".join(
                self._headers[line.split('"')[1]] if line.startswith("#include") else line + "\n"
                for line in self._sources[source].splitlines()
            )
            with self._device():
                module = self._cupy.RawModule(
                    code=code, options=self._options, name_expressions=list(group), backend="nvrtc"
                )
                self._modules.append(module)
                for name in group:
                    # a RawKernel; its `kernel` is the loaded CUfunction (compiles on first access)
                    self._functions[name] = module.get_function(name).kernel
        return self._functions[expr].ptr

    def launch(self, handle, grid, block, shared_bytes, params):
        self._launch(handle, grid, 1, 1, block, 1, 1, shared_bytes, self._current_stream().ptr, params, 0)

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

    def synchronize(self):
        with self._device():
            self._cupy.cuda.get_current_stream().synchronize()

    def device_name(self):
        name = self._runtime.getDeviceProperties(self.index)["name"]
        return name.decode() if isinstance(name, bytes) else name


def _human(n):
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.2f} {unit}" if unit != "bytes" else f"{n} bytes"
        n /= 1024
