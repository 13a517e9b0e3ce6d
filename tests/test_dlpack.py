"""DLPack on the CPU: minigrad <-> torch and NumPy without copies, compared with what torch does
with its own tensors (same values, strides, shared memory, separate version counters, errors)."""

import ctypes
import gc

import numpy as np
import pytest
import torch

import minigrad


def layouts(lib):
    """The same tensors built in either library: contiguous, transposed, sliced with a step,
    expanded, 0-d, empty, every dtype minigrad has."""
    base = lib.arange(24.0).reshape(2, 3, 4)
    return [
        base,
        base.transpose(0, 2),
        base[:, 1:, ::2],
        lib.arange(3.0).reshape(3, 1).expand(3, 4),
        lib.tensor(2.5),
        lib.zeros(0, 3),
        lib.arange(6).reshape(2, 3).to(lib.int32),
        lib.arange(6).reshape(2, 3),
        lib.tensor([[True, False], [False, True]]),
        lib.arange(6.0, dtype=lib.float64)[::3],
    ]


@pytest.mark.parametrize("i", range(10))
def test_export_to_torch_shares_memory(i):
    m, ref = layouts(minigrad)[i], layouts(torch)[i]
    t = torch.from_dlpack(m)
    assert t.dtype == ref.dtype and t.shape == ref.shape and t.stride() == ref.stride()
    assert torch.equal(t, ref)
    if t.numel():
        first = (0,) * t.ndim
        before = m._version
        t[first] = not t[first].item() if t.dtype == torch.bool else 7
        assert m[first].item() == t[first].item()
        # memory shared, counters not (torch: a DLPack tensor starts its own counter)
        assert m._version == before


@pytest.mark.parametrize("i", range(10))
def test_import_from_torch_shares_memory(i):
    ref = layouts(torch)[i]
    m = minigrad.from_dlpack(ref)
    assert m.dtype == getattr(minigrad, str(ref.dtype).split(".")[1])
    assert tuple(m.shape) == tuple(ref.shape) and m.stride() == ref.stride()
    np.testing.assert_array_equal(m.numpy(), ref.numpy())
    assert m._version == 0 and torch.from_dlpack(ref)._version == 0
    if ref.numel() and ref.dtype != torch.bool:
        first = (0,) * ref.ndim
        m[first] = 41
        assert ref[first].item() == 41


def test_numpy_round_trip_is_zero_copy():
    a = np.arange(12.0).reshape(3, 4)[:, 1::2]
    m = minigrad.from_dlpack(a)
    assert m.stride() == torch.from_dlpack(a).stride()
    m[0, 0] = -1.0
    assert a[0, 0] == -1.0
    back = np.from_dlpack(m)
    assert np.shares_memory(back, a)
    assert back.strides == a.strides


def test_memory_outlives_the_producer():
    t = torch.arange(1000.0)
    m = minigrad.from_dlpack(t)
    del t
    gc.collect()
    assert m.sum().item() == sum(range(1000))
    x = minigrad.arange(1000.0)
    u = torch.from_dlpack(x)
    del x
    gc.collect()
    assert u.sum().item() == sum(range(1000))
    # an export nobody consumes frees itself with its capsule
    before = minigrad.memory.allocated()
    y = minigrad.ones(10_000)
    capsule = y.__dlpack__()
    del y
    assert minigrad.memory.allocated() > before
    del capsule
    gc.collect()
    assert minigrad.memory.allocated() == before


def test_errors_are_torch_errors():
    with pytest.raises(BufferError) as m_err:
        minigrad.ones(2, requires_grad=True).__dlpack__()
    with pytest.raises(BufferError) as t_err:
        torch.ones(2, requires_grad=True).__dlpack__()
    assert str(m_err.value) == str(t_err.value)

    capsule = minigrad.ones(2).__dlpack__()
    minigrad.from_dlpack(capsule)
    with pytest.raises(RuntimeError) as m_err:
        minigrad.from_dlpack(capsule)
    t_capsule = torch.ones(2).__dlpack__()
    torch.from_dlpack(t_capsule)
    with pytest.raises(RuntimeError) as t_err:
        torch.from_dlpack(t_capsule)
    assert str(m_err.value) == str(t_err.value)

    assert minigrad.ones(2).__dlpack_device__() == tuple(torch.ones(2).__dlpack_device__())


def test_what_minigrad_cannot_hold_is_refused_clearly():
    with pytest.raises(TypeError, match="unsupported dtype"):
        minigrad.from_dlpack(torch.ones(2, dtype=torch.complex64))
    # torch aborts the process on a negative stride; minigrad raises
    with pytest.raises(ValueError, match="negative stride"):
        minigrad.from_dlpack(np.arange(5.0)[::-1])


class _DLManagedTensor(ctypes.Structure):
    """DLPack's DLManagedTensor (dlpack.h, v0.8 ABI), to hand-build a capsule for device memory."""

    _fields_ = [
        ("data", ctypes.c_void_p), ("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32),
        ("ndim", ctypes.c_int32), ("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16),
        ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
    ]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


def _cuda_capsule(deleted):
    """A capsule claiming 3 float32 on cuda:0 (the address is never read: the tensor is refused or
    only wrapped); its deleter appends to `deleted`."""
    shape = (ctypes.c_int64 * 1)(3)
    deleter = _DELETER(lambda ptr: deleted.append(ptr))
    m = _DLManagedTensor(data=4096, device_type=2, device_id=0, ndim=1, code=2, bits=32, lanes=1, shape=shape,
                         strides=None, byte_offset=0, manager_ctx=None,
                         deleter=ctypes.cast(deleter, ctypes.c_void_p).value)
    new = ctypes.pythonapi.PyCapsule_New
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    capsule = new(ctypes.addressof(m), b"dltensor", None)
    return capsule, (m, shape, deleter)  # the second keeps the C memory alive


class _CudaProducer:
    """What CuPy or torch.cuda offer from_dlpack: a device, then a capsule."""

    def __init__(self):
        self.capsules_given = 0

    def __dlpack_device__(self):
        return (2, 0)

    def __dlpack__(self, stream=None):
        self.capsules_given += 1
        raise AssertionError("no capsule should be asked for")


@pytest.mark.skipif(minigrad.cuda.is_available(), reason="checks the error of a machine without a usable GPU; this one has one")
def test_gpu_memory_without_a_usable_gpu_is_refused_when_imported():
    # the error that names what is missing, at from_dlpack (not a "no backend" error at the
    # first op), before the producer hands its memory over...
    producer = _CudaProducer()
    with pytest.raises(RuntimeError, match="minigrad: CUDA is not available: "):
        minigrad.from_dlpack(producer)
    assert producer.capsules_given == 0
    # ...and for a bare capsule, once consumed, with the producer's deleter called once
    deleted = []
    capsule, keep = _cuda_capsule(deleted)
    with pytest.raises(RuntimeError, match="minigrad: CUDA is not available: "):
        minigrad.from_dlpack(capsule)
    gc.collect()
    assert deleted == [ctypes.addressof(keep[0])]
