"""What a suite is made of: cases, each built lazily (so only one case's data is alive at a time)
and measured by the runner."""

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np


@dataclass
class TimeCase:
    """One comparison: `build(ctx)` returns {library: zero-argument callable} for the libraries
    that have this op. `bytes` (memory traffic per call) gives GB/s; `flops` gives GFLOP/s."""

    name: str
    build: Callable
    params: dict = field(default_factory=dict)
    bytes: Optional[int] = None
    flops: Optional[int] = None
    kind: str = "time"
    # `timer(fn, loops)` -> seconds per call; None: the host clock around the calls. The GPU
    # suite times with CUDA events instead (the device's own clock, no sync between calls).
    timer: Optional[Callable] = None
    # The copy bandwidth GB/s figures are compared with, where it is not the host's (a GPU's).
    copy_gbps: Optional[float] = None


@dataclass
class MemoryCase:
    """One memory comparison: `build(ctx)` returns {library: callable returning a dict of bytes}."""

    name: str
    build: Callable
    params: dict = field(default_factory=dict)
    kind: str = "memory"


class Skip(Exception):
    """A suite or case that cannot run here; its message says why."""


def random(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape, dtype=np.float32)


def to_lib(lib, ctx, arr, requires_grad=False):
    """A copy of `arr` as a tensor of `lib` ('minigrad', 'torch' or 'numpy')."""
    arr = np.ascontiguousarray(arr).copy()
    if lib == "numpy":
        return arr
    mod = ctx.module(lib)
    t = mod.from_numpy(arr)
    return t.requires_grad_(True) if requires_grad else t


def size_label(n):
    """1000 -> '1e3', 2500000 -> '2.5e6'."""
    exp = len(str(int(n))) - 1
    mant = n / 10**exp
    return f"{mant:g}e{exp}"
