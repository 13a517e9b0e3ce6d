"""Builds minigrad's CUDA kernel sources for the host (g++ with shim.h) and launches instances
through ctypes, packing parameters as cuLaunchKernel receives them: one pointer per parameter,
pointing at its value laid out as the kernel ABI says (docs/gpu.md)."""

import contextlib
import ctypes
import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import torch

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
MAX_DIMS = 25

# C type -> (numpy dtype, torch dtype, ctypes type)
C_TYPES = {
    "float": (np.float32, torch.float32, ctypes.c_float),
    "double": (np.float64, torch.float64, ctypes.c_double),
    "int": (np.int32, torch.int32, ctypes.c_int32),
    "long long": (np.int64, torch.int64, ctypes.c_int64),
    "bool": (np.bool_, torch.bool, ctypes.c_bool),
    # the storage-only dtypes (cuda_common.cuh); NumPy has no bfloat16: its buffers hold the bits
    "mg_half": (np.float16, torch.float16, ctypes.c_uint16),
    "mg_bf16": (np.uint16, torch.bfloat16, ctypes.c_uint16),
    "unsigned char": (np.uint8, torch.uint8, ctypes.c_uint8),
    "signed char": (np.int8, torch.int8, ctypes.c_int8),
    "short": (np.int16, torch.int16, ctypes.c_int16),
}


def to_numpy(t):
    """A CPU torch tensor as NumPy, bfloat16 as its uint16 bit patterns (the buffers' convention)."""
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16)
    return t.numpy()


def torch_view(buf):
    """A NumPy buffer seen by torch, sharing memory (uint16 buffers hold bfloat16 bits)."""
    t = torch.from_numpy(buf)
    return t.view(torch.int16).view(torch.bfloat16) if buf.dtype == np.uint16 else t


def c_value(ctype, v):
    """A number as the kernel parameter of C type `ctype` (half formats by their bits)."""
    if ctype in ("mg_half", "mg_bf16"):
        bits = torch.tensor([v], dtype=C_TYPES[ctype][1]).view(torch.int16).item() & 0xFFFF
        return ctypes.c_uint16(bits)
    return C_TYPES[ctype][2](v)


class MgShape(ctypes.Structure):
    _fields_ = [("ndim", ctypes.c_int), ("sizes", ctypes.c_longlong * MAX_DIMS)]


class MgStrides(ctypes.Structure):
    _fields_ = [("offset", ctypes.c_longlong), ("strides", ctypes.c_longlong * MAX_DIMS)]


def mg_shape(shape):
    s = MgShape()
    s.ndim = len(shape)
    for i, v in enumerate(shape):
        s.sizes[i] = v
    for i in range(len(shape), MAX_DIMS):  # ignored by the kernels: poison them
        s.sizes[i] = -7
    return s


def mg_strides(offset, strides):
    s = MgStrides()
    s.offset = offset
    for i, v in enumerate(strides):
        s.strides[i] = v
    for i in range(len(strides), MAX_DIMS):
        s.strides[i] = 1 << 40
    return s


def compiler():
    return shutil.which(os.environ.get("CXX", "g++"))


def _generated(name, path, instances):
    """A translation unit: the .cu source, then a table from instance name to host entry."""
    rows = ",\n".join(f'  {{"{i}", &mg_host::entry< &{i} >}}' for i in instances)
    return (
        f'#include "{REPO / path}"\n'
        "namespace {\n"
        "struct Entry { const char* name; void (*fn)(unsigned, unsigned, void**); };\n"
        f"const Entry table[] = {{\n{rows}\n}};\n"
        "}\n"
        f'extern "C" void* mg_host_lookup_{name}(const char* n) {{\n'
        "  for (const Entry& e : table) if (!strcmp(e.name, n)) return (void*)e.fn;\n"
        "  return nullptr;\n"
        "}\n"
    )


ABI_TU = r"""
#include "cuda_common.cuh"
extern "C" void mg_host_abi(long long* out) {
  out[0] = sizeof(MgShape);
  out[1] = offsetof(MgShape, sizes);
  out[2] = sizeof(MgStrides);
  out[3] = offsetof(MgStrides, strides);
  out[4] = alignof(MgShape);
  out[5] = sizeof(bool);
}
"""

# No fast math and no contraction of a * b + c (x86-64 without -mfma has no FMA to contract to,
# but say so): the host build rounds as the NVRTC build with --fmad=false does. -O0: a quarter of
# -O1's compile time, and x86-64 rounds every float operation the same at any level (SSE, no x87).
CXXFLAGS = ["-std=c++17", "-O0", "-fPIC", "-ffp-contract=off", "-fno-fast-math", "-w"]


