"""A family with no CUDA kernel yet (sort, scan) refuses a cuda tensor with a NotImplementedError
that says so, before touching its memory, instead of the bindings' "internal error"; the tensor is
unchanged. On a GPU when there is one, else on the host-emulated device (tests/cuda_host)."""

import pytest
import torch

import minigrad as mg
from cuda_host.backend import back, cuda_device  # noqa: F401  (cuda_device: autouse fixture)

UNROUTED = {
    "cumsum": lambda x: x.cumsum(0),
    "cumprod_": lambda x: x.cumprod_(0),
    "logcumsumexp": lambda x: x.logcumsumexp(0),
    "sort": lambda x: x.sort(),
    "argsort": lambda x: x.argsort(),
    "topk": lambda x: x.topk(2),
    "kthvalue": lambda x: x.kthvalue(2),
    "median(dim)": lambda x: x.median(0),
}


@pytest.mark.parametrize("name", list(UNROUTED))
def test_an_op_without_a_cuda_kernel_says_so(name):
    x = mg.tensor([3.0, 1.0, 2.0], device="cuda")
    with pytest.raises(NotImplementedError, match=r"no kernel for cuda:0 tensors yet.*docs/gpu.md"):
        UNROUTED[name](x)
    assert x._version == 0 and torch.equal(back(x), torch.tensor([3.0, 1.0, 2.0]))
    # and the same op on the CPU is fine
    UNROUTED[name](x.cpu())
