"""The CUDA elementwise kernels (unary.cu, binary.cu, copy.cu), run on the CPU.

g++ compiles the very `.cu` files NVRTC compiles, with tests/cuda_host/shim.h (CUDA's thread
model on fibers, its math functions on the C library), and every instance the backend may launch
is called through ctypes with its parameters packed as the kernel ABI says (docs/gpu.md).
Inputs mix random values with NaN, +-inf, -0.0, denormals, halfway cases and integer extremes, in
strided (gaps, offsets, a permuted output), broadcast (stride 0), 0-d, empty and contiguous
layouts (vector-aligned, misaligned and in place); elements outside an output must stay untouched.

Each result is checked twice:
* bit for bit against minigrad's own formula (what the CPU kernel computes, unary.rs/compute.rs),
  evaluated by torch operation by operation, with the C library's exp/erf/tanh/... where the formula
  calls one: the kernel must compute exactly that, signs of zero and NaN positions included;
* against torch's op: bit for bit as well, except where torch's math library differs from the C
  library (SLEEF/MKL against glibc; on a GPU, CUDA's), checked with torch.testing's closeness.
What this cannot check: NVRTC's code generation and CUDA's math library (a GPU run does that).
"""

import ctypes
import math

import pytest
import torch
import torch.nn.functional as F

from cuda_host import harness as H
from cuda_host.checks import (
    BCAST0, BCAST1, BLOCK, EDGE_SHAPES, FILL, GAPPY, GRID, N_CONTIG, SHAPE, SOURCES, assert_close, assert_same,
    c_arg, dense, host_build, input_operand, instances, libm, op_name, output_operand, parse, rng_for,
    torch_result, untouched_outside, values,
)
from minigrad import _C

OPS_DIR = H.REPO / "rust" / "core" / "src" / "ops"


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    return host_build(tmp_path_factory)


def test_the_extension_embeds_the_sources_on_disk():
    """The host build compiles the files; the backend and `minigrad kernels` use the embedded text."""
    for name, (path, text, _) in SOURCES.items():
        assert (H.REPO / path).read_text() == text, f"{path} changed since the extension was built: rebuild it"
    for name, text in _C._cuda_headers():
        assert (OPS_DIR / name).read_text() == text, f"{name} changed since the extension was built: rebuild it"


def test_abi_structs_match_the_launcher_layout(host):
    """MgShape / MgStrides as g++ lays them out equal what ctypes (and the Rust launcher) pack."""
    size_shape, off_sizes, size_strides, off_strides, align, size_bool = host.abi()
    assert (size_shape, off_sizes) == (ctypes.sizeof(H.MgShape), H.MgShape.sizes.offset) == (208, 8)
    assert (size_strides, off_strides) == (ctypes.sizeof(H.MgStrides), H.MgStrides.strides.offset) == (208, 8)
    assert (align, size_bool) == (8, 1)


def test_every_instance_is_in_the_host_build(host):
    for name, (_, _, inst) in SOURCES.items():
        for i in inst:
            host.kernel(i)


# ----- unary -----

SQRT1_2 = 0.7071067811865476  # std::f64::consts::FRAC_1_SQRT_2
PI = 3.141592653589793


def in_double(fn):
    """gelu and map_float_raw's maps are evaluated in double and rounded once (unary.rs)."""
    return lambda x: fn(x.double()).to(x.dtype)


def unary_formula(op, p0):
    """What the CPU kernel computes per element (unary.rs), in torch with the C library's math."""
    one = 1.0
    formulas = {
        "Exp": lambda x: libm("exp", x), "Log": lambda x: libm("log", x), "Log1p": lambda x: libm("log1p", x),
        "Expm1": lambda x: libm("expm1", x), "Sqrt": lambda x: libm("sqrt", x),
        "Rsqrt": lambda x: one / libm("sqrt", x), "Sin": lambda x: libm("sin", x), "Cos": lambda x: libm("cos", x),
        "Tanh": lambda x: libm("tanh", x), "Sigmoid": lambda x: one / (one + libm("exp", -x)),
        "Silu": lambda x: x / (one + libm("exp", -x)),
        "Gelu": in_double(lambda v: 0.5 * v * (1.0 + libm("erf", v * SQRT1_2))),
        "GeluTanh": in_double(lambda v: 0.5 * v * (1.0 + libm("tanh", math.sqrt(2.0 / PI) * (v + 0.044715 * v * v * v)))),
        "LeakyRelu": in_double(lambda v: torch.where((v > 0) | v.isnan(), v, v * p0)),
        "Elu": in_double(lambda v: torch.where(v < 0, p0 * libm("expm1", v), v)),
        "GeluCdf": in_double(lambda v: 0.5 * (1.0 + libm("erf", v * SQRT1_2))),
        "Frac": lambda x: x - libm("trunc", x),
        "Deg2rad": lambda x: x * 0.017453292519943295, "Rad2deg": lambda x: x * 57.29577951308232,
        "Sinc": lambda x: torch.where(x == 0, torch.ones_like(x), libm("sin", x * PI) / (x * PI)),
        **{op: (lambda name: in_double(lambda v: libm(name, v)))(op.lower()) for op in LIBM_UNARY},
    }
    # Erfinv: the host build's own (shim.h; the C library has none), checked against torch only
    return formulas.get(op, None if op in NO_HOST_FORMULA else unary_torch(op, p0))