class Host:
    """The shared library of every source's instances, and launches into it."""

    def __init__(self, lib, sources):
        self.lib = lib
        self.sources = sources
        self._cache = {}
        proto = ctypes.CFUNCTYPE(None, ctypes.c_uint, ctypes.c_uint, ctypes.POINTER(ctypes.c_void_p))
        self._proto = proto
        self._lookups = {}
        for name in sources:
            f = getattr(lib, f"mg_host_lookup_{name}")
            f.restype = ctypes.c_void_p
            f.argtypes = [ctypes.c_char_p]
            self._lookups[name] = f

    def abi(self):
        out = (ctypes.c_longlong * 6)()
        self.lib.mg_host_abi(out)
        return list(out)

    def kernel(self, instance):
        if instance not in self._cache:
            for name, f in self._lookups.items():
                ptr = f(instance.encode())
                if ptr:
                    self._cache[instance] = self._proto(ptr)
                    break
            else:
                raise KeyError(f"{instance} is not in the host build")
        return self._cache[instance]

    def launch(self, instance, grid, block, *args):
        """Runs `instance` on grid x block threads; args are ctypes values, in parameter order."""
        ptrs = (ctypes.c_void_p * len(args))(*[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args])
        self.kernel(instance)(grid, block, ptrs)


def build(outdir, sources, headers_dir):
    """Compiles every source (one translation unit each, in parallel) into one shared library."""
    cxx = compiler()
    outdir = Path(outdir)
    shim = HERE / "shim.h"
    objs, procs = [], []
    units = {name: _generated(name, path, inst) for name, (path, _, inst) in sources.items()}
    units["abi"] = ABI_TU
    for name, text in units.items():
        src = outdir / f"host_{name}.cpp"
        src.write_text(text)
        obj = outdir / f"host_{name}.o"
        cmd = [cxx, *CXXFLAGS, "-include", str(shim), "-I", str(headers_dir), "-c", str(src), "-o", str(obj)]
        procs.append((name, cmd, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)))
        objs.append(str(obj))
    errors = []
    for name, cmd, p in procs:
        out, _ = p.communicate()
        if p.returncode:
            errors.append(f"{' '.join(cmd)}\n{out[-6000:]}")
    if errors:
        raise RuntimeError("host build of the CUDA kernels failed:\n" + "\n".join(errors))
    lib = outdir / "mg_cuda_host.so"
    subprocess.run([cxx, "-shared", "-o", str(lib), *objs], check=True, capture_output=True)
    return Host(ctypes.CDLL(str(lib)), sources)


# ----- operands: a numpy buffer with an element offset and strides, seen by torch as a view -----

class Operand:
    """A kernel operand: `buf` (1-d numpy), `offset`/`strides` in elements, and its torch view."""

    def __init__(self, buf, shape, strides, offset):
        self.buf, self.shape, self.strides, self.offset = buf, tuple(shape), tuple(strides), offset

    def ptr(self):
        return ctypes.c_void_p(self.buf.ctypes.data)

    def ptr_at_offset(self):
        return ctypes.c_void_p(self.buf.ctypes.data + self.offset * self.buf.itemsize)

    def mg(self):
        return mg_strides(self.offset, self.strides)

    def view(self):
        """The logical tensor (a torch view of the same memory)."""
        return torch_view(self.buf).as_strided(self.shape, self.strides, self.offset)


def operand_from(values, strides, offset, fill, shape=None):
    """`values` (a torch tensor) written at `strides`/`offset` into a buffer of `fill`, seen with
    `shape` (default: values' own): dims of size 1 in values with stride 0 broadcast to `shape`."""
    vshape = tuple(values.shape)
    if all(vshape):
        extent = offset + sum((n - 1) * st for n, st in zip(vshape, strides)) + 1
    else:
        extent = offset + 1
    buf = to_numpy(torch.full((extent + 3,), fill, dtype=values.dtype))  # +3: room a stray write would hit
    op = Operand(buf, shape or vshape, strides, offset)
    if all(vshape):
        torch_view(buf).as_strided(vshape, strides, offset).copy_(values)
    return op


def contiguous_strides(shape):
    out, acc = [], 1
    for s in reversed(shape):
        out.append(acc)
        acc *= max(s, 1)
    return list(reversed(out))


@contextlib.contextmanager
def shuffled_blocks(seed):
    """The shim runs each launch's blocks in a permutation of `seed` (tests/cuda_host/shim.h)."""
    old = os.environ.get("MG_HOST_BLOCK_ORDER")
    os.environ["MG_HOST_BLOCK_ORDER"] = str(seed)
    try:
        yield
    finally:
        if old is None:
            del os.environ["MG_HOST_BLOCK_ORDER"]
        else:
            os.environ["MG_HOST_BLOCK_ORDER"] = old
