"""The launch path (rust/py/src/cuda/entry.rs): kernels go through `cuLaunchKernel` as a C
function pointer with no Python call, on the current stream of the launching thread read at each
launch, and a failed launch raises a RuntimeError with the driver's error name. On the
host-emulated device the pointer is the emulated driver's ctypes callback (the same Rust path a
GPU takes), which lets these tests see each launch's stream and inject driver errors; on a GPU
the stream test runs against CuPy's streams.
"""

import threading

import pytest
import torch

import minigrad as mg
from minigrad import _C
from cuda_host.backend import REAL_GPU, back, cuda_device, on  # noqa: F401  (cuda_device: autouse fixture)

emulated_only = pytest.mark.skipif(REAL_GPU, reason="spies on the emulated driver's entry points; a GPU has none to spy on")


def _add_one():
    x = on(torch.tensor([1.0, 2.0, 3.0]))
    return back(x + 1)


@emulated_only
def test_kernels_are_launched_through_the_function_pointer(cuda_device):
    # the emulated driver has no Python `launch` method: the backend can only launch through
    # the address entry_points() gave it
    assert not hasattr(cuda_device, "launch")
    before = cuda_device.launches
    assert _add_one().tolist() == [2.0, 3.0, 4.0]
    assert cuda_device.launches == before + 1


@emulated_only
def test_each_launch_takes_the_current_stream_of_its_thread(cuda_device):
    cuda_device.launch_streams.clear()
    _add_one()
    with cuda_device.use_stream(0x5000):
        _add_one()
        with cuda_device.use_stream(0x6000):
            _add_one()
        _add_one()
    _add_one()
    assert cuda_device.launch_streams == [0, 0x5000, 0x6000, 0x5000, 0]

    # another thread has its own current stream, as in CuPy
    seen = []

    def worker():
        with cuda_device.use_stream(0x7000):
            seen.append(_add_one().tolist())

    with cuda_device.use_stream(0x5000):
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        _add_one()
    assert seen == [[2.0, 3.0, 4.0]]
    assert cuda_device.launch_streams[-2:] == [0x7000, 0x5000]


@emulated_only
def test_a_failed_launch_raises_the_drivers_error_name(cuda_device):
    x = on(torch.tensor([1.0, 2.0]))
    cuda_device.fail_next = 700  # CUDA_ERROR_ILLEGAL_ADDRESS
    with pytest.raises(RuntimeError, match=r"^CUDA error: CUDA_ERROR_ILLEGAL_ADDRESS \(cuLaunchKernel returned 700\)$"):
        x.exp()
    assert back(x.exp()).tolist() == torch.tensor([1.0, 2.0]).exp().tolist()  # the next launch runs
    cuda_device.fail_next = 123456  # a code cuGetErrorName does not know
    with pytest.raises(RuntimeError, match="unrecognized CUDA error .*returned 123456"):
        x.neg()


@emulated_only
def test_an_in_place_op_whose_launch_fails_changes_nothing(cuda_device):
    x = on(torch.tensor([1.0, 2.0]))
    v = x._version
    cuda_device.fail_next = 719
    with pytest.raises(RuntimeError, match="CUDA_ERROR_LAUNCH_FAILED"):
        x.mul_(2)
    assert back(x).tolist() == [1.0, 2.0]
    assert x._version == v  # torch bumps the version after the kernel returns, so not on failure
    x.mul_(2)
    assert back(x).tolist() == [2.0, 4.0] and x._version == v + 1


def _second_device(driver_cls):
    from cuda_host.checks import _BUILT

    driver = driver_cls(_BUILT["host"])
    _C._cuda_register(1, driver)
    return driver


@emulated_only
def test_a_python_stream_reader_and_its_errors(cuda_device):
    """Where CuPy lacks the C stream reader, the driver hands a Python callable instead."""
    from cuda_host.driver import HostDriver

    calls = []

    class PyStream(HostDriver):
        def entry_points(self):
            launch, name, _ = super().entry_points()
            return launch, name, self.stream_of

        def stream_of(self, device):
            calls.append(device)
            if getattr(self, "broken", False):
                raise ValueError("no stream for you")
            return 0x9000

    d = _second_device(PyStream)
    try:
        x = mg.tensor([1.0, -2.0], device="cuda:1")
        assert x.abs().cpu().tolist() == [1.0, 2.0]
        assert calls == [1] and d.launch_streams == [0x9000]
        d.broken = True
        with pytest.raises(ValueError, match="no stream for you"):  # the driver's own exception
            x.abs()
    finally:
        _C._cuda_unregister(1)


@emulated_only
def test_a_driver_without_entry_points_is_refused(cuda_device):
    from cuda_host.checks import _BUILT
    from cuda_host.driver import HostDriver

    class NoLaunch(HostDriver):
        def entry_points(self):
            return (0, 0, super().entry_points()[2])

    class NotAnAddress(HostDriver):
        def entry_points(self):
            return ("cuLaunchKernel", 0, 0)

    with pytest.raises(RuntimeError, match="no cuLaunchKernel"):
        _C._cuda_register(1, NoLaunch(_BUILT["host"]))
    with pytest.raises(TypeError, match="must be an address"):
        _C._cuda_register(1, NotAnAddress(_BUILT["host"]))
    assert not _C.has_backend("cuda", 1)


def test_cupys_stream_reader_is_taken_only_with_the_expected_signature(monkeypatch):
    """No GPU needed: CuPy's capsule is read, not called."""
    cupy = pytest.importorskip("cupy")
    stream = pytest.importorskip("cupy_backends.cuda.stream")
    from minigrad._cuda_driver import _stream_of

    if "get_stream_ptr" not in getattr(stream, "__pyx_capi__", {}):
        pytest.skip("this CuPy has no get_stream_ptr C API (the Python fallback is used)")
    address = _stream_of(cupy)
    assert isinstance(address, int) and address != 0
    # a capsule with another signature is refused, and CuPy's Python call is used instead
    capi = dict(stream.__pyx_capi__)
    capi["get_stream_ptr"] = capi["get_current_stream_ptr"]  # "intptr_t (void)"
    monkeypatch.setattr(stream, "__pyx_capi__", capi)
    assert callable(_stream_of(cupy))


@pytest.mark.skipif(not REAL_GPU, reason="needs CuPy's streams on a GPU")
def test_on_a_gpu_kernels_follow_cupys_current_stream():
    import cupy

    x = on(torch.arange(1 << 20, dtype=torch.float32))
    s = cupy.cuda.Stream(non_blocking=True)
    with s:
        y = (x * 2).exp_().neg()
        s.synchronize()
    ref = (torch.arange(1 << 20, dtype=torch.float32) * 2).exp_().neg()
    torch.testing.assert_close(back(y), ref)