# Ops whose kernel is one C library function of the same name, lower-cased, in double.
LIBM_UNARY = ["Tan", "Asin", "Acos", "Atan", "Sinh", "Cosh", "Asinh", "Acosh", "Atanh", "Log2", "Log10", "Exp2",
              "Erf", "Erfc"]
NO_HOST_FORMULA = {"Erfinv"}


def unary_torch(op, p0):
    return {
        "Neg": torch.neg, "Abs": torch.abs, "Sign": torch.sign, "Exp": torch.exp, "Log": torch.log,
        "Log1p": torch.log1p, "Expm1": torch.expm1, "Sqrt": torch.sqrt, "Rsqrt": torch.rsqrt, "Sin": torch.sin,
        "Cos": torch.cos, "Tanh": torch.tanh, "Sigmoid": torch.sigmoid, "Relu": torch.relu, "Silu": F.silu,
        "Gelu": F.gelu, "GeluTanh": lambda x: F.gelu(x, approximate="tanh"), "Reciprocal": torch.reciprocal,
        "Floor": torch.floor, "Ceil": torch.ceil, "Round": torch.round, "Trunc": torch.trunc,
        "LogicalNot": torch.logical_not, "BitwiseNot": torch.bitwise_not,
        "LeakyRelu": lambda x: F.leaky_relu(x, p0), "Elu": lambda x: F.elu(x, p0),
        "GeluCdf": torch.special.ndtr, "Frac": torch.frac, "Deg2rad": torch.deg2rad, "Rad2deg": torch.rad2deg,
        "Sinc": torch.sinc, "Erfinv": torch.erfinv,
        **{op: getattr(torch, op.lower()) for op in LIBM_UNARY},
    }[op]


# Ops whose torch result comes from another math library (SLEEF/MKL here, CUDA's on a GPU), or
# in another precision (torch evaluates gelu and elu in float32, minigrad in double): close, not equal.
# torch's sqrt comes from SLEEF too, which does not round it correctly (the C library and CUDA do).
TRANSCENDENTAL = {"Exp", "Log", "Log1p", "Expm1", "Sin", "Cos", "Tanh", "Sigmoid", "Silu", "Gelu", "GeluTanh",
                  "Elu", "LeakyRelu", "GeluCdf", "Sqrt", "Erfinv", "Sinc", *LIBM_UNARY}
PARAMS = {"LeakyRelu": 0.1, "Elu": 0.7}


def unary_params(op):
    """p0, p1, p2 of a unary launch: the op's parameter, and for Elu scale = input_scale = 1 (plain
    elu; selu's and celu's scales are checked end to end in test_activations_selu_celu.py)."""
    rest = (1.0, 1.0) if op == "Elu" else (0.0, 0.0)
    return [ctypes.c_double(v) for v in (PARAMS.get(op, 0.0), *rest)]


def check_unary(got, x, op, what):
    p0 = PARAMS.get(op, 0.0)
    formula = unary_formula(op, p0)
    if formula is not None:
        assert_same(got, torch_result(formula, x), f"{what} (minigrad's formula)")
    if op in TRANSCENDENTAL:
        assert_close(got, torch_result(unary_torch(op, p0), x), f"{what} (torch)")
    else:
        assert_same(got, torch_result(unary_torch(op, p0), x), f"{what} (torch)")


@pytest.mark.parametrize("inst", instances("unary", "mg_unary"))
def test_unary_strided(host, inst):
    _, (o, t, op) = parse(inst)
    op, rng = op_name(op), rng_for(inst)
    for shape in [SHAPE, *EDGE_SHAPES]:
        if shape == SHAPE:
            x, out = input_operand(t, rng, GAPPY), output_operand(o)
        else:
            x, out = input_operand(t, rng, dense(shape), shape=shape), output_operand(o, shape, dense(shape))
        n = math.prod(shape)
        host.launch(inst, GRID, BLOCK, out.ptr(), out.mg(), x.ptr(), x.mg(), H.mg_shape(shape),
                    ctypes.c_longlong(n), *unary_params(op))
        assert untouched_outside(out, o), f"{inst} wrote outside its output"
        check_unary(out.view(), x.view(), op, f"{inst} {shape}")


@pytest.mark.parametrize("inst", instances("unary", "mg_unary_contig"))
def test_unary_contig(host, inst):
    _, (o, t, op) = parse(inst)
    op, rng = op_name(op), rng_for(inst)
    params = unary_params(op)
    for shift in (0, 1):  # 16-byte vectors (aligned), elements (misaligned by one element)
        x = H.operand_from(values(t, (N_CONTIG,), rng), (1,), shift, FILL[t])
        out = output_operand(o, (N_CONTIG,), ((1,), shift))
        host.launch(inst, GRID, BLOCK, out.ptr_at_offset(), x.ptr_at_offset(), ctypes.c_longlong(N_CONTIG), *params)
        assert untouched_outside(out, o)
        check_unary(out.view(), x.view(), op, f"{inst} shift {shift}")
    if o == t:  # in place: out is in
        x = H.operand_from(values(t, (N_CONTIG,), rng), (1,), 0, FILL[t])
        before = x.view().clone()
        host.launch(inst, GRID, BLOCK, x.ptr(), x.ptr(), ctypes.c_longlong(N_CONTIG), *params)
        check_unary(x.view(), before, op, f"{inst} in place")


