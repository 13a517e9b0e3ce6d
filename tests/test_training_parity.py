"""Whole training runs against torch: the same architecture, the same initial weights (copied from
torch), the same batches; minigrad's loss curve over 50 SGD and 50 Adam steps must follow torch's
within float32 tolerance. Plus: `inplace=True` activations give the same gradients as
`inplace=False` where torch says they do, and the same error where torch raises."""

import numpy as np
import pytest
import torch

import minigrad as mg
import minigrad.nn  # noqa: F401
import minigrad.optim  # noqa: F401
from parity import assert_same_error

STEPS = 50


def mlp(lib, inplace):
    nn = lib.nn
    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(inplace=inplace), nn.Linear(32, 32),
                         nn.LeakyReLU(0.1, inplace=inplace), nn.Linear(32, 10))


def convnet(lib, inplace):
    nn = lib.nn

    class Residual(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
            self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
            self.relu = nn.ReLU(inplace=inplace)

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += x
            return self.relu(out)

    # (no bias before BatchNorm: its gradient is pure rounding noise, which Adam would amplify)
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(inplace=inplace),
                         Residual(4), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(4 * 4 * 4, 10))


ARCHS = {"mlp": (mlp, (64,)), "convnet": (convnet, (1, 8, 8))}


def copy_weights(t_model, m_model):
    """torch's initial parameters and buffers into the minigrad model (strict: same keys)."""
    state = {k: mg.from_numpy(v.detach().numpy().copy()) for k, v in t_model.state_dict().items()}
    m_model.load_state_dict(state)


def batches(shape, n=STEPS, batch=16, seed=0):
    """Random inputs labelled by a fixed random linear teacher, so there is something to learn."""
    rng = np.random.default_rng(seed)
    teacher = rng.standard_normal((int(np.prod(shape)), 10))
    for _ in range(n):
        x = rng.standard_normal((batch, *shape)).astype(np.float32)
        yield x, (x.reshape(batch, -1) @ teacher).argmax(1)


def run(lib, model, make_opt, shape):
    opt = make_opt(lib, model.parameters())
    F = lib.nn.functional
    losses = []
    for x, y in batches(shape):
        loss = F.cross_entropy(model(lib.from_numpy(x)), lib.from_numpy(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return np.array(losses)


OPTIMIZERS = {
    "sgd": lambda lib, ps: lib.optim.SGD(ps, lr=0.05, momentum=0.9, weight_decay=1e-4),
    "adam": lambda lib, ps: lib.optim.Adam(ps, lr=1e-3),
}


@pytest.mark.parametrize("arch", list(ARCHS))
@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
@pytest.mark.parametrize("inplace", [True, False])
def test_loss_curve_matches_torch(arch, optimizer, inplace):
    build, shape = ARCHS[arch]
    torch.manual_seed(0)
    t_model = build(torch, inplace)
    m_model = build(mg, inplace)
    copy_weights(t_model, m_model)
    t_losses = run(torch, t_model, OPTIMIZERS[optimizer], shape)
    m_losses = run(mg, m_model, OPTIMIZERS[optimizer], shape)
    assert t_losses[-10:].mean() < t_losses[:10].mean()  # the run trains at all
    np.testing.assert_allclose(m_losses, t_losses, rtol=2e-4, atol=2e-5)
    # and the trained weights and running statistics agree too
    for (name, t), (m_name, m) in zip(t_model.state_dict().items(), m_model.state_dict().items()):
        assert name == m_name
        np.testing.assert_allclose(m.numpy(), t.detach().numpy(), rtol=1e-3, atol=1e-4, err_msg=name)


@pytest.mark.parametrize("arch", list(ARCHS))
def test_inplace_true_and_false_give_the_same_gradients(arch):
    """torch says ReLU/LeakyReLU(inplace=True) after Linear, BatchNorm and an add are safe: its
    gradients with inplace=True equal those with inplace=False, and so must minigrad's."""
    build, shape = ARCHS[arch]
    torch.manual_seed(1)
    reference = build(torch, False)
    x, y = next(batches(shape, n=1, seed=3))
    grads = {}
    for lib in (torch, mg):
        for inplace in (False, True):
            model = build(lib, inplace)
            if lib is torch:
                model.load_state_dict(reference.state_dict())
            else:
                copy_weights(reference, model)
            lib.nn.functional.cross_entropy(model(lib.from_numpy(x)), lib.from_numpy(y)).backward()
            grads[lib.__name__, inplace] = {k: p.grad.detach().numpy().copy() for k, p in model.named_parameters()}
    for k in grads["torch", False]:
        np.testing.assert_array_equal(grads["torch", True][k], grads["torch", False][k], err_msg=k)
        np.testing.assert_array_equal(grads["minigrad", True][k], grads["minigrad", False][k], err_msg=k)
        np.testing.assert_allclose(grads["minigrad", True][k], grads["torch", True][k], rtol=1e-4, atol=1e-6, err_msg=k)


def _inplace_errors():
    """Programs where torch raises because an in-place activation overwrote what backward needs."""
    def after_sigmoid(L):  # sigmoid saves its output; ReLU(inplace) modifies it
        x = L.ones(3, 4, requires_grad=True)
        y = L.nn.ReLU(inplace=True)(L.sigmoid(x * 2))
        y.sum().backward()

    def on_leaf(L):  # a leaf that requires grad cannot be modified in place
        L.nn.ReLU(inplace=True)(L.ones(3, requires_grad=True))

    def on_leaf_view(L):
        w = L.ones(3, 4, requires_grad=True)
        L.nn.functional.leaky_relu(w[0], inplace=True)

    def after_tanh_twice(L):  # LeakyReLU(inplace) over tanh's saved output
        x = L.ones(2, 5, requires_grad=True)
        y = L.tanh(x * 0.5)
        L.nn.LeakyReLU(0.2, inplace=True)(y)
        y.sum().backward()

    def gan_order(L):  # the GAN mistake: D's weights stepped in place before G's backward
        L.manual_seed(0)
        d = L.nn.Sequential(L.nn.Linear(2, 4), L.nn.LeakyReLU(0.2, inplace=True), L.nn.Linear(4, 1))
        opt = L.optim.SGD(d.parameters(), lr=0.1)
        fake = L.ones(3, 2, requires_grad=True)
        g_loss = d(fake).sum()
        d(fake.detach()).sum().backward()
        opt.step()
        g_loss.backward()

    return [after_sigmoid, on_leaf, on_leaf_view, after_tanh_twice, gan_order]


@pytest.mark.parametrize("program", _inplace_errors(), ids=lambda f: f.__name__)
def test_inplace_errors_match_torch(program):
    assert_same_error(lambda: program(mg), lambda: program(torch))
