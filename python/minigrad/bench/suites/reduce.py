"""Reductions over all elements and along the last dim, and softmax (bandwidth-bound)."""

import numpy as np

from ._case import TimeCase, random, size_label, to_lib

FULL_SIZES = (1_000, 100_000, 1_000_000, 10_000_000)
QUICK_SIZES = (1_000_000,)


def _np_softmax(a):
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _np_logsumexp(a, axis=-1):
    m = a.max(axis=axis, keepdims=True)
    return (m + np.log(np.exp(a - m).sum(axis=axis, keepdims=True))).squeeze(axis)


def _np_log_softmax(a):
    m = a.max(axis=-1, keepdims=True)
    return a - m - np.log(np.exp(a - m).sum(axis=-1, keepdims=True))


# name -> (torch-style fn on (module, tensor), numpy fn); inputs are (n/1000, 1000)
OPS = {
    "sum": (lambda m, a: a.sum(), lambda a: a.sum()),
    "sum_dim-1": (lambda m, a: a.sum(dim=-1), lambda a: a.sum(axis=-1)),
    "mean": (lambda m, a: a.mean(), lambda a: a.mean()),
    "amax_dim-1": (lambda m, a: a.amax(dim=-1), lambda a: a.max(axis=-1)),
    "var": (lambda m, a: a.var(), lambda a: a.var(ddof=1)),
    "softmax_dim-1": (lambda m, a: m.softmax(a, dim=-1), _np_softmax),
    # the rest of the family, along the last dim and over the outer dim (dim 0 of (n/1000, 1000))
    "mean_dim-1": (lambda m, a: a.mean(dim=-1), lambda a: a.mean(axis=-1)),
    "sum_dim0": (lambda m, a: a.sum(dim=0), lambda a: a.sum(axis=0)),
    "amin_dim-1": (lambda m, a: a.amin(dim=-1), lambda a: a.min(axis=-1)),
    "amax_dim0": (lambda m, a: a.amax(dim=0), lambda a: a.max(axis=0)),
    "argmax_dim-1": (lambda m, a: a.argmax(dim=-1), lambda a: a.argmax(axis=-1)),
    "var_dim-1": (lambda m, a: a.var(dim=-1), lambda a: a.var(axis=-1, ddof=1)),
    "norm": (lambda m, a: a.norm(), lambda a: np.linalg.norm(a)),
    "norm_dim-1": (lambda m, a: a.norm(dim=-1), lambda a: np.linalg.norm(a, axis=-1)),
    "logsumexp_dim-1": (lambda m, a: a.logsumexp(dim=-1), _np_logsumexp),
    "log_softmax_dim-1": (lambda m, a: m.log_softmax(a, dim=-1), _np_log_softmax),
}


def cases(ctx):
    sizes = QUICK_SIZES if ctx.quick else FULL_SIZES
    out = []
    for name, (tf, nf) in OPS.items():
        for n in (s for s in sizes if s <= ctx.max_size):
            out.append(TimeCase(
                name=f"{name} {size_label(n)}",
                params={"op": name, "numel": n, "shape": [max(1, n // 1000), min(n, 1000)], "dtype": "float32"},
                bytes=(2 if "softmax" in name else 1) * 4 * n,
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