# ----- unary backward: gi = f(g, s) -----

def backward_formula(op, p0):
    """minigrad's backward formula (unary.rs UnaryOp::backward, ParamUnary::backward), op by op."""
    one = 1.0

    def gelu(g, x):
        cdf = (0.5 * (1.0 + libm("erf", x.double() * SQRT1_2))).to(x.dtype)
        pdf = libm("exp", (x * x) * -0.5) * (1.0 / math.sqrt(2.0 * PI))
        return g * (cdf + x * pdf)

    def gelu_tanh(g, x):
        k = math.sqrt(2.0 / PI)
        x2 = x * x
        th = libm("tanh", (x + (x2 * x) * 0.044715) * k)
        left = (th + 1.0) * 0.5
        dinner = (x2 * (3.0 * 0.044715) + 1.0) * k
        right = ((x * (one - th * th)) * 0.5) * dinner
        return g * (left + right)

    def silu(g, x):
        sig = one / (one + libm("exp", -x))
        return g * (sig * (x * (one - sig) + 1.0))

    return {
        "ReluBackward": lambda g, r: g.masked_fill(r <= 0, 0.0),
        "SigmoidBackward": lambda g, r: g * (r * (one - r)),
        "TanhBackward": lambda g, r: g * (one - r * r),
        "SqrtBackward": lambda g, r: g / (r * 2.0),
        "RsqrtBackward": lambda g, r: g * (libm("pow", r, torch.full_like(r, 3)) * -0.5),
        "ReciprocalBackward": lambda g, r: g * -(r * r),
        "Expm1Backward": lambda g, r: g * (r + 1.0),
        "Log1pBackward": lambda g, x: g / (x + 1.0),
        "AbsBackward": lambda g, x: g * torch.sign(x),
        "SinBackward": lambda g, x: g * libm("cos", x),
        "CosBackward": lambda g, x: g * -libm("sin", x),
        "SiluBackward": silu,
        "GeluBackward": gelu,
        "GeluTanhBackward": gelu_tanh,
        "LeakyReluBackward": lambda g, s: torch.where(s > 0, g, g * p0),
        # torch's elu_backward takes the negative branch where s <= 0 (a NaN passes g through)
        "EluBackward": lambda g, x: torch.where(x <= 0, g * (libm("exp", x) * p0), g),
        "EluResultBackward": lambda g, r: torch.where(r <= 0, g * (r + p0), g),
    }[op]


def backward_torch(op, p0):
    """torch's own backward kernels (or derivatives.yaml's formula, for ops that have none)."""
    a = torch.ops.aten
    return {
        "ReluBackward": lambda g, r: a.threshold_backward(g, r, 0.0),
        "SigmoidBackward": a.sigmoid_backward,
        "TanhBackward": a.tanh_backward,
        "SqrtBackward": lambda g, r: g / (2 * r),
        "RsqrtBackward": lambda g, r: -0.5 * g * r.pow(3),
        "ReciprocalBackward": lambda g, r: -g * (r * r),
        "Expm1Backward": lambda g, r: g * (r + 1),
        "Log1pBackward": lambda g, x: g / (x + 1),
        "AbsBackward": lambda g, x: g * x.sgn(),
        "SinBackward": lambda g, x: g * x.cos(),
        "CosBackward": lambda g, x: g * -x.sin(),
        "SiluBackward": a.silu_backward,
        "GeluBackward": a.gelu_backward,
        "GeluTanhBackward": lambda g, x: a.gelu_backward(g, x, approximate="tanh"),
        "LeakyReluBackward": lambda g, s: a.leaky_relu_backward(g, s, p0, False),
        "EluBackward": lambda g, x: a.elu_backward(g, p0, 1, 1, False, x),
        "EluResultBackward": lambda g, r: a.elu_backward(g, p0, 1, 1, True, r),
    }[op]


# Bit for bit with torch too: the formulas with no math-library call and torch's grouping.
BACKWARD_EXACT = {"ReluBackward", "SqrtBackward", "ReciprocalBackward", "Expm1Backward", "Log1pBackward",
                  "AbsBackward", "LeakyReluBackward", "EluResultBackward"}
BACKWARD_PARAMS = {"LeakyReluBackward": 0.1, "EluBackward": 0.7, "EluResultBackward": 0.7}


def backward_inputs(op, ctype, shape, rng):
    g = values(ctype, shape, rng, specials=False)
    s = values(ctype, shape, rng)
    if op == "SigmoidBackward":  # results of sigmoid and tanh
        s = torch.sigmoid(s)
    if op == "TanhBackward":
        s = torch.tanh(s)
    return g, s


