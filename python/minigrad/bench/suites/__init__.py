"""The suites `minigrad bench` runs, by name, in this order. Each module has `cases(ctx)`,
returning the cases to measure or raising `Skip` with the reason it cannot run here."""

from . import conv, elementwise, gpu, matmul, memory, overhead, reduce, train
from ._case import MemoryCase, Skip, TimeCase  # noqa: F401

SUITES = {
    "elementwise": elementwise,
    "reduce": reduce,
    "matmul": matmul,
    "conv": conv,
    "overhead": overhead,
    "train": train,
    "memory": memory,
    "gpu": gpu,
}
