"""Peak and retained bytes of one forward+backward, `inplace=True` against `inplace=False`, and,
on the nn MLP, activation checkpointing (`utils.checkpoint.checkpoint_sequential`, non-reentrant,
about sqrt(depth) segments) against both: the two ways to trade for activation memory, side by side.

minigrad's figures are exact (`minigrad.memory.track()`: every tensor byte goes through the
core's counting allocator) and cross-checked with the process's resident memory; torch's come
from its profiler's allocation events (`profile_memory=True`), summed in time order."""

import ctypes
import gc
import os
import sys
from contextlib import contextmanager

from . import models
from ._case import MemoryCase, random, to_lib


def cases(ctx):
    # activation-dominated: a batch wider than the layers, as in training on large batches
    depth, width, batch = (8, 256, 1024) if ctx.quick else (16, 512, 2048)
    out = []
    for inplace in (False, True):
        out.append(MemoryCase(
            name=f"MLP tensors {depth}x{width} b{batch} inplace={inplace}",
            params={"model": "mlp_tensor_ops", "depth": depth, "width": width, "batch": batch, "inplace": inplace},
            build=lambda ctx, i=inplace: _build_tensor_mlp(ctx, depth, width, batch, i),
        ))
    segments = max(2, round(depth ** 0.5))
    for inplace, checkpoint in ((False, 0), (True, 0), (False, segments)):
        name = f"MLP nn {depth}x{width} b{batch} " + (f"checkpoint={checkpoint}" if checkpoint else f"inplace={inplace}")
        out.append(MemoryCase(
            name=name,
            params={"model": "mlp_nn", "depth": depth, "width": width, "batch": batch, "inplace": inplace,
                    "checkpoint_segments": checkpoint},
            build=lambda ctx, i=inplace, c=checkpoint: _build_nn(ctx, "mlp", (batch, width), i, depth=depth,
                                                                 width=width, checkpoint_segments=c),
        ))
    for inplace in (False, True):
        out.append(MemoryCase(
            name=f"conv net b64 inplace={inplace}",
            params={"model": "convnet", "batch": 64, "inplace": inplace},
            build=lambda ctx, i=inplace: _build_nn(ctx, "convnet", (64, 1, 8, 8), i),
        ))
    return out


def _build_tensor_mlp(ctx, depth, width, batch, inplace):
    """Plain tensor ops (h = relu(h @ w)), so this case runs before minigrad.nn exists."""
    x = random((batch, width), 0)
    ws = [random((width, width), 1 + i) * (1 / width) ** 0.5 for i in range(depth)]
    fns = {}
    for lib in ctx.libs:
        if lib == "numpy":
            continue
        xt = to_lib(lib, ctx, x)
        wt = [to_lib(lib, ctx, w, requires_grad=True) for w in ws]

        def step(xt=xt, wt=wt):
            h = xt
            for w in wt:
                h = h @ w
                h = h.relu_() if inplace else h.relu()
            h.sum().backward()
        fns[lib] = _measured(ctx, lib, step, wt)
    return fns


def _build_nn(ctx, model, shape, inplace, depth=0, width=0, checkpoint_segments=0):
    mg = ctx.module("minigrad")
    models.require(mg, ("nn.Module", "nn.Sequential", "nn.Linear", "nn.ReLU") if model == "mlp" else models.convnet_needs(mg))
    x = random(shape)
    fns = {}
    for lib in ctx.libs:
        if lib == "numpy":
            continue
        m = ctx.module(lib)
        if model == "mlp":
            net = models.mlp(m, sizes=(width,) * (depth + 1), inplace=inplace)
        else:
            net = models.convnet(m, inplace=inplace, adaptive_pool=models.adaptive_pool(mg))
        xt = to_lib(lib, ctx, x)
        if checkpoint_segments:
            models.require(mg, ("utils.checkpoint.checkpoint_sequential",), what="minigrad.utils.checkpoint")

            def step(net=net, xt=xt, ckpt=m.utils.checkpoint):
                ckpt.checkpoint_sequential(net, checkpoint_segments, xt, use_reentrant=False).sum().backward()
        else:
            def step(net=net, xt=xt):
                net(xt).sum().backward()
        fns[lib] = _measured(ctx, lib, step, list(net.parameters()))
    return fns


def _measured(ctx, lib, step, params):
    """A callable that runs `step` once to warm up, then once measured; returns bytes. The
    gradients are cleared before each run, so `retained` counts the new gradients."""
    def measure():
        for _ in range(2):
            for p in params:
                p.grad = None
            gc.collect()
            result = _minigrad_bytes(ctx, step) if lib == "minigrad" else _torch_bytes(step)
        return result
    return measure


def _minigrad_bytes(ctx, step):
    mem = ctx.module("minigrad").memory
    mem.empty_cache()  # fresh blocks fault in pages, so resident memory follows the exact count
    _malloc_trim()
    with mem.track() as t:
        step()
    return {
        "peak_bytes": t.peak_delta_bytes, "retained_bytes": t.retained_bytes, "source": "minigrad.memory.track",
        "rss_peak_delta_bytes": t.rss_peak - t.rss_start, "rss_retained_bytes": t.rss_end - t.rss_start,
    }


def _malloc_trim():
    """Hands glibc's free heap pages back to the OS, so the next allocations show up in RSS."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _torch_bytes(step):
    from torch.profiler import ProfilerActivity, profile

    with _quiet_stderr(), profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        step()
    events = [e for e in prof.profiler.kineto_results.events() if e.name() == "[memory]"]
    current = peak = 0
    for e in sorted(events, key=lambda e: e.start_ns()):
        current += e.nbytes()
        peak = max(peak, current)
    return {"peak_bytes": peak, "retained_bytes": current, "source": "torch.profiler profile_memory"}


@contextmanager
def _quiet_stderr():
    """The profiler's C++ side logs start/stop lines to fd 2; keep the bench's output readable."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)