@pytest.mark.parametrize("inst", instances("unary", "mg_unary_backward") + instances("unary", "mg_unary_backward_contig"))
def test_unary_backward(host, inst):
    template, (t, op) = parse(inst)
    op, rng = op_name(op), rng_for(inst)
    p0 = BACKWARD_PARAMS.get(op, 0.0)
    if template == "mg_unary_backward":
        gop = H.operand_from(backward_inputs(op, t, BCAST1[2], rng)[0], BCAST1[0], BCAST1[1], FILL[t], shape=SHAPE)
        sop = H.operand_from(backward_inputs(op, t, SHAPE, rng)[1], GAPPY[0], GAPPY[1], FILL[t])
        out = output_operand(t)
        host.launch(inst, GRID, BLOCK, out.ptr(), out.mg(), gop.ptr(), gop.mg(), sop.ptr(), sop.mg(),
                    H.mg_shape(SHAPE), ctypes.c_longlong(math.prod(SHAPE)), ctypes.c_double(p0))
        assert untouched_outside(out, t)
    else:
        g, s = backward_inputs(op, t, (N_CONTIG,), rng)
        gop, sop = H.operand_from(g, (1,), 0, FILL[t]), H.operand_from(s, (1,), 0, FILL[t])
        out = output_operand(t, (N_CONTIG,), ((1,), 0))
        host.launch(inst, GRID, BLOCK, out.ptr(), gop.ptr(), sop.ptr(), ctypes.c_longlong(N_CONTIG), ctypes.c_double(p0))
    got, g, s = out.view(), gop.view(), sop.view()
    assert_same(got, torch_result(backward_formula(op, p0), g, s), f"{inst} (minigrad's formula)")
    if op in BACKWARD_EXACT:
        assert_same(got, torch_result(backward_torch(op, p0), g, s), f"{inst} (torch)")
    else:
        # The same derivative grouped differently (1 - r*r cancels near |r| = 1), or another libm.
        scale = 1e-5 if t == "float" else 1e-12
        assert_close(got, torch_result(backward_torch(op, p0), g, s), f"{inst} (torch)", rtol=scale, atol=scale)


# ----- binary -----

def binary_torch(op, p0):
    return {
        "Add": torch.add, "Sub": torch.sub, "Mul": torch.mul, "Div": torch.div,
        "AddAlpha": lambda a, b: torch.add(a, b, alpha=p0),
        "DivFloor": lambda a, b: torch.div(a, b, rounding_mode="floor"),
        "DivTrunc": lambda a, b: torch.div(a, b, rounding_mode="trunc"),
        "Remainder": torch.remainder, "Maximum": torch.maximum, "Minimum": torch.minimum,
        "BitAnd": torch.bitwise_and, "BitOr": torch.bitwise_or, "BitXor": torch.bitwise_xor,
        "Eq": torch.eq, "Ne": torch.ne, "Lt": torch.lt, "Le": torch.le, "Gt": torch.gt, "Ge": torch.ge,
        "LogicalAnd": torch.logical_and, "LogicalOr": torch.logical_or, "LogicalXor": torch.logical_xor,
        "Atan2": torch.atan2, "Hypot": torch.hypot, "Fmod": torch.fmod, "Copysign": torch.copysign,
        "Xlogy": torch.xlogy, "Logaddexp": torch.logaddexp, "Logaddexp2": torch.logaddexp2,
        # torch refuses bool ** bool tensors; `b ** True` and `b ** False` are what minigrad allows
        "Pow": lambda a, b: torch.where(b, torch.pow(a, True), torch.pow(a, False)) if a.dtype == torch.bool else torch.pow(a, b),
    }[op]


def binary_formula(op, p0):
    """Where minigrad's formula calls the C library or rounds differently from torch's op."""
    if op == "Pow":
        return lambda a, b: libm("pow", a, b) if a.dtype.is_floating_point else binary_torch(op, p0)(a, b)
    if op == "AddAlpha":  # a + alpha * b rounded once (a fused multiply-add), alpha in the compute type
        return lambda a, b: libm("fma", b, torch.full_like(b, p0), a)
    if op in ("Atan2", "Hypot"):
        return lambda a, b: libm(op.lower(), a, b)
    if op == "Xlogy":  # NaN where y is; 0 where x is 0; else x * log(y) in the compute type
        return lambda a, b: torch.where(b.isnan(), b, torch.where(a == 0, torch.zeros_like(a), a * libm("log", b)))
    if op in ("Logaddexp", "Logaddexp2"):  # max + log1p(exp(-|a - b|)), equal infinities kept
        def log_add_exp(a, b):
            d = -(a - b).abs()
            share = libm("log1p", libm("exp", d)) if op == "Logaddexp" else \
                libm("log1p", libm("exp2", d)) * torch.tensor(1.4426950408889634, dtype=a.dtype)
            m = torch.where(a < b, b, a)
            return torch.where((a == b) & (a - b).isnan(), a, m + share)
        return log_add_exp
    if op in ("Maximum", "Minimum"):  # compute.rs: NaN if either is; else a if a > b (a < b), else b
        pick = torch.gt if op == "Maximum" else torch.lt
        return lambda a, b: torch.where(a.isnan() | b.isnan(), a + b, torch.where(pick(a, b), a, b)) \
            if a.dtype.is_floating_point else binary_torch(op, p0)(a, b)
    return binary_torch(op, p0)


