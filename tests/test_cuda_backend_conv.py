"""The CUDA backend's convolution, pooling and padding against torch (CPU) and against
minigrad's own CPU kernels; on a GPU when there is one, else on the host-emulated device
(tests/cuda_host/backend.py). conv2d runs on cuBLAS (NumPy in the emulation), so its values are
compared with torch's within float tolerances; pooling and padding kernels sum in the CPU
kernels' order, so they must equal minigrad's CPU results bit for bit."""

import pytest
import torch
import torch.nn.functional as TF

import minigrad as mg
import minigrad.nn.functional as F
from cuda_host.backend import back, cuda_device, on, same  # noqa: F401  (cuda_device: autouse fixture)


def _rand(shape, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=dtype)


def close(mine, ref):
    """float32: cuBLAS (or NumPy) against torch's CPU kernels, summed in other orders."""
    assert mine.device.type == "cuda", mine.device
    tol = dict(rtol=2e-5, atol=2e-5) if ref.dtype == torch.float32 else dict(rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(back(mine), ref, **tol)


def leaf(t):
    return on(t).requires_grad_()


def cpu_leaf(t):
    return mg.from_numpy(t.numpy().copy()).requires_grad_()


def grads(fn_t, fn_m, inputs, seed=9):
    """fn on torch leaves and on minigrad cuda leaves: (torch out, mg out, torch grads, mg grads)."""
    tl = [t.clone().requires_grad_() if t is not None else None for t in inputs]
    ml = [leaf(t) if t is not None else None for t in inputs]
    rt, rm = fn_t(*tl), fn_m(*ml)
    g = _rand(rt.shape, rt.dtype, seed)
    rt.backward(g)
    rm.backward(on(g))
    return rt, rm, [t.grad if t is not None else None for t in tl], [m.grad if m is not None else None for m in ml]


# ----- conv2d -----

# (input shape, weight shape, bias, stride, padding, dilation, groups)
CONV_CASES = [
    ((2, 3, 8, 7), (4, 3, 3, 3), True, 1, 0, 1, 1),
    ((2, 3, 9, 8), (5, 3, 3, 2), True, (2, 1), (1, 2), 1, 1),
    ((1, 4, 10, 9), (6, 2, 3, 3), False, 1, 1, (2, 1), 2),
    ((3, 4, 7, 7), (4, 1, 3, 3), True, 2, 1, 1, 4),  # depthwise
    ((2, 6, 5, 6), (3, 6, 1, 1), True, 1, 0, 1, 1),  # 1x1
    ((2, 6, 9, 9), (6, 2, 2, 3), True, (3, 2), (1, 0), (2, 3), 3),
    ((2, 3, 6, 5), (2, 3, 4, 3), False, 1, "same", 1, 1),  # even kernel: the zero-padded copy
    ((3, 7, 6), (4, 3, 3, 3), True, 1, "valid", 1, 1),  # unbatched input
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("xs,ws,bias,stride,padding,dilation,groups", CONV_CASES)
def test_conv2d_values_and_gradients(xs, ws, bias, stride, padding, dilation, groups, dtype):
    x, w = _rand(xs, dtype, 1), _rand(ws, dtype, 2)
    b = _rand((ws[0],), dtype, 3) if bias else None
    kw = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    rt, rm, gt, gm = grads(lambda x, w, b: TF.conv2d(x, w, b, **kw), lambda x, w, b: F.conv2d(x, w, b, **kw), [x, w, b])
    close(rm, rt.detach())
    assert rm.grad_fn.name() == rt.grad_fn.name()
    for m, t in zip(gm, gt):
        if t is not None:
            close(m, t)


def test_conv2d_non_contiguous_operands():
    x = _rand((2, 3, 7, 8), seed=4)
    w = _rand((4, 3, 3, 3), seed=5)
    # a transposed input, a weight seen through a permutation, a sliced batch
    mx = on(x.transpose(2, 3).contiguous()).transpose(2, 3)
    mw = on(w.permute(1, 0, 2, 3).contiguous()).permute(1, 0, 2, 3)
    assert not mx.is_contiguous() and not mw.is_contiguous()
    close(F.conv2d(mx, mw, padding=1), TF.conv2d(x, w, padding=1))
    big = _rand((5, 3, 7, 8), seed=6)
    close(F.conv2d(on(big)[1:5:2], mw, stride=2), TF.conv2d(big[1:5:2], w, stride=2))


def test_conv2d_in_chunks_of_images_matches(monkeypatch):
    """A column budget of one image's columns: every image is its own chunk, the weight
    gradient is accumulated over chunks (and over several images per chunk with two)."""
    x, w, b = _rand((5, 4, 6, 6), seed=7), _rand((6, 2, 3, 3), seed=8), _rand((6,), seed=9)
    kw = dict(padding=1, groups=2)
    for budget in ("144", "300"):  # 4·9·36 = one image; two images
        monkeypatch.setenv("MINIGRAD_CUDA_CONV_COLS", budget)
        rt, rm, gt, gm = grads(lambda x, w, b: TF.conv2d(x, w, b, **kw), lambda x, w, b: F.conv2d(x, w, b, **kw), [x, w, b])
        close(rm, rt.detach())
        for m, t in zip(gm, gt):
            close(m, t)


def test_conv2d_empty_batch():
    x, w, b = torch.zeros(0, 3, 5, 5, dtype=torch.float64), _rand((4, 3, 3, 3)), _rand((4,))
    rt, rm, gt, gm = grads(lambda x, w, b: TF.conv2d(x, w, b), lambda x, w, b: F.conv2d(x, w, b), [x, w, b])
    assert tuple(rm.shape) == (0, 4, 3, 3)
    same(gm[0], gt[0])
    same(gm[1], gt[1])  # zeros
    same(gm[2], gt[2])


def test_conv2d_double_backward_on_the_device():
    x, w = _rand((2, 2, 5, 5), seed=10), _rand((3, 2, 3, 3), seed=11)
    tx, tw = x.clone().requires_grad_(), w.clone().requires_grad_()
    mx, mw = leaf(x), leaf(w)
    for lib, f, a, b in ((torch, TF, tx, tw), (mg, F, mx, mw)):
        y = f.conv2d(a, b, padding=1)
        (gx,) = lib.autograd.grad((y * y).sum(), a, create_graph=True)
        (gx * gx).sum().backward()
    close(mw.grad, tw.grad)
    close(mx.grad, tx.grad)


def test_conv2d_errors_match_torch():
    x, w = on(_rand((1, 4, 5, 5))), on(_rand((2, 2, 3, 3)))
    with pytest.raises(RuntimeError) as e:
        F.conv2d(x, w, groups=1)
    with pytest.raises(RuntimeError) as t:
        TF.conv2d(_rand((1, 4, 5, 5)), _rand((2, 2, 3, 3)), groups=1)
    assert str(e.value) == str(t.value)
    with pytest.raises(RuntimeError, match="Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"):
        F.conv2d(x, mg.from_numpy(_rand((2, 4, 3, 3)).numpy()))
    with pytest.raises(NotImplementedError, match="not implemented for 'Long'"):
        F.conv2d(on(torch.ones(1, 1, 3, 3, dtype=torch.int64)), on(torch.ones(1, 1, 2, 2, dtype=torch.int64)))


# ----- pooling and padding: the CPU kernels' results, bit for bit -----

def both(fn, t, seed=12):
    """fn on a cuda leaf and on a CPU leaf of the same values; the outputs and input gradients
    must be equal bit for bit. Returns the cuda output and gradient, for comparing with torch."""
    m, c = leaf(t), cpu_leaf(t)
    om, oc = fn(m), fn(c)
    g = _rand(tuple(oc.shape), t.dtype, seed)
    om.backward(on(g))
    oc.backward(mg.from_numpy(g.numpy()))
    for mine, ref in ((om, oc), (m.grad, c.grad)):
        same(mine, torch.from_numpy(ref.detach().numpy().copy()))
    return om, m.grad, g


POOL_INPUT = [(2, 3, 9, 8), (3, 7, 6)]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape", POOL_INPUT)
@pytest.mark.parametrize("kw", [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), dilation=(2, 1)),
    dict(kernel_size=3, stride=2, ceil_mode=True),
    dict(kernel_size=(2, 3), stride=(3, 2), padding=(1, 1), ceil_mode=True),
])
def test_max_pool2d_values_indices_and_gradient(shape, kw, dtype):
    x = _rand(shape, dtype, 13)
    x.view(-1)[::7] = 0.25  # repeated values inside windows: the first maximum wins
    om, gm, g = both(lambda t: F.max_pool2d(t, **kw), x)
    tx = x.clone().requires_grad_()
    ref, idx = TF.max_pool2d(tx, return_indices=True, **kw)
    ref.backward(g)
    same(om, ref.detach())
    same(gm, tx.grad)
    _, mi = F.max_pool2d(on(x), return_indices=True, **kw)
    same(mi, idx)


