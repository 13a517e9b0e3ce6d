"""The CUDA backend (rust/py/src/cuda/) against torch: values, dtypes, versions, gradients, the
device rules and errors, memory accounting.

On a machine with a GPU (and CuPy) the tests run on it. Without one they run on `cuda:0`
emulated by the host: tests/cuda_host/driver.py provides the driver interface over host memory
and the g++ build of the same `.cu` kernels, so the Rust backend (kernel choice, parameter
packing, layouts, broadcasting, wrapped numbers, the engine's device rules) runs exactly as on a
GPU. `DEVICE_KIND` says which one ran; CUDA's math library differs from the C library's by an
ulp or two, so transcendental results are compared with torch's closeness rather than bitwise.
"""

import math

import pytest
import torch
from hypothesis import given, strategies as st

import minigrad as mg
from cuda_host.backend import (  # noqa: F401  (cuda_device: the module's autouse fixture)
    ALL, DEVICE_KIND, EDGE, FLOATS, REAL_GPU, back, cuda_device, layouts, on, same, to_mg, values,
)


def test_device_kind_is_reported(cuda_device):
    print(f"CUDA backend tests run on: {DEVICE_KIND} ({mg.cuda.get_device_name()})")
    assert mg.cuda.is_available() and mg.cuda.device_count() >= 1


# ----- creation, transfers, reads -----

@pytest.mark.parametrize("dtype", ALL)
def test_factories_and_round_trip(dtype):
    mdt = getattr(mg, str(dtype).split(".")[-1])
    v = values(dtype)
    t = mg.tensor(v.tolist(), dtype=mdt, device="cuda")
    assert t.is_cuda and str(t.device) == "cuda:0" and t.device.type == "cuda"
    same(t, v)
    assert t.tolist() == v.tolist() or dtype.is_floating_point
    assert t[3].item() == v[3].item()
    same(mg.zeros(2, 3, dtype=mdt, device="cuda"), torch.zeros(2, 3, dtype=dtype))
    same(mg.ones(2, 3, dtype=mdt, device="cuda"), torch.ones(2, 3, dtype=dtype))
    same(mg.full((4,), 3, dtype=mdt, device="cuda"), torch.full((4,), 3, dtype=dtype))
    assert mg.empty(0, 3, dtype=mdt, device="cuda").shape == (0, 3)


def test_factories_with_device_and_grad_make_leaves():
    for make in (lambda: mg.zeros(3, device="cuda", requires_grad=True), lambda: mg.tensor([1.0, 2.0], device="cuda", requires_grad=True),
                 lambda: mg.randn(4, device="cuda", requires_grad=True), lambda: mg.arange(3.0, device="cuda", requires_grad=True)):
        t = make()
        assert t.is_cuda and t.is_leaf and t.requires_grad and t.grad_fn is None
    like = mg.zeros_like(mg.ones(2, 2, device="cuda"))
    assert like.is_cuda
    same(like, torch.zeros(2, 2))
    assert mg.rand_like(like).is_cuda and not mg.zeros_like(like, device="cpu").is_cuda


def test_to_and_back_is_differentiable():
    x = mg.tensor([1.0, -2.0, 3.0], requires_grad=True)
    y = x.cuda()
    assert y.grad_fn.name() == "ToCopyBackward0" and y.is_cuda
    (y * y).cpu().sum().backward()
    assert x.grad.tolist() == [2.0, -4.0, 6.0] and not x.grad.is_cuda


def test_numpy_of_a_cuda_tensor_raises_torchs_error():
    t = mg.ones(2, device="cuda")
    with pytest.raises(TypeError) as mine:
        t.numpy()
    assert "can't convert cuda:0 device type tensor to numpy" in str(mine.value)


# ----- unary -----

UNARY_MATH = ["tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "log2", "log10", "exp2", "erf",
              "erfc", "erfinv", "sinc"]
UNARY_FLOAT = ["neg", "abs", "sign", "exp", "log", "log1p", "expm1", "sqrt", "rsqrt", "sin", "cos", "tanh", "sigmoid",
               "relu", "reciprocal", "floor", "ceil", "round", "trunc", "frac", "deg2rad", "rad2deg", *UNARY_MATH]