def binary_inputs(op, t, shape, rng):
    """(a, b) for op: integer divisors are never 0 (the op layer refuses them), and torch's own
    int trunc division traps on MIN / -1 (tested on its own below)."""
    a = values(t, shape, rng)
    b = values(t, shape, rng, nonzero=op in ("DivFloor", "DivTrunc", "Remainder", "Fmod"))
    if op == "Pow" and t in ("int", "long long"):
        b = values(t, shape, rng, low=-3, high=40, specials=False)
    if op == "DivTrunc" and t in ("int", "long long"):
        a[a == INT_MIN[t]] += 1
    return a, b


INT_MIN = {"int": -2**31, "long long": -2**63}
# ops whose values come from the C library here and from SLEEF in torch: close, not equal
LIBM_BINARY = ("Atan2", "Hypot", "Xlogy", "Logaddexp", "Logaddexp2")
BINARY_PARAMS = {"AddAlpha": 0.3}


def check_binary(got, a, b, op, what):
    p0 = BINARY_PARAMS.get(op, 0.0)
    assert_same(got, torch_result(binary_formula(op, p0), a, b), f"{what} (minigrad's formula)")
    if op in ("Pow", *LIBM_BINARY) and got.dtype.is_floating_point:
        assert_close(got, torch_result(binary_torch(op, p0), a, b), f"{what} (torch)")
    elif op in ("Maximum", "Minimum") and got.dtype.is_floating_point:
        # torch's sign for max(0.0, -0.0) depends on its loop (vector: b, scalar: a): compare values
        assert_same(got + 0.0, torch_result(binary_torch(op, p0), a, b) + 0.0, f"{what} (torch, zeros unsigned)")
    else:
        assert_same(got, torch_result(binary_torch(op, p0), a, b), f"{what} (torch)")


@pytest.mark.parametrize("inst", instances("binary", "mg_binary"))
def test_binary_strided(host, inst):
    _, (o, t, op) = parse(inst)
    op, rng = op_name(op), rng_for(inst)
    p0 = ctypes.c_double(BINARY_PARAMS.get(op, 0.0))
    for shape in [SHAPE, *EDGE_SHAPES]:
        if shape == SHAPE:
            a, _ = binary_inputs(op, t, SHAPE, rng)
            _, b = binary_inputs(op, t, BCAST1[2], rng)
            aop = H.operand_from(a, *GAPPY, FILL[t])
            bop = H.operand_from(b, BCAST1[0], BCAST1[1], FILL[t], shape=SHAPE)
            out = output_operand(o)
        else:
            a, b = binary_inputs(op, t, shape, rng)
            aop, bop = H.operand_from(a, *dense(shape), FILL[t]), H.operand_from(b, *dense(shape), FILL[t])
            out = output_operand(o, shape, dense(shape))
        host.launch(inst, GRID, BLOCK, out.ptr(), out.mg(), aop.ptr(), aop.mg(), bop.ptr(), bop.mg(),
                    H.mg_shape(shape), ctypes.c_longlong(math.prod(shape)), p0)
        assert untouched_outside(out, o), f"{inst} wrote outside its output"
        check_binary(out.view(), aop.view(), bop.view(), op, f"{inst} {shape}")


@pytest.mark.parametrize("inst", instances("binary", "mg_binary_contig"))
def test_binary_contig(host, inst):
    _, (o, t, op) = parse(inst)
    op, rng = op_name(op), rng_for(inst)
    p0 = ctypes.c_double(BINARY_PARAMS.get(op, 0.0))
    n = ctypes.c_longlong(N_CONTIG)
    for shift in (0, 1):
        a, b = binary_inputs(op, t, (N_CONTIG,), rng)
        aop, bop = H.operand_from(a, (1,), shift, FILL[t]), H.operand_from(b, (1,), 0, FILL[t])
        out = output_operand(o, (N_CONTIG,), ((1,), shift))
        host.launch(inst, GRID, BLOCK, out.ptr_at_offset(), aop.ptr_at_offset(), bop.ptr(), n, p0)
        assert untouched_outside(out, o)
        check_binary(out.view(), aop.view(), bop.view(), op, f"{inst} shift {shift}")
    if o == t:  # in place (a.op_(b)): out is a
        a, b = binary_inputs(op, t, (N_CONTIG,), rng)
        aop, bop = H.operand_from(a, (1,), 0, FILL[t]), H.operand_from(b, (1,), 0, FILL[t])
        host.launch(inst, GRID, BLOCK, aop.ptr(), aop.ptr(), bop.ptr(), n, p0)
        check_binary(aop.view(), a, b, op, f"{inst} in place")