def test_max_pool2d_ties_and_nan():
    x = torch.tensor([[[[1.0, 3.0, 3.0, float("nan")], [3.0, 2.0, 5.0, 0.0], [2.0, 2.0, 2.0, 2.0], [2.0, 2.0, 2.0, 2.0]]]])
    out, idx = F.max_pool2d(on(x), 2, return_indices=True)
    ref, ridx = TF.max_pool2d(x, 2, return_indices=True)
    same(out, ref)
    same(idx, ridx)
    both(lambda t: F.max_pool2d(t, 3, 1, 1), x)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kw", [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False),
    dict(kernel_size=(3, 2), stride=(2, 3), padding=(1, 1), ceil_mode=True),
    dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    dict(kernel_size=2, stride=1, divisor_override=3),
])
def test_avg_pool2d_values_and_gradient(kw, dtype):
    x = _rand((2, 3, 9, 8), dtype, 14)
    om, gm, g = both(lambda t: F.avg_pool2d(t, **kw), x)
    tx = x.clone().requires_grad_()
    ref = TF.avg_pool2d(tx, **kw)
    ref.backward(g)
    close(om, ref.detach())
    close(gm, tx.grad)


@pytest.mark.parametrize("size", [(3, 5), (4, 4), (9, 8), (1, 2)])
def test_adaptive_avg_pool2d(size):
    x = _rand((2, 3, 9, 8), seed=15)
    om, gm, g = both(lambda t: F.adaptive_avg_pool2d(t, size), x)
    tx = x.clone().requires_grad_()
    ref = TF.adaptive_avg_pool2d(tx, size)
    ref.backward(g)
    close(om, ref.detach())
    close(gm, tx.grad)


