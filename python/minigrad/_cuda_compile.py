"""Compiling one group of kernel instances to device code, with a cache on disk.

Why not `cupy.RawModule(code=...)`: CuPy appends `-ftz=true` to every NVRTC compile it runs
(`cupy/cuda/compiler.py`), which flushes float32 subnormals to zero in every arithmetic
instruction and conversion (`mul.ftz.f32`, `cvt.rn.ftz.f32.f64`). torch's kernels keep them:
float64 -> float32 of 1e-40 is 1e-40, a product of two small floats can be subnormal. NVRTC takes
the last value of a repeated option, so the backend's `-ftz=false` cannot undo CuPy's. The group
is compiled here through CuPy's own NVRTC binding with exactly the backend's options, and the
driver loads the result with `cupy.RawModule(path=...)`.

The cache: two files per group and architecture in CuPy's kernel cache folder ($CUPY_CACHE_DIR,
default ~/.cupy/kernel_cache, as CuPy's own), named by a hash of everything that decides their
contents (NVRTC's version, the architecture, the options, the code, the instance names): the
device code (`.cubin`, or `.ptx` when this NVRTC cannot target the device's architecture and the
driver compiles the PTX at load) and the instances' lowered names (`.json`). Both are written to a
temporary file and renamed, so concurrent processes never read half a file.
"""

import hashlib
import json
import os
import tempfile

FORMAT = 1  # bump when the files' layout changes


def cache_dir():
    return os.environ.get("CUPY_CACHE_DIR") or os.path.expanduser("~/.cupy/kernel_cache")


def target(nvrtc, compute_capability):
    """(NVRTC's --gpu-architecture value, "cubin" or "ptx") for a device of `compute_capability`
    ("90" for an H100): machine code when this NVRTC knows the architecture, else PTX for the
    newest one it knows below it (the driver compiles PTX for the device at load)."""
    cc = int(compute_capability)
    supported = sorted(int(a) for a in nvrtc.getSupportedArchs())
    if cc in supported:
        return f"sm_{cc}", "cubin"
    older = [a for a in supported if a <= cc]
    if not older:
        raise RuntimeError(f"this NVRTC ({nvrtc.getVersion()}) cannot compile for compute capability {compute_capability}")
    return f"compute_{older[-1]}", "ptx"


def inline_headers(text, headers):
    """The source with each `#include "name"` of the backend's own headers replaced by its text."""
    return "".join(headers[line.split('"')[1]] if line.startswith("#include") else line + "\n" for line in text.splitlines())


def compile_group(nvrtc, code, names, options, arch, kind, filename="kernels.cu", directory=None):
    """Compiles `code` for the instances `names` (NVRTC name expressions) and returns
    (path of the device code, {name: lowered name}), from the cache when it is there."""
    directory = directory or cache_dir()
    key = hashlib.sha256(
        json.dumps([FORMAT, list(nvrtc.getVersion()), arch, kind, list(options), code, sorted(names)]).encode()
    ).hexdigest()
    binary = os.path.join(directory, f"minigrad-{key}.{kind}")
    table = os.path.join(directory, f"minigrad-{key}.json")
    try:
        with open(table) as f:
            lowered = json.load(f)
        if os.path.exists(binary) and set(lowered) == set(names):
            return binary, lowered
    except (OSError, ValueError):
        pass
    data, lowered = _compile(nvrtc, code, names, [f"--gpu-architecture={arch}", *options], kind, filename)
    os.makedirs(directory, exist_ok=True)
    _write_atomically(binary, data)
    _write_atomically(table, json.dumps(lowered).encode())
    return binary, lowered


def _compile(nvrtc, code, names, options, kind, filename):
    prog = nvrtc.createProgram(code, filename, [], [])
    try:
        for name in names:
            nvrtc.addNameExpression(prog, name)
        try:
            nvrtc.compileProgram(prog, options)
        except nvrtc.NVRTCError as e:
            raise RuntimeError(f"NVRTC could not compile {filename} ({e}):\n{nvrtc.getProgramLog(prog)}") from e
        lowered = {name: nvrtc.getLoweredName(prog, name) for name in names}
        data = nvrtc.getCUBIN(prog) if kind == "cubin" else nvrtc.getPTX(prog)
        return (data if isinstance(data, bytes) else data.encode()), lowered
    finally:
        nvrtc.destroyProgram(prog)


def _write_atomically(path, data):
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".minigrad-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
