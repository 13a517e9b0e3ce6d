"""The narrow dtypes (float16, bfloat16, uint8, int8, int16) on cuda: not supported yet, and said
so with a NotImplementedError at allocation, before any kernel could see the format (the CUDA
copy kernels do not cover it). Runs on the host-emulated cuda:0 where there is no GPU."""

import pytest

import minigrad as mg
from cuda_host.backend import cuda_device  # noqa: F401  (module fixture: registers cuda:0)


@pytest.mark.parametrize("name", ["float16", "bfloat16", "uint8", "int8", "int16"])
def test_narrow_dtypes_refused_on_cuda(name):
    d = getattr(mg, name)
    with pytest.raises(NotImplementedError, match="empty_cuda"):
        mg.zeros(3, dtype=d, device="cuda")
    x = mg.ones(3, dtype=d)
    with pytest.raises(NotImplementedError, match="CPU only"):
        x.cuda()
    with pytest.raises(NotImplementedError, match="CPU only"):
        mg.ones(3, device="cuda").to(d)
    assert mg.ones(3, device="cuda").float().sum().item() == 3.0  # the wide dtypes are untouched
