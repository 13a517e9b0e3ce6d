"""Exact memory accounting: every tensor byte comes from the core's allocator, which counts it.

    with minigrad.memory.track() as t:
        loss = model(x).sum(); loss.backward()
    t.peak_bytes, t.retained_bytes      # exact, from the allocator's counters

The per-device functions mirror `torch.cuda.memory_allocated(device)` and friends. On a CUDA
device the engine counts the bytes of every live tensor's block itself (exact, whatever CuPy's
pool keeps cached); `reserved` there is what the pool holds.
"""

import os
import resource
from contextlib import contextmanager

from . import _C
from ._cuda_probe import driver as _cuda_driver, require as _require_cuda
from ._device import device as _device


def _check_device(device):
    """The CUDA ordinal `device` names, or None for the CPU. Parses `device` as torch does (typos
    fail with torch's words); a CUDA device first says why it is unavailable, when it is."""
    if device is None:
        return None
    d = device if isinstance(device, _device) else _device(device)
    if d.type == "cuda":
        index = d.index or 0
        _require_cuda(index)
        return index
    if d.type != "cpu":
        raise RuntimeError(f"minigrad.memory: no memory is tracked on device '{d}'")
    return None


def _counters(index):
    if index is None:
        return _C.memory_stats()
    out = dict(_C._cuda_memory_stats(index))
    reserved = out["allocated_bytes"]
    from ._cuda_probe import cupy_module

    cupy = cupy_module()
    if cupy is not None and type(_cuda_driver(index)).__name__ == "CupyDriver":
        reserved = max(reserved, cupy.get_default_memory_pool().total_bytes())
    out["reserved_bytes"] = reserved
    out["cached_bytes"] = reserved - out["allocated_bytes"]
    return out


def _reset_peak(index):
    if index is None:
        _C.reset_peak_memory()
    else:
        _C._cuda_reset_peak(index)


def stats(device=None):
    """{'allocated_bytes', 'peak_bytes', 'reserved_bytes', 'cached_bytes'} for the device."""
    return _counters(_check_device(device))


def allocated(device=None):
    """Bytes held by live tensors right now."""
    return stats(device)["allocated_bytes"]


def peak(device=None):
    """Highest `allocated()` since start-up or the last `reset_peak()`."""
    return stats(device)["peak_bytes"]


def reserved(device=None):
    """Bytes taken from the operating system: allocated plus the allocator's cache of freed blocks."""
    return stats(device)["reserved_bytes"]


def reset_peak(device=None):
    _reset_peak(_check_device(device))


def empty_cache():
    """Returns cached free blocks to the operating system."""
    _C.empty_cache()


# torch.cuda-style names for the same counters
memory_allocated = allocated
max_memory_allocated = peak
memory_reserved = reserved
memory_stats = stats
reset_peak_memory_stats = reset_peak


def rss_bytes():
    """Resident set size of this process now (Linux /proc; the lifetime peak elsewhere)."""
    status = _proc_status()
    if "VmRSS" in status:
        return status["VmRSS"]
    return _max_rss()


def rss_peak_bytes():
    """The process's resident high-water mark (since start-up or `reset_rss_peak()`)."""
    return _proc_status().get("VmHWM", _max_rss())


def reset_rss_peak():
    """Resets the resident high-water mark where Linux allows it; returns whether it did."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _proc_status():
    try:
        with open("/proc/self/status") as f:
            lines = f.read().splitlines()
    except OSError:
        return {}
    out = {}
    for line in lines:
        key, _, rest = line.partition(":")
        parts = rest.split()
        if key in ("VmRSS", "VmHWM") and len(parts) == 2 and parts[1] == "kB":
            out[key] = int(parts[0]) * 1024
    return out


def _max_rss():
    scale = 1 if os.uname().sysname == "Darwin" else 1024  # macOS reports bytes, Linux kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale


class Tracked:
    """What `track()` measured. Byte counts are exact; the `rss_*` figures are the OS's view,
    which includes Python objects and the allocator's cache, so they only cross-check."""

    __slots__ = ("start_bytes", "end_bytes", "peak_bytes", "rss_start", "rss_end", "rss_peak", "_seen_peak")

    def __init__(self):
        self.start_bytes = self.end_bytes = self.peak_bytes = 0
        self.rss_start = self.rss_end = self.rss_peak = None
        self._seen_peak = 0

    @property
    def peak_delta_bytes(self):
        """Most bytes the block held at once beyond what was allocated when it started."""
        return self.peak_bytes - self.start_bytes

    @property
    def retained_bytes(self):
        """Bytes allocated in the block and still alive after it (e.g. gradients); may be negative."""
        return self.end_bytes - self.start_bytes

    def as_dict(self):
        return {
            "start_bytes": self.start_bytes, "end_bytes": self.end_bytes, "peak_bytes": self.peak_bytes,
            "peak_delta_bytes": self.peak_delta_bytes, "retained_bytes": self.retained_bytes,
            "rss_start": self.rss_start, "rss_end": self.rss_end, "rss_peak": self.rss_peak,
        }

    def __repr__(self):
        return (f"Tracked(peak_delta_bytes={self.peak_delta_bytes}, retained_bytes={self.retained_bytes}, "
                f"peak_bytes={self.peak_bytes})")


_active = {}  # device -> open track() blocks, outermost first: an inner block resets the peak counter


@contextmanager
def track(device=None):
    """Measures the block: peak and retained bytes (exact), and RSS before/after/peak.

    Blocks nest: an inner block resets the core's peak counter, so it first hands the peak seen
    so far to the blocks around it and, when it ends, its own peak."""
    index = _check_device(device)
    active = _active.setdefault(index, [])
    t = Tracked()
    now = _counters(index)
    for outer in active:
        outer._seen_peak = max(outer._seen_peak, now["peak_bytes"])
    _reset_peak(index)
    t.start_bytes = now["allocated_bytes"]
    t.rss_start = rss_bytes()
    if not any(_active.values()):
        reset_rss_peak()
    active.append(t)
    try:
        yield t
    finally:
        active.remove(t)
        end = _counters(index)
        t.end_bytes = end["allocated_bytes"]
        t.peak_bytes = max(t._seen_peak, end["peak_bytes"], t.start_bytes)
        for outer in active:
            outer._seen_peak = max(outer._seen_peak, t.peak_bytes)
        t.rss_end = rss_bytes()
        t.rss_peak = rss_peak_bytes()
