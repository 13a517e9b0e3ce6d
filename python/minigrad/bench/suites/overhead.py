"""What one op costs beyond its arithmetic: dispatch on 1- and 100-element tensors, with and
without autograd, and a chain of 100 small ops forward and backward."""

import numpy as np

from ._case import TimeCase, random, to_lib


def cases(ctx):
    out = []
    for n in (1, 100):
        for grad in (False, True):
            out.append(TimeCase(
                name=f"add {n} elem{' +autograd' if grad else ''}",
                params={"op": "add", "numel": n, "requires_grad": grad},
                build=lambda ctx, n=n, grad=grad: _build_add(ctx, n, grad),
            ))
    out.append(TimeCase(
        name="chain 100 ops fwd+bwd", params={"ops": 100, "numel": 100, "requires_grad": True},
        build=_build_chain,
    ))
    return out


def _build_add(ctx, n, grad):
    a, b = random(n, 0), random(n, 1)
    fns = {}
    for lib in ctx.libs:
        if lib == "numpy":
            if not grad:
                x, y = a.copy(), b.copy()
                fns[lib] = lambda x=x, y=y: np.add(x, y)
            continue
        x, y = to_lib(lib, ctx, a, requires_grad=grad), to_lib(lib, ctx, b)
        fns[lib] = lambda x=x, y=y: x + y
    return fns


def _build_chain(ctx):
    a = random(100)
    fns = {}
    for lib in ctx.libs:
        if lib == "numpy":
            continue
        x = to_lib(lib, ctx, a, requires_grad=True)

        def step(x=x):
            x.grad = None
            y = x
            for _ in range(50):  # 50 x (mul, add) = 100 ops, each recorded for backward
                y = y * 1.001
                y = y + 0.1
            y.sum().backward()
        fns[lib] = step
    return fns
