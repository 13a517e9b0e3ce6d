"""The same measurements on CUDA, when there is a GPU, CuPy and a minigrad built with its CUDA
backend; otherwise the suite says which of the three is missing.

Timed with CUDA events on the null stream, where minigrad (CuPy's current stream), torch and
CuPy all launch: a sample is the device time from an event before a loop of calls to one after
it, with no synchronisation in between, as torch.cuda's own benchmarks time. When the host cannot
launch as fast as the device runs, the device waits and the wait is in the time: per-op overhead
shows up honestly. GB/s figures are compared with the device's own copy bandwidth (a
device-to-device copy of 256 MiB, measured the same way)."""


from . import train
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


def event_timer(fn, loops):
    """Seconds per call of `fn`, by CUDA events around `loops` calls."""
    import cupy

    start, end = cupy.cuda.Event(), cupy.cuda.Event()
    start.record()
    for _ in range(loops):
        fn()
    end.record()
    end.synchronize()
    return cupy.cuda.get_elapsed_time(start, end) / 1e3 / loops


def event_median_us(fn, loops, rounds=7):
    """Microseconds per call of `fn`: after one warm-up call, the median over `rounds` of
    `event_timer` samples of `loops` calls (the scripts/gpu-probe-*.py probes' measure)."""
    import statistics

    fn()
    return statistics.median(event_timer(fn, loops) for _ in range(rounds)) * 1e6