def scalars(op, t):
    """The Python numbers a scalar kernel is tried with (nonzero integer divisors)."""
    if t == "bool":
        return [True, False]
    if t in ("int", "long long"):
        return [3, -1] if op != "Pow" else [3, 0]
    return [2.5, -0.0, math.nan]


@pytest.mark.parametrize("inst", instances("binary", "mg_binary_scalar") + instances("binary", "mg_binary_scalar_contig"))
def test_binary_scalar(host, inst):
    template, (o, t, op) = parse(inst)
    op, rng = op_name(op), rng_for(inst)
    p0 = ctypes.c_double(BINARY_PARAMS.get(op, 0.0))
    torch_t = H.C_TYPES[t][1]
    for s in scalars(op, t):
        for first in (0, 1):
            if first and (op in ("DivFloor", "DivTrunc", "Remainder", "Fmod") and t != "float" and t != "double" or
                          op == "Pow" and t in ("int", "long long")):
                x = values(t, SHAPE, rng, nonzero=True, low=1 if op == "Pow" else -100, high=20)
            else:
                x = values(t, SHAPE, rng)
            if op == "DivTrunc" and t in ("int", "long long") and not first:
                x[x == INT_MIN[t]] += 1
            if template == "mg_binary_scalar":
                xop, out = H.operand_from(x, *GAPPY, FILL[t]), output_operand(o)
                host.launch(inst, GRID, BLOCK, out.ptr(), out.mg(), xop.ptr(), xop.mg(), c_arg(t, s), H.mg_shape(SHAPE),
                            ctypes.c_longlong(math.prod(SHAPE)), ctypes.c_int(first), p0)
            else:
                xop = H.operand_from(x.reshape(-1), (1,), 1, FILL[t])  # misaligned: the element path
                out = output_operand(o, (x.numel(),), ((1,), 0))
                host.launch(inst, GRID, BLOCK, out.ptr(), xop.ptr_at_offset(), c_arg(t, s), ctypes.c_longlong(x.numel()),
                            ctypes.c_int(first), p0)
            assert untouched_outside(out, o)
            st = torch.tensor(s, dtype=torch_t).expand(xop.shape)  # the number, in the compute type
            a, b = (st, xop.view()) if first else (xop.view(), st)
            check_binary(out.view(), a, b, op, f"{inst} s={s!r} scalar_first={first}")


@pytest.mark.parametrize("t", ["int", "long long"])
def test_integer_division_of_the_minimum_by_minus_one_wraps(host, t):
    """MIN / -1 and MIN % -1 trap in C++ (and in torch's CPU trunc division); the kernels wrap, as
    torch's floor division does: MIN // -1 == MIN, trunc(MIN / -1) == MIN, MIN % -1 == 0."""
    lo = INT_MIN[t]
    a = torch.tensor([lo, lo, 7, -7], dtype=H.C_TYPES[t][1])
    b = torch.tensor([-1, 1, -1, -1], dtype=H.C_TYPES[t][1])
    want = {"DivFloor": [lo, lo, -7, 7], "DivTrunc": [lo, lo, -7, 7], "Remainder": [0, 0, 0, 0], "Fmod": [0, 0, 0, 0]}
    for op, expected in want.items():
        aop, bop = H.operand_from(a, (1,), 0, FILL[t]), H.operand_from(b, (1,), 0, FILL[t])
        out = output_operand(t, (4,), ((1,), 0))
        host.launch(f"mg_binary_contig<{t}, {t}, mg::{op}>", 1, 32, out.ptr(), aop.ptr(), bop.ptr(),
                    ctypes.c_longlong(4), ctypes.c_double(0))
        assert out.view().tolist() == expected, op
    assert torch.div(a[:1], b[:1], rounding_mode="floor").tolist() == [lo]  # torch's own floor division wraps


# ----- where, clamp, masked_fill -----

@pytest.mark.parametrize("inst", instances("binary", "mg_where") + instances("binary", "mg_where_contig"))
def test_where(host, inst):
    template, (t,) = parse(inst)
    rng = rng_for(inst)
    if template == "mg_where":
        c = H.operand_from(values("bool", BCAST0[2], rng), BCAST0[0], BCAST0[1], True, shape=SHAPE)
        a = H.operand_from(values(t, SHAPE, rng), *GAPPY, FILL[t])
        b = H.operand_from(values(t, BCAST1[2], rng), BCAST1[0], BCAST1[1], FILL[t], shape=SHAPE)
        out = output_operand(t)
        host.launch(inst, GRID, BLOCK, out.ptr(), out.mg(), c.ptr(), c.mg(), a.ptr(), a.mg(), b.ptr(), b.mg(),
                    H.mg_shape(SHAPE), ctypes.c_longlong(math.prod(SHAPE)))
        assert untouched_outside(out, t)
    else:
        c, a, b = (H.operand_from(values(ct, (N_CONTIG,), rng), (1,), 0, FILL[ct]) for ct in ("bool", t, t))
        out = output_operand(t, (N_CONTIG,), ((1,), 0))
        host.launch(inst, GRID, BLOCK, out.ptr(), c.ptr(), a.ptr(), b.ptr(), ctypes.c_longlong(N_CONTIG))
    assert_same(out.view(), torch.where(c.view(), a.view(), b.view()), inst)