TRANSCENDENTAL = {"exp", "log", "log1p", "expm1", "sin", "cos", "tanh", "sigmoid", "rsqrt", *UNARY_MATH}


def ieee_sqrt(t):
    """The correctly rounded square root of each element (NaN below zero), in t's dtype."""
    return torch.tensor([math.sqrt(v) if v >= 0 else math.nan for v in t.flatten().tolist()], dtype=t.dtype).reshape(t.shape)


@pytest.mark.parametrize("op", UNARY_FLOAT)
@pytest.mark.parametrize("dtype", FLOATS)
def test_unary_float_ops_every_layout(op, dtype):
    for name, view in layouts(values(dtype)):
        m, ref_in = to_mg(view)
        # IEEE sqrt is correctly rounded, and so are ours; torch's CPU sqrt is MKL's VML in MKL
        # builds, one ulp off for sqrt(0.5) and sqrt(2) in float64 on a Xeon (docs/divergences.md).
        ref = ieee_sqrt(ref_in) if op == "sqrt" else getattr(torch, op)(ref_in)
        # exact where the C library and CUDA agree on correctly rounded results; close otherwise
        # CUDA's double sqrt differed from the CPU's in the last bit on an H100 (docs/gpu.md, Numbers)
        inexact_on_gpu = {"sigmoid", "sqrt"}
        same(getattr(mg, op)(m), ref, exact=op not in TRANSCENDENTAL and not (REAL_GPU and op in inexact_on_gpu))


@pytest.mark.parametrize("op", ["neg", "abs", "sign", "relu", "bitwise_not"])
@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_unary_int_ops(op, dtype):
    for name, view in layouts(values(dtype)):
        m, ref_in = to_mg(view)
        same(getattr(mg, op)(m), getattr(torch, op)(ref_in))


def test_unary_in_place_bumps_the_version_once_and_keeps_views():
    x = mg.tensor([[1.0, -2.0], [3.0, -4.0]], device="cuda")
    v = x.t()
    x.relu_()
    assert x._version == 1 and v._version == 1
    same(v, torch.tensor([[1.0, -2.0], [3.0, -4.0]]).relu().t())
    v.neg_()  # writes through the transposed view
    same(x, -torch.tensor([[1.0, -2.0], [3.0, -4.0]]).relu())
    assert x._version == 2


def test_logical_not_and_int_to_float_ops():
    b = mg.tensor([True, False], device="cuda")
    same(mg.logical_not(b), torch.tensor([False, True]))
    i = mg.tensor([1, 4, 9], device="cuda")
    same(i.sqrt(), torch.tensor([1, 4, 9]).sqrt())
    same(mg.logical_not(i), torch.tensor([False, False, False]))


# ----- binary -----

BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "pow", "remainder", "eq", "ne", "lt", "le", "gt", "ge",
          "logical_and", "logical_or", "logical_xor", "atan2", "hypot", "fmod", "copysign", "xlogy", "logaddexp",
          "logaddexp2"]
# float-only kernels (torch refuses integer and bool operands) and ops computed by the C library
# here and by SLEEF in torch (equal to rounding, not bit for bit)
FLOAT_ONLY = ("hypot", "logaddexp", "logaddexp2")
LIBM = ("pow", "atan2", "hypot", "xlogy", "logaddexp", "logaddexp2")


