"""The CUDA reduction and softmax kernels (reduce.cu, softmax.cu), run on the CPU.

Built and launched as in tests/test_cuda_host_elementwise.py. These kernels combine across a
block's threads (shared memory, __syncthreads, warp shuffles): the host shim runs each block's
256 threads as fibers in lockstep between barriers, and reports a barrier that only some threads
reach as a deadlock, so the combination trees run as written.

Every reduction runs one pass (`mg_reduce`) and split (`mg_reduce_split`: chunks' partials into
slots, the last block of each output, found by an atomic ticket, combines them in slot order),
over rows (inner == 1) and columns (inner > 1, several 32-column tiles), with grids of different
sizes (the result must not change: the combination order is fixed by the block shape) and, for
the split pass, blocks run in shuffled orders (the shim's MG_HOST_BLOCK_ORDER), so a different
block combines each time.

Exactness: float inputs are multiples of 1/64 (integers for products), so every partial sum in
the kernels' double accumulators is exact and the result cannot depend on the order of summation:
then the kernel must equal torch's double-precision result rounded to the output type, bit for
bit. Where a formula rounds on the way (var, logsumexp, p-norms, softmax in double), the check is
a bound of a few ulps, stated with each. Rows of NaN, +-inf and ties check torch's rules.
"""

import ctypes
import math
import os

import numpy as np
import pytest
import torch

from cuda_host import harness as H
from cuda_host.checks import assert_close, assert_same, host_build, instances, libm, op_name, parse, rng_for
from cuda_host.harness import shuffled_blocks

THREADS = 256  # MG_REDUCE_THREADS
ROWS, COLS = (5, 300, 1), (2, 70, 45)  # inner == 1; inner > 1 with a partial second tile
SPLITS = [((2, 2000, 1), 512), ((3, 200, 33), 64), ((1, 700, 1), 4096)]  # (shape, chunk); the last: one chunk


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    return host_build(tmp_path_factory)


def torch_type(c):
    return H.C_TYPES[c][1]


def tame(ctype, shape, rng, kind="sum"):
    """Values whose double-precision sums (or products) are exact: k/64 for floats, powers of two
    for products, small integers."""
    n = math.prod(shape)
    if ctype == "bool":
        v = torch.from_numpy(rng.random(n) < 0.6)
    elif kind == "prod":
        v = torch.from_numpy(rng.choice([0.5, 1.0, 2.0, -1.0, -0.5, -2.0], n))
        if ctype in ("int", "long long"):
            v = torch.from_numpy(rng.choice([1, -1, 2, 1, -1, -2], n))
    elif kind == "ties":  # few distinct values: argmax/argmin must take the first
        v = torch.from_numpy(rng.integers(-3, 4, n).astype(np.float64))
    elif ctype in ("float", "double"):
        v = torch.from_numpy(rng.integers(-400, 401, n) / 64.0)
    else:
        v = torch.from_numpy(rng.integers(-50, 51, n))
    return v.to(torch_type(ctype)).reshape(shape)


def with_specials(x, rng):
    """Rows 0..2 of each outer index get NaN, +inf / -inf together, and +inf (floats only)."""
    if not x.dtype.is_floating_point or x.shape[1] == 0:
        return x
    x = x.clone()
    r = x.shape[1]
    for o in range(x.shape[0]):
        j = int(rng.integers(0, x.shape[2]))
        k = o % 4
        if k == 0:
            x[o, int(rng.integers(0, r)), j] = math.nan
        elif k == 1:
            x[o, int(rng.integers(0, r)), j] = math.inf
            x[o, int(rng.integers(0, r)), j] = -math.inf
        elif k == 2:
            x[o, int(rng.integers(0, r)), j] = math.inf
    return x


# ----- launching -----

