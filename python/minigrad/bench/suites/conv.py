"""Convolution and pooling (minigrad.nn.functional vs torch), and the examples' conv net
forward and forward+backward, on 8x8 inputs like the digits of the examples."""

from . import models
from ._case import Skip, TimeCase, random, to_lib


def cases(ctx):
    mg = ctx.module("minigrad")
    models.require(mg, ("nn.functional.conv2d",))
    shapes = [(64, 16, 16, 8)] if ctx.quick else [(64, 16, 16, 8), (32, 3, 32, 32)]
    out = []
    for n, cin, cout, hw in shapes:
        flops = 2 * n * cout * hw * hw * cin * 9
        for backward in (False, True):
            out.append(TimeCase(
                name=f"conv2d {n}x{cin}x{hw}x{hw}->{cout} 3x3{' fwd+bwd' if backward else ''}",
                params={"batch": n, "in": cin, "out": cout, "hw": hw, "kernel": 3, "padding": 1,
                        "backward": backward},
                flops=flops * (3 if backward else 1),
                build=lambda ctx, s=(n, cin, cout, hw), b=backward: _build_conv(ctx, s, b),
            ))
    out.append(TimeCase(name="max_pool2d 64x16x8x8 k2", params={"batch": 64, "channels": 16, "hw": 8, "kernel": 2},
                        build=_build_pool))
    for backward in (False, True):
        out.append(TimeCase(
            name=f"conv net batch 64{' fwd+bwd' if backward else ' fwd'}", params={"batch": 64, "backward": backward},
            build=lambda ctx, b=backward: _build_net(ctx, b),
        ))
    return out


def _torchlike(ctx):
    return [lib for lib in ctx.libs if lib != "numpy"]


def _build_conv(ctx, shape, backward):
    n, cin, cout, hw = shape
    x, w = random((n, cin, hw, hw), 0), random((cout, cin, 3, 3), 1) * 0.1
    fns = {}
    for lib in _torchlike(ctx):
        m = ctx.module(lib)
        xt, wt = to_lib(lib, ctx, x, requires_grad=backward), to_lib(lib, ctx, w, requires_grad=backward)
        if backward:
            def step(m=m, xt=xt, wt=wt):
                xt.grad = wt.grad = None
                m.nn.functional.conv2d(xt, wt, padding=1).sum().backward()
            fns[lib] = step
        else:
            fns[lib] = lambda m=m, xt=xt, wt=wt: m.nn.functional.conv2d(xt, wt, padding=1)
    return fns


def _build_pool(ctx):
    models.require(ctx.module("minigrad"), ("nn.functional.max_pool2d",))
    x = random((64, 16, 8, 8))
    return {lib: (lambda m=ctx.module(lib), xt=to_lib(lib, ctx, x): m.nn.functional.max_pool2d(xt, 2))
            for lib in _torchlike(ctx)}


def _build_net(ctx, backward):
    mg = ctx.module("minigrad")
    models.require(mg, models.convnet_needs(mg))
    x = random((64, 1, 8, 8))
    fns = {}
    for lib in _torchlike(ctx):
        m = ctx.module(lib)
        net = models.convnet(m, inplace=True, adaptive_pool=models.adaptive_pool(mg))
        xt = to_lib(lib, ctx, x)
        if backward:
            def step(net=net, xt=xt):
                net.zero_grad()
                net(xt).sum().backward()
            fns[lib] = step
        else:
            def fwd(m=m, net=net, xt=xt):
                with m.no_grad():
                    net(xt)
            fns[lib] = fwd
    if not fns:
        raise Skip("no library to compare")
    return fns