@pytest.mark.parametrize("op", BINARY)
@pytest.mark.parametrize("dtype", ALL)
def test_binary_ops_with_broadcast_and_layouts(op, dtype):
    if dtype == torch.bool and op in ("sub", "div", "remainder", "pow", "fmod"):
        return
    if not dtype.is_floating_point and op in FLOAT_ONLY:
        with pytest.raises(NotImplementedError, match="not implemented for"):
            getattr(mg, op)(on(values(dtype)), on(values(dtype)))
        return
    a = values(dtype).reshape(2, 7)
    b = values(dtype).flip(0).reshape(2, 7)
    if not dtype.is_floating_point and op in ("div", "remainder", "fmod"):
        b = torch.where(b == 0, torch.ones_like(b), b)
    if not dtype.is_floating_point and op == "pow":
        a, b = a.clamp(-3, 3), b.abs().clamp(0, 4)
    f = getattr(torch, op)
    g = getattr(mg, op)
    exact = op not in LIBM
    same(g(on(a), on(b)), f(a, b), exact)
    same(g(on(a), on(b[1:])), f(a, b[1:]), exact)  # broadcast rows
    same(g(on(a.t().contiguous()).t(), on(b)), f(a, b), exact)  # a transposed operand
    same(g(on(a[:, :1]), on(b)), f(a[:, :1], b), exact)  # broadcast columns
    if dtype != torch.bool:
        s = 2.5 if dtype.is_floating_point else 3
        for args in ((a, s), (s, b)):
            try:
                ref = f(*args)
            except TypeError:  # torch takes no number there (maximum, logical_and, ...): neither do we
                with pytest.raises(TypeError):
                    g(*[on(t) if isinstance(t, torch.Tensor) else t for t in args])
                continue
            same(g(*[on(t) if isinstance(t, torch.Tensor) else t for t in args]), ref, exact)


@pytest.mark.parametrize("op", ["atan2", "hypot", "fmod", "copysign", "xlogy", "logaddexp", "logaddexp2"])
def test_binary_math_gradients_on_the_device(op):
    """The new binary ops' backward formulas run on the device (their saved tensors and the ops
    the formulas call stay there) and give torch's gradients."""
    a = torch.tensor([[0.5, -1.5, 2.0], [3.0, 0.0, -0.25]], dtype=torch.float64)
    b = torch.tensor([[1.5, 2.0, -0.5], [0.75, 1.0, 4.0]], dtype=torch.float64)
    if op == "xlogy":
        b = b.abs()
    ta, tb = a.clone().requires_grad_(), b.clone().requires_grad_()
    ma, mb = on(a).requires_grad_(), on(b).requires_grad_()
    getattr(torch, op)(ta, tb).sum().backward()
    out = getattr(mg, op)(ma, mb)
    assert out.grad_fn.name() == getattr(torch, op)(ta, tb).grad_fn.name()
    out.sum().backward()
    same(ma.grad, ta.grad, exact=False)
    same(mb.grad, tb.grad, exact=False)


@pytest.mark.parametrize("name", ["trace", "diag", "diag_embed", "diagflat"])
def test_diagonal_ops_and_their_gradients_on_the_device(name):
    x = torch.arange(12.0).reshape(3, 4)
    tx, mx = x.clone().requires_grad_(), on(x).requires_grad_()
    want, got = getattr(torch, name)(tx), getattr(mg, name)(mx)
    same(got, want)
    got.sum().backward()
    want.sum().backward()
    same(mx.grad, tx.grad)


def test_aminmax_var_mean_and_nansum_on_the_device():
    x = torch.tensor([[1.0, 3.0, 3.0], [2.0, float("nan"), 0.0]])
    tx, mx = x.clone().requires_grad_(), on(x).requires_grad_()
    r, tr = mg.aminmax(mx.nan_to_num(), dim=1), torch.aminmax(tx.nan_to_num(), dim=1)
    v, tv = mg.var_mean(mx.nan_to_num(), 0), torch.var_mean(tx.nan_to_num(), 0)
    n, tn = mx.nansum(1), tx.nansum(1)
    for got, want in ((r.min, tr.min), (r.max, tr.max), (v[0], tv[0]), (v[1], tv[1]), (n, tn)):
        same(got, want, exact=False)
    (r.min.sum() + r.max.sum() * 2 + v[0].sum() + v[1].sum() + n.sum()).backward()
    (tr.min.sum() + tr.max.sum() * 2 + tv[0].sum() + tv[1].sum() + tn.sum()).backward()
    same(mx.grad, tx.grad, exact=False)


def test_cross_and_its_gradients_on_the_device():
    a = torch.tensor([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]])
    b = torch.tensor([[0.5, 4.0, -3.0]])
    ta, ma = a.clone().requires_grad_(), on(a).requires_grad_()
    tb, mb = b.clone().requires_grad_(), on(b).requires_grad_()
    want, got = torch.linalg.cross(ta, tb), mg.linalg.cross(ma, mb)
    assert got.is_cuda
    same(got, want)
    (want * want).sum().backward()
    (got * got).sum().backward()
    same(ma.grad, ta.grad)
    same(mb.grad, tb.grad)


