"""What the host-build tests share: the build (once per session), instance names, inputs with the
values that break kernels, the C library's math for exact references, and the comparison."""

import ctypes
import ctypes.util
import math

import numpy as np
import pytest
import torch

from cuda_host import harness as H
from minigrad import _C

SOURCES = {name: (path, text, inst) for name, path, text, inst in _C._cuda_sources()}
_BUILT = {}


def host_build(tmp_path_factory):
    """The host library of every source on disk (tests/test_cuda_host_elementwise.py checks that
    the extension embeds the same text), built once per session."""
    if H.compiler() is None:
        pytest.skip("g++ not found: the host build of the CUDA kernels needs a C++17 compiler")
    if "host" not in _BUILT:
        out = tmp_path_factory.mktemp("cuda_host_build")
        srcs = {name: (str(H.REPO / path), None, inst) for name, (path, _, inst) in SOURCES.items()}
        _BUILT["host"] = H.build(out, srcs, H.REPO / "rust" / "core" / "src" / "ops")
    return _BUILT["host"]


def parse(expr):
    """'mg_binary<bool, float, mg::Lt>' -> ('mg_binary', ['bool', 'float', 'mg::Lt'])."""
    name, _, rest = expr.partition("<")
    args, depth, cur = [], 0, ""
    for ch in rest[:-1]:
        if ch == "," and depth == 0:
            args.append(cur.strip())
            cur = ""
            continue
        depth += ch == "<"
        depth -= ch == ">"
        cur += ch
    if cur.strip():
        args.append(cur.strip())
    return name, args


def instances(source, template):
    return [i for i in SOURCES[source][2] if parse(i)[0] == template]


def op_name(arg):
    return arg.replace("mg::", "")


def rng_for(inst):
    import zlib

    return np.random.default_rng(zlib.crc32(inst.encode()))


# ----- inputs -----

FLOAT_SPECIALS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 0.5, -0.5, 1.5, 2.5, -2.5, 1.0, -1.0, 3.0,
                  1e-45, -1e-40, 3e38, -3e38, 1e30, 3e9, -3e9, 88.7, -103.0, 1e-8, 20.0]
INT_EXTREMES = {"int": (-2**31, 2**31 - 1), "long long": (-2**63, 2**63 - 1), "unsigned char": (0, 255),
                "signed char": (-128, 127), "short": (-2**15, 2**15 - 1)}
FILL = {"float": -7.25, "double": -7.25, "int": -77, "long long": -77, "bool": True, "mg_half": -7.25,
        "mg_bf16": -7.25, "unsigned char": 77, "signed char": -77, "short": -77}
HALF_TYPES = ("mg_half", "mg_bf16")


def values(ctype, shape, rng, low=-100, high=100, specials=True, nonzero=False, scale=3.0):
    np_t = H.C_TYPES[ctype][0]
    n = int(np.prod(shape)) if shape else 1
    if ctype in HALF_TYPES:  # float32 values (specials too), rounded once into the format
        v32 = values("float", (n,), rng, low, high, specials, nonzero, scale)
        if nonzero:
            v32[v32.abs() < 1e-3] = 1.0  # nor what rounds to zero
        return v32.to(H.C_TYPES[ctype][1]).reshape(shape)
    if ctype == "bool":
        v = rng.random(n) < 0.5
    elif ctype in ("float", "double"):
        v = (rng.standard_normal(n) * scale).astype(np_t)
        if specials:
            pick = rng.random(n) < 0.3
            v[pick] = np.array(FLOAT_SPECIALS, dtype=np_t)[rng.integers(0, len(FLOAT_SPECIALS), pick.sum())]
    else:
        v = rng.integers(low, high + 1, n).astype(np.int64).astype(np_t)  # (uint8 wraps)
        if specials:
            lo, hi = INT_EXTREMES[ctype]
            sp = np.array([lo, hi, 0, 1, -1 if lo < 0 else 2, lo + 1, hi - 1], dtype=np_t)
            pick = rng.random(n) < 0.15
            v[pick] = sp[rng.integers(0, len(sp), pick.sum())]
    if nonzero and ctype != "bool":
        v[v == 0] = 1
    return torch.from_numpy(v.reshape(shape))


