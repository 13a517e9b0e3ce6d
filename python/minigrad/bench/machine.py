"""The machine a run describes: CPU, cores, thread counts actually used, versions, build type,
and a measured copy bandwidth that bandwidth-bound ops are compared with."""

import os
import platform
import sys
import time


def cpu_count():
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def memory_total_bytes():
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def set_threads(n, minigrad_loaded_work, peers):
    """Fixes the thread count of every library; returns what each one was set to and how.

    minigrad's kernels run on rayon's global pool, which reads RAYON_NUM_THREADS once, when it
    is first used: the variable is set here, before the suites run any minigrad op. If minigrad
    had already computed in this process, the pool is fixed and that is reported."""
    report = {"requested": n}
    undo = []
    for var in ("RAYON_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        undo.append(lambda var=var, old=os.environ.get(var): _restore_env(var, old))
    os.environ["RAYON_NUM_THREADS"] = str(n)
    if minigrad_loaded_work:
        report["minigrad"] = f"RAYON_NUM_THREADS={n} (pool may predate it: minigrad ran before the bench)"
    else:
        report["minigrad"] = f"RAYON_NUM_THREADS={n}"
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, str(n))  # read by BLAS libraries that load after this point
    report["numpy"] = _limit_numpy_threads(n, undo)
    report["torch"] = _set_torch_threads(peers["torch"].module, n, undo) if "torch" in peers else "not compared"
    report["_undo"] = undo
    return report


def restore_threads(report):
    """Puts every thread setting back (for callers that run the bench inside a longer process)."""
    for fn in reversed(report.pop("_undo", [])):
        fn()


def _restore_env(var, old):
    if old is None:
        os.environ.pop(var, None)
    else:
        os.environ[var] = old


def _limit_numpy_threads(n, undo):
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return f"OMP/OPENBLAS/MKL_NUM_THREADS={n} (threadpoolctl not installed; effective only if numpy's BLAS loaded after)"
    limiter = threadpool_limits(limits=n)
    undo.append(limiter.restore_original_limits)
    return f"threadpoolctl limits={n}"


def _set_torch_threads(torch, n, undo):
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    undo.append(lambda: torch.set_num_threads(before))
    return f"torch.set_num_threads({n}) -> {torch.get_num_threads()}"


def copy_bandwidth_gbps(nbytes=64 << 20, repeats=9):
    """Copy bandwidth of this machine (bytes read + bytes written per second), NumPy memcpy."""
    import numpy as np

    src = np.ones(nbytes // 4, dtype=np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - t0)
    return 2 * nbytes / min(times) / 1e9  # the best run: other processes only ever slow a copy down


def describe(peers, threads):
    import minigrad

    info = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cores_available": cpu_count(),
        "memory_total_bytes": memory_total_bytes(),
        "minigrad": minigrad.__version__,
        "minigrad_debug_build": bool(getattr(minigrad._C, "_debug_build", False)),
        "threads": {k: v for k, v in threads.items() if not k.startswith("_")},
        "peers": {name: p.version for name, p in peers.items()},
        # NumPy's BLAS threads: the spin after each call (see minigrad/__main__.py); None = OpenBLAS's default
        "openblas_thread_timeout": os.environ.get("OPENBLAS_THREAD_TIMEOUT"),
    }
    return info