def test_logit_and_its_gradient_on_the_device():
    x = torch.tensor([0.0, 0.3, 1.0, 0.05] * 16)
    tx, mx = x.clone().requires_grad_(), on(x).requires_grad_()
    want, got = torch.logit(tx, 0.1), mg.logit(mx, 0.1)
    assert got.is_cuda
    same(got, want, exact=False)
    want.sum().backward()
    got.sum().backward()
    same(mx.grad, tx.grad, exact=False)


def test_take_and_put_on_the_device():
    x = torch.arange(12.0).reshape(3, 4)
    idx = torch.tensor([[11, 0], [-1, 5]])
    tx, mx = x.clone().requires_grad_(), on(x).requires_grad_()
    src = torch.tensor([1.5, -2.0, 3.0, 0.25])
    ts, ms = src.clone().requires_grad_(), on(src).requires_grad_()
    want = torch.take(tx.t(), idx).sum() + torch.put(tx * 2, idx, ts, accumulate=True).pow(2).sum()
    got = mg.take(mx.t(), on(idx)).sum() + mg.put(mx * 2, on(idx), ms, accumulate=True).pow(2).sum()
    same(got, want)
    want.backward()
    got.backward()
    same(mx.grad, tx.grad)
    same(ms.grad, ts.grad)
    y, t = on(x).t(), x.clone().t()
    y.put_(on(idx), on(src))
    t.put_(idx, src)
    same(y, t)
    assert y._version == t._version


def test_bincount_and_histc_on_the_device():
    x = torch.tensor([0, 3, 3, 1, 7])
    w = torch.tensor([0.5, -1.0, 2.0, 0.25, 3.0])
    for weights in (None, w, w.double()):
        got = mg.bincount(on(x), None if weights is None else on(weights), minlength=9)
        assert got.is_cuda
        same(got, torch.bincount(x, weights, minlength=9))
    v = torch.tensor([0.0, 0.1, 0.2, 0.3, 0.7, 1.0, float("nan"), -0.5])
    for bins, lo, hi in ((10, 0, 1), (4, 0, 0), (3, -1, 0.5)):
        data = v[:6] if lo == hi else v
        got = mg.histc(on(data), bins, lo, hi)
        assert got.is_cuda
        same(got, torch.histc(data, bins, lo, hi))


def test_unique_on_the_device():
    x = torch.tensor([[3.0, 1.0, -0.0], [3.0, 1.0, 0.0], [2.0, float("nan"), 2.0]])
    for dim in (None, 0, 1):
        for f in (torch.unique, torch.unique_consecutive):
            want = f(x, return_inverse=True, return_counts=True, dim=dim)
            got = getattr(mg, f.__name__)(on(x), return_inverse=True, return_counts=True, dim=dim)
            assert all(g.is_cuda for g in got)
            for g, w in zip(got, want):
                same(g, w)


def test_searchsorted_and_bucketize_on_the_device():
    seq = torch.tensor([[1.0, 2.0, 2.0, 3.0], [-1.0, 0.0, 5.0, 9.0]])
    vals = torch.tensor([[2.0, 0.0, float("nan")], [5.0, -3.0, 9.5]])
    for right in (False, True):
        got = mg.searchsorted(on(seq), on(vals), right=right)
        assert got.is_cuda
        same(got, torch.searchsorted(seq, vals, right=right))
        same(mg.bucketize(on(vals), on(seq[0]), right=right, out_int32=True),
             torch.bucketize(vals, seq[0], right=right, out_int32=True))
    same(mg.searchsorted(on(seq[0]), 2.5), torch.searchsorted(seq[0], 2.5))


def test_cummax_and_cummin_on_the_device():
    x = torch.tensor([[1.0, 3.0, 3.0, float("nan"), 2.0], [0.0, -1.0, 0.0, 5.0, 5.0]])
    tx, mx = x.clone().requires_grad_(), on(x).requires_grad_()
    for op in ("cummax", "cummin"):
        for dim in (0, 1):
            got, want = getattr(mg, op)(on(x), dim), getattr(torch, op)(x, dim)
            assert got.values.is_cuda and got.indices.is_cuda
            same(got.values, want.values)
            same(got.indices, want.indices)
    torch.cummax(tx, 1).values.nan_to_num().sum().backward()
    mg.cummax(mx, 1).values.nan_to_num().sum().backward()
    same(mx.grad, tx.grad)


