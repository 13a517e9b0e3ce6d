"""`minigrad.memory`: exact counters, per-device queries, and `track()` (peak and retained bytes)."""

import pytest
import torch
from hypothesis import given, settings, strategies as st

import minigrad as mg


def test_track_reports_peak_and_retained_bytes():
    with mg.memory.track() as t:
        kept = mg.zeros(1000)                  # 4000 bytes, still alive after the block
        tmp = mg.zeros(2000)                   # 8000 bytes, freed inside it
        del tmp
    assert t.retained_bytes == 4000
    assert t.peak_delta_bytes == 12000
    assert t.peak_bytes == t.start_bytes + 12000 and t.end_bytes == t.start_bytes + 4000
    assert t.rss_start > 0 and t.rss_end > 0 and t.rss_peak > 0
    assert set(t.as_dict()) >= {"peak_delta_bytes", "retained_bytes", "rss_peak"}
    del kept


@settings(max_examples=25)
@given(st.lists(st.tuples(st.integers(1, 4096), st.booleans()), min_size=1, max_size=6))
def test_peak_and_retained_follow_allocations_exactly(plan):
    """Allocate float32 tensors in turn, keeping some: peak and retained are plain arithmetic."""
    kept, peak, alive = [], 0, 0
    with mg.memory.track() as t:
        for numel, keep in plan:
            x = mg.empty(numel)
            peak = max(peak, alive + 4 * numel)
            if keep:
                kept.append(x)
                alive += 4 * numel
            del x
    assert (t.peak_delta_bytes, t.retained_bytes) == (peak, alive)
    del kept


def test_nested_blocks_keep_the_outer_peak():
    with mg.memory.track() as outer:
        a = mg.zeros(5000)                     # 20000 bytes, freed before the inner block
        del a
        with mg.memory.track() as inner:
            b = mg.zeros(1000)
            del b
    assert inner.peak_delta_bytes == 4000 and inner.retained_bytes == 0
    assert outer.peak_delta_bytes == 20000 and outer.retained_bytes == 0


def test_backward_retains_exactly_the_gradients():
    w = mg.randn(64, 32, requires_grad=True)
    x = mg.randn(16, 64)
    with mg.memory.track() as t:
        (x @ w).relu().sum().backward()
    assert t.retained_bytes == 64 * 32 * 4
    assert t.peak_delta_bytes >= 64 * 32 * 4 + 16 * 32 * 4


@pytest.mark.parametrize("device", [None, "cpu", mg.device("cpu")])
def test_per_device_queries_match_the_counters(device):
    s = mg.memory.memory_stats(device)
    assert set(s) == {"allocated_bytes", "peak_bytes", "reserved_bytes", "cached_bytes"}
    x = mg.zeros(256)
    assert mg.memory.memory_allocated(device) == mg.memory.allocated() >= 1024
    assert mg.memory.max_memory_allocated(device) >= mg.memory.memory_allocated(device)
    assert mg.memory.memory_reserved(device) >= mg.memory.memory_allocated(device)
    mg.memory.reset_peak_memory_stats(device)
    assert mg.memory.max_memory_allocated(device) == mg.memory.memory_allocated(device)
    del x


def test_a_bad_device_string_fails_as_torch_fails():
    with pytest.raises(RuntimeError) as theirs:
        torch.device("xyz")
    with pytest.raises(RuntimeError) as ours:
        mg.memory.memory_allocated("xyz")
    assert str(ours.value) == str(theirs.value)


@pytest.mark.skipif(mg.cuda.is_available(), reason="the refusal is for machines without a usable GPU")
@pytest.mark.parametrize("device", ["cuda", "cuda:0", 0, "meta"])
def test_devices_without_tracking_are_refused(device):
    # a CUDA device says what is missing on this machine; other device types are not tracked
    expected = "no memory is tracked on device .meta." if device == "meta" else "^minigrad: CUDA is not available: "
    with pytest.raises(RuntimeError, match=expected):
        mg.memory.memory_allocated(device)
    with pytest.raises(RuntimeError, match=expected):
        with mg.memory.track(device):
            pass
