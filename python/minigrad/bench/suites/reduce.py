"""Reductions over all elements and along the last dim, and softmax (bandwidth-bound)."""

import numpy as np

from ._case import TimeCase, random, size_label, to_lib

FULL_SIZES = (1_000, 100_000, 1_000_000, 10_000_000)
QUICK_SIZES = (1_000_000,)


def _np_softmax(a):
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# name -> (torch-style fn on (module, tensor), numpy fn); inputs are (n/1000, 1000)
OPS = {
    "sum": (lambda m, a: a.sum(), lambda a: a.sum()),
    "sum_dim-1": (lambda m, a: a.sum(dim=-1), lambda a: a.sum(axis=-1)),
    "mean": (lambda m, a: a.mean(), lambda a: a.mean()),
    "amax_dim-1": (lambda m, a: a.amax(dim=-1), lambda a: a.max(axis=-1)),
    "var": (lambda m, a: a.var(), lambda a: a.var(ddof=1)),
    "softmax_dim-1": (lambda m, a: m.softmax(a, dim=-1), _np_softmax),
}


def cases(ctx):
    sizes = QUICK_SIZES if ctx.quick else FULL_SIZES
    out = []
    for name, (tf, nf) in OPS.items():
        for n in (s for s in sizes if s <= ctx.max_size):
            out.append(TimeCase(
                name=f"{name} {size_label(n)}",
                params={"op": name, "numel": n, "shape": [max(1, n // 1000), min(n, 1000)], "dtype": "float32"},
                bytes=(2 if name.startswith("softmax") else 1) * 4 * n,
                build=lambda ctx, tf=tf, nf=nf, n=n: _build(ctx, tf, nf, n),
            ))
    return out


def _build(ctx, tf, nf, n):
    a = random(n).reshape(max(1, n // 1000), min(n, 1000))
    fns = {}
    for lib in ctx.libs:
        x = to_lib(lib, ctx, a)
        if lib == "numpy":
            fns[lib] = lambda x=x: nf(x)
        else:
            fns[lib] = lambda x=x, m=ctx.module(lib): tf(m, x)
    return fns
