"""`minigrad kernels`: the CUDA kernel sources embedded in the extension, and `--check`, which
compiles every source for every instance through NVRTC, without a GPU.

The check uses CuPy's low-level NVRTC binding (`cupy_backends.cuda.libs.nvrtc`), which needs the
NVRTC library but no device or driver (CuPy's high-level compile helpers want a device). It
compiles to PTX for `--arch` (compute_80 by default) with the options the CUDA backend uses,
prints one line per source and per kernel template, and exits non-zero with NVRTC's log on any
error. Sources are split into batches compiled in parallel processes (`--jobs`).
"""

import argparse
import os
import sys
import time
from collections import Counter

INSTALL_HINT = (
    "minigrad kernels --check needs CuPy's NVRTC binding and the NVRTC library: "
    "pip install cupy-cuda12x nvidia-cuda-nvrtc-cu12   (CUDA 12; for CUDA 13: cupy-cuda13x nvidia-cuda-nvrtc)"
)
BATCH = 48  # instances per NVRTC program: small enough to spread over processes


def parse_args(argv):
    p = argparse.ArgumentParser(prog="minigrad kernels", description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="compile every kernel instance with NVRTC (no GPU needed)")
    p.add_argument("--instances", action="store_true", help="list every instance (NVRTC name expression)")
    p.add_argument("--arch", default="compute_80", help="virtual architecture for --check (default: compute_80)")
    p.add_argument("--jobs", type=int, default=None, help="parallel compile processes (default: CPU count)")
    p.add_argument("--source", action="append", default=None, metavar="NAME",
                   help="only this source (a name `minigrad kernels` lists); may be repeated")
    p.add_argument("--nvrtc", default=None, metavar="PATH",
                   help="load this libnvrtc.so before CuPy looks for one (to check against a given CUDA version)")
    return p.parse_args(argv)


def sources():
    """[(name, path, source, [instances])] and {include name: text} from the extension."""
    from minigrad import _C

    return _C._cuda_sources(), dict(_C._cuda_headers()), list(_C._cuda_nvrtc_options())


def template_of(instance):
    return instance.split("<", 1)[0]


def list_kernels(srcs, show_instances, out):
    total = sum(len(s[3]) for s in srcs)
    print(f"{len(srcs)} CUDA sources, {total} instances", file=out)
    for name, path, _, instances in srcs:
        print(f"{path}  ({name}: {len(instances)} instances)", file=out)
        counts = Counter(template_of(i) for i in instances)
        for template, n in counts.items():
            print(f"  {template:<28} {n:>4} instances", file=out)
        if show_instances:
            for i in instances:
                print(f"    {i}", file=out)


def load_nvrtc(path):
    """The NVRTC binding, after loading `path` first when given. Raises ImportError without CuPy."""
    if path:
        import ctypes
        import glob

        # NVRTC finds its builtins library by name: load the one beside it first.
        for builtins in sorted(glob.glob(os.path.join(os.path.dirname(path), "libnvrtc-builtins.so.*"))):
            if ".alt." not in builtins:
                ctypes.CDLL(builtins, mode=ctypes.RTLD_GLOBAL)
        ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    from cupy_backends.cuda.libs import nvrtc

    return nvrtc


def compile_batch(job):
    """Compiles one batch; returns (source name, instances, seconds, error log or None, NVRTC version)."""
    name, filename, text, headers, instances, options, nvrtc_path = job
    nvrtc = load_nvrtc(nvrtc_path)
    version = nvrtc.getVersion()
    start = time.perf_counter()
    prog = nvrtc.createProgram(text, filename, [h.encode() for h in headers.values()], [h.encode() for h in headers])
    try:
        for inst in instances:
            nvrtc.addNameExpression(prog, inst)
        try:
            nvrtc.compileProgram(prog, options)
        except nvrtc.NVRTCError as e:
            return name, instances, time.perf_counter() - start, f"{e}\n{nvrtc.getProgramLog(prog)}", version
        missing = []
        for inst in instances:
            try:
                nvrtc.getLoweredName(prog, inst)
            except nvrtc.NVRTCError:
                missing.append(inst)
        if not nvrtc.getPTX(prog):
            return name, instances, time.perf_counter() - start, "NVRTC produced no PTX", version
        if missing:
            return name, instances, time.perf_counter() - start, "no kernel for: " + ", ".join(missing), version
        return name, instances, time.perf_counter() - start, None, version
    finally:
        nvrtc.destroyProgram(prog)


def check(srcs, headers, options, args, out):
    try:
        nvrtc = load_nvrtc(args.nvrtc)
        version = nvrtc.getVersion()
    except (ImportError, OSError) as e:
        print(f"minigrad kernels: {e}\n{INSTALL_HINT}", file=sys.stderr)
        return 2
    except Exception as e:  # the binding imports, but no NVRTC library could be loaded
        print(f"minigrad kernels: NVRTC could not be loaded ({type(e).__name__}: {e})\n{INSTALL_HINT}", file=sys.stderr)
        return 2
    opts = [f"--gpu-architecture={args.arch}", *options]
    total = sum(len(s[3]) for s in srcs)
    print(f"NVRTC {version[0]}.{version[1]}, {' '.join(opts)}: {len(srcs)} sources, {total} instances", file=out)
    jobs = []
    for name, path, text, instances in srcs:
        for i in range(0, len(instances), BATCH):
            jobs.append((name, os.path.basename(path), text, headers, instances[i:i + BATCH], opts, args.nvrtc))
    workers = max(1, min(args.jobs or os.cpu_count() or 1, len(jobs)))
    start = time.perf_counter()
    if workers == 1:
        results = [compile_batch(j) for j in jobs]
    else:
        import multiprocessing

        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            results = pool.map(compile_batch, jobs, chunksize=1)
    failed = 0
    for name, path, _, instances in srcs:
        mine = [r for r in results if r[0] == name]
        errors = [r for r in mine if r[3] is not None]
        bad = {i for r in errors for i in r[1]}
        seconds = sum(r[2] for r in mine)
        status = "ok" if not errors else f"FAILED ({len(bad)} instances)"
        print(f"{path}: {len(instances)} instances {status}  [{seconds:.1f} s compile]", file=out)
        for template, n in Counter(template_of(i) for i in instances).items():
            nbad = sum(1 for i in bad if template_of(i) == template)
            print(f"  {template:<28} {n - nbad:>4}/{n} ok", file=out)
        for r in errors:
            failed += len(r[1])
            print(f"--- NVRTC log ({name}, batch of {len(r[1])}: {r[1][0]} ...):\n{r[3].strip()}", file=out)
    print(f"{total - failed}/{total} instances compiled in {time.perf_counter() - start:.1f} s "
          f"({workers} process{'es' if workers > 1 else ''})", file=out)
    return 1 if failed else 0


def main(argv):
    args = parse_args(argv)
    srcs, headers, options = sources()
    if args.source:
        unknown = set(args.source) - {s[0] for s in srcs}
        if unknown:
            print(f"minigrad kernels: no source named {', '.join(sorted(unknown))} "
                  f"(there are: {', '.join(s[0] for s in srcs)})", file=sys.stderr)
            return 2
        srcs = [s for s in srcs if s[0] in args.source]
    if args.check:
        return check(srcs, headers, options, args, sys.stdout)
    list_kernels(srcs, args.instances, sys.stdout)
    return 0