def test_index_fill_and_index_copy_on_the_device():
    x = torch.arange(12.0).reshape(3, 4)
    src = torch.arange(8.0).reshape(2, 4) * -1
    idx = torch.tensor([2, 0])
    tx, mx = x.clone().requires_grad_(), on(x).requires_grad_()
    ts, ms = src.clone().requires_grad_(), on(src).requires_grad_()
    want = tx.index_fill(1, idx, 0.5).index_copy(0, idx, ts)
    got = mx.index_fill(1, on(idx), 0.5).index_copy(0, on(idx), ms)
    same(got, want)
    (want * want).sum().backward()
    (got * got).sum().backward()
    same(mx.grad, tx.grad)
    same(ms.grad, ts.grad)
    y = on(x)
    assert y.index_fill_(0, on(torch.tensor([-1])), 7.0) is y and y._version == 1
    same(y, x.index_fill(0, torch.tensor([-1]), 7.0))


def test_type_promotion_matches_torch():
    i = torch.tensor([1, 2, 3])
    f = torch.tensor([0.5, 1.5, -2.0])
    same(on(i) + on(f), i + f)
    same(on(i) / 2, i / 2)
    same(on(i) * 2.5, i * 2.5)
    same(on(f.double()) + on(f), f.double() + f)
    same(on(i).int() + on(i), i.int() + i)


def test_a_cpu_scalar_tensor_may_join_cuda_ops():
    x = torch.tensor([1.0, 2.0, -3.0])
    s = torch.tensor(2.0)
    same(on(x) * mg.tensor(2.0), x * s)
    same(mg.tensor(2.0) - on(x), s - x)
    same(mg.where(on(x) > 0, on(x), mg.tensor(0.0)), torch.where(x > 0, x, s * 0))


def test_mixing_devices_raises_torchs_error():
    with pytest.raises(RuntimeError) as mine:
        mg.ones(3, device="cuda") + mg.ones(3)
    assert str(mine.value) == "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!"


@pytest.mark.parametrize("dtype", FLOATS + [torch.int64])
def test_binary_in_place_alpha_and_self(dtype):
    a = values(dtype).reshape(2, 7)
    b = values(dtype).flip(0).reshape(2, 7)
    m = on(a)
    m.add_(on(b), alpha=2)
    same(m, a.clone().add_(b, alpha=2))
    m.sub_(on(b[0]), alpha=3)
    same(m, a.clone().add_(b, alpha=2).sub_(b[0], alpha=3))
    assert m._version == 2
    m += m
    ref = a.clone().add_(b, alpha=2).sub_(b[0], alpha=3)
    ref += ref
    same(m, ref)
    view = m[:, 1:4]
    view.mul_(2)
    ref[:, 1:4].mul_(2)
    same(m, ref)
    assert m._version == 4


def test_in_place_onto_an_expanded_tensor_is_refused_as_torch():
    x = mg.zeros(1, 3, device="cuda").expand(2, 3)
    with pytest.raises(RuntimeError, match="unsupported operation: more than one element of the written-to tensor"):
        x.add_(1)




@given(st.lists(st.integers(1, 3), min_size=0, max_size=3), st.lists(st.integers(1, 3), min_size=0, max_size=3),
       st.sampled_from(["add", "mul", "maximum", "lt"]))
def test_broadcast_shapes_match_torch(sa, sb, op):
    ta = torch.arange(math.prod(sa), dtype=torch.float32).reshape(sa) - 2
    tb = torch.arange(math.prod(sb), dtype=torch.float32).reshape(sb) * 0.5
    try:
        ref = getattr(torch, op)(ta, tb)
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as mine:
            getattr(mg, op)(on(ta), on(tb))
        assert str(mine.value) == str(e)
        return
    same(getattr(mg, op)(on(ta), on(tb)), ref)


# ----- where, clamp, masked_fill, copies and casts -----

