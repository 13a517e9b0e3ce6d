"""Losses whose values are summed on the host in float64 (mse, l1, smooth l1, huber, binary
cross-entropy with and without logits) return their result on the inputs' device, as torch's do,
with torch's values and gradients. On a GPU when there is one, else on the host-emulated device (tests/cuda_host)."""

import pytest
import torch

import minigrad as mg
import minigrad.nn.functional as F
from cuda_host.backend import back, cuda_device, on  # noqa: F401  (cuda_device: autouse fixture)

P = torch.tensor([[0.2, 0.7, 0.5], [0.9, 0.1, 0.35]], dtype=torch.float64)
T = torch.tensor([[0.0, 1.0, 1.0], [1.0, 0.0, 0.25]], dtype=torch.float64)
LOSSES = {
    "mse_loss": (F.mse_loss, torch.nn.functional.mse_loss),
    "l1_loss": (F.l1_loss, torch.nn.functional.l1_loss),
    "binary_cross_entropy": (F.binary_cross_entropy, torch.nn.functional.binary_cross_entropy),
    "binary_cross_entropy_with_logits": (F.binary_cross_entropy_with_logits, torch.nn.functional.binary_cross_entropy_with_logits),
    # thresholds among the differences |P - T| (0.1 to 0.5), so both pieces of each loss are taken
    "smooth_l1_loss": (lambda x, t, **kw: F.smooth_l1_loss(x, t, beta=0.25, **kw),
                       lambda x, t, **kw: torch.nn.functional.smooth_l1_loss(x, t, beta=0.25, **kw)),
    "huber_loss": (lambda x, t, **kw: F.huber_loss(x, t, delta=0.25, **kw),
                   lambda x, t, **kw: torch.nn.functional.huber_loss(x, t, delta=0.25, **kw)),
}


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("name", list(LOSSES))
def test_a_loss_of_cuda_tensors_is_a_cuda_tensor(name, reduction):
    mine, theirs = LOSSES[name]
    x = on(P).requires_grad_()
    out = mine(x, on(T), reduction=reduction)
    xt = P.clone().requires_grad_()
    ref = theirs(xt, T, reduction=reduction)
    assert out.device.type == "cuda"
    torch.testing.assert_close(back(out.detach()), ref.detach(), rtol=1e-12, atol=1e-12)
    out.sum().backward()
    ref.sum().backward()
    assert x.grad.device.type == "cuda"
    torch.testing.assert_close(back(x.grad), xt.grad, rtol=1e-12, atol=1e-12)
