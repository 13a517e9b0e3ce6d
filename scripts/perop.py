"""The per-op path of a small CUDA op (docs/gpu.md, "The per-op path"): what `c = a + b` on
one-element float32 tensors costs on the host -- the output's allocation, the kernel lookup and
the launch -- rather than on the device.

  python3 scripts/perop.py gpu [--ops N] [--json FILE]
      On a GPU: microseconds per op issued (no synchronisation per op; one at the end) and per
      op synchronised, for minigrad, torch.cuda and CuPy, and the parts of minigrad's path
      (the driver's allocation now and as it was; CuPy's Python launchKernel, the call minigrad
      no longer makes). Wall-clock timings: meaningful on a quiet machine only.
  python3 scripts/perop.py emulated --ops N
      The host-emulated device (tests/cuda_host: the g++ build of binary.cu's Add instances,
      cached under --build-dir). For instruction counts (--callgrind), not timings.
  python3 scripts/perop.py null --ops N
      A driver whose launch and stream reader are C functions that do nothing (the build before
      the Rust launch path calls a Python `launch` method that does nothing instead), and whose
      memory is host memory: minigrad's own per-op instructions, with no kernel and no CUDA.
  python3 scripts/perop.py callgrind [--python PY] [--pythonpath P]
      Runs `emulated` and `null` under valgrind's callgrind with two op counts and prints the
      instructions per op (the difference over the extra ops), and, for `emulated`, the part
      in the g++-built kernel library's own code. Host-side counts, not GPU timings.
"""

import argparse
import ctypes
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _ops(a, b, n):
    for _ in range(n):
        c = a + b  # noqa: F841  (the previous output is freed here, as in a loop of real ops)


def _host_library(build_dir):
    """The host build of binary.cu's Add instances (every group the backend asks for `+`)."""
    sys.path.insert(0, str(REPO / "tests"))
    from cuda_host import harness as H
    from minigrad import _C

    path = next(p for name, p, _, _ in _C._cuda_sources() if name == "binary")
    inst = next(i for name, _, _, i in _C._cuda_sources() if name == "binary")
    sources = {"binary": (str(REPO / path), None, [i for i in inst if i.endswith(", mg::Add>")])}
    lib = Path(build_dir) / "mg_cuda_host.so"
    if lib.exists():
        return H.Host(ctypes.CDLL(str(lib)), sources)
    Path(build_dir).mkdir(parents=True, exist_ok=True)
    return H.build(build_dir, sources, REPO / "rust" / "core" / "src" / "ops")


_STUBS = r"""
#include <stdint.h>
int null_launch(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                unsigned bz, unsigned shared, void* stream, void** params, void** extra) { return 0; }
intptr_t null_stream(int device) { return 0; }
"""


def _null_driver(build_dir):
    sys.path.insert(0, str(REPO / "tests"))
    from cuda_host.driver import HostDriver

    src, lib = Path(build_dir) / "null_stubs.c", Path(build_dir) / "null_stubs.so"
    if not lib.exists():
        Path(build_dir).mkdir(parents=True, exist_ok=True)
        src.write_text(_STUBS)
        subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    stubs = ctypes.CDLL(str(lib))

    class NullDriver(HostDriver):
        """Host memory, kernels that are never run."""

        def function(self, source, expr, group):
            return 0x1000

        def entry_points(self):  # the Rust launch path
            return ctypes.cast(stubs.null_launch, ctypes.c_void_p).value, 0, ctypes.cast(stubs.null_stream, ctypes.c_void_p).value

        def launch(self, handle, grid, block, shared_bytes, params):  # the Python launch path before it
            pass

    d = NullDriver(None)
    d._stubs = stubs
    return d


def run_local(mode, n, build_dir):
    import minigrad as mg
    from minigrad import _C

    if mode == "emulated":
        sys.path.insert(0, str(REPO / "tests"))
        from cuda_host.driver import HostDriver

        driver = HostDriver(_host_library(build_dir))
    else:
        driver = _null_driver(build_dir)
    _C._cuda_register(0, driver)
    a = mg.tensor([1.0], device="cuda")
    b = mg.tensor([2.0], device="cuda")
    _ops(a, b, 20)  # compiles (looks up) the group, warms every cache
    _ops(a, b, n)
    if mode == "emulated":
        assert (a + b).cpu().tolist() == [3.0]


# ----- callgrind: two op counts, the difference per op -----

def _callgrind(python, pythonpath, mode, n, build_dir):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "cg.out"
        # one BLAS/OpenMP thread: idle pool threads spin, and callgrind would count their spinning
        env = dict(os.environ, PYTHONPATH=pythonpath, PYTHONHASHSEED="0", OPENBLAS_NUM_THREADS="1",
                   OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", python, __file__, mode,
               "--ops", str(n), "--build-dir", build_dir]
        subprocess.run(cmd, check=True, env=env, capture_output=True)
        total = int(re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE).group(1))
        kernel = 0
        if mode == "emulated":
            # exclusive counts of the g++ build's own code (its fibers switch stacks, so
            # inclusive counts through the launch are not reliable)
            ann = subprocess.run(["callgrind_annotate", "--inclusive=no", "--threshold=100", str(out)],
                                 check=True, capture_output=True, text=True).stdout
            for line in ann.splitlines():
                if line.rstrip().endswith("mg_cuda_host.so]"):
                    kernel += int(line.split()[0].replace(",", ""))
        return total, kernel