# Strided layouts of the logical shape (3, 4, 5): a dense permuted output, an input with gaps and
# an offset, inputs broadcast along dim 1 and along dim 0 (stride 0).
SHAPE = (3, 4, 5)
OUT_LAYOUT = ((4, 1, 12), 2)
GAPPY = ((45, 10, 2), 5)
BCAST1 = ((5, 0, 1), 1, (3, 1, 5))
BCAST0 = ((0, 5, 1), 3, (1, 4, 5))
EDGE_SHAPES = [(), (3, 0, 5)]  # 0-d (one element) and empty (no element)
GRID, BLOCK = 3, 64  # elementwise: grid-stride loops go round more than once
N_CONTIG = 1003  # not a multiple of any vector width: the tail runs element by element


def input_operand(ctype, rng, layout, shape=SHAPE, **kw):
    strides, offset = layout[0], layout[1]
    src_shape = layout[2] if len(layout) > 2 else shape
    return H.operand_from(values(ctype, src_shape, rng, **kw), strides, offset, FILL[ctype], shape=shape)


def output_operand(ctype, shape=SHAPE, layout=OUT_LAYOUT):
    torch_t = H.C_TYPES[ctype][1]
    return H.operand_from(torch.full(shape, FILL[ctype], dtype=torch_t), layout[0], layout[1], FILL[ctype])


def dense(shape):
    return (tuple(H.contiguous_strides(shape)), 0)


def untouched_outside(op, ctype):
    """Elements of op's buffer outside its view still hold the fill value: nothing else was written."""
    mask = np.zeros(op.buf.shape, dtype=np.bool_)
    if all(op.shape):
        torch.from_numpy(mask).as_strided(op.shape, op.strides, op.offset).fill_(True)
    rest = op.buf[~mask]
    want = H.to_numpy(torch.full(rest.shape, FILL[ctype], dtype=H.C_TYPES[ctype][1]))
    return rest.tobytes() == want.tobytes()


# ----- the C library's math, for references that must match the host build bit for bit -----

_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))


def libm(name, *tensors):
    """`name` from the C library, elementwise (`namef` for float32): what the host build calls."""
    t0 = tensors[0]
    single = t0.dtype == torch.float32
    fn = getattr(_LIBM, name + ("f" if single else ""))
    ct = ctypes.c_float if single else ctypes.c_double
    fn.restype, fn.argtypes = ct, [ct] * len(tensors)
    arrays = [t.contiguous().numpy().ravel() for t in tensors]
    out = np.array([fn(*(float(a[i]) for a in arrays)) for i in range(arrays[0].size)], dtype=arrays[0].dtype)
    return torch.from_numpy(out.reshape(tuple(t0.shape)))


# ----- torch's own results -----

def scalar_loop(t):
    """`t`'s values in a non-contiguous view, so torch computes element by element rather than in
    its vector loops (whose sqrt, from SLEEF, is not correctly rounded)."""
    if t.dim() == 0:
        return t.clone()
    big = torch.empty(tuple(t.shape) + (2,), dtype=t.dtype)
    big[..., 0] = t
    return big[..., 0]


def torch_result(fn, *tensors):
    return fn(*[scalar_loop(t) for t in tensors]).contiguous()


# ----- comparison -----

def assert_same(got, want, what=""):
    """Bit for bit: equal dtypes and shapes, NaN where and only where want has NaN, and every other
    element with the same bits (so -0.0 is not 0.0)."""
    got, want = got.contiguous(), want.contiguous()
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, want {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {tuple(got.shape)}, want {tuple(want.shape)}"
    if got.dtype.is_floating_point:
        ib = {2: torch.int16, 4: torch.int32, 8: torch.int64}[got.element_size()]
        gn, wn = got.isnan(), want.isnan()
        bad = (gn != wn) | (~gn & ~wn & (got.view(ib) != want.view(ib)))
    else:
        bad = got != want
    if bad.any():
        idx = bad.nonzero()[:8].tolist()
        rows = [f"  at {tuple(i)}: got {got[tuple(i)].item()!r}, want {want[tuple(i)].item()!r}" for i in idx]
        raise AssertionError(f"{what}: {int(bad.sum())} of {bad.numel()} differ\n" + "\n".join(rows))


def assert_close(got, want, what="", rtol=None, atol=None):
    """torch.testing's closeness (NaN matching NaN), for results from a different math library."""
    try:
        torch.testing.assert_close(got.contiguous(), want.contiguous(), equal_nan=True, rtol=rtol, atol=atol)
    except AssertionError as e:
        raise AssertionError(f"{what}: {e}") from None


def c_arg(ctype, v):
    return H.c_value(ctype, v)