@pytest.mark.parametrize("dtype", ALL)
def test_where_and_masked_fill(dtype):
    a, b = values(dtype).reshape(2, 7), values(dtype).flip(0).reshape(2, 7)
    c = torch.tensor([True, False] * 7).reshape(2, 7)
    same(mg.where(on(c), on(a), on(b)), torch.where(c, a, b))
    same(mg.where(on(c[:, :1]), on(a), on(b[0])), torch.where(c[:, :1], a, b[0]))
    m = on(a)
    fill = True if dtype == torch.bool else 5
    m.masked_fill_(on(c), fill)
    same(m, a.clone().masked_fill_(c, fill))
    assert m._version == 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64])
def test_clamp_with_numbers_tensors_and_in_place(dtype):
    x = values(dtype).reshape(2, 7)
    lo, hi = (-1.5, 2.0) if dtype.is_floating_point else (-2, 7)
    same(mg.clamp(on(x), lo, hi), torch.clamp(x, lo, hi))
    same(mg.clamp(on(x), min=lo), torch.clamp(x, min=lo))
    same(mg.clamp(on(x), max=hi), torch.clamp(x, max=hi))
    tl, th = torch.full((7,), lo, dtype=dtype), torch.full((2, 1), hi, dtype=dtype)
    same(mg.clamp(on(x), on(tl), on(th)), torch.clamp(x, tl, th))
    same(mg.clamp(on(x), min=on(tl)), torch.clamp(x, min=tl))
    m = on(x)
    m.clamp_(lo, hi)
    same(m, x.clamp(lo, hi))


@pytest.mark.parametrize("src", ALL)
@pytest.mark.parametrize("dst", ALL)
def test_casts_follow_the_cpu_rules(src, dst):
    x = values(src)
    if src.is_floating_point and not dst.is_floating_point and dst != torch.bool:
        x = x[torch.isfinite(x)]  # out-of-range float -> int is implementation-defined in C++
    mdst = getattr(mg, str(dst).split(".")[-1])
    same(on(x).to(mdst), x.to(dst))


def test_copy_into_views_with_broadcast_and_casts():
    x = on(torch.zeros(3, 4))
    x[1:, ::2].copy_(on(torch.tensor([1, 2], dtype=torch.int64)))
    ref = torch.zeros(3, 4)
    ref[1:, ::2].copy_(torch.tensor([1, 2]))
    same(x, ref)
    x.fill_(2.5)
    same(x, torch.full((3, 4), 2.5))
    x.zero_()
    same(x, torch.zeros(3, 4))
    c = on(torch.arange(6.0).reshape(2, 3)).t().contiguous()
    same(c, torch.arange(6.0).reshape(2, 3).t().contiguous())
    assert c.is_contiguous()


def test_copy_between_devices_as_torch():
    """copy_ may mix devices (torch moves the values, then copies: broadcast and cast included),
    bumps the destination's version once, and sends src's gradient back to src's device."""
    x = on(torch.zeros(2, 3, dtype=torch.float64))
    x.copy_(mg.tensor([1, 2, 3]))  # cpu int64, broadcast, into cuda float64
    same(x, torch.tensor([[1.0, 2, 3], [1, 2, 3]], dtype=torch.float64))
    assert x._version == 1
    h = mg.zeros(2, 3)
    h[:, ::2].copy_(x[:, :2])  # cuda float64 view into a cpu float32 view
    assert h.device.type == "cpu"
    torch.testing.assert_close(torch.from_numpy(h.numpy()), torch.tensor([[1.0, 0, 2], [1, 0, 2]]))
    assert h._version == 1

    src = mg.tensor([1.0, 2.0, 3.0], requires_grad=True)  # cpu leaf
    d = on(torch.zeros(2, 3)).requires_grad_()  # cuda leaf
    t = d.clone()
    t.copy_(src)
    assert t.grad_fn.name() == "torch::autograd::CopyBackwards"
    (t * on(torch.tensor([[1.0, 2, 3], [4, 5, 6]]))).sum().backward()
    assert src.grad.device.type == "cpu" and d.grad.device.type == "cuda"
    assert src.grad.tolist() == [5.0, 7.0, 9.0]
    same(d.grad, torch.zeros(2, 3))


# ----- autograd on the device -----

