"""One SGD training step (zero_grad, forward, cross-entropy, backward, step), batch 64:
the MLP 784-256-256-10 and the examples' conv net on 8x8 digits."""

import numpy as np

from . import models
from ._case import TimeCase, random, to_lib


def cases(ctx):
    mg = ctx.module("minigrad")
    models.require(mg, ("nn.Module", "nn.Sequential", "nn.Linear", "nn.ReLU", "nn.functional.cross_entropy", "optim.SGD"),
                   what="minigrad.nn / minigrad.optim")
    return [
        TimeCase(name="MLP 784-256-256-10 SGD step b64", params={"model": "mlp", "batch": 64, "sizes": [784, 256, 256, 10]},
                 flops=3 * 2 * 64 * (784 * 256 + 256 * 256 + 256 * 10),
                 build=lambda ctx: _build(ctx, "mlp", (64, 784))),
        TimeCase(name="conv net SGD step b64", params={"model": "convnet", "batch": 64, "input": [1, 8, 8]},
                 build=lambda ctx: _build(ctx, "convnet", (64, 1, 8, 8))),
        TimeCase(name="Adam step 200 params (100 x 128x128 + 100 x 128)",
                 params={"optimizer": "Adam", "shapes": "100 x [128, 128] + 100 x [128]"},
                 build=lambda ctx: _build_step(ctx, "Adam", [(128, 128), (128,)] * 100)),
        TimeCase(name="AdamW amsgrad step 400 params x 256", params={"optimizer": "AdamW", "shapes": "400 x [256]"},
                 build=lambda ctx: _build_step(ctx, "AdamW", [(256,)] * 400, amsgrad=True)),
        TimeCase(name="SGD momentum step 200 params (100 x 128x128 + 100 x 128)",
                 params={"optimizer": "SGD", "shapes": "100 x [128, 128] + 100 x [128]"},
                 build=lambda ctx: _build_step(ctx, "SGD", [(128, 128), (128,)] * 100, momentum=0.9)),
    ]


def _build(ctx, model, shape, device="cpu"):
    """{lib: one SGD step} of `model` on `device` (the gpu suite builds its steps here too)."""
    mg = ctx.module("minigrad")
    if model == "convnet":
        models.require(mg, models.convnet_needs(mg))
    x = random(shape)
    y = np.random.default_rng(1).integers(0, 10, shape[0])
    fns = {}
    for lib in ctx.libs:
        if lib == "numpy":
            continue
        m = ctx.module(lib)
        m.manual_seed(0)
        net = models.mlp(m) if model == "mlp" else models.convnet(m, adaptive_pool=models.adaptive_pool(mg))
        net = net.to(device)
        opt = m.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
        xt, yt = to_lib(lib, ctx, x).to(device), m.from_numpy(y.copy()).to(device)

        def step(m=m, net=net, opt=opt, xt=xt, yt=yt):
            opt.zero_grad()
            loss = m.nn.functional.cross_entropy(net(xt), yt)
            loss.backward()
            opt.step()
        fns[lib] = step
    return fns


def _build_step(ctx, name, shapes, **kwargs):
    """{lib: one optimizer step} over many parameters with fixed gradients (the step alone: the
    case for a fused multi-tensor step, where a per-parameter chain of ops pays per tensor)."""
    values = [random(shape) for shape in shapes]
    grads = [random(shape, seed=1) for shape in shapes]
    fns = {}
    for lib in ctx.libs:
        if lib == "numpy":
            continue
        m = ctx.module(lib)
        params = [to_lib(lib, ctx, v).requires_grad_() for v in values]
        for p, g in zip(params, grads):
            p.grad = to_lib(lib, ctx, g)
        opt = getattr(m.optim, name)(params, lr=1e-3, **kwargs)
        fns[lib] = opt.step
    return fns