def clamp_bounds(t):
    """(lo, hi) pairs: ordinary, crossed (lo > hi gives hi), and NaN bounds (NaN everywhere)."""
    if t in ("int", "long long"):
        return [(-20, 30), (30, -20)]
    return [(-0.75, 1.5), (1.5, -0.75), (math.nan, 1.0), (-1.0, math.nan)]


@pytest.mark.parametrize("inst", instances("binary", "mg_clamp_scalar") + instances("binary", "mg_clamp_scalar_contig"))
def test_clamp_scalar(host, inst):
    template, (t,) = parse(inst)
    rng = rng_for(inst)
    for lo, hi in clamp_bounds(t):
        for has in (1, 2, 3):
            x = values(t, SHAPE, rng)
            if template == "mg_clamp_scalar":
                xop, out = H.operand_from(x, *GAPPY, FILL[t]), output_operand(t)
                host.launch(inst, GRID, BLOCK, out.ptr(), out.mg(), xop.ptr(), xop.mg(), H.mg_shape(SHAPE),
                            ctypes.c_longlong(x.numel()), c_arg(t, lo), c_arg(t, hi), ctypes.c_int(has))
                assert untouched_outside(out, t)
            else:
                xop = H.operand_from(x.reshape(-1), (1,), 0, FILL[t])
                out = output_operand(t, (x.numel(),), ((1,), 0))
                host.launch(inst, GRID, BLOCK, out.ptr(), xop.ptr(), ctypes.c_longlong(x.numel()), c_arg(t, lo),
                            c_arg(t, hi), ctypes.c_int(has))
            want = torch_result(lambda x: torch.clamp(x, min=lo if has & 1 else None, max=hi if has & 2 else None), xop.view())
            assert_same(out.view(), want, f"{inst} lo={lo} hi={hi} has={has}")


@pytest.mark.parametrize("inst", instances("binary", "mg_clamp") + instances("binary", "mg_clamp_contig"))
def test_clamp_tensor(host, inst):
    template, (t,) = parse(inst)
    rng = rng_for(inst)
    for has in (1, 2, 3):
        if t == "bool" and has == 3:
            continue  # the op layer refuses two bounds for bool (torch's clamp has no bool kernel)
        x, lo, hi = values(t, SHAPE, rng), values(t, BCAST1[2], rng), values(t, SHAPE, rng)
        if template == "mg_clamp":
            xop = H.operand_from(x, *GAPPY, FILL[t])
            lop = H.operand_from(lo, BCAST1[0], BCAST1[1], FILL[t], shape=SHAPE)
            hop = H.operand_from(hi, *dense(SHAPE), FILL[t])
            out = output_operand(t)
            host.launch(inst, GRID, BLOCK, out.ptr(), out.mg(), xop.ptr(), xop.mg(), lop.ptr(), lop.mg(), hop.ptr(),
                        hop.mg(), H.mg_shape(SHAPE), ctypes.c_longlong(x.numel()), ctypes.c_int(has))
            assert untouched_outside(out, t)
        else:
            xop, lop, hop = (H.operand_from(v.expand(SHAPE).reshape(-1), (1,), 0, FILL[t]) for v in (x, lo, hi))
            out = output_operand(t, (x.numel(),), ((1,), 0))
            host.launch(inst, GRID, BLOCK, out.ptr(), xop.ptr(), lop.ptr(), hop.ptr(), ctypes.c_longlong(x.numel()),
                        ctypes.c_int(has))
        xv, lv, hv = xop.view(), lop.view(), hop.view()
        if t == "bool":  # one tensor bound is maximum / minimum (binary/clamp.rs)
            want = torch.maximum(xv, lv) if has == 1 else torch.minimum(xv, hv)
        else:
            want = torch_result(lambda x, lo, hi: torch.clamp(x, min=lo if has & 1 else None, max=hi if has & 2 else None),
                                xv, lv, hv)
        assert_same(out.view(), want, f"{inst} has={has}")


@pytest.mark.parametrize("inst", instances("binary", "mg_masked_fill") + instances("binary", "mg_masked_fill_contig"))
def test_masked_fill(host, inst):
    template, (t,) = parse(inst)
    rng = rng_for(inst)
    value = {"float": -0.0, "double": math.nan, "int": 2**31 - 1, "long long": -2**63, "bool": False}[t]
    x = values(t, SHAPE, rng)
    if template == "mg_masked_fill":
        xop = H.operand_from(x, *GAPPY, FILL[t])
        m = H.operand_from(values("bool", BCAST0[2], rng), BCAST0[0], BCAST0[1], True, shape=SHAPE)
        before = xop.view().clone()
        host.launch(inst, GRID, BLOCK, xop.ptr(), xop.mg(), m.ptr(), m.mg(), H.mg_shape(SHAPE),
                    ctypes.c_longlong(x.numel()), c_arg(t, value))
        assert untouched_outside(xop, t)
    else:
        xop = H.operand_from(x.reshape(-1), (1,), 0, FILL[t])
        m = H.operand_from(values("bool", (x.numel(),), rng), (1,), 0, True)
        before = xop.view().clone()
        host.launch(inst, GRID, BLOCK, xop.ptr(), m.ptr(), ctypes.c_longlong(x.numel()), c_arg(t, value))
    assert_same(xop.view(), before.masked_fill(m.view(), value), inst)


