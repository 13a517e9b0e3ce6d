"""Devices without a GPU: tensor.device, to()/cpu()/cuda(), and the errors that say what is
missing when a CUDA device is asked for (CuPy, a GPU with its driver, or the engine's backend).
The routing of ops to a device's backend is tested in Rust (rust/core/tests/device_seam.rs);
the CUDA tests that run kernels live with the GPU suite and run where a GPU is lent."""

import importlib.util
import sys

import pytest
import torch

import minigrad
from minigrad import _cuda_probe

HAS_GPU = minigrad.cuda.is_available()
pytestmark = pytest.mark.skipif(HAS_GPU, reason="these are the no-GPU paths; this machine has a usable GPU")


def test_cpu_tensors_report_their_device_like_torch():
    m, t = minigrad.ones(2, 3), torch.ones(2, 3)
    assert str(m.device) == str(t.device) == "cpu"
    assert repr(m.device) == repr(t.device).replace("torch", "minigrad")
    assert (m.is_cuda, m.is_cpu) == (t.is_cuda, t.is_cpu)
    # already there: the very tensor (R6), and its version untouched
    assert m.cpu() is m and m.to("cpu") is m and m.to(minigrad.device("cpu")) is m
    assert m.to("cpu", copy=True) is not m
    assert m.to("cpu", minigrad.float64).dtype == minigrad.float64
    assert m.to(minigrad.zeros(1, dtype=minigrad.int32)).dtype == minigrad.int32


def test_why_unavailable_names_the_missing_piece_of_this_machine():
    why = minigrad.cuda.why_unavailable()
    assert not minigrad.cuda.is_available() and minigrad.cuda.device_count() == 0
    if importlib.util.find_spec("cupy") is None:
        assert "pip install minigrad[cuda]" in why
    else:
        assert why.startswith("CuPy is installed but"), why


def test_without_cupy_the_error_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # `import cupy` raises ImportError
    assert _cuda_probe.probe() == (0, _cuda_probe._INSTALL)
    with pytest.raises(RuntimeError, match=r"pip install minigrad\[cuda\]") as e:
        minigrad.zeros(2, device="cuda")
    assert "cupy-cuda12x" in str(e.value) and "cupy-cuda13x" in str(e.value)


@pytest.mark.parametrize("make", [
    lambda: minigrad.zeros(2, device="cuda"),
    lambda: minigrad.tensor([1.0], device="cuda:0"),
    lambda: minigrad.ones(2).cuda(),
    lambda: minigrad.ones(2).cuda(0),
    lambda: minigrad.ones(2).to("cuda"),
    lambda: minigrad.ones(2).to(device="cuda", dtype=minigrad.float64),
    lambda: minigrad.cuda.synchronize(),
    lambda: minigrad.cuda.current_device(),
    lambda: minigrad.cuda.get_device_name(),
    lambda: minigrad.memory.allocated("cuda"),
])
def test_every_cuda_request_fails_with_the_reason(make):
    with pytest.raises(RuntimeError) as e:
        make()
    assert str(e.value) == f"minigrad: CUDA is not available: {minigrad.cuda.why_unavailable()}"


def test_device_strings_are_checked_before_availability():
    # a typo is torch's error, whatever the machine has
    for bad in ["cuda:x", "gpu", "cuda:-1"]:
        with pytest.raises(RuntimeError) as m_err:
            minigrad.zeros(1, device=bad)
        with pytest.raises(RuntimeError) as t_err:
            torch.device(bad)
        assert str(m_err.value) == str(t_err.value)
    with pytest.raises(RuntimeError, match="device type 'meta' is not supported"):
        minigrad.ones(1).to("meta")


def test_seeding_the_gpu_needs_no_gpu():
    # torch.cuda.manual_seed is lazy: callable on any machine
    minigrad.cuda.manual_seed(3)
    minigrad.cuda.manual_seed_all(3)
    torch.cuda.manual_seed(3)