def test_gradients_of_an_elementwise_program():
    xs = torch.tensor([[0.5, -1.5, 2.0], [3.0, -0.25, 1.0]], dtype=torch.float64, requires_grad=True)
    ys = torch.tensor([[1.0, 2.0, -3.0], [0.5, 0.5, 4.0]], dtype=torch.float64, requires_grad=True)
    xm = on(xs.detach()).requires_grad_()
    ym = on(ys.detach()).requires_grad_()

    def prog(lib, x, y):
        z = (x * y + x.exp()).tanh() - lib.sigmoid(y) / (1 + x * x)
        return lib.where(z > 0, z, z * 0.1).relu() + lib.maximum(x, y).abs().sqrt()

    ref = prog(torch, xs, ys)
    mine = prog(mg, xm, ym)
    same(mine, ref.detach(), exact=False)
    assert mine.grad_fn.name() == ref.grad_fn.name()
    g = torch.tensor([[1.0, -2.0, 0.5], [0.25, 1.0, 3.0]], dtype=torch.float64)
    ref.backward(g)
    mine.backward(on(g))
    assert xm.grad.is_cuda and ym.grad.is_cuda
    same(xm.grad, xs.grad, exact=False)
    same(ym.grad, ys.grad, exact=False)


def test_saved_tensor_modified_in_place_is_caught_on_the_device():
    x = mg.tensor([1.0, 2.0], device="cuda", requires_grad=True)
    y = x.exp()
    y.add_(1)
    with pytest.raises(RuntimeError, match="one of the variables needed for gradient computation has been modified by an inplace operation"):
        y.backward(mg.ones(2, device="cuda"))


def test_gradient_accumulates_across_backward_calls():
    x = mg.tensor([1.0, -2.0], device="cuda", requires_grad=True)
    for _ in range(3):
        (x * x).backward(mg.ones(2, device="cuda"))
    same(x.grad, torch.tensor([6.0, -12.0]))


# ----- memory -----

def test_memory_is_counted_exactly_and_freed():
    mg.memory.reset_peak("cuda")
    start = mg.cuda.memory_allocated()
    t = mg.empty(1000, device="cuda")
    assert mg.cuda.memory_allocated() == start + 4000
    u = t.view(10, 100)  # a view holds no new memory
    assert mg.cuda.memory_allocated() == start + 4000
    del t, u
    assert mg.cuda.memory_allocated() == start
    assert mg.cuda.max_memory_allocated() >= start + 4000
    with mg.memory.track("cuda") as tr:
        a = mg.ones(256, device="cuda")
        b = a * 2
        del a
    assert tr.peak_delta_bytes == 2048 and tr.retained_bytes == 1024
    del b


def test_out_of_memory_raises_and_loses_nothing(cuda_device):
    keep = mg.arange(5.0, device="cuda")
    if cuda_device is not None:
        cuda_device.limit_bytes = cuda_device.live_bytes + (1 << 20)
    try:
        with pytest.raises(mg.cuda.OutOfMemoryError) as e:
            mg.empty(1 << 40 if REAL_GPU else 1 << 21, device="cuda")
        assert isinstance(e.value, RuntimeError) and "CUDA out of memory. Tried to allocate" in str(e.value)
    finally:
        if cuda_device is not None:
            cuda_device.limit_bytes = None
    assert keep.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    same(keep + 1, torch.arange(5.0) + 1)


def test_repr_names_the_device_first_as_torch_does():
    # torch: tensor([1., 2.], device='cuda:0'), then dtype and grad suffixes after the device
    assert repr(mg.tensor([1.0, 2.0], device="cuda")) == "tensor([1., 2.], device='cuda:0')"
    assert repr(mg.tensor([1, 2], dtype=mg.int32, device="cuda")) == "tensor([1, 2], device='cuda:0', dtype=minigrad.int32)"
    assert repr(mg.zeros(0, 3, device="cuda")) == "tensor([], device='cuda:0', size=(0, 3))"
    assert repr(mg.ones(2, device="cuda", requires_grad=True)) == "tensor([1., 1.], device='cuda:0', requires_grad=True)"
    assert repr(mg.tensor([1.0, 2.0])) == "tensor([1., 2.])"