def test_masked_fill_writes_an_expanded_destination_only_where_the_mask_is_true(host):
    """torch lets masked_fill_ write a tensor whose elements alias (stride 0); the kernel writes only
    the value, never an element's old one back, so aliases cannot race."""
    buf = H.operand_from(torch.tensor([1.0, 2.0]), (1,), 0, FILL["float"])
    dst = H.Operand(buf.buf, (2, 3), (1, 0), 0)  # each element seen three times
    m = H.operand_from(torch.tensor([[False, True, False], [False, False, False]]), (3, 1), 0, True)
    host.launch("mg_masked_fill<float>", 1, 64, dst.ptr(), dst.mg(), m.ptr(), m.mg(), H.mg_shape((2, 3)),
                ctypes.c_longlong(6), ctypes.c_float(9.0))
    assert buf.buf[:2].tolist() == [9.0, 2.0]


# ----- copy and fill -----

@pytest.mark.parametrize("inst", instances("copy", "mg_copy") + instances("copy", "mg_copy_contig"))
def test_copy(host, inst):
    template, (o, t) = parse(inst)
    rng = rng_for(inst)
    x = values(t, SHAPE, rng)
    if t in ("float", "double"):  # casts of NaN, infinities and out-of-range values to integers
        x.view(-1)[:8] = torch.tensor([math.nan, math.inf, -math.inf, 3e9, -3e9, 1e30, -2.7, 2.7])
    otype = H.C_TYPES[o][1]
    if template == "mg_copy":
        xop = H.operand_from(x[:, :1, :], BCAST1[0], BCAST1[1], FILL[t], shape=SHAPE)  # a broadcast source
        out = output_operand(o)
        host.launch(inst, GRID, BLOCK, out.ptr(), out.mg(), xop.ptr(), xop.mg(), H.mg_shape(SHAPE),
                    ctypes.c_longlong(math.prod(SHAPE)))
        assert untouched_outside(out, o)
        x2 = H.operand_from(x, *GAPPY, FILL[t])
        out2 = output_operand(o)
        host.launch(inst, GRID, BLOCK, out2.ptr(), out2.mg(), x2.ptr(), x2.mg(), H.mg_shape(SHAPE),
                    ctypes.c_longlong(math.prod(SHAPE)))
        assert_same(out2.view(), x2.view().to(otype), f"{inst} gappy")
    else:
        xop = H.operand_from(x.reshape(-1), (1,), 1, FILL[t])
        out = output_operand(o, (x.numel(),), ((1,), 1))
        host.launch(inst, GRID, BLOCK, out.ptr_at_offset(), xop.ptr_at_offset(), ctypes.c_longlong(x.numel()))
        assert untouched_outside(out, o)
        x3 = H.operand_from(values(t, (N_CONTIG,), rng), (1,), 0, FILL[t])
        out3 = output_operand(o, (N_CONTIG,), ((1,), 0))
        host.launch(inst, GRID, BLOCK, out3.ptr(), x3.ptr(), ctypes.c_longlong(N_CONTIG))
        assert_same(out3.view(), x3.view().to(otype), f"{inst} aligned")
    assert_same(out.view(), xop.view().to(otype), inst)


@pytest.mark.parametrize("inst", instances("copy", "mg_fill") + instances("copy", "mg_fill_contig"))
def test_fill(host, inst):
    template, (t,) = parse(inst)
    value = {"float": -0.0, "double": math.inf, "int": -2**31, "long long": 2**63 - 1, "bool": True, "mg_half": -0.0,
             "mg_bf16": -3.0e38, "unsigned char": 255, "signed char": -128, "short": -2**15}[t]
    torch_t = H.C_TYPES[t][1]
    zero = {"bool": False}.get(t, 0)
    if template == "mg_fill":
        out = H.operand_from(torch.full(SHAPE, zero, dtype=torch_t), *GAPPY, zero)
        host.launch(inst, GRID, BLOCK, out.ptr(), out.mg(), H.mg_shape(SHAPE), ctypes.c_longlong(60), c_arg(t, value))
        mask = torch.zeros(out.buf.shape, dtype=torch.bool)
        mask.as_strided(SHAPE, GAPPY[0], GAPPY[1]).fill_(True)
        assert (H.torch_view(out.buf)[~mask] == zero).all()
    else:
        out = H.operand_from(torch.full((N_CONTIG,), zero, dtype=torch_t), (1,), 1, zero)
        host.launch(inst, GRID, BLOCK, out.ptr_at_offset(), ctypes.c_longlong(N_CONTIG), c_arg(t, value))
        assert out.buf[0] == zero and out.buf[-1] == zero
    assert_same(out.view(), torch.full(out.shape, value, dtype=torch_t), inst)