def device_copy_gbps(nbytes=256 << 20):
    """The device's copy bandwidth (bytes read + written per second), the best of 5."""
    import cupy

    src = cupy.ones(nbytes // 4, dtype=cupy.float32)
    dst = cupy.empty_like(src)
    dst[...] = src
    best = min(event_timer(lambda: dst.__setitem__(Ellipsis, src), 10) for _ in range(5))
    return 2 * nbytes / best / 1e9


# name -> (fn on (module, a, b), shapes of a and b, bytes moved per call, flops per call or None)
def _elementwise(n):
    rows = n // 1000
    return {
        f"add {n:.0e}": (lambda m, a, b: a + b, (n,), (n,), 12 * n, None),
        f"mul_ (in place) {n:.0e}": (lambda m, a, b: a.mul_(1.0000001), (n,), (1,), 8 * n, None),
        f"relu {n:.0e}": (lambda m, a, b: a.relu(), (n,), (1,), 8 * n, None),
        f"relu_ (in place) {n:.0e}": (lambda m, a, b: a.relu_(), (n,), (1,), 8 * n, None),
        f"tanh {n:.0e}": (lambda m, a, b: a.tanh(), (n,), (1,), 8 * n, None),
        f"sigmoid {n:.0e}": (lambda m, a, b: a.sigmoid(), (n,), (1,), 8 * n, None),
        f"exp {n:.0e}": (lambda m, a, b: a.exp(), (n,), (1,), 8 * n, None),
        f"sum {n:.0e}": (lambda m, a, b: a.sum(), (n,), (1,), 4 * n, None),
        f"amax(dim=-1) {rows}x1000": (lambda m, a, b: a.amax(dim=-1), (rows, 1000), (1,), 4 * n, None),
        f"softmax(dim=-1) {rows}x1000": (lambda m, a, b: m.softmax(a, dim=-1), (rows, 1000), (1,), 8 * n, None),
        # few outputs over a long axis: the split pass's column tiles (one launch)
        f"sum(dim=0) {rows}x1000": (lambda m, a, b: a.sum(dim=0), (rows, 1000), (1,), 4 * n, None),
    }


def _conv_ops(quick):
    """conv2d forward (im2col + cuBLAS on minigrad's side; CuPy has no conv2d: left out)."""
    n, c, hw = (16, 64, 32) if quick else (32, 64, 56)
    flops = 2 * n * c * hw * hw * c * 9
    return {
        f"conv2d {n}x{c}x{hw}x{hw} 3x3 pad 1": (
            lambda m, a, b: m.nn.functional.conv2d(a, b, padding=1), (n, c, hw, hw), (c, c, 3, 3), None, flops),
    }


def _ops(quick):
    sizes = (1_000_000,) if quick else (1_000_000, 10_000_000, 100_000_000)
    out = {}
    for n in sizes:
        out.update(_elementwise(n))
    for side in ((1024,) if quick else (1024, 4096, 8192)):
        out[f"matmul {side}"] = (lambda m, a, b: a @ b, (side, side), (side, side), None, 2 * side**3)
    # a small product: the per-op cost of the cuBLAS call (raw pointers, no CuPy arrays)
    out["matmul 64 (per-op)"] = (lambda m, a, b: a @ b, (64, 64), (64, 64), None, 2 * 64**3)
    out.update(_conv_ops(quick))
    out["add 1 element (per-op overhead)"] = (lambda m, a, b: a + b, (1,), (1,), None, None)
    return out


def cases(ctx):
    reasons = why_not(ctx)
    if reasons:
        raise Skip("; ".join(reasons))
    copy_gbps = device_copy_gbps()
    out = []
    for name, (fn, sa, sb, nbytes, flops) in _ops(ctx.quick).items():
        out.append(TimeCase(name=f"cuda {name}", params={"op": name, "device": "cuda"}, bytes=nbytes, flops=flops,
                            timer=event_timer, copy_gbps=copy_gbps,
                            build=lambda ctx, fn=fn, sa=sa, sb=sb: _build(ctx, fn, sa, sb)))
    out.append(TimeCase(name="cuda MLP 784-256-256-10 SGD step b64", params={"model": "mlp", "batch": 64, "device": "cuda"},
                        flops=3 * 2 * 64 * (784 * 256 + 256 * 256 + 256 * 10), timer=event_timer,
                        build=lambda ctx: _build_step(ctx, "mlp", (64, 784))))
    out.append(TimeCase(name="cuda conv net SGD step b64", params={"model": "convnet", "batch": 64, "device": "cuda"},
                        timer=event_timer, build=lambda ctx: _build_step(ctx, "convnet", (64, 1, 8, 8))))
    batch = 64
    out.append(TimeCase(name=f"cuda conv net train step batch {batch} 3x32x32", params={"op": "conv net train", "device": "cuda"},
                        timer=event_timer, build=lambda ctx: _build_conv_train(ctx, batch)))
    return out


def _conv_net(nn):
    return nn.Sequential(
        nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(64 * 8 * 8, 10),
    )


def _build_conv_train(ctx, batch):
    """One SGD step (forward, MSE loss, backward, update) of a small conv net."""
    x, y = random((batch, 3, 32, 32), 0), random((batch, 10), 1)
    fns = {}
    for lib in ctx.libs:
        if lib == "numpy":
            continue
        m = ctx.module(lib)
        net = _conv_net(m.nn).cuda()
        opt = m.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        xx, yy = m.from_numpy(x.copy()).cuda(), m.from_numpy(y.copy()).cuda()

        def step(m=m, net=net, opt=opt, xx=xx, yy=yy):
            opt.zero_grad()
            m.nn.functional.mse_loss(net(xx), yy).backward()
            opt.step()

        fns[lib] = step
    return fns


def _build(ctx, op, shape_a, shape_b):
    a, b = random(shape_a, 0), random(shape_b, 1)
    fns = {}
    for lib in ctx.libs:
        if lib == "numpy":  # on the GPU, CuPy takes NumPy's place
            import cupy

            x, y = cupy.asarray(a), cupy.asarray(b)
            cp = _CupyAsModule(cupy)
            try:
                op(cp, x.copy(), y)
            except (AttributeError, TypeError):  # an op CuPy spells differently: left out
                continue
            fns["cupy"] = lambda x=x, y=y, cp=cp: op(cp, x, y)
            continue
        m = ctx.module(lib)
        x, y = m.from_numpy(a.copy()).cuda(), m.from_numpy(b.copy()).cuda()
        fns[lib] = lambda m=m, x=x, y=y: op(m, x, y)
    return fns


def _build_step(ctx, model, shape):
    """The train suite's SGD step (zero_grad, forward, cross-entropy, backward, step) on cuda;
    skipped with the reason when a layer it needs does not run on minigrad's CUDA backend yet."""
    fns = train._build(ctx, model, shape, device="cuda")
    try:
        fns["minigrad"]()
    except (NotImplementedError, RuntimeError) as e:
        raise Skip(f"minigrad's CUDA backend cannot run this step yet ({type(e).__name__}: {e})") from e
    return fns


class _CupyAsModule:
    """CuPy under the torch-style names the cases use (softmax; the rest are CuPy's own)."""

    def __init__(self, cupy):
        self.cupy = cupy

    def softmax(self, a, dim):
        e = self.cupy.exp(a - a.max(axis=dim, keepdims=True))
        return e / e.sum(axis=dim, keepdims=True)