@pytest.mark.parametrize("mode,pad", [
    ("constant", (1, 2, 0, 1)), ("constant", (1, -2, 2, -1)), ("constant", (1, 1, 1, 1, 1, 0)),
    ("reflect", (2, 1, 1, 2)), ("reflect", (3, -1, 0, 2)), ("replicate", (3, 1, 2, 4)), ("replicate", (-1, 2, 1, 0)),
])
def test_pad_values_and_gradient(mode, pad):
    x = _rand((2, 3, 4, 5), seed=16)
    kw = dict(value=1.5) if mode == "constant" else {}
    om, gm, g = both(lambda t: F.pad(t, pad, mode=mode, **kw), x)
    tx = x.clone().requires_grad_()
    ref = TF.pad(tx, pad, mode=mode, **kw)
    ref.backward(g)
    same(om, ref.detach())
    close(gm, tx.grad)


def test_pooling_and_padding_of_non_contiguous_and_empty_inputs():
    x = _rand((3, 2, 8, 9), seed=17)
    mx = on(x.transpose(2, 3).contiguous()).transpose(2, 3)
    same(F.max_pool2d(mx, 2), TF.max_pool2d(x, 2))
    close(F.avg_pool2d(mx, 3, 2, 1), TF.avg_pool2d(x, 3, 2, 1))
    same(F.pad(mx, (1, 1, 2, 2), mode="reflect"), TF.pad(x, (1, 1, 2, 2), mode="reflect"))
    e = torch.zeros(0, 2, 6, 6, dtype=torch.float64)
    same(F.max_pool2d(on(e), 2), TF.max_pool2d(e, 2))
    same(F.avg_pool2d(on(e), 2), TF.avg_pool2d(e, 2))
    same(F.pad(on(e), (1, 1, 1, 1), mode="replicate"), TF.pad(e, (1, 1, 1, 1), mode="replicate"))


def test_pooling_errors_match_torch():
    x = on(_rand((1, 2, 4, 4)))
    for fm, ft in ((lambda: F.max_pool2d(x, 2, padding=2), lambda: TF.max_pool2d(_rand((1, 2, 4, 4)), 2, padding=2)),
                   (lambda: F.avg_pool2d(x, 5), lambda: TF.avg_pool2d(_rand((1, 2, 4, 4)), 5)),
                   (lambda: F.pad(x, (4, 0, 0, 0), mode="reflect"), lambda: TF.pad(_rand((1, 2, 4, 4)), (4, 0, 0, 0), mode="reflect"))):
        with pytest.raises(RuntimeError) as t:
            ft()
        with pytest.raises(RuntimeError) as m:
            fm()
        assert str(m.value) == str(t.value)


# ----- end to end -----

