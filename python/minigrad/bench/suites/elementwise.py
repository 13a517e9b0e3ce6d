"""Unary, binary and broadcast ops, out-of-place vs in-place, 1e3 to 1e7 float32 elements.
Bandwidth-bound: each case reports GB/s and its share of the machine's copy bandwidth."""

from collections import namedtuple

import numpy as np

from ._case import TimeCase, random, size_label, to_lib

FULL_SIZES = (1_000, 10_000, 100_000, 1_000_000, 10_000_000)
QUICK_SIZES = (1_000, 1_000_000)

# `other`: None (unary), "random", "signs" (+-1, so repeated in-place multiplies keep magnitudes)
# or "row" (a 1000-wide row broadcast over the rows). In-place ops are repeated thousands of
# times on the same data, so each is chosen to keep values finite: tanh shrinks, relu is idempotent.
Op = namedtuple("Op", "other torch_out torch_in numpy_out numpy_in")
OPS = {
    "relu": Op(None, lambda m, a: m.relu(a), lambda m, a: a.relu_(),
               lambda a: np.maximum(a, 0), lambda a: np.maximum(a, 0, out=a)),
    "tanh": Op(None, lambda m, a: m.tanh(a), lambda m, a: a.tanh_(),
               np.tanh, lambda a: np.tanh(a, out=a)),
    "add": Op("random", lambda m, a, b: m.add(a, b), lambda m, a, b: a.add_(b),
              np.add, lambda a, b: np.add(a, b, out=a)),
    "mul": Op("signs", lambda m, a, b: m.mul(a, b), lambda m, a, b: a.mul_(b),
              np.multiply, lambda a, b: np.multiply(a, b, out=a)),
    "add_row": Op("row", lambda m, a, b: m.add(a, b), lambda m, a, b: a.add_(b),
                  np.add, lambda a, b: np.add(a, b, out=a)),
}


# Transcendentals and their backward formulas, out of place only (torch has no in-place gelu).
# `positive` feeds log a strictly positive input; `backward` times the gradient alone:
# autograd.grad of the saved graph with retain_graph (the engine plus the fused formula).
Math = namedtuple("Math", "torch numpy positive backward")
MATH = {
    "exp": Math(lambda m, a: m.exp(a), np.exp, False, False),
    "log": Math(lambda m, a: m.log(a), np.log, True, False),
    "sigmoid": Math(lambda m, a: m.sigmoid(a), lambda a: 1 / (1 + np.exp(-a)), False, False),
    "gelu": Math(lambda m, a: m.nn.functional.gelu(a), None, False, False),
    "silu": Math(lambda m, a: m.nn.functional.silu(a), lambda a: a / (1 + np.exp(-a)), False, False),
    "tanh bwd": Math(lambda m, a: m.tanh(a), None, False, True),
    "sigmoid bwd": Math(lambda m, a: m.sigmoid(a), None, False, True),
    "gelu bwd": Math(lambda m, a: m.nn.functional.gelu(a), None, False, True),
    "silu bwd": Math(lambda m, a: m.nn.functional.silu(a), None, False, True),
}
MATH_SIZES = (10_000, 100_000, 1_000_000, 10_000_000)
MATH_QUICK_SIZES = (1_000_000,)


def _traffic(op, n):
    """Bytes read plus written per call (float32)."""
    if op.other is None:
        return 2 * 4 * n
    if op.other == "row":
        return 2 * 4 * n + 4 * min(n, 1000)
    return 3 * 4 * n


def cases(ctx):
    sizes = QUICK_SIZES if ctx.quick else FULL_SIZES
    out = []
    for name, op in OPS.items():
        for n in (s for s in sizes if s <= ctx.max_size):
            for inplace in (False, True):
                out.append(TimeCase(
                    name=f"{name}{'_' if inplace else ''} {size_label(n)}",
                    params={"op": name, "numel": n, "inplace": inplace, "dtype": "float32"},
                    bytes=_traffic(op, n),
                    build=lambda ctx, op=op, n=n, inplace=inplace: _build(ctx, op, n, inplace),
                ))
    for name, op in MATH.items():
        for n in (s for s in (MATH_QUICK_SIZES if ctx.quick else MATH_SIZES) if s <= ctx.max_size):
            out.append(TimeCase(
                name=f"{name} {size_label(n)}",
                params={"op": name, "numel": n, "inplace": False, "dtype": "float32", "backward": op.backward},
                # forward: read x, write y; backward: read grad and the saved tensor, write the result
                bytes=(3 if op.backward else 2) * 4 * n,
                build=lambda ctx, op=op, n=n: _build_math(ctx, op, n),
            ))
    return out


def _build_math(ctx, op, n):
    a = random(n, 0)
    if op.positive:
        a = np.abs(a) + np.float32(0.1)
    g = random(n, 1)
    fns = {}
    for lib in ctx.libs:
        if lib == "numpy":
            if op.numpy is not None and not op.backward:
                fns[lib] = lambda f=op.numpy, x=a.copy(): f(x)
            continue
        m = ctx.module(lib)
        if op.backward:
            x = to_lib(lib, ctx, a, requires_grad=True)
            y, gy = op.torch(m, x), to_lib(lib, ctx, g)
            fns[lib] = lambda m=m, x=x, y=y, gy=gy: m.autograd.grad(y, x, gy, retain_graph=True)
        else:
            fns[lib] = lambda f=op.torch, m=m, x=to_lib(lib, ctx, a): f(m, x)
    return fns


def _operands(op, n):
    a = random(n, 0)
    if op.other is None:
        return a, None
    if op.other == "signs":
        return a, np.where(random(n, 1) >= 0, 1.0, -1.0).astype(np.float32)
    if op.other == "row":
        cols = min(n, 1000)
        return a.reshape(n // cols, cols), random(cols, 1)
    return a, random(n, 1)


def _build(ctx, op, n, inplace):
    a, b = _operands(op, n)
    fns = {}
    for lib in ctx.libs:
        x = to_lib(lib, ctx, a)
        y = None if b is None else to_lib(lib, ctx, b)
        if lib == "numpy":
            f = op.numpy_in if inplace else op.numpy_out
            fns[lib] = (lambda f=f, x=x: f(x)) if y is None else (lambda f=f, x=x, y=y: f(x, y))
        else:
            f, m = (op.torch_in if inplace else op.torch_out), ctx.module(lib)
            fns[lib] = (lambda f=f, m=m, x=x: f(m, x)) if y is None else (lambda f=f, m=m, x=x, y=y: f(m, x, y))
    return fns