def callgrind(python, pythonpath, build_dir, lo=100, hi=600):
    # build outside valgrind first
    subprocess.run([python, __file__, "emulated", "--ops", "1", "--build-dir", build_dir], check=True,
                   env=dict(os.environ, PYTHONPATH=pythonpath))
    rows = {}
    for mode in ("null", "emulated"):
        (t1, k1), (t2, k2) = (_callgrind(python, pythonpath, mode, n, build_dir) for n in (lo, hi))
        per, kern = (t2 - t1) / (hi - lo), (k2 - k1) / (hi - lo)
        rows[mode] = {"instructions_per_op": round(per), "kernel_body_per_op": round(kern),
                      "outside_kernel_per_op": round(per - kern)}
        print(f"{mode:9s} {per:10.0f} instructions/op" + (f"  (in the kernel library's code {kern:.0f}, the rest {per - kern:.0f})" if kern else ""))
    return rows


# ----- a GPU: wall-clock per op -----

def _per_op_us(f, n, sync):
    f()  # warm
    sync()
    t = time.perf_counter()
    for _ in range(n):
        f()
    sync()
    return (time.perf_counter() - t) / n * 1e6


def gpu(n, json_path):
    import cupy
    import torch

    import minigrad as mg
    from cupy_backends.cuda.api import driver as cudrv
    from minigrad._cuda_probe import driver as mg_driver

    rows = {}
    a, b = mg.tensor([1.0], device="cuda"), mg.tensor([2.0], device="cuda")
    ta, tb = torch.tensor([1.0], device="cuda"), torch.tensor([2.0], device="cuda")
    ca, cb = cupy.asarray([1.0], dtype=cupy.float32), cupy.asarray([2.0], dtype=cupy.float32)
    mgsync, tsync, csync = mg.cuda.synchronize, torch.cuda.synchronize, cupy.cuda.Device().synchronize
    for name, f, sync in (("minigrad", lambda: a + b, mgsync), ("torch", lambda: ta + tb, tsync), ("cupy", lambda: ca + cb, csync)):
        for _ in range(3):  # best of 3 runs
            issued = _per_op_us(f, n, sync)
            synced = _per_op_us(lambda f=f, sync=sync: (f(), sync()), n // 4, sync)
            r = rows.setdefault(name, {"issued_us": issued, "synced_us": synced})
            r["issued_us"], r["synced_us"] = min(r["issued_us"], issued), min(r["synced_us"], synced)
    d = mg_driver(0)
    parts = {
        "driver.alloc(4) now": lambda: d.alloc(4),
        "with Device(0): cupy.cuda.alloc(4) (as before)": lambda: _old_alloc(cupy),
    }
    k = cupy.RawKernel(r'extern "C" __global__ void mg_nothing() {}', "mg_nothing")
    k((1,), (1,), ())  # loads the module
    handle = k.kernel.ptr
    parts["cupy launchKernel + get_current_stream (the Python call before)"] = (
        lambda: cudrv.launchKernel(handle, 1, 1, 1, 1, 1, 1, 0, cupy.cuda.get_current_stream().ptr, 0, 0))
    for name, f in parts.items():
        rows[name] = {"us": min(_per_op_us(f, n, csync) for _ in range(3))}
    for name, r in rows.items():
        print(f"{name:62s} " + "  ".join(f"{k} {v:6.2f}" for k, v in r.items()))
    if json_path:
        name = cupy.cuda.runtime.getDeviceProperties(0)["name"]
        name = name.decode() if isinstance(name, bytes) else name
        Path(json_path).write_text(json.dumps({"ops": n, "device": name, "rows": rows}, indent=1))


def _old_alloc(cupy):
    with cupy.cuda.Device(0):
        return cupy.cuda.alloc(4)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("mode", choices=["gpu", "emulated", "null", "callgrind"])
    p.add_argument("--ops", type=int, default=20000)
    p.add_argument("--json")
    p.add_argument("--build-dir", default=os.path.join(tempfile.gettempdir(), "minigrad-perop-host"))
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--pythonpath", default=str(REPO / "python"))
    args = p.parse_args()
    if args.mode == "gpu":
        gpu(args.ops, args.json)
    elif args.mode == "callgrind":
        rows = callgrind(args.python, args.pythonpath, args.build_dir)
        if args.json:
            Path(args.json).write_text(json.dumps(rows, indent=1))
    else:
        run_local(args.mode, args.ops, args.build_dir)


if __name__ == "__main__":
    main()
