"""Exact memory accounting: every tensor byte comes from the core's allocator, which counts it."""

from . import _C


def stats():
    """{'allocated_bytes', 'peak_bytes', 'reserved_bytes', 'cached_bytes'} for the CPU."""
    return _C.memory_stats()


def allocated():
    return _C.memory_stats()["allocated_bytes"]


def peak():
    return _C.memory_stats()["peak_bytes"]


def reset_peak():
    _C.reset_peak_memory()


def empty_cache():
    """Returns cached free blocks to the operating system."""
    _C.empty_cache()
