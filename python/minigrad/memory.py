"""Exact memory accounting: every tensor byte comes from the core's allocator, which counts it.

    with minigrad.memory.track() as t:
        loss = model(x).sum(); loss.backward()
    t.peak_bytes, t.retained_bytes      # exact, from the allocator's counters

The per-device functions mirror `torch.cuda.memory_allocated(device)` and friends. This build
computes on the CPU only, so the device argument is validated and must name the CPU.
"""

import os
import resource
from contextlib import contextmanager

from . import _C
from ._cuda_probe import require as _require_cuda
from ._device import device as _device


def _check_device(device):
    """Parses `device` as torch does (typos fail with torch's words); only the CPU is tracked.
    A CUDA device first says why it is unavailable, when it is."""
    if device is None:
        return
    d = device if isinstance(device, _device) else _device(device)
    if d.type == "cuda":
        _require_cuda(d.index)
    if d.type != "cpu":
        raise RuntimeError(
            f"minigrad.memory: no memory is tracked on device '{d}'; this build computes on the CPU only"
        )


def stats(device=None):
    """{'allocated_bytes', 'peak_bytes', 'reserved_bytes', 'cached_bytes'} for the device."""
    _check_device(device)
    return _C.memory_stats()


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
    _check_device(device)
    _C.reset_peak_memory()


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


_active = []  # open track() blocks, outermost first: an inner block resets the peak counter


@contextmanager
def track(device=None):
    """Measures the block: peak and retained bytes (exact), and RSS before/after/peak.

    Blocks nest: an inner block resets the core's peak counter, so it first hands the peak seen
    so far to the blocks around it and, when it ends, its own peak."""
    _check_device(device)
    t = Tracked()
    now = _C.memory_stats()
    for outer in _active:
        outer._seen_peak = max(outer._seen_peak, now["peak_bytes"])
    _C.reset_peak_memory()
    t.start_bytes = now["allocated_bytes"]
    t.rss_start = rss_bytes()
    if not _active:
        reset_rss_peak()
    _active.append(t)
    try:
        yield t
    finally:
        _active.remove(t)
        end = _C.memory_stats()
        t.end_bytes = end["allocated_bytes"]
        t.peak_bytes = max(t._seen_peak, end["peak_bytes"], t.start_bytes)
        for outer in _active:
            outer._seen_peak = max(outer._seen_peak, t.peak_bytes)
        t.rss_end = rss_bytes()
        t.rss_peak = rss_peak_bytes()