def _net(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(2, 4, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(4, 6, 3, stride=1, groups=2), nn.ReLU(), nn.Flatten(), nn.Linear(6 * 2 * 2, 3),
    ).double()


def test_a_conv_net_trains_on_the_device_as_on_the_cpu_and_torch():
    """A few SGD steps of Conv2d-ReLU-MaxPool2d-Conv2d(groups)-ReLU-Linear with an MSE loss
    (losses with class indices are routed by another change), on cuda, on the CPU and in torch
    from the same weights: the same parameters after training."""
    torch.manual_seed(0)
    tnet = _net(torch)
    state = {k: v.detach().numpy().copy() for k, v in tnet.state_dict().items()}
    nets = []
    for device in ("cpu", "cuda"):
        net = _net(mg)
        net.load_state_dict({k: mg.from_numpy(v.copy()) for k, v in state.items()})
        nets.append(net.to(device))
    x, y = _rand((5, 2, 8, 8), seed=20), _rand((5, 3), seed=21)
    opts = [torch.optim.SGD(tnet.parameters(), lr=0.05, momentum=0.9)] + [mg.optim.SGD(n.parameters(), lr=0.05, momentum=0.9) for n in nets]
    data = [(x, y), (mg.from_numpy(x.numpy().copy()), mg.from_numpy(y.numpy().copy())), (on(x), on(y))]
    losses = [[], [], []]
    for _ in range(4):
        for i, (net, opt, lib, (xx, yy)) in enumerate(zip([tnet] + nets, opts, (torch, mg, mg), data)):
            opt.zero_grad()
            loss = lib.nn.functional.mse_loss(net(xx), yy)
            loss.backward()
            opt.step()
            losses[i].append(loss.item())
    assert losses[2][-1] < losses[2][0]
    torch.testing.assert_close(torch.tensor(losses[2]), torch.tensor(losses[1]), rtol=1e-12, atol=0)
    torch.testing.assert_close(torch.tensor(losses[2]), torch.tensor(losses[0]), rtol=1e-12, atol=0)
    ref = dict(tnet.named_parameters())
    for (name, p), (_, pc) in zip(nets[1].named_parameters(), nets[0].named_parameters()):
        assert p.is_cuda and p.is_leaf
        close(p.detach(), ref[name].detach())
        close(p.detach(), torch.from_numpy(pc.detach().numpy().copy()))


# ----- normalisation (composed on the device from routed reductions and elementwise ops) -----

@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("training,affine", [(True, True), (True, False), (False, True)])
def test_batch_norm_values_gradients_and_running_stats(training, affine, dtype):
    x = _rand((4, 3, 5, 2), dtype, 30)
    w, b = (_rand((3,), dtype, 31), _rand((3,), dtype, 32)) if affine else (None, None)
    rm, rv = _rand((3,), dtype, 33), _rand((3,), dtype, 34).abs() + 0.5
    mrm, mrv = on(rm.clone()), on(rv.clone())
    trm, trv = rm.clone(), rv.clone()
    rt, rm_out, gt, gm = grads(
        lambda x, w, b: TF.batch_norm(x, trm, trv, w, b, training=training, momentum=0.3, eps=1e-4),
        lambda x, w, b: F.batch_norm(x, mrm, mrv, w, b, training=training, momentum=0.3, eps=1e-4),
        [x, w, b])
    close(rm_out, rt.detach())
    for m, t in zip(gm, gt):
        if t is not None:
            close(m, t)
    close(mrm, trm)
    close(mrv, trv)
    assert (mrm._version, mrv._version) == (trm._version, trv._version)


# (shape, permutation applied to a contiguous tensor of the permuted shape or None, weight, bias,
# running statistics): the fused kernels' layouts (s = 1, 3-d, 5-d, a strided input) and
# optional arguments
BN_CASES = [
    ((7, 5), None, True, True, True),
    ((3, 4, 9), None, True, False, False),
    ((2, 3, 4, 5, 2), None, False, True, True),
    ((5, 3, 4, 6), (0, 3, 1, 2), True, True, True),  # channels-last memory
    ((2, 2, 1, 1), None, True, True, True),  # two elements per channel
    ((300, 2, 3), None, True, True, True),  # a channel longer than a block's threads several times
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("shape,perm,has_w,has_b,running,training",
                         [(*case, training) for case in BN_CASES for training in (True, False) if training or case[4]])
def test_batch_norm_fused_layouts_and_optional_arguments(shape, perm, has_w, has_b, running, training, dtype):
    # (evaluation needs running statistics: without them it is torch's error, tested on the CPU)
    c = shape[1]
    x = _rand(shape, dtype, 50)
    if perm is not None:  # the same values, non-contiguous
        inv = [perm.index(i) for i in range(len(perm))]
        x = x.permute(*perm).contiguous().permute(*inv)
    w = _rand((c,), dtype, 51) if has_w else None
    b = _rand((c,), dtype, 52) if has_b else None
    rm, rv = (_rand((c,), dtype, 53), _rand((c,), dtype, 54).abs() + 0.5) if running else (None, None)
    trm, trv = (rm.clone(), rv.clone()) if running else (None, None)
    mrm, mrv = (on(rm.clone()), on(rv.clone())) if running else (None, None)
    tx, mx = x.clone().requires_grad_(), on(x.contiguous()).requires_grad_()
    if perm is not None:
        mx = on(x.permute(*perm).contiguous()).permute(*inv).detach().requires_grad_()
        assert not mx.is_contiguous()
    tw, mw = (w.clone().requires_grad_(), leaf(w)) if has_w else (None, None)
    tb, mb = (b.clone().requires_grad_(), leaf(b)) if has_b else (None, None)
    rt = TF.batch_norm(tx, trm, trv, tw, tb, training=training, momentum=0.2, eps=1e-3)
    rm_out = F.batch_norm(mx, mrm, mrv, mw, mb, training=training, momentum=0.2, eps=1e-3)
    close(rm_out, rt.detach())
    g = _rand(shape, dtype, 55)
    rt.backward(g)
    rm_out.backward(on(g))
    close(mx.grad, tx.grad)
    for m, t in ((mw, tw), (mb, tb)):
        if t is not None:
            close(m.grad, t.grad)
    if running:
        torch.testing.assert_close(back(mrm), trm, equal_nan=True, rtol=2e-5 if dtype == torch.float32 else 1e-12, atol=1e-12)
        torch.testing.assert_close(back(mrv), trv, equal_nan=True, rtol=2e-5 if dtype == torch.float32 else 1e-12, atol=1e-12)
        assert (mrm._version, mrv._version) == (trm._version, trv._version)


def test_batch_norm_fused_launches_and_double_backward(cuda_device):
    """Training forward: two launches (statistics with the running update, then the output), the
    first-order backward two more; a graph of the backward takes the composite formula, whose
    second derivatives match torch's."""
    x, w, b = _rand((4, 3, 5), seed=60), _rand((3,), seed=61), _rand((3,), seed=62)
    mx, mw, mb = leaf(x), leaf(w), leaf(b)
    mrm, mrv = on(torch.zeros(3, dtype=torch.float64)), on(torch.ones(3, dtype=torch.float64))
    if cuda_device is not None:  # the emulated driver counts launches
        before = cuda_device.launches
        out = F.batch_norm(mx, mrm, mrv, mw, mb, training=True)
        assert cuda_device.launches - before == 2
        g = on(_rand((4, 3, 5), seed=63))
        before = cuda_device.launches
        mg.autograd.grad(out, (mx, mw, mb), g)
        assert cuda_device.launches - before == 2
    tx, tw, tb = (t.clone().requires_grad_() for t in (x, w, b))
    g = _rand((4, 3, 5), seed=63)
    ref = torch.autograd.grad(TF.batch_norm(tx, None, None, tw, tb, training=True), (tx, tw, tb), g, create_graph=True)
    got = mg.autograd.grad(F.batch_norm(mx, None, None, mw, mb, training=True), (mx, mw, mb), on(g), create_graph=True)
    for m, t in zip(got, ref):
        close(m.detach(), t.detach())
    h = _rand((4, 3, 5), seed=64)
    ref2 = torch.autograd.grad((ref[0] * h).sum(), (tx, tw))
    got2 = mg.autograd.grad((got[0] * on(h)).sum(), (mx, mw))
    for m, t in zip(got2, ref2):
        close(m, t)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm_values_and_gradients(affine, dtype):
    x = _rand((3, 4, 6), dtype, 40)
    w, b = (_rand((4, 6), dtype, 41), _rand((4, 6), dtype, 42)) if affine else (None, None)
    rt, rm, gt, gm = grads(lambda x, w, b: TF.layer_norm(x, (4, 6), w, b, eps=1e-5),
                           lambda x, w, b: F.layer_norm(x, (4, 6), w, b, eps=1e-5), [x, w, b])
    close(rm, rt.detach())
    for m, t in zip(gm, gt):
        if t is not None:
            close(m, t)