def launch_one_pass(host, inst, x, out_t, vals_t, aux=None, p0=0.0, p1=0.0, grid=2):
    outer, red, inner = x.shape
    out = torch.empty((outer, inner), dtype=torch_type(out_t))
    vals = torch.empty((outer, inner), dtype=x.dtype) if vals_t else None
    xc = x.contiguous()
    host.launch(inst, grid, THREADS, ctypes.c_void_p(out.data_ptr()),
                ctypes.c_void_p(vals.data_ptr() if vals is not None else 0), ctypes.c_void_p(xc.data_ptr()),
                ctypes.c_longlong(outer), ctypes.c_longlong(red), ctypes.c_longlong(inner),
                ctypes.c_void_p(aux.data_ptr() if aux is not None else 0), ctypes.c_double(p0), ctypes.c_double(p1))
    return out, vals


def launch_split(host, inst, x, out_t, vals_t, chunk, aux=None, p0=0.0, p1=0.0, grid=3):
    """mg_reduce_split: chunks of the reduced axis into slots, the last block of each output
    combines them. The ticket counters start at zero and must be zero again after."""
    _, (op,) = parse(inst)
    outer, red, inner = x.shape
    nchunk = max(1, -(-red // chunk)) if red > chunk else 1
    tiles = 1 if inner == 1 else -(-inner // 32)
    part = torch.zeros(outer * nchunk * inner * 2, dtype=torch.complex128)  # 16-byte slots, 16-aligned
    assert part.data_ptr() % 16 == 0
    tickets = torch.zeros(outer * tiles, dtype=torch.int32)
    xc = x.contiguous()
    auxp = ctypes.c_void_p(aux.data_ptr() if aux is not None else 0)
    out = torch.empty((outer, inner), dtype=torch_type(out_t))
    vals = torch.empty((outer, inner), dtype=x.dtype) if vals_t else None
    host.launch(f"mg_reduce_split<{op}>", grid, THREADS, ctypes.c_void_p(out.data_ptr()),
                ctypes.c_void_p(vals.data_ptr() if vals is not None else 0), ctypes.c_void_p(part.data_ptr()),
                ctypes.c_void_p(tickets.data_ptr()), ctypes.c_void_p(xc.data_ptr()),
                ctypes.c_longlong(outer), ctypes.c_longlong(red), ctypes.c_longlong(inner), ctypes.c_longlong(chunk),
                auxp, ctypes.c_double(p0), ctypes.c_double(p1))
    assert not tickets.any(), f"{inst}: ticket counters left at {tickets.tolist()}"
    return out, vals


# ----- sum, prod, mean -----

def widen(d):
    return torch.float64 if d.is_floating_point else torch.int64


def narrow(acc, d):
    if d == torch.bool:
        return acc != 0
    return acc.to(d)  # int64 -> int32 wraps, double -> float rounds once


@pytest.mark.parametrize("inst", [i for i in instances("reduce", "mg_reduce")
                                  if op_name(parse(i)[1][0]).startswith(("Sum<", "Prod<", "Mean<"))])
def test_sum_prod_mean(host, inst):
    _, (op,) = parse(inst)
    kind, (t, d) = op_name(op).split("<")[0], parse(op_name(op))[1]
    rng = rng_for(inst)
    dt = torch_type(d)

    def x_for(shape):
        x = tame(t, shape, rng, "prod" if kind == "Prod" else "sum")
        return with_specials(x, rng) if d in ("float", "double") else x

    for label, x, out, _ in each_layout_plain(host, inst, x_for, d):
        acc = x.to(dt).to(widen(dt))  # each element cast to the result dtype first (dtype=)
        if kind == "Sum":
            want = narrow(acc.sum(1), dt)
        elif kind == "Prod":
            want = narrow(acc.prod(1), dt)
        else:
            want = (acc.sum(1) / x.shape[1]).to(dt)
        assert_same(out, want, f"{inst} {label}")
    # no elements: the identity (sum 0, prod 1, mean 0/0)
    x = torch.zeros((3, 0, 2), dtype=torch_type(t))
    out, _ = launch_one_pass(host, inst, x, d, False, p0=0.0)
    want = {"Sum": torch.zeros, "Prod": torch.ones}.get(kind, lambda s, dtype: torch.full(s, math.nan, dtype=dtype))((3, 2), dtype=dt)
    assert_same(out, want, f"{inst} empty")


def each_layout_plain(host, inst, x_for, out_t, vals_t=False, p0_for=None, aux_for=None, p1=0.0):
    """each_layout with per-input p0 and aux (Mean's p0 is the reduced count)."""
    _, (op,) = parse(inst)
    mean = op_name(op).startswith("Mean<")
    for shape in (ROWS, COLS):
        x = x_for(shape)
        p0 = x.shape[1] if mean else (p0_for(x) if p0_for else 0.0)
        aux = aux_for(x) if aux_for else None
        out, vals = launch_one_pass(host, inst, x, out_t, vals_t, aux=aux, p0=p0, p1=p1, grid=1)
        out5, vals5 = launch_one_pass(host, inst, x, out_t, vals_t, aux=aux, p0=p0, p1=p1, grid=5)
        assert_same(out5, out, f"{inst} {shape}: a grid of 5 blocks changed the result")
        if vals_t:
            assert_same(vals5, vals, f"{inst} {shape}: a grid of 5 blocks changed the values")
        yield f"{shape}", x, out, vals
    for shape, chunk in SPLITS:
        x = x_for(shape)
        p0 = x.shape[1] if mean else (p0_for(x) if p0_for else 0.0)
        aux = aux_for(x) if aux_for else None
        out, vals = launch_split(host, inst, x, out_t, vals_t, chunk, aux=aux, p0=p0, p1=p1)
        for seed, grid in (("5", 7), ("6", 64)):  # other blocks draw the last tickets
            with shuffled_blocks(seed):
                out2, vals2 = launch_split(host, inst, x, out_t, vals_t, chunk, aux=aux, p0=p0, p1=p1, grid=grid)
            assert_same(out2, out, f"{inst} {shape}: the block that combined changed the result")
            if vals_t:
                assert_same(vals2, vals, f"{inst} {shape}: the block that combined changed the values")
        yield f"{shape} chunk {chunk}", x, out, vals



# ----- amax/amin, argmax/argmin with values, all/any -----

@pytest.mark.parametrize("inst", [i for i in instances("reduce", "mg_reduce")
                                  if op_name(parse(i)[1][0]).startswith(("Amax<", "Amin<", "ArgMax<", "ArgMin<", "All<", "Any<"))])
def test_extremes_and_truth(host, inst):
    _, (op,) = parse(inst)
    kind, (t,) = op_name(op).split("<")[0], parse(op_name(op))[1]
    rng = rng_for(inst)
    arg = kind.startswith("Arg")
    out_t = {"Amax": t, "Amin": t, "ArgMax": "long long", "ArgMin": "long long", "All": "bool", "Any": "bool"}[kind]

    def x_for(shape):
        x = tame(t, shape, rng, "ties" if arg or kind.startswith("Am") else "sum")
        if t in ("int", "long long") and kind.startswith(("Am", "Arg")):
            x.view(-1)[::37] = {"int": -2**31, "long long": -2**63}[t]  # the minimum: the identity of max
        return with_specials(x, rng)

    for label, x, out, vals in each_layout_plain(host, inst, x_for, out_t, vals_t=arg):
        if kind in ("All", "Any"):
            want = (torch.all if kind == "All" else torch.any)(x, 1)
            assert_same(out, want, f"{inst} {label}")
        elif t == "bool" and not arg:
            assert_same(out, x.any(1) if kind == "Amax" else x.all(1), f"{inst} {label}")
        elif not arg:
            assert_same(out, (torch.amax if kind == "Amax" else torch.amin)(x, 1), f"{inst} {label}")
        else:
            # torch's max(dim)/min(dim): the first extreme element, or the first NaN
            v, i = (torch.max if kind == "ArgMax" else torch.min)(x, 1)
            assert_same(out, i, f"{inst} {label} indices")
            assert_same(vals, v, f"{inst} {label} values")
    if kind in ("All", "Any"):
        out, _ = launch_one_pass(host, inst, torch.zeros((2, 0, 3), dtype=torch_type(t)), "bool", False)
        assert_same(out, torch.full((2, 3), kind == "All"), f"{inst} empty")


# ----- vector norms -----

NORM_ORD = {"Norm2": 2.0, "Norm1": 1.0, "NormInf": math.inf, "NormNegInf": -math.inf, "Norm0": 0.0, "NormP": 3.0}


@pytest.mark.parametrize("inst", [i for i in instances("reduce", "mg_reduce") if op_name(parse(i)[1][0]).startswith("Norm")])
def test_norms(host, inst):
    _, (op,) = parse(inst)
    kind, (t, d) = op_name(op).split("<")[0], parse(op_name(op))[1]
    rng = rng_for(inst)
    ord_ = NORM_ORD[kind]

    def x_for(shape):
        x = with_specials(tame(t, shape, rng), rng)
        x.view(-1)[::7] = 0.0  # zeros: Norm0 counts them out, NormNegInf finds them
        return x

    for label, x, out, _ in each_layout_plain(host, inst, x_for, d, p0_for=lambda x: ord_):
        want = torch.linalg.vector_norm(x.double(), ord_, dim=1).to(torch_type(d))
        if kind == "NormP":  # pow rounds: within two ulps of the double result
            assert_ulps(out, want, 2, f"{inst} {label}")
        else:  # squares, sums and maxima of k/64 are exact; sqrt rounds correctly
            assert_same(out, want, f"{inst} {label}")


def ulps_apart(got, want):
    ib = torch.int32 if got.dtype == torch.float32 else torch.int64
    top = -(2**31) if got.dtype == torch.float32 else -(2**63)

    def key(t):
        b = t.contiguous().view(ib).to(torch.int64)
        return torch.where(b < 0, top - b, b)

    return (key(got) - key(want)).abs()


def assert_ulps(got, want, ulps, what):
    """NaN where want is NaN, infinities equal, and finite values within `ulps` of each other."""
    gn, wn = got.isnan(), want.isnan()
    bad = (gn != wn) | (~gn & ~wn & (ulps_apart(got, want) > ulps))
    if bad.any():
        i = tuple(bad.nonzero()[0].tolist())
        raise AssertionError(f"{what}: {int(bad.sum())} differ by more than {ulps} ulp, e.g. at {i}: "
                             f"got {got[i].item()!r}, want {want[i].item()!r}")


# ----- var/std (Mean<T, double> then SqDev<T>) and logsumexp (LseShift<T> then LseSum<T>) -----

@pytest.mark.parametrize("t", ["float", "double"])
@pytest.mark.parametrize("correction, sqrt", [(1.0, False), (0.0, True), (2.5, False)])
def test_var_std_two_passes(host, t, correction, sqrt):
    rng = rng_for(f"var {t} {correction}")
    mean_inst, dev_inst = f"mg_reduce<mg::Mean<{t}, double>>", f"mg_reduce<mg::SqDev<{t}>>"
    for shape in (ROWS, COLS, (2, 3, 40)):
        x = with_specials(tame(t, shape, rng), rng)
        means, _ = launch_one_pass(host, mean_inst, x, "double", False, p0=shape[1])
        divisor = max(0.0, shape[1] - correction)
        out, _ = launch_one_pass(host, dev_inst, x, t, False, aux=means, p0=divisor, p1=float(sqrt))
        split, _ = launch_split(host, dev_inst, x, t, False, 16, aux=means, p0=divisor, p1=float(sqrt))
        ref = torch.var(x.double(), dim=1, correction=correction)
        want = (ref.sqrt() if sqrt else ref).to(torch_type(t))
        # The mean rounds, so do the deviations: minigrad's two passes and torch's Welford are each
        # within (n + 4) eps of the exact variance (relative), so within twice that of each other;
        # rounded to float32 they agree to an ulp.
        for got, what in ((out, ""), (split, " split")):
            if t == "float":
                assert_ulps(got, want, 1, f"var {t} {shape}{what}")
            else:
                assert_close(got, want, f"var {t} {shape}{what}", rtol=2 * (shape[1] + 4) * 2.0**-53, atol=0.0)


@pytest.mark.parametrize("t", ["float", "double"])
def test_logsumexp_two_passes(host, t):
    rng = rng_for(f"lse {t}")
    for shape in (ROWS, COLS):
        x = with_specials(tame(t, shape, rng), rng)
        x[-1] = -math.inf  # a row of -inf: the shift is 0 and the result -inf
        shifts, _ = launch_one_pass(host, f"mg_reduce<mg::LseShift<{t}>>", x, "double", False)
        m = torch.amax(x.double(), 1)
        assert_same(shifts, torch.where(m.isinf(), 0.0, m), f"shift {t} {shape}")
        split_shifts, _ = launch_split(host, f"mg_reduce<mg::LseShift<{t}>>", x, "double", False, 16)
        assert_same(split_shifts, shifts, f"shift {t} {shape} split")
        out, _ = launch_one_pass(host, f"mg_reduce<mg::LseSum<{t}>>", x, t, False, aux=shifts)
        split, _ = launch_split(host, f"mg_reduce<mg::LseSum<{t}>>", x, t, False, 64, aux=shifts)
        want = torch.logsumexp(x.double(), 1).to(torch_type(t))
        # exp and log round in double: within a few ulps of torch's double result
        assert_ulps(out, want, 8 if t == "double" else 1, f"logsumexp {t} {shape}")
        assert_ulps(split, want, 8 if t == "double" else 1, f"logsumexp {t} {shape} split")


def test_every_reduce_op_has_its_two_kernels():
    ops = {tuple(parse(i)[1]) for i in instances("reduce", "mg_reduce")}
    for template in ("mg_reduce_split",):
        assert {tuple(parse(i)[1]) for i in instances("reduce", template)} == ops


def test_a_block_of_the_wrong_size_traps(host):
    """The combination order needs MG_REDUCE_THREADS threads: another block size must not pass
    silently. The shim turns __trap() into an abort, so this runs in a child process."""
    import subprocess
    import sys

    code = (
        "import ctypes, sys, torch; sys.path.insert(0, %r); from cuda_host import harness as H\n"
        "lib = H.Host(ctypes.CDLL(%r), %r)\n"
        "x = torch.ones(4); out = torch.empty(1)\n"
        "lib.launch('mg_reduce<mg::Sum<float, float>>', 1, 128, ctypes.c_void_p(out.data_ptr()), ctypes.c_void_p(0),"
        " ctypes.c_void_p(x.data_ptr()), ctypes.c_longlong(1), ctypes.c_longlong(4), ctypes.c_longlong(1),"
        " ctypes.c_void_p(0), ctypes.c_double(0), ctypes.c_double(0))\n"
    ) % (str(H.HERE.parent), host.lib._name, list(host.sources))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode != 0 and "__trap()" in r.stderr


# ----- softmax -----

def softmax_inputs(t, shape, rng):
    """Values within 6 of each other in a slice (so the exps span a few powers of two and the
    float32 softmax's double sums are exact), a row with NaN, one with +inf, one of -inf."""
    x = torch.from_numpy(rng.integers(-384, 1, math.prod(shape)) / 64.0).to(torch_type(t)).reshape(shape)
    if shape[1] > 1 and shape[0] >= 3:
        x[0, 1, 0] = math.nan
        x[1, 0, -1] = math.inf
        x[2, :, 0] = -math.inf
    return x


def softmax_formula(x, log):
    """softmax.rs's kernel (rust/kernels/src/softmax.rs): max in T, exp(x - max) in T (the C
    library's), sums in double, the result rounded once."""
    m = torch.amax(x, 1, keepdim=True)
    e = libm("exp", x - m)
    s = e.double().sum(1, keepdim=True)
    if log:
        return ((x.double() - m.double()) - torch.log(s)).to(x.dtype)  # torch's order
    return (e.double() * (1.0 / s)).to(x.dtype)


SOFTMAX_SHAPES = [(4, 300, 1), (3, 37, 45), (3, 1, 1), (0, 5, 1), (3, 700, 2)]


@pytest.mark.parametrize("inst", instances("softmax", "mg_softmax"))
def test_softmax(host, inst):
    _, (t, log) = parse(inst)
    log = log == "true"
    rng = rng_for(inst)
    for shape in SOFTMAX_SHAPES:
        x = softmax_inputs(t, shape, rng)
        outs = []
        for grid in (1, 4):
            out = torch.full(shape, -7.0, dtype=x.dtype)
            host.launch(inst, grid, THREADS, ctypes.c_void_p(out.data_ptr()), ctypes.c_void_p(x.data_ptr()),
                        *(ctypes.c_longlong(v) for v in shape))
            outs.append(out)
        assert_same(outs[1], outs[0], f"{inst} {shape}: the grid size changed the result")
        if t == "float":  # exact double sums: bit for bit
            assert_same(outs[0], softmax_formula(x, log), f"{inst} {shape} (minigrad's formula)")
        else:  # double exps sum inexactly: the order shows in the last bits
            assert_ulps(outs[0], softmax_formula(x, log), 4, f"{inst} {shape} (minigrad's formula)")
        ref = (torch.log_softmax if log else torch.softmax)(x, 1)
        assert_close(outs[0], ref, f"{inst} {shape} (torch)")


def softmax_backward_formula(g, r, log):
    """softmax.rs's backward, op by op: the sum in double rounded to T, then T arithmetic."""
    if log:
        s = g.double().sum(1, keepdim=True).to(g.dtype)
        return g - libm("exp", r) * s
    s = (g * r).double().sum(1, keepdim=True).to(g.dtype)
    return r * (g - s)


@pytest.mark.parametrize("inst", instances("softmax", "mg_softmax_backward"))
def test_softmax_backward(host, inst):
    _, (t, log) = parse(inst)
    log = log == "true"
    rng = rng_for(inst)
    for shape in SOFTMAX_SHAPES:
        g = torch.from_numpy(rng.integers(-64, 65, math.prod(shape)) / 64.0).to(torch_type(t)).reshape(shape)
        x = softmax_inputs(t, shape, rng).nan_to_num(0.0, 0.0, 0.0)
        r = (torch.log_softmax if log else torch.softmax)(x, 1)
        if not log:  # results exact in a few bits, so g * r and its sums are exact too
            r = (r * 1024).round() / 1024
        outs = []
        for grid in (1, 3):
            gi = torch.full(shape, -7.0, dtype=g.dtype)
            host.launch(inst, grid, THREADS, ctypes.c_void_p(gi.data_ptr()), ctypes.c_void_p(g.data_ptr()),
                        ctypes.c_void_p(r.data_ptr()), *(ctypes.c_longlong(v) for v in shape))
            outs.append(gi)
        assert_same(outs[1], outs[0], f"{inst} {shape}: the grid size changed the result")
        assert_same(outs[0], softmax_backward_formula(g, r, log), f"{inst} {shape} (minigrad's formula)")
        fn = torch._log_softmax_backward_data if log else torch._softmax_backward_data
        assert_close(outs[0], fn(g, r, 1, g.dtype), f"{inst} {shape} (torch)")


# ----- softmax, warp per row (rows of at most 32 * PER elements) -----

WARP_ROWS = [1, 5, 31, 32, 33, 100, 257, 1000, 1024]  # row lengths: partial, whole and uneven warps


def warp_cases(per):
    """(rows, n) shapes the PER instance can take: every listed row length that fits, including
    rows much shorter than 32 * PER (the lanes past the row must not count)."""
    return [(rows, n) for n in WARP_ROWS if n <= 32 * per for rows in (7,)]


@pytest.mark.parametrize("inst", instances("softmax", "mg_softmax_warp"))
def test_softmax_warp(host, inst):
    _, (t, log, per) = parse(inst)
    log, per = log == "true", int(per)
    rng = rng_for(inst)
    block = instances("softmax", "mg_softmax")
    block = next(i for i in block if parse(i)[1] == [t, "true" if log else "false"])
    for rows, n in warp_cases(per):
        x = softmax_inputs(t, (rows, n, 1), rng).reshape(rows, n)
        outs = []
        for grid, threads in ((1, 128), (3, 64), (1, 32)):  # any whole-warp block; any grid
            out = torch.full((rows, n), -7.0, dtype=x.dtype)
            host.launch(inst, grid, threads, ctypes.c_void_p(out.data_ptr()), ctypes.c_void_p(x.data_ptr()),
                        ctypes.c_longlong(rows), ctypes.c_longlong(n))
            outs.append(out)
        for o in outs[1:]:
            assert_same(o, outs[0], f"{inst} {(rows, n)}: the launch shape changed the result")
        want = softmax_formula(x.reshape(rows, n, 1), log).reshape(rows, n)
        if t == "float":  # exact double sums: bit for bit, so also equal to the block kernel's
            assert_same(outs[0], want, f"{inst} {(rows, n)} (minigrad's formula)")
            old = torch.full((rows, n), -7.0, dtype=x.dtype)
            host.launch(block, 2, THREADS, ctypes.c_void_p(old.data_ptr()), ctypes.c_void_p(x.data_ptr()),
                        ctypes.c_longlong(rows), ctypes.c_longlong(n), ctypes.c_longlong(1))
            assert_same(outs[0], old, f"{inst} {(rows, n)} (the block-per-row kernel)")
        elif log:  # (x - max) - log(sum): the sum's last bits show, scaled by log's size (< 8)
            torch.testing.assert_close(outs[0], want, rtol=0, atol=1e-14, equal_nan=True)
        else:
            assert_ulps(outs[0], want, 4, f"{inst} {(rows, n)} (minigrad's formula)")
        ref = (torch.log_softmax if log else torch.softmax)(x, 1)
        assert_close(outs[0], ref, f"{inst} {(rows, n)} (torch)")


@pytest.mark.parametrize("inst", [i for i in instances("softmax", "mg_softmax_warp") if "backward" not in i and i.endswith(", 1>")])
def test_softmax_warp_zero_maxima_and_nan_rows_match_the_block_kernel(host, inst):
    """The warp kernel's lane max is fmax (it skips NaN and may pick either zero), the block
    kernel's the NaN-propagating merge: rows whose maximum is a signed zero, alone or beside the
    other zero, rows whose other entries underflow exp (the sum is exactly 1, so log_softmax shows
    x - max's sign), and NaN rows give the same bits, signs of zero included, and torch's values."""
    _, (t, log, per) = parse(inst)
    log = log == "true"
    dt = torch.float32 if t == "float" else torch.float64
    z, nz, lo, nan, inf = 0.0, -0.0, -200.0 if t == "float" else -1000.0, math.nan, math.inf
    rows = [[nz, lo, lo], [z, lo, lo], [nz, z, lo], [z, nz, lo], [lo, nz, z], [nz, nz, lo],
            [nan, z, lo], [lo, nan, nz], [inf, nan, z], [nan, nan, nan], [-inf, -inf, -inf], [inf, lo, nz]]
    x = torch.tensor(rows, dtype=dt)
    n_rows, n = x.shape
    block = next(i for i in instances("softmax", "mg_softmax") if parse(i)[1] == [t, "true" if log else "false"])
    out, old = (torch.full((n_rows, n), -7.0, dtype=dt) for _ in range(2))
    host.launch(inst, 1, 32, ctypes.c_void_p(out.data_ptr()), ctypes.c_void_p(x.data_ptr()),
                ctypes.c_longlong(n_rows), ctypes.c_longlong(n))
    host.launch(block, 2, THREADS, ctypes.c_void_p(old.data_ptr()), ctypes.c_void_p(x.data_ptr()),
                ctypes.c_longlong(n_rows), ctypes.c_longlong(n), ctypes.c_longlong(1))
    assert_same(out, old, f"{inst}: the warp kernel against the block kernel")
    assert_same(out, (torch.log_softmax if log else torch.softmax)(x, 1), f"{inst}: against torch")


@pytest.mark.parametrize("inst", instances("softmax", "mg_softmax_warp_backward"))
def test_softmax_warp_backward(host, inst):
    _, (t, log, per) = parse(inst)
    log, per = log == "true", int(per)
    rng = rng_for(inst)
    for rows, n in warp_cases(per):
        g = torch.from_numpy(rng.integers(-64, 65, rows * n) / 64.0).to(torch_type(t)).reshape(rows, n)
        x = softmax_inputs(t, (rows, n, 1), rng).reshape(rows, n).nan_to_num(0.0, 0.0, 0.0)
        r = (torch.log_softmax if log else torch.softmax)(x, 1)
        if not log:
            r = (r * 1024).round() / 1024
        outs = []
        for grid, threads in ((1, 128), (2, 32)):
            gi = torch.full((rows, n), -7.0, dtype=g.dtype)
            host.launch(inst, grid, threads, ctypes.c_void_p(gi.data_ptr()), ctypes.c_void_p(g.data_ptr()),
                        ctypes.c_void_p(r.data_ptr()), ctypes.c_longlong(rows), ctypes.c_longlong(n))
            outs.append(gi)
        assert_same(outs[1], outs[0], f"{inst} {(rows, n)}: the launch shape changed the result")
        want = softmax_backward_formula(g.reshape(rows, n, 1), r.reshape(rows, n, 1), log).reshape(rows, n)
        assert_same(outs[0], want, f"{inst} {(rows, n)} (minigrad's formula)")
        fn = torch._log_softmax_backward_data if log else torch._softmax_backward_data
        assert_close(outs[0], fn(g, r, 1, g.dtype), f"{inst} {(rows, n)} (torch)")


# ----- short rows, a warp per row (mg_reduce_warp) -----

def launch_warp(host, inst, x, out_t, vals_t, p0, grid, threads):
    rows, red = x.shape
    out = torch.full((rows,), 7, dtype=torch_type(out_t))
    vals = torch.full((rows,), 7, dtype=x.dtype) if vals_t else None
    host.launch(inst, grid, threads, ctypes.c_void_p(out.data_ptr()),
                ctypes.c_void_p(vals.data_ptr() if vals is not None else 0), ctypes.c_void_p(x.data_ptr()),
                ctypes.c_longlong(rows), ctypes.c_longlong(red), ctypes.c_void_p(0), ctypes.c_double(p0),
                ctypes.c_double(0.0))
    return out, vals


@pytest.mark.parametrize("inst", instances("reduce", "mg_reduce_warp"))
def test_reduce_warp_matches_the_block_kernel(host, inst):
    """Same results as mg_reduce (exact inputs: the order cannot show; ties: the first index),
    for rows shorter than, equal to and longer than a warp, under any launch shape."""
    _, (op,) = parse(inst)
    kind, t = op_name(op).split("<")[0], parse(op_name(op))[1][0]
    rng = rng_for(inst)
    arg = kind.startswith("Arg")
    out_t = "long long" if arg else t
    for red in WARP_ROWS:
        x = tame(t, (6, red, 1), rng, "ties" if arg or kind.startswith("Am") else "sum")
        x = with_specials(x, rng)
        p0 = float(red) if kind == "Mean" else 0.0
        want, want_vals = launch_one_pass(host, f"mg_reduce<{op}>", x, out_t, arg, p0=p0)
        x2 = x.reshape(6, red).contiguous()
        runs = [launch_warp(host, inst, x2, out_t, arg, p0, g, th) for g, th in ((1, 128), (2, 64), (1, 32))]
        for out, vals in runs:
            assert_same(out, want.reshape(6), f"{inst} red={red}")
            if arg:
                assert_same(vals, want_vals.reshape(6), f"{inst} red={red} (values)")
