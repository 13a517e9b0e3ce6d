"""The split reduction in one launch (reduce.cu's mg_reduce_split) through the CUDA backend,
against torch's CPU: long reductions with few outputs, where each output's chunks are reduced
by different blocks and the block that draws the last ticket combines them in slot order.

On the host emulation, MG_HOST_BLOCK_ORDER makes the blocks run in a shuffled order, so another
block combines: the bits must not change. Exact inputs (multiples of 1/64) make every sum
independent of the order, so those must equal torch's float64 result rounded once. The ticket
counters live in per-stream scratch memory that must be zero after every launch: a second
reduction on the same stream (and one on another stream) must still be right.
"""

import os

import pytest
import torch

import minigrad as mg
from cuda_host.backend import REAL_GPU, back, cuda_device, on, same  # noqa: F401  (cuda_device: autouse fixture)
from cuda_host.harness import shuffled_blocks

LONG = 3 * 4096 + 77  # past 2 * 4096: reduce_chunk splits it


def _exact(shape, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) < 0.5
    v = torch.randint(-400, 401, shape, generator=g, dtype=torch.int64)
    return (v.double() / 64).to(dtype) if dtype.is_floating_point else (v // 16).to(dtype)



def _bits(t):
    return back(t).view(-1).clone()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64, torch.bool, torch.float16, torch.bfloat16])
def test_full_sum_of_exact_values_is_torchs_double_sum_rounded_once(dtype):
    x = _exact((LONG,), dtype)
    narrow = dtype in (torch.float16, torch.bfloat16)
    got = mg.sum(on(x.float()).to(getattr(mg, str(dtype)[6:])) if narrow else on(x))
    want = x.double().sum().to(dtype) if dtype.is_floating_point else x.sum()
    if narrow:  # NumPy has no bfloat16: compare the values as float32
        got, want = got.to(mg.float32), want.float()
    same(got, want)


@pytest.mark.parametrize("op", ["sum", "mean", "amax", "amin", "norm", "var", "std", "logsumexp", "argmax", "argmin"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_float_reductions_of_long_vectors_match_torch_and_do_not_depend_on_the_combining_block(op, dtype):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(LONG, generator=g, dtype=dtype)  # not exact: the order shows in the last bits
    fn = {"logsumexp": lambda t, lib: lib.logsumexp(t, 0), "norm": lambda t, lib: lib.norm(t, 3.0)}.get(op, lambda t, lib: getattr(lib, op)(t))
    want = fn(x, torch)
    m = on(x)
    got = fn(m, mg)
    same(got, want, exact=op in ("amax", "amin", "argmax", "argmin"))
    first = _bits(got)
    for seed in (3, 4):
        with shuffled_blocks(seed):
            again = _bits(fn(m, mg))
        assert torch.equal(again, first), f"{op}: the block that combined changed the result"


@pytest.mark.parametrize("dtype", [torch.int32, torch.int64, torch.bool])
@pytest.mark.parametrize("op", ["sum", "prod", "amax", "all", "any", "count_nonzero"])
def test_integer_and_bool_long_reductions(op, dtype):
    if op == "amax" and dtype == torch.bool:
        return
    x = _exact((LONG,), dtype, seed=2)
    if op == "prod" and dtype != torch.bool:
        x = torch.where(x.abs() > 1, x.sign(), x).to(dtype)  # keeps the product small (it wraps anyway)
    same(getattr(mg, op)(on(x)), getattr(torch, op)(x))


def test_columns_and_few_rows_take_the_split_pass_too():
    # (outer, red, inner) with few outputs: column tiles (inner > 1) and two rows
    x = _exact((LONG, 40), torch.float32, seed=5)
    same(mg.sum(on(x), 0), x.double().sum(0).float())
    same(mg.amax(on(x), 0), x.amax(0))
    mx, mi = mg.max(on(x), 0)
    rx, ri = torch.max(x, 0)
    same(mx, rx)
    same(mi, ri)
    y = _exact((2, LONG), torch.float64, seed=6)
    same(mg.sum(on(y), 1), y.sum(1))
    same(mg.mean(on(y), 1), y.mean(1))


@pytest.mark.parametrize("op", ["sum", "amax", "amin", "argmax", "prod", "norm", "logsumexp"])
def test_nan_in_a_late_chunk_propagates(op):
    x = _exact((LONG,), torch.float32, seed=7)
    x[LONG - 5] = float("nan")
    fn = {"logsumexp": lambda t, lib: lib.logsumexp(t, 0)}.get(op, lambda t, lib: getattr(lib, op)(t))
    got, want = fn(on(x), mg), fn(x, torch)
    if op == "argmax":
        same(got, want)
    else:
        assert back(got).isnan().item() and want.isnan().item()


def test_empty_and_one_element():
    for n in (0, 1):
        x = _exact((n,), torch.float32)
        same(mg.sum(on(x)), x.sum())
        same(mg.prod(on(x)), x.prod())
        if n:
            same(mg.amax(on(x)), x.amax())


def test_one_launch_and_the_tickets_are_reset(cuda_device):
    x = _exact((LONG,), torch.float32, seed=8)
    want = x.double().sum().float()
    m = on(x)
    if cuda_device is not None:
        before = cuda_device.launches
        got = mg.sum(m)
        assert cuda_device.launches - before == 1, "the split pass is one launch"
    else:
        got = mg.sum(m)
    same(got, want)
    for _ in range(3):  # counters left non-zero would make later launches combine too early or never
        same(mg.sum(m), want)
    same(mg.sum(on(x[: LONG // 2 * 2].reshape(2, -1)), 1), x.reshape(-1)[: LONG // 2 * 2].reshape(2, -1).double().sum(1).float())


@pytest.mark.skipif(REAL_GPU, reason="the emulation's stream handles")
def test_scratch_is_per_stream_and_not_counted_as_tensor_memory(cuda_device):
    x = _exact((LONG,), torch.float64, seed=9)
    m = on(x)
    base = mg.cuda.memory_allocated()
    s = mg.sum(m)
    assert mg.cuda.memory_allocated() - base == 8, "only the result is a tensor's memory"
    with cuda_device.use_stream(77):
        same(mg.sum(m), x.sum())
    assert cuda_device.launch_streams[-1] == 77
    same(mg.sum(m), x.sum())
    same(s, x.sum())
