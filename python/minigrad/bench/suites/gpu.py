"""The same measurements on CUDA, when there is a GPU, CuPy and a minigrad built with its CUDA
backend; otherwise the suite says which of the three is missing."""

from ._case import Skip, TimeCase, random


def why_not(ctx):
    """Reasons the GPU suite cannot run here (empty when it can)."""
    reasons = []
    try:
        import cupy
        try:
            if cupy.cuda.runtime.getDeviceCount() < 1:
                reasons.append("no CUDA device visible to CuPy")
        except Exception as e:  # CuPy raises its own CUDARuntimeError without a driver
            reasons.append(f"no CUDA device ({type(e).__name__}: {e})")
    except ImportError:
        reasons.append("CuPy is not installed (pip install minigrad[cuda])")
    cuda = getattr(ctx.module("minigrad"), "cuda", None)
    if cuda is None or not getattr(cuda, "is_available", lambda: False)():
        reasons.append("this minigrad has no CUDA backend (minigrad.cuda.is_available() is not True)")
    return reasons


def cases(ctx):
    reasons = why_not(ctx)
    if reasons:
        raise Skip("; ".join(reasons))
    out = []
    for n in ((1_000_000,) if ctx.quick else (1_000_000, 10_000_000)):
        out.append(TimeCase(name=f"cuda add {n}", params={"op": "add", "numel": n, "device": "cuda"}, bytes=12 * n,
                            build=lambda ctx, n=n: _build(ctx, lambda a, b: a + b, (n,))))
    for n in ((1024,) if ctx.quick else (1024, 4096)):
        out.append(TimeCase(name=f"cuda matmul {n}", params={"n": n, "device": "cuda"}, flops=2 * n**3,
                            build=lambda ctx, n=n: _build(ctx, lambda a, b: a @ b, (n, n))))
    return out


def _build(ctx, op, shape):
    """Each call synchronises its device, so the time is the kernel's, not the launch's."""
    a, b = random(shape, 0), random(shape, 1)
    fns = {}
    for lib in ctx.libs:
        if lib == "numpy":  # on the GPU, CuPy takes NumPy's place
            import cupy

            x, y = cupy.asarray(a), cupy.asarray(b)
            fns["cupy"] = lambda x=x, y=y: (op(x, y), cupy.cuda.Device().synchronize())
            continue
        m = ctx.module(lib)
        x, y = m.from_numpy(a.copy()).cuda(), m.from_numpy(b.copy()).cuda()
        fns[lib] = lambda m=m, x=x, y=y: (op(x, y), m.cuda.synchronize())
    return fns
