"""`Tensor.unfold(dimension, size, step)` against torch: the windows as a strided view (shape,
strides, offset, shared memory and version), the gradient summed where windows overlap
(UnfoldBackward0, and gradcheck in float64), torch's errors, and the node's saved arguments."""

import numpy as np
import pytest
import torch

import minigrad as mg

CASES = [
    ((7,), 0, 3, 1), ((7,), 0, 3, 2), ((7,), 0, 2, 3), ((7,), -1, 7, 1), ((7,), 0, 0, 2),
    ((4, 5), 1, 2, 1), ((4, 5), 0, 2, 2), ((4, 5), -1, 5, 5), ((2, 6, 3), 1, 4, 1), ((2, 6, 3), -2, 1, 4),
    ((), 0, 1, 1), ((), -1, 0, 1), ((0, 3), 0, 0, 1),
]


def _pair(shape, dtype=np.float64):
    a = np.arange(int(np.prod(shape)), dtype=dtype).reshape(shape) * 0.5 - 1.0
    return mg.tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)


@pytest.mark.parametrize("shape,dim,size,step", CASES)
def test_values_layout_and_gradient_match_torch(shape, dim, size, step):
    m, t = _pair(shape)
    ym, yt = m.unfold(dim, size, step), t.unfold(dim, size, step)
    assert tuple(ym.shape) == tuple(yt.shape)
    assert ym.stride() == yt.stride() and ym.storage_offset() == yt.storage_offset()
    np.testing.assert_array_equal(ym.detach().numpy(), yt.detach().numpy())
    assert type(ym.grad_fn).__name__ == type(yt.grad_fn).__name__ == "UnfoldBackward0"
    w = np.random.default_rng(1).standard_normal(tuple(yt.shape))
    (ym * mg.tensor(w)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(m.grad.numpy(), t.grad.numpy(), rtol=1e-15, atol=1e-15)


def test_a_window_view_shares_memory_and_version():
    m = mg.arange(6.0)
    w = m.unfold(0, 3, 1)
    m[2] = 10.0
    assert w[0, 2].item() == w[1, 1].item() == w[2, 0].item() == 10.0
    assert w._version == m._version == 1 and w._base is m


def test_gradcheck_with_overlapping_windows():
    x = mg.tensor(np.random.default_rng(0).standard_normal((3, 8)), requires_grad=True)
    assert mg.autograd.gradcheck(lambda x: x.unfold(1, 3, 2), (x,))
    assert mg.autograd.gradgradcheck(lambda x: x.unfold(1, 3, 1), (x,))


@pytest.mark.parametrize("args", [(1, 6, 1), (1, 2, 0), (1, -1, 1), (1, 2, -1), (2, 1, 1), (-3, 1, 1), (1, 2.0, 1)])
def test_errors_match_torch(args):
    errors = {}
    for lib in (torch, mg):
        with pytest.raises(Exception) as e:
            lib.ones(4, 5).unfold(*args)
        errors[lib.__name__] = (type(e.value), str(e.value).split("\n")[0])
    assert errors["minigrad"][0] is errors["torch"][0]
    if errors["torch"][0] is not TypeError:  # torch's TypeError lists every overload
        assert errors["minigrad"][1] == errors["torch"][1]


def test_saved_arguments_match_torch():
    got, want = mg.ones(4, 5, requires_grad=True).unfold(-1, 2, 1).grad_fn, torch.ones(4, 5, requires_grad=True).unfold(-1, 2, 1).grad_fn
    for name in ("_saved_dimension", "_saved_self_sym_sizes", "_saved_size", "_saved_step"):
        w = getattr(want, name)
        w = w - 2**64 if isinstance(w, int) and w >= 2**63 else w  # torch shows -1 unsigned
        assert getattr(got, name) == w, name
