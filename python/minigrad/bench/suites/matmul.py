"""Square float32 matmul, 64 to 2048: GFLOP/s (2 n^3 flops per product)."""

from ._case import TimeCase, random, to_lib

FULL_SIZES = (64, 128, 256, 512, 1024, 2048)
QUICK_SIZES = (64, 256, 512)


def cases(ctx):
    sizes = QUICK_SIZES if ctx.quick else FULL_SIZES
    return [
        TimeCase(name=f"matmul {n}x{n}", params={"n": n, "dtype": "float32"}, flops=2 * n**3,
                 build=lambda ctx, n=n: _build(ctx, n))
        for n in sizes if n * n <= ctx.max_size
    ]


def _build(ctx, n):
    a, b = random((n, n), 0), random((n, n), 1)
    fns = {}
    for lib in ctx.libs:
        x, y = to_lib(lib, ctx, a), to_lib(lib, ctx, b)
        fns[lib] = lambda x=x, y=y: x @ y
    return fns
