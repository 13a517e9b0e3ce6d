"""What the CUDA backend's test modules share (tests/test_cuda_backend*.py): whether a real GPU
is here, the module fixture that registers the host-emulated `cuda:0` when it is not (and removes
it after, so the rest of the suite sees the machine as it is), moving values between torch and
minigrad's cuda tensors, and the comparison with torch."""

import contextlib
import re

import pytest
import torch

import minigrad as mg
from minigrad import _C


def _real_gpu():
    try:
        import cupy

        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


REAL_GPU = _real_gpu()
DEVICE_KIND = "gpu" if REAL_GPU else "host-emulated"


@pytest.fixture(scope="module", autouse=True)
def cuda_device(tmp_path_factory):
    if REAL_GPU:
        assert mg.cuda.is_available(), mg.cuda.why_unavailable()
        yield None
        return
    from cuda_host.checks import host_build
    from cuda_host.driver import HostDriver

    assert not _C.has_backend("cuda", 0), "a CUDA backend is already registered"
    driver = HostDriver(host_build(tmp_path_factory))
    _C._cuda_register(0, driver)
    try:
        yield driver
    finally:
        _C._cuda_unregister(0)


def on(x, dtype=None):
    """A torch CPU tensor's values as a minigrad tensor on cuda (through the host copy)."""
    return mg.from_numpy(x.numpy().copy()).to("cuda") if dtype is None else mg.tensor(x.tolist(), dtype=dtype, device="cuda")


def back(t):
    """A minigrad tensor's values as a torch CPU tensor."""
    return torch.from_numpy(t.cpu().numpy().copy())


def same(mine, ref, exact=True):
    assert mine.device.type == "cuda", mine.device
    assert str(mine.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1], (mine.dtype, ref.dtype)
    assert tuple(mine.shape) == tuple(ref.shape)
    got = back(mine)
    if exact or not ref.dtype.is_floating_point:
        assert torch.equal(got.isnan(), ref.isnan()) if ref.dtype.is_floating_point else True
        mask = ~ref.isnan() if ref.dtype.is_floating_point else torch.ones_like(ref, dtype=torch.bool)
        if not torch.equal(got[mask], ref[mask]):
            diff = (got[mask] != ref[mask]).nonzero().flatten()[:5]
            raise AssertionError(
                f"{len(diff)}+ elements differ, e.g. got {got[mask][diff].tolist()} want {ref[mask][diff].tolist()}")
        if ref.dtype.is_floating_point:  # signs of zero too
            assert torch.equal(torch.signbit(got[mask]), torch.signbit(ref[mask]))
    else:
        torch.testing.assert_close(got, ref, equal_nan=True, rtol=4e-6 if ref.dtype == torch.float32 else 1e-13, atol=1e-30)



def on_any(t):
    """Any dtype (the narrow ones too) as a minigrad cuda tensor, bit for bit, through DLPack."""
    return mg.from_dlpack(t.contiguous().clone()).to("cuda")


def same_any(mine, ref):
    """Exact comparison for any dtype, signs of zero included (bfloat16 has no NumPy type:
    compared through float32)."""
    assert mine.device.type == "cuda"
    got = torch.from_dlpack(mine.cpu())
    assert got.dtype == ref.dtype and tuple(got.shape) == tuple(ref.shape), (got.dtype, got.shape, ref.dtype, ref.shape)
    if ref.dtype.is_floating_point:
        assert torch.equal(got.float().isnan(), ref.float().isnan())
        assert torch.equal(got.float().nan_to_num(7.0), ref.float().nan_to_num(7.0))
        assert torch.equal(got.float().signbit(), ref.float().signbit())
    else:
        assert torch.equal(got, ref)


@contextlib.contextmanager
def spying_on_copies(device):
    """Records (kind, nbytes) of every copy the emulated driver makes inside the block."""
    copies, real = [], device.copy

    def spy(dst, src, nbytes, kind):
        copies.append((kind, nbytes))
        return real(dst, src, nbytes, kind)

    device.copy = spy
    try:
        yield copies
    finally:
        device.copy = real

EDGE = [0.0, -0.0, 1.5, -2.5, 0.5, -0.5, 3.0, 1e-3, -7.25, 100.0, float("inf"), float("-inf"), float("nan"), 2.0]


def values(dtype, n=14):
    if dtype.is_floating_point:
        return torch.tensor(EDGE[:n], dtype=dtype)
    if dtype == torch.bool:
        return torch.tensor([True, False] * (n // 2), dtype=dtype)
    info = torch.iinfo(dtype)
    base = [0, 1, -1, 7, -8, 3, info.max, info.min, 100, -100, 2, 5, -3, 9]
    return torch.tensor(base[:n], dtype=dtype)


def layouts(x):
    """(name, torch view) of the same values: contiguous, strided, offset, transposed, expanded."""
    x2 = x.reshape(2, 7)
    big = torch.zeros(4, 9, dtype=x.dtype)
    big[1:3, 1:8] = x2
    return [
        ("contiguous", x2),
        ("offset-strided", big[1:3, 1:8]),
        ("transposed", x2.t().contiguous().t()),
        ("expanded", x2[:1].expand(3, 7)),
        ("0-d", x2[0, 3].clone()),
        ("empty", x2[:0]),
    ]


def to_mg(view):
    """The same layout on cuda: the base copied over, then the same view taken."""
    if view.dim() == 0 or view.numel() == 0 or view.is_contiguous():
        return on(view.contiguous()), view
    base = view.as_strided((view.untyped_storage().nbytes() // view.element_size(),), (1,), 0)
    mb = on(base.clone())
    return mb.as_strided(tuple(view.shape), tuple(view.stride()), view.storage_offset()), view


FLOATS = [torch.float32, torch.float64]
ALL = [torch.float32, torch.float64, torch.int32, torch.int64, torch.bool]


def in_torch_2_13_words(text):
    """torch's error text as the torch minigrad follows (2.13) words it. A GPU machine runs its
    own torch (2.11 on the H100 of 2026-11-27), which names the node that saved an output by its
    class ("which is output 0 of SigmoidBackward0,"); 2.13 names the forward op ("of Sigmoid,",
    "of Max1," for MaxBackward1: `Node::forward_op_name`)."""
    return re.sub(r"output (\d+) of (\w+?)Backward(\d+),",
                  lambda m: f"output {m[1]} of {m[2]}{'' if m[3] == '0' else m[3]},", text)
