"""Gradients of every differentiable op against torch.

Each op is one `Op` in the tables below (grouped by family): a strategy that draws its arguments
(shapes, layouts, dims, indices, scalars: everything but the float values) and the op as a
function of the library (`L` is minigrad or torch). Four tests run every op:

* `test_values_and_grads`: same outputs (values, dtype, shape, requires_grad, identity with an
  input), then `out.backward(upstream)` with a random upstream gradient (non-contiguous now and
  then; for ops with several outputs, through a random subset of them) gives the same `.grad` on
  every input, then the same `grad_fn.name()` on every output;
* `test_gradcheck`: `minigrad.autograd.gradcheck` in float64 at generic points (continuous values:
  no ties, no kinks);
* `test_inplace_on_non_leaf`: the in-place variant applied to `x.clone()`, or to a view
  `stack([pad, x]).select(0, 1)` of a non-leaf: same result object, values, `_version` of the
  target and its base, grad_fn names (`CopySlices` for the base of a modified view), and grads;
* `test_inplace_on_leaf_is_refused`: the same op on the leaf itself raises torch's error.

Inputs come from `parity.make_pair`, so they have the same (often non-contiguous) strides in both
libraries, and include 0-d and empty tensors and broadcast operands. Values are drawn from
per-op domains that avoid points where results legitimately diverge (log of negatives,
division by ~0, a negative base to a fractional power) but mix in small integers, so ties
(max/min/amax/maximum), kinks (relu and abs at 0, clamp at its bounds) and zeros (prod, norm,
std) come up; `test_kinks_and_ties` pins those cases down with explicit values.

This repository's gradcheck is also run on torch tensors (the `ours` fixture), against
torch.autograd.gradcheck on the same functions, so the checker itself is tested.
"""

import importlib
import importlib.util
import math
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
import torch
from hypothesis import assume, event, given, settings
from hypothesis import strategies as st

import minigrad as mg
from parity import FLOAT_DTYPES, DTYPES, assert_same, make_pair, normalize_message, recipes, run_both

# torch warns when a reduction over an empty tensor leaves no degrees of freedom; minigrad as well
# (and torch's engine warns about the layout of some empty gradients, a performance note)
pytestmark = [
    pytest.mark.filterwarnings("ignore:.*degrees of freedom is <= 0"),
    pytest.mark.filterwarnings("ignore:grad and param do not obey the gradient layout contract"),
]

GRADCHECK_DIR = Path(__file__).resolve().parents[1] / "python" / "minigrad" / "autograd" / "gradcheck"
_PRIVATE_GRADCHECK = {}


def load_gradcheck_copy(name="_gradcheck_under_test"):
    """A private copy of this repository's gradcheck module (its `_LIBRARY` can be set freely)."""
    if name not in _PRIVATE_GRADCHECK:
        # Loaded as a package of its own, so its relative imports find this copy's submodules.
        spec = importlib.util.spec_from_file_location(
            name, GRADCHECK_DIR / "__init__.py", submodule_search_locations=[str(GRADCHECK_DIR)]
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        _PRIVATE_GRADCHECK[name] = module
    return _PRIVATE_GRADCHECK[name]


def minigrad_gradcheck():
    return mg.autograd.gradcheck


def _profile_examples(cap):
    return max(1, min(cap, settings.default.max_examples))


# ----- values -----

@dataclass(frozen=True)
class Dom:
    """Where an input's values live: [lo, hi] (or ±[lo, hi] when `mag`), with the integers of that
    range mixed in (ties, kinks, zeros), and the Python scalars an operand may be instead."""

    lo: float
    hi: float
    mag: bool = False
    scalars: tuple = ()
    step: float = None  # values on a grid of this step only (sums of them are exact)

    def integers(self):
        ints = list(range(math.ceil(self.lo), math.floor(self.hi) + 1))
        return sorted(set(ints + [-i for i in ints])) if self.mag else ints


R = Dom(-10, 10, scalars=(2, -1, 0, 0.5, -2.5, 3.0))
SMALL = Dom(-3, 3, scalars=(1, -2, 0, 0.5, -1.5))  # small integers: ties and kinks are common
UNIT = Dom(-2, 2, scalars=(1, -1, 0.5, 2))  # products stay in range
POS = Dom(0.1, 10, scalars=(0.5, 2, 3.0))  # log, sqrt, rsqrt
BASE = Dom(0.5, 3, scalars=(0.5, 2, 1.5, 3.0))  # bases of tensor powers
MAG = Dom(0.5, 10, mag=True, scalars=(2, -1, 0.5, -2.5, 4.0))  # divisors: away from 0
# Equal values must give a variance of exactly 0 whatever the summation order (std's gradient is
# 0 there by convention, and huge a rounding error away from it): multiples of 1/4 only.
QUARTERS = Dom(-3, 3, step=0.25)
UPSTREAM = Dom(-5, 5)


def elements(dom):
    if dom.step is not None:
        return st.integers(math.ceil(dom.lo / dom.step), math.floor(dom.hi / dom.step)).map(lambda i: i * dom.step)
    cont = st.floats(dom.lo, dom.hi, allow_nan=False, allow_infinity=False, allow_subnormal=False)
    if dom.mag:
        cont = st.tuples(st.sampled_from([-1.0, 1.0]), cont).map(lambda p: p[0] * p[1])
    ints = dom.integers()
    return st.one_of(st.sampled_from([float(i) for i in ints]), cont) if ints else cont


def arrays(dtype_key, shape, dom):
    return hnp.arrays(np.float64, tuple(shape), elements=elements(dom)).map(
        lambda a: a.astype(DTYPES[dtype_key][2])
    )


def continuous(rng, dtype_key, shape, dom):
    """Generic points for gradcheck: no ties, no kinks, no integers."""
    a = rng.uniform(dom.lo, dom.hi, size=tuple(shape))
    if dom.mag:
        a = a * rng.choice([-1.0, 1.0], size=tuple(shape))
    return np.asarray(a).astype(DTYPES[dtype_key][2])


def other_float(key):
    return "float64" if key == "float32" else "float32"


# ----- arguments: trees of plain values, Leaf (a float input) and Data (an index or a mask) -----

@dataclass
class Leaf:
    """A floating-point input: a leaf tensor (requiring grad when `grad`), laid out by `recipe`;
    `post(L, t)` is applied where the op's arguments are built (inside the function gradcheck
    differentiates), e.g. an expand."""

    shape: tuple
    dom: Dom = R
    recipe: list = field(default_factory=list)
    grad: bool = True
    dtype: str = None
    post: Callable = None


@dataclass
class Data:
    """A tensor input that is not differentiated (indices, masks, integer operands)."""

    arr: np.ndarray
    recipe: list = field(default_factory=list)


def map_tree(tree, f):
    if isinstance(tree, (Leaf, Data)):
        return f(tree)
    if isinstance(tree, list):
        return [map_tree(x, f) for x in tree]
    if isinstance(tree, tuple):
        return tuple(map_tree(x, f) for x in tree)
    return tree


def nodes_of(tree):
    out = []
    map_tree(tree, out.append)
    return out


class Case:
    """The tensors of an argument tree, built once per library with equal values and strides."""

    def __init__(self, tree, key, values, gradcheck=False):
        self.tree, self.key = tree, key
        self.nodes = nodes_of(tree)
        if gradcheck:  # every float input in `key` (float64): gradcheck's tolerances assume it
            for node in self.nodes:
                if isinstance(node, Leaf):
                    node.dtype = None
        self.m, self.t = [], []
        for node in self.nodes:
            if isinstance(node, Data):
                m, t = make_pair(node.arr, node.recipe)
            else:
                if gradcheck and 0 in node.shape:
                    # NumPy gives empty arrays zero strides, which gradcheck refuses (as torch's does)
                    dt = DTYPES[node.dtype or key]
                    m, t = mg.zeros(node.shape, dtype=dt[0]), torch.zeros(node.shape, dtype=dt[1])
                else:
                    m, t = make_pair(values(node, node.dtype or key), node.recipe)
                if node.grad:
                    m.requires_grad_()
                    t.requires_grad_()
            self.m.append(m)
            self.t.append(t)

    def args(self, L, tensors):
        """The argument list for library L, built from `tensors` (self.m, self.t, or the inputs
        gradcheck passes)."""
        it = iter(range(len(self.nodes)))

        def build(node):
            x = tensors[next(it)]
            return node.post(L, x) if isinstance(node, Leaf) and node.post is not None else x

        return map_tree(self.tree, build)

    def leaves(self):
        return [(m, t, n) for m, t, n in zip(self.m, self.t, self.nodes) if isinstance(n, Leaf)]

    def any_grad(self):
        return any(isinstance(n, Leaf) and n.grad for n in self.nodes)

    def lowest_precision(self):
        keys = {self.key} | {n.dtype for n in self.nodes if isinstance(n, Leaf) and n.dtype}
        return "float32" if "float32" in keys else "float64"


def hypothesis_case(data, tree, key):
    return Case(tree, key, lambda node, k: data.draw(arrays(k, node.shape, node.dom)))


def gradcheck_case(rng, tree):
    return Case(tree, "float64", lambda node, k: continuous(rng, k, node.shape, node.dom), gradcheck=True)


# ----- strategies for shapes and arguments -----

def shapes(min_dims=0, max_dims=3, side=4, min_side=0):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=side)


@st.composite
def leaf(draw, shape, dom=R, *, grad=True, layout=True, dtype=None, post=None):
    rec = draw(recipes(len(shape))) if layout else []
    return Leaf(tuple(shape), dom, rec, grad, dtype, post)


@st.composite
def tensor_leaf(draw, dom=R, *, min_dims=0, max_dims=3, side=4, min_side=0, layout=True):
    shape = draw(shapes(min_dims, max_dims, side, min_side))
    return draw(leaf(shape, dom, layout=layout))


def _expand_to(shape):
    return lambda L, x: x.expand(*shape)


@st.composite
def operand(draw, shape, dom, key, *, scalar=True, zerodim=True, expand=True, nograd=True):
    """An operand that broadcasts to `shape`: a tensor requiring grad (mostly), one that does not,
    a 0-d tensor (sometimes of the other float dtype), an expanded tensor, or a Python number."""
    kinds = ["tensor"] * 4 + ["nograd"] * nograd + ["zerodim"] * zerodim
    kinds += ["expanded"] * (expand and len(shape) > 0) + ["scalar"] * (scalar and bool(dom.scalars))
    kind = draw(st.sampled_from(kinds))
    if kind == "scalar":
        return draw(st.sampled_from(dom.scalars))
    if kind == "zerodim":
        return draw(leaf((), dom, dtype=draw(st.sampled_from([None, other_float(key)]))))
    if kind == "expanded":
        small = tuple(1 if draw(st.booleans()) else d for d in shape)
        return draw(leaf(small, dom, post=_expand_to(tuple(shape))))
    return draw(leaf(shape, dom, grad=kind == "tensor"))


@st.composite
def broadcastable_to(draw, shape):
    """A shape that broadcasts to `shape` (a suffix of it, some sizes replaced by 1)."""
    suffix = tuple(shape)[draw(st.integers(0, len(shape))):]
    return tuple(1 if draw(st.integers(0, 2)) == 0 else s for s in suffix)


@st.composite
def broadcast_shapes(draw, n, inplace, side, max_dims=3):
    """n broadcastable shapes; for an in-place op the first is the full result shape."""
    if inplace:
        first = draw(shapes(0, max_dims, side))
        return [first] + [draw(broadcastable_to(first)) for _ in range(n - 1)]
    return list(draw(hnp.mutually_broadcastable_shapes(num_shapes=n, min_dims=0, max_dims=max_dims, max_side=side))
                .input_shapes)


def binary_args(a_dom=R, b_dom=R, *, a_scalar=False, b_scalar=True, zerodim=True, extra=None):
    """[a, b] (+ `extra` drawn arguments) for a binary op with broadcasting."""

    @st.composite
    def make(draw, key, inplace, side):
        sa, sb = draw(broadcast_shapes(2, inplace, side))
        if inplace:
            a = draw(leaf(sa, a_dom))
        else:
            a = draw(operand(sa, a_dom, key, scalar=a_scalar, zerodim=zerodim))
        b = draw(operand(sb, b_dom, key, scalar=b_scalar and isinstance(a, Leaf), zerodim=zerodim))
        return [a, b] + ([draw(extra)] if extra is not None else [])

    return make


def unary_args(dom=R, **kw):
    @st.composite
    def make(draw, key, inplace, side):
        return [draw(tensor_leaf(dom, side=side, **kw))]

    return make


@st.composite
def dims(draw, ndim, *, allow_tuple=True, allow_none=False, allow_empty=False):
    """A valid dim argument: an int (maybe negative) or a tuple of distinct ints (or None)."""
    n = max(ndim, 1)
    kinds = ["int"] + ["tuple"] * allow_tuple + ["none"] * allow_none
    kind = draw(st.sampled_from(kinds))
    if kind == "none":
        return None
    if kind == "int":
        return draw(st.integers(-n, n - 1))
    size = draw(st.integers(0 if allow_empty else 1, ndim)) if ndim else (0 if allow_empty else 1)
    picked = draw(st.permutations(range(n)))[:size]
    return tuple(d - n if draw(st.booleans()) else d for d in picked)


def reduced_count(shape, d):
    if d is None or d == ():
        return int(np.prod(shape, dtype=np.int64))
    ds = [d] if isinstance(d, int) else list(d)
    n = max(len(shape), 1)
    sizes = list(shape) or [1]
    return int(np.prod([sizes[x % n] for x in set(x % n for x in ds)], dtype=np.int64))


# ----- nn.functional ops (torch has them only there; minigrad as _C kernels until it grows nn) -----

def nn_functional(L):
    if L is torch:
        return torch.nn.functional
    nn = getattr(L, "nn", None)
    return getattr(nn, "functional", None) if nn is not None else None


def silu(L, x):
    F = nn_functional(L)
    return F.silu(x) if F is not None else L._C.unary(x, "silu")


def silu_(L, x):
    F = nn_functional(L)
    return F.silu(x, inplace=True) if F is not None else L._C.unary_(x, "silu")


def gelu(L, x, approximate="none"):
    F = nn_functional(L)
    if F is not None:
        return F.gelu(x, approximate=approximate)
    return L._C.unary(x, "gelu" if approximate == "none" else "gelu_tanh")


# ----- the op table -----

TOL = {  # float32 results of sums differ from torch's in the last bits; float64 ones barely
    "elementwise": {"float32": dict(rtol=1e-4, atol=1e-4), "float64": dict(rtol=1e-9, atol=1e-9)},
    "sum": {"float32": dict(rtol=1e-4, atol=1e-3), "float64": dict(rtol=1e-9, atol=1e-9)},
    "matmul": {"float32": dict(rtol=1e-4, atol=2e-3), "float64": dict(rtol=1e-9, atol=1e-9)},
}


@dataclass
class Op:
    name: str
    args: Callable  # (key, inplace, side) -> strategy of the argument list
    fn: Callable = None  # (L, *args) -> output or tuple of outputs
    inplace: Callable = None  # (L, self, *rest) -> what the in-place op returns; mutates self
    tol: str = "elementwise"
    gradcheck: bool = True
    gradcheck_kw: dict = field(default_factory=dict)  # e.g. looser tolerances for float32 results

    def __repr__(self):
        return self.name

    def as_function(self):
        """fn, or the in-place op on a clone (for ops that only exist in place)."""
        if self.fn is not None:
            return self.fn

        def on_clone(L, x, *rest):
            y = x.clone()
            self.inplace(L, y, *rest)
            return y

        return on_clone


def method(name, *margs, **mkw):
    return lambda L, x, *a: getattr(x, name)(*margs, *a, **mkw)


OPS = []


def register(*ops):
    OPS.extend(ops)


# --- unary elementwise ---

UNARY = [  # name, domain
    ("neg", R), ("abs", R), ("exp", R), ("log", POS), ("log1p", Dom(-0.9, 10)), ("expm1", R),
    ("sqrt", POS), ("rsqrt", POS), ("sin", R), ("cos", R), ("tanh", R), ("sigmoid", R), ("relu", R),
    ("reciprocal", Dom(0.1, 10, mag=True)), ("sign", R), ("floor", R), ("ceil", R), ("round", R),
    ("trunc", R), ("tan", Dom(-1.4, 1.4)), ("asin", Dom(-0.95, 0.95)), ("acos", Dom(-0.95, 0.95)), ("atan", R),
    ("sinh", Dom(-5, 5)), ("cosh", Dom(-5, 5)), ("asinh", R), ("acosh", Dom(1.05, 10)), ("atanh", Dom(-0.95, 0.95)),
    ("log2", POS), ("log10", POS), ("exp2", Dom(-10, 10)), ("erf", SMALL), ("erfc", SMALL),
    ("erfinv", Dom(-0.95, 0.95)), ("frac", R), ("deg2rad", R), ("rad2deg", R), ("sinc", SMALL),
]
# torch records these in place without a derivative (backward raises; tests/test_unary_math.py)
NO_INPLACE_DERIVATIVE = {"asinh", "acosh", "atanh"}
for _name, _dom in UNARY:
    register(Op(_name, unary_args(_dom), method(_name), None if _name in NO_INPLACE_DERIVATIVE else method(_name + "_")))
register(
    Op("neg_operator", unary_args(R), lambda L, x: -x),
    Op("abs_operator", unary_args(R), lambda L, x: abs(x)),
    Op("silu", unary_args(R), silu, silu_),
    Op("gelu", unary_args(R), lambda L, x: gelu(L, x)),
    Op("gelu_tanh", unary_args(R), lambda L, x: gelu(L, x, "tanh")),
    Op("square", unary_args(R), method("square"), method("square_")),
)

# --- binary elementwise (broadcasting, scalars on either side) ---

ALPHAS = st.sampled_from([1, 2, -1, 0.5, 0])
register(
    Op("add", binary_args(a_scalar=True), lambda L, a, b: a + b, lambda L, y, b: y.add_(b)),
    Op("add_alpha", binary_args(extra=ALPHAS), lambda L, a, b, al: a.add(b, alpha=al),
       lambda L, y, b, al: y.add_(b, alpha=al)),
    Op("sub", binary_args(a_scalar=True), lambda L, a, b: a - b, lambda L, y, b: y.sub_(b)),
    Op("sub_alpha", binary_args(extra=ALPHAS), lambda L, a, b, al: a.sub(b, alpha=al),
       lambda L, y, b, al: y.sub_(b, alpha=al)),
    Op("mul", binary_args(a_scalar=True), lambda L, a, b: a * b, lambda L, y, b: y.mul_(b)),
    Op("div", binary_args(R, MAG, a_scalar=True), lambda L, a, b: a / b, lambda L, y, b: y.div_(b)),
    Op("pow_tensor_tensor", binary_args(BASE, Dom(-3, 3), b_scalar=False), lambda L, a, b: a ** b,
       lambda L, y, b: y.pow_(b)),
    Op("maximum", binary_args(SMALL, SMALL, b_scalar=False), lambda L, a, b: L.maximum(a, b)),
    Op("minimum", binary_args(SMALL, SMALL, b_scalar=False), lambda L, a, b: L.minimum(a, b)),
    Op("max_other", binary_args(SMALL, SMALL, b_scalar=False), lambda L, a, b: a.max(b)),
    Op("min_other", binary_args(SMALL, SMALL, b_scalar=False), lambda L, a, b: a.min(b)),
)

# --- binary math: atan2, hypot, fmod, copysign, xlogy, logaddexp(2) (each with its Scalar overloads) ---

register(
    Op("atan2", binary_args(R, MAG, b_scalar=False), lambda L, a, b: L.atan2(a, b), lambda L, y, b: y.atan2_(b)),
    Op("arctan2_method", binary_args(MAG, R, b_scalar=False), lambda L, a, b: a.arctan2(b),
       lambda L, y, b: y.arctan2_(b)),
    Op("hypot", binary_args(MAG, MAG, b_scalar=False), lambda L, a, b: L.hypot(a, b), lambda L, y, b: y.hypot_(b)),
    Op("fmod", binary_args(R, MAG), lambda L, a, b: L.fmod(a, b), lambda L, y, b: y.fmod_(b)),
    Op("copysign", binary_args(MAG, R), lambda L, a, b: L.copysign(a, b), lambda L, y, b: y.copysign_(b)),
    Op("xlogy", binary_args(R, POS, a_scalar=True), lambda L, a, b: L.xlogy(a, b), lambda L, y, b: y.xlogy_(b)),
    Op("logaddexp", binary_args(R, R, b_scalar=False), lambda L, a, b: L.logaddexp(a, b)),
    Op("logaddexp2", binary_args(R, R, b_scalar=False), lambda L, a, b: a.logaddexp2(b)),
)

# exponent -> domain of the base where x ** e is differentiable and both sides agree
POW_EXPONENTS = {2: R, 3: Dom(-4, 4), 1: R, 0: R, -1: Dom(0.5, 4, mag=True), -2: Dom(0.5, 4, mag=True),
                 0.5: POS, 1.5: POS, 2.5: Dom(0.1, 4), -0.5: POS}


@st.composite
def pow_scalar_args(draw, key, inplace, side):
    e = draw(st.sampled_from(list(POW_EXPONENTS)))
    return [draw(tensor_leaf(POW_EXPONENTS[e], side=side)), e]


@st.composite
def rpow_args(draw, key, inplace, side):
    return [draw(st.sampled_from([2, 0.5, 3.0, 1.5, 1])), draw(tensor_leaf(Dom(-3, 3), side=side))]


register(
    Op("pow_tensor_scalar", pow_scalar_args, lambda L, x, e: x ** e, lambda L, y, e: y.pow_(e)),
    Op("pow_method", pow_scalar_args, lambda L, x, e: x.pow(e)),
    Op("pow_scalar_tensor", rpow_args, lambda L, s, x: s ** x),
)

# --- where, clamp, masked_fill ---


@st.composite
def bool_data(draw, shape):
    return Data(draw(hnp.arrays(np.bool_, tuple(shape))), draw(recipes(len(shape))))


@st.composite
def where_args(draw, key, inplace, side):
    sc, sa, sb = draw(broadcast_shapes(3, False, side))
    return [draw(bool_data(sc)), draw(operand(sa, R, key)), draw(operand(sb, R, key))]


CLAMP_BOUNDS = st.sampled_from([None, -2, -1, 0, 0.5, 1, 2, -1.5])


@st.composite
def clamp_scalar_args(draw, key, inplace, side):
    lo, hi = draw(CLAMP_BOUNDS), draw(CLAMP_BOUNDS)
    assume(lo is not None or hi is not None)
    return [draw(tensor_leaf(SMALL, side=side)), lo, hi]


@st.composite
def clamp_tensor_args(draw, key, inplace, side):
    # bounds broadcast to x's shape: torch's backward fails when they would broadcast x up
    sx, slo, shi = draw(broadcast_shapes(3, True, side))
    out = [draw(leaf(sx, SMALL))]
    present = draw(st.sampled_from([(True, True), (True, False), (False, True)]))
    for shp, keep in zip((slo, shi), present):
        out.append(draw(leaf(shp, SMALL, grad=draw(st.booleans()))) if keep else None)
    return out


@st.composite
def one_bound_scalar(draw, key, inplace, side):
    return [draw(tensor_leaf(SMALL, side=side)), draw(CLAMP_BOUNDS.filter(lambda b: b is not None))]


@st.composite
def one_bound_tensor(draw, key, inplace, side):
    sx, sb = draw(broadcast_shapes(2, True, side))  # see clamp_tensor_args
    return [draw(leaf(sx, SMALL)), draw(leaf(sb, SMALL, grad=draw(st.booleans())))]


@st.composite
def masked_fill_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, side=side))
    mask_shape = draw(broadcastable_to(x.shape))
    value = draw(st.one_of(st.sampled_from([0, -1.5, 2.0]), leaf((), R, grad=True)))
    return [x, draw(bool_data(mask_shape)), value]


register(
    Op("where", where_args, lambda L, c, a, b: L.where(c, a, b)),
    Op("where_method", binary_args(), lambda L, a, b: a.where(a > 0, b)),
    Op("clamp", clamp_scalar_args, lambda L, x, lo, hi: x.clamp(lo, hi), lambda L, y, lo, hi: y.clamp_(lo, hi)),
    Op("clamp_tensor", clamp_tensor_args, lambda L, x, lo, hi: x.clamp(lo, hi),
       lambda L, y, lo, hi: y.clamp_(lo, hi)),
    Op("clamp_min", one_bound_scalar, method("clamp_min"), method("clamp_min_")),
    Op("clamp_min_tensor", one_bound_tensor, method("clamp_min"), method("clamp_min_")),
    Op("clamp_max", one_bound_scalar, method("clamp_max"), method("clamp_max_")),
    Op("clamp_max_tensor", one_bound_tensor, method("clamp_max"), method("clamp_max_")),
    Op("masked_fill", masked_fill_args, method("masked_fill"), method("masked_fill_")),
)

# --- reductions and softmax ---


def reduce_args(dom=R, *, max_dims=3, allow_tuple=True, allow_none=True, allow_empty=True, keepdim=True):
    @st.composite
    def make(draw, key, inplace, side):
        x = draw(tensor_leaf(dom, max_dims=max_dims, side=side))
        d = draw(dims(len(x.shape), allow_tuple=allow_tuple, allow_none=allow_none, allow_empty=allow_empty))
        return [x, d, draw(st.booleans()) if keepdim else False]

    return make


def reduce_call(name):
    def f(L, x, d, k):
        return getattr(x, name)() if d is None else getattr(x, name)(d, keepdim=k)

    return f


@st.composite
def var_args(draw, key, inplace, side):
    # no dim=(): torch's var/std backward then divides by N - correction with N = 1
    x, d, k = draw(reduce_args(QUARTERS, allow_empty=False)(key, inplace, side))
    c = draw(st.sampled_from([None, 0, 1, 2, 0.5]))
    assume(reduced_count(x.shape, d) - (1 if c is None else c) > 0)  # positive degrees of freedom
    return [x, d, k, c]


@st.composite
def aminmax_args(draw, key, inplace, side):
    x = draw(tensor_leaf(SMALL, min_dims=0, side=side))
    assume(x.shape == () or all(x.shape))  # no empty reductions (torch refuses them)
    n = max(len(x.shape), 1)
    return [x, draw(st.sampled_from([None] + list(range(-n, n)))), draw(st.booleans())]


def var_call(name):
    def f(L, x, d, k, c):
        if d is None and c is None:
            return getattr(x, name)()
        return getattr(x, name)(d, correction=c, keepdim=k)

    return f


NORM_PS = [2, 1, 3, math.inf, -math.inf, 0, "fro"]


@st.composite
def norm_args(draw, key, inplace, side):
    p = draw(st.sampled_from(NORM_PS))
    x = draw(tensor_leaf(SMALL, side=side))
    d = draw(dims(len(x.shape), allow_none=True))
    if p == "fro" and isinstance(d, tuple) and len(d) > 2:
        d = d[:2]
    return [x, p, d, draw(st.booleans())]


@st.composite
def softmax_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, side=side))
    return [x, draw(dims(len(x.shape), allow_tuple=False))]


register(
    Op("sum", reduce_args(R), reduce_call("sum"), tol="sum"),
    Op("mean", reduce_args(R), reduce_call("mean"), tol="sum"),
    Op("prod", reduce_args(UNIT, allow_tuple=False), reduce_call("prod"), tol="sum"),
    Op("max", unary_args(SMALL), method("max")),
    Op("min", unary_args(SMALL), method("min")),
    Op("max_dim", reduce_args(SMALL, allow_tuple=False, allow_none=False), lambda L, x, d, k: x.max(d, keepdim=k)),
    Op("min_dim", reduce_args(SMALL, allow_tuple=False, allow_none=False), lambda L, x, d, k: x.min(d, keepdim=k)),
    Op("amax", reduce_args(SMALL, allow_none=False), lambda L, x, d, k: x.amax(d, k)),
    Op("amin", reduce_args(SMALL, allow_none=False), lambda L, x, d, k: x.amin(d, k)),
    Op("var", var_args, var_call("var"), tol="sum"),
    Op("std", var_args, var_call("std"), tol="sum"),
    Op("aminmax", aminmax_args, lambda L, x, d, k: L.aminmax(x, dim=d, keepdim=k)),
    Op("var_mean", var_args, lambda L, x, d, k, c: L.var_mean(x, d, correction=c, keepdim=k), tol="sum"),
    Op("std_mean", var_args, lambda L, x, d, k, c: L.std_mean(x, d, correction=c, keepdim=k), tol="sum"),
    Op("norm", norm_args, lambda L, x, p, d, k: x.norm(p, d, k), tol="sum"),
    # no dim=(): torch's logsumexp backward fails to broadcast its gradient then
    Op("logsumexp", reduce_args(R, allow_none=False, allow_empty=False), lambda L, x, d, k: x.logsumexp(d, keepdim=k),
       tol="sum"),
    Op("softmax", softmax_args, lambda L, x, d: x.softmax(d), tol="sum"),
    Op("log_softmax", softmax_args, lambda L, x, d: x.log_softmax(d), tol="sum"),
)

# --- matrix products ---

PRODUCT = Dom(-3, 3)


@st.composite
def matmul_args(draw, key, inplace, side):
    """Ranks 1..4 on each side, broadcast batch dims (some of them 1), empty dims."""
    side = min(side, 3)
    d1, d2 = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    n, k, p = (draw(st.integers(0, side)) for _ in range(3))
    batch = [draw(st.integers(0, 3)) for _ in range(max(d1, d2) - 2)]

    def batch_for(rank):
        return [1 if draw(st.booleans()) else b for b in batch[len(batch) - rank:]] if rank else []

    s1 = batch_for(max(d1 - 2, 0)) + ([n, k] if d1 > 1 else [k])
    s2 = batch_for(max(d2 - 2, 0)) + ([k, p] if d2 > 1 else [k])
    return [draw(product_operand(s1)), draw(product_operand(s2))]


@st.composite
def product_operand(draw, shape):
    return draw(leaf(tuple(shape), PRODUCT, grad=draw(st.integers(0, 4)) > 0))


def named_product_args(op):
    @st.composite
    def make(draw, key, inplace, side):
        b, m, k, n = (draw(st.integers(0, min(side, 4))) for _ in range(4))
        s1, s2 = {"mm": ([m, k], [k, n]), "bmm": ([b, m, k], [b, k, n]), "mv": ([m, k], [k]), "dot": ([k], [k])}[op]
        return [draw(product_operand(s1)), draw(product_operand(s2))]

    return make


register(
    Op("matmul", matmul_args, lambda L, a, b: a @ b, tol="matmul"),
    Op("matmul_function", matmul_args, lambda L, a, b: L.matmul(a, b), tol="matmul"),
    Op("mm", named_product_args("mm"), lambda L, a, b: a.mm(b), tol="matmul"),
    Op("bmm", named_product_args("bmm"), lambda L, a, b: a.bmm(b), tol="matmul"),
    Op("mv", named_product_args("mv"), lambda L, a, b: a.mv(b), tol="matmul"),
    Op("dot", named_product_args("dot"), lambda L, a, b: a.dot(b), tol="matmul"),
)

# --- joining, gathering and scattering ---


@st.composite
def cat_args(draw, key, inplace, side):
    ndim = draw(st.integers(1, 3))
    base = list(draw(shapes(ndim, ndim, side)))
    d = draw(st.integers(-ndim, ndim - 1))
    items = []
    for _ in range(draw(st.integers(1, 3))):
        if draw(st.integers(0, 7)) == 0:
            shape = [0]  # a legacy empty tensor: cat skips it (its grad is empty)
        else:
            shape = list(base)
            shape[d] = draw(st.integers(0, side))
        items.append(draw(leaf(tuple(shape), R, grad=draw(st.integers(0, 3)) > 0)))
    return [items, d]


@st.composite
def stack_args(draw, key, inplace, side):
    shape = draw(shapes(0, 3, side))
    items = [draw(leaf(shape, R, grad=draw(st.integers(0, 3)) > 0)) for _ in range(draw(st.integers(1, 3)))]
    return [items, draw(st.integers(-len(shape) - 1, len(shape)))]


def index_array(draw, shape, high):
    if high <= 0:
        assume(int(np.prod(shape, dtype=np.int64)) == 0)
        return np.zeros(shape, np.int64)
    return draw(hnp.arrays(np.int64, tuple(shape), elements=st.integers(0, high - 1)))


@st.composite
def gather_like(draw, side, *, unique=False, min_dims=1):
    """(self shape, dim, index array, index shape) with index.size(d) <= self.size(d) for d != dim;
    `unique`: no index repeats along dim (scatter's result would depend on write order)."""
    shape = draw(shapes(min_dims, 3, side))
    ndim = len(shape)
    d = draw(st.integers(-max(ndim, 1), max(ndim, 1) - 1))
    dd = d % max(ndim, 1)
    sizes = list(shape) or [1]
    ishape = [draw(st.integers(0, s)) for s in sizes]
    if unique:
        ishape[dd] = draw(st.integers(0, sizes[dd]))
        seed = draw(st.integers(0, 2**32 - 1))
        full = list(ishape)
        full[dd] = sizes[dd]
        order = np.argsort(np.random.default_rng(seed).random(full), axis=dd)
        idx = np.take(order, np.arange(ishape[dd]), axis=dd).astype(np.int64)
    else:
        ishape[dd] = draw(st.integers(0, side))
        idx = index_array(draw, tuple(ishape), sizes[dd])
    if ndim == 0:
        idx = idx.reshape(())
        ishape = []
    return tuple(shape), d, idx, tuple(ishape)


@st.composite
def gather_args(draw, key, inplace, side):
    shape, d, idx, _ = draw(gather_like(side))
    return [draw(leaf(shape, R)), d, Data(idx, draw(recipes(idx.ndim)))]


@st.composite
def scatter_args(draw, key, inplace, side, unique=True, value=False):
    shape, d, idx, ishape = draw(gather_like(side, unique=unique))
    self_leaf = draw(leaf(shape, R, grad=draw(st.integers(0, 3)) > 0 or inplace))
    if value:
        src = draw(st.sampled_from([0, 1.5, -2]))
    else:
        # src has the index's shape: torch's backward cannot give a larger src its gradient
        src = draw(leaf(ishape, R, grad=draw(st.integers(0, 3)) > 0))
    return [self_leaf, d, Data(idx, draw(recipes(idx.ndim))), src]


@st.composite
def index_select_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, min_dims=1, side=side))
    d = draw(st.integers(-len(x.shape), len(x.shape) - 1))
    n = draw(st.integers(0, side + 1)) if x.shape[d] else 0
    return [x, d, Data(index_array(draw, (n,), x.shape[d]))]


@st.composite
def index_add_args(draw, key, inplace, side):
    x = draw(leaf(draw(shapes(1, 3, side)), R, grad=draw(st.integers(0, 3)) > 0 or inplace))
    d = draw(st.integers(-len(x.shape), len(x.shape) - 1))
    n = draw(st.integers(0, side + 1)) if x.shape[d] else 0
    idx = index_array(draw, (n,), x.shape[d])
    sshape = list(x.shape)
    sshape[d] = n
    src = draw(leaf(tuple(sshape), R, grad=draw(st.integers(0, 3)) > 0))
    return [x, d, Data(idx), src, draw(st.sampled_from([1, 2, -0.5]))]


@st.composite
def index_copy_args(draw, key, inplace, side):
    x = draw(leaf(draw(shapes(1, 3, side)), R, grad=draw(st.integers(0, 3)) > 0 or inplace))
    d = draw(st.integers(-len(x.shape), len(x.shape) - 1))
    picks = draw(st.permutations(range(x.shape[d])))[:draw(st.integers(0, x.shape[d]))]
    sshape = list(x.shape)
    sshape[d] = len(picks)
    src = draw(leaf(tuple(sshape), R, grad=draw(st.integers(0, 3)) > 0))
    return [x, d, Data(np.array(picks, dtype=np.int64)), src]


@st.composite
def index_fill_args(draw, key, inplace, side):
    x = draw(leaf(draw(shapes(1, 3, side)), R, grad=draw(st.integers(0, 3)) > 0 or inplace))
    d = draw(st.integers(-len(x.shape), len(x.shape) - 1))
    n = draw(st.integers(0, side + 1)) if x.shape[d] else 0
    idx = index_array(draw, (n,), x.shape[d])
    value = draw(st.sampled_from([1.5, -2, "tensor"]))
    if value == "tensor":
        value = draw(leaf((), R, grad=draw(st.booleans())))
    return [x, d, Data(idx), value]


register(
    Op("cat", cat_args, lambda L, items, d: L.cat(items, d)),
    Op("stack", stack_args, lambda L, items, d: L.stack(items, d)),
    Op("gather", gather_args, lambda L, x, d, i: x.gather(d, i)),
    Op("scatter", scatter_args, lambda L, x, d, i, s: x.scatter(d, i, s), lambda L, y, d, i, s: y.scatter_(d, i, s)),
    Op("scatter_value", lambda k, ip, side: scatter_args(k, ip, side, value=True),
       lambda L, x, d, i, v: x.scatter(d, i, v), lambda L, y, d, i, v: y.scatter_(d, i, v)),
    Op("scatter_add", lambda k, ip, side: scatter_args(k, ip, side, unique=False),
       lambda L, x, d, i, s: x.scatter_add(d, i, s), lambda L, y, d, i, s: y.scatter_add_(d, i, s), tol="sum"),
    Op("index_select", index_select_args, lambda L, x, d, i: x.index_select(d, i)),
    Op("index_add", index_add_args, lambda L, x, d, i, s, a: x.index_add(d, i, s, alpha=a),
       lambda L, y, d, i, s, a: y.index_add_(d, i, s, alpha=a), tol="sum"),
    # (distinct indices: with repeats the last slice wins while torch's formula still sends the
    # gradient to every repeat, which no finite difference agrees with; values:
    # tests/test_index_fill_copy.py)
    Op("index_copy", index_copy_args, lambda L, x, d, i, s: x.index_copy(d, i, s),
       lambda L, y, d, i, s: y.index_copy_(d, i, s)),
    Op("index_fill", index_fill_args, lambda L, x, d, i, v: x.index_fill(d, i, v),
       lambda L, y, d, i, v: y.index_fill_(d, i, v), tol="sum"),
)

# --- views ---


@st.composite
def factor_shape(draw, numel):
    """A random shape with `numel` elements, sometimes with a -1."""
    shape, rest = [], numel
    for _ in range(draw(st.integers(0, 2))):
        f = draw(st.sampled_from([k for k in range(1, 7) if rest % k == 0] if rest else [0, 1, 2]))
        shape.append(f)
        rest = rest // f if f else rest
    shape.append(rest if numel else draw(st.sampled_from([0, 1, 3])))
    if numel == 0 and 0 not in shape:
        shape[0] = 0
    if numel and draw(st.booleans()):
        shape[draw(st.integers(0, len(shape) - 1))] = -1
    return tuple(shape)


@st.composite
def reshape_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, side=side))
    return [x, draw(factor_shape(int(np.prod(x.shape, dtype=np.int64))))]


@st.composite
def flatten_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, side=side))
    n = max(len(x.shape), 1)
    a, b = sorted([draw(st.integers(0, n - 1)), draw(st.integers(0, n - 1))])
    return [x, a - n if draw(st.booleans()) else a, b - n if draw(st.booleans()) else b]


@st.composite
def squeeze_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, side=min(side, 2)))
    return [x, draw(st.one_of(st.none(), dims(len(x.shape), allow_empty=True)))]


@st.composite
def unsqueeze_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, side=side))
    n = len(x.shape)
    return [x, draw(st.integers(-n - 1, n))]


@st.composite
def transpose_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, side=side))
    n = max(len(x.shape), 1)
    return [x, draw(st.integers(-n, n - 1)), draw(st.integers(-n, n - 1))]


@st.composite
def permute_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, side=side))
    n = len(x.shape)
    return [x, tuple(p - n if draw(st.booleans()) else p for p in draw(st.permutations(range(n))))]


@st.composite
def expand_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, side=min(side, 3)))
    new = [draw(st.integers(0, 3)) for _ in range(draw(st.integers(0, 2)))]
    old = [draw(st.sampled_from([1, 2, 3, -1])) if s == 1 else draw(st.sampled_from([s, -1])) for s in x.shape]
    return [x, tuple(new + old)]


@st.composite
def narrow_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, min_dims=1, side=side))
    d = draw(st.integers(-len(x.shape), len(x.shape) - 1))
    size = x.shape[d]
    start = draw(st.integers(0, size))
    length = draw(st.integers(0, size - start))
    if start and draw(st.booleans()):
        start -= size  # negative starts count from the end
    return [x, d, start, length]


@st.composite
def select_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, min_dims=1, side=side, min_side=1))
    d = draw(st.integers(-len(x.shape), len(x.shape) - 1))
    return [x, d, draw(st.integers(-x.shape[d], x.shape[d] - 1))]


@st.composite
def diagonal_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, min_dims=2, side=side))
    n = len(x.shape)
    a, b = draw(st.permutations(range(n)))[:2]
    return [x, draw(st.integers(-3, 3)), a - n if draw(st.booleans()) else a, b]


@st.composite
def as_strided_args(draw, key, inplace, side):
    """Sizes and strides (overlapping ones included) within the leaf's own storage."""
    x = draw(tensor_leaf(R, side=side, layout=False))
    numel = int(np.prod(x.shape, dtype=np.int64))
    ndim = draw(st.integers(0, 3))
    size = [draw(st.integers(0, 3)) for _ in range(ndim)]
    stride = [draw(st.integers(0, 3)) for _ in range(ndim)]
    offset = draw(st.integers(0, 2))
    reach = offset + sum((s - 1) * t for s, t in zip(size, stride) if s > 0)
    assume(reach < numel)
    return [x, tuple(size), tuple(stride), offset]


@st.composite
def split_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, min_dims=1, side=side))
    d = draw(st.integers(-len(x.shape), len(x.shape) - 1))
    size = x.shape[d]
    if draw(st.booleans()):
        how = draw(st.integers(1, 4))
    else:
        parts, rest = [], size
        while rest > 0:
            parts.append(draw(st.integers(0, rest)) if len(parts) < 3 else rest)
            rest -= parts[-1]
        how = parts or [0]
    return [x, how, d]


@st.composite
def chunk_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, min_dims=1, side=side))
    return [x, draw(st.integers(1, 4)), draw(st.integers(-len(x.shape), len(x.shape) - 1))]


@st.composite
def unbind_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, min_dims=1, side=side))
    return [x, draw(st.integers(-len(x.shape), len(x.shape) - 1))]


register(
    Op("view", reshape_args, lambda L, x, s: x.view(s)),
    Op("reshape", reshape_args, lambda L, x, s: x.reshape(s)),
    Op("flatten", flatten_args, lambda L, x, a, b: x.flatten(a, b)),
    Op("squeeze", squeeze_args, lambda L, x, d: x.squeeze() if d is None else x.squeeze(d)),
    Op("unsqueeze", unsqueeze_args, lambda L, x, d: x.unsqueeze(d)),
    Op("transpose", transpose_args, lambda L, x, a, b: x.transpose(a, b)),
    Op("t", unary_args(R, max_dims=2), method("t")),
    Op("permute", permute_args, lambda L, x, p: x.permute(p)),
    Op("expand", expand_args, lambda L, x, s: x.expand(s)),
    Op("narrow", narrow_args, lambda L, x, d, s, n: x.narrow(d, s, n)),
    Op("select", select_args, lambda L, x, d, i: x.select(d, i)),
    Op("diagonal", diagonal_args, lambda L, x, o, a, b: x.diagonal(o, a, b)),
    Op("as_strided", as_strided_args, lambda L, x, s, t, o: x.as_strided(s, t, o)),
    Op("unbind", unbind_args, lambda L, x, d: x.unbind(d)),
    Op("split", split_args, lambda L, x, how, d: x.split(how, d)),
    Op("chunk", chunk_args, lambda L, x, n, d: x.chunk(n, d)),
)


# --- new tensors from and onto diagonals ---

@st.composite
def diag_embed_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, min_dims=1, max_dims=3, side=side))
    n = len(x.shape) + 1
    a, b = draw(st.permutations(range(n)))[:2]
    return [x, draw(st.integers(-2, 2)), a - n if draw(st.booleans()) else a, b - n if draw(st.booleans()) else b]


@st.composite
def diag_args(draw, key, inplace, side):
    return [draw(tensor_leaf(R, min_dims=1, max_dims=2, side=side)), draw(st.integers(-3, 3))]


@st.composite
def nan_reduction_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, side=side))
    n = max(len(x.shape), 1)
    return [x, draw(st.sampled_from([None, 0, -1, (0,), tuple(range(n))])), draw(st.booleans())]


register(
    Op("nansum", nan_reduction_args, lambda L, x, d, k: x.nansum(d, k), tol="sum"),
    Op("nanmean", nan_reduction_args, lambda L, x, d, k: L.nanmean(x, d, k), tol="sum"),
    Op("trace", unary_args(R, min_dims=2, max_dims=2), lambda L, x: L.trace(x), tol="sum"),
    Op("diag", diag_args, lambda L, x, o: x.diag(o)),
    Op("diag_embed", diag_embed_args, lambda L, x, o, a, b: L.diag_embed(x, o, a, b)),
    Op("diagflat", diag_args, lambda L, x, o: L.diagflat(x, o)),
)

# --- indexing: x[key] and x[key] = value ---


@st.composite
def basic_item(draw, size):
    kinds = ["slice", "slice", "none"] + ["int"] * (size > 0)
    kind = draw(st.sampled_from(kinds))
    if kind == "int":
        return draw(st.integers(-size, size - 1)), 1
    if kind == "none":
        return None, 0
    bound = st.none() | st.integers(-size - 2, size + 2)
    return slice(draw(bound), draw(bound), draw(st.sampled_from([None, 1, 2, 3]))), 1


@st.composite
def index_key(draw, shape, advanced):
    """A valid key for `shape`: basic items (ints, slices, None, maybe behind an Ellipsis); when
    `advanced`, one index array (unique entries: writes then do not depend on order, and
    negative entries never alias positive ones) or one boolean mask among them."""
    ndim = len(shape)
    from_right = ndim > 0 and draw(st.integers(0, 3)) == 0
    count = draw(st.integers(1 if advanced and ndim else 0, ndim))
    dims_ = list(range(ndim - count, ndim)) if from_right else list(range(count))
    adv_at = draw(st.sampled_from(dims_)) if advanced and dims_ else None
    items = []
    for d in dims_:
        if d == adv_at:
            size = shape[d]
            if draw(st.booleans()) and size > 0:
                n = draw(st.integers(1, size))
                picked = np.random.default_rng(draw(st.integers(0, 2**32 - 1))).permutation(size)[:n]
                picked = np.where(draw(hnp.arrays(np.bool_, (n,))), picked - size, picked).astype(np.int64)
                if draw(st.booleans()):
                    items.append(picked.tolist())
                else:
                    two_d = n % 2 == 0 and draw(st.booleans())
                    items.append(Data(picked.reshape(2, -1) if two_d else picked))
            else:
                items.append(Data(draw(hnp.arrays(np.bool_, (size,)))))
        else:
            item, _ = draw(basic_item(shape[d]))
            items.append(item)
            if item is None:  # None consumes no dim: the next item indexes this dim again
                items.append(slice(None))
    if from_right:
        items = [Ellipsis] + items
    elif draw(st.integers(0, 4)) == 0:
        items.append(Ellipsis)
    if len(items) == 1 and draw(st.booleans()) and not isinstance(items[0], list):
        return items[0]
    return tuple(items)


def getitem_args(advanced):
    @st.composite
    def make(draw, key, inplace, side):
        x = draw(tensor_leaf(R, side=side, min_side=1 if advanced else 0))
        return [x, draw(index_key(x.shape, advanced))]

    return make


def torch_key(key):
    return map_tree(key, lambda d: torch.from_numpy(np.ascontiguousarray(d.arr)))


def indexed_shape(shape, key):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return tuple(torch.empty(shape)[torch_key(key)].shape)


def setitem_args(advanced):
    @st.composite
    def make(draw, key, inplace, side):
        x, k = draw(getitem_args(advanced)(key, inplace, side))
        target = indexed_shape(x.shape, k)
        kind = draw(st.sampled_from(["tensor", "tensor", "broadcast", "zerodim", "scalar"]))
        if kind == "scalar":
            value = draw(st.sampled_from([0, 1.5, -2]))
        elif kind == "zerodim":
            value = draw(leaf((), R, dtype=draw(st.sampled_from([None, other_float(key)]))))
        else:
            vshape = target
            if kind == "broadcast":
                vshape = tuple(1 if draw(st.booleans()) else s for s in target[draw(st.integers(0, len(target))):])
            value = draw(leaf(vshape, R, grad=draw(st.integers(0, 3)) > 0))
        return [x, k, value]

    return make


def setitem(L, y, k, v):
    y[k] = v
    return y


register(
    Op("getitem_basic", getitem_args(False), lambda L, x, k: x[k]),
    Op("getitem_advanced", getitem_args(True), lambda L, x, k: x[k], tol="sum"),
    Op("setitem_basic", setitem_args(False), inplace=setitem),
    Op("setitem_advanced", setitem_args(True), inplace=setitem),
)

# --- copies, casts and fills ---


@st.composite
def cast_args(draw, key, inplace, side):
    return [draw(tensor_leaf(R, side=side)), draw(st.sampled_from(FLOAT_DTYPES))]


@st.composite
def copy_args(draw, key, inplace, side):
    x, src_shape = draw(broadcast_shapes(2, True, side))
    kind = draw(st.sampled_from(["same", "same", "other", "int"]))
    if kind == "int":
        src = Data(draw(hnp.arrays(np.int64, src_shape, elements=st.integers(-5, 5))))
    else:
        src = draw(leaf(src_shape, R, dtype=other_float(key) if kind == "other" else None))
    return [draw(leaf(x, R)), src]


@st.composite
def fill_args(draw, key, inplace, side):
    dtype = draw(st.sampled_from([None, other_float(key)]))
    value = draw(st.one_of(st.sampled_from([0, 2.5, -1]), leaf((), R, dtype=dtype)))
    return [draw(tensor_leaf(R, side=side)), value]


def lib_dtype(L, name):
    return getattr(L, name)


FLOAT32_RESULT = dict(eps=1e-3, atol=1e-2, rtol=1e-2)  # finite differences of a float32 result


register(
    Op("clone", unary_args(R), method("clone")),
    Op("contiguous", unary_args(R), method("contiguous")),
    Op("to_dtype", cast_args, lambda L, x, d: x.to(lib_dtype(L, d)), gradcheck_kw=FLOAT32_RESULT),
    Op("float", unary_args(R), method("float"), gradcheck_kw=FLOAT32_RESULT),
    Op("double", unary_args(R), method("double")),
    Op("copy_", copy_args, inplace=lambda L, y, s: y.copy_(s)),
    Op("fill_", fill_args, inplace=lambda L, y, v: y.fill_(v)),
    Op("zero_", unary_args(R), inplace=lambda L, y: y.zero_()),
)

FORWARD = [op for op in OPS if op.fn is not None]
INPLACE = [op for op in OPS if op.inplace is not None]
GRADCHECK = [op for op in OPS if op.gradcheck]
assert len({op.name for op in OPS}) == len(OPS), "op names must be unique"


# ----- comparing -----

def flat_outputs(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def tolerance(op, dtype_key):
    return TOL[op.tol][dtype_key]


def node_name(t):
    return None if t.grad_fn is None else normalize_message(t.grad_fn.name())


def check_outputs(op, case, mo, to):
    """Same kind of result, values, dtypes, shapes, requires_grad and identity with an input."""
    assert isinstance(mo, (tuple, list)) == isinstance(to, (tuple, list)), (type(mo), type(to))
    ms, ts = flat_outputs(mo), flat_outputs(to)
    assert len(ms) == len(ts), (len(ms), len(ts))
    for a, b in zip(ms, ts):
        assert_same(a, b, **(tolerance(op, str(b.dtype).split(".")[-1]) if b.is_floating_point() else {}))
        assert a.requires_grad == b.requires_grad, (a.requires_grad, b.requires_grad)
        assert [a is x for x in case.m] == [b is x for x in case.t], "output is an input in one library only"


def check_names(ms, ts):
    for a, b in zip(ms, ts):
        assert node_name(a) == node_name(b), (node_name(a), node_name(b))


def check_grads(case, tol, extra=()):
    pairs = [(m, t) for m, t, _ in case.leaves()] + list(extra)
    for i, (m, t) in enumerate(pairs):
        if t.grad is None:
            assert m.grad is None, f"input {i}: torch has no grad, minigrad has {m.grad!r}"
        else:
            assert m.grad is not None, f"input {i}: minigrad has no grad, torch has {t.grad!r}"
            assert_same(m.grad, t.grad, **tol)


def upstream(data, t):
    """A random gradient for output `t` (values in [-5, 5], sometimes non-contiguous)."""
    arr = data.draw(arrays(str(t.dtype).split(".")[-1], tuple(t.shape), UPSTREAM), label="upstream")
    return make_pair(arr, data.draw(recipes(arr.ndim), label="upstream layout"))


def backward_both(data, ms, ts):
    """out.backward(upstream) on a random non-empty subset of the differentiable outputs."""
    diff = [(a, b) for a, b in zip(ms, ts) if b.requires_grad]
    if len(diff) > 1:
        keep = data.draw(st.lists(st.booleans(), min_size=len(diff), max_size=len(diff)).filter(any), label="outputs")
        diff = [p for p, k in zip(diff, keep) if k]
    for a, b in diff:
        gm, gt = upstream(data, b)
        a.backward(gm, retain_graph=True)
        b.backward(gt, retain_graph=True)
    return bool(diff)


# ----- the tests every op runs -----

def draw_case(data, op, inplace=False):
    key = data.draw(st.sampled_from(FLOAT_DTYPES), label="dtype")
    tree = data.draw(op.args(key, inplace, 4), label="args")
    case = hypothesis_case(data, tree, key)
    assume(case.any_grad())
    return case


@pytest.mark.parametrize("op", FORWARD, ids=repr)
@given(data=st.data())
def test_values_and_grads(op, data):
    case = draw_case(data, op)
    kind, mo, to = run_both(lambda: op.fn(mg, *case.args(mg, case.m)), lambda: op.fn(torch, *case.args(torch, case.t)))
    event(f"{kind}: {type(to).__name__}" if kind == "err" else "ok")
    if kind == "err":
        return
    check_outputs(op, case, mo, to)
    ms, ts = flat_outputs(mo), flat_outputs(to)
    if backward_both(data, ms, ts):
        event("backward")
        check_grads(case, tolerance(op, case.lowest_precision()))
    check_names(ms, ts)


@pytest.mark.parametrize("op", GRADCHECK, ids=repr)
@settings(max_examples=_profile_examples(20))
@given(data=st.data())
def test_gradcheck(op, data):
    tree = data.draw(op.args("float64", False, 3), label="args")
    case = gradcheck_case(np.random.default_rng(data.draw(st.integers(0, 2**32 - 1), label="seed")), tree)
    assume(case.any_grad())
    fn = op.as_function()
    try:
        torch_ok = True
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fn(torch, *case.args(torch, case.t))
    except Exception:  # noqa: BLE001 - an invalid combination: both raise (test_values_and_grads checks that)
        torch_ok = False
    assume(torch_ok)
    gradcheck = minigrad_gradcheck()
    assert gradcheck(lambda *ts: fn(mg, *case.args(mg, ts)), tuple(case.m), **op.gradcheck_kw)


def run_inplace(L, op, case, tensors, mode, pad):
    args = case.args(L, tensors)
    x, rest = args[0], args[1:]
    if mode == "clone":
        base = x.clone()
        target = base
    else:
        base = L.stack([pad, x])
        target = base.select(0, 1)
    before = (base._version, target._version)
    result = op.inplace(L, target, *rest)
    return result, target, base, before


@pytest.mark.parametrize("op", INPLACE, ids=repr)
@given(data=st.data())
def test_inplace_on_non_leaf(op, data):
    case = draw_case(data, op, inplace=True)
    self_leaf = case.nodes[0]
    assert isinstance(self_leaf, Leaf) and self_leaf.grad and self_leaf.post is None
    mode = data.draw(st.sampled_from(["clone", "view"]), label="mode")
    pad_m = pad_t = None
    if mode == "view":
        key = self_leaf.dtype or case.key
        pad_m, pad_t = make_pair(data.draw(arrays(key, self_leaf.shape, R), label="pad"))
        pad_m.requires_grad_()
        pad_t.requires_grad_()
    versions = (case.m[0]._version, case.t[0]._version)
    kind, rm, rt = run_both(lambda: run_inplace(mg, op, case, case.m, mode, pad_m),
                            lambda: run_inplace(torch, op, case, case.t, mode, pad_t))
    event(f"{kind}: {type(rt).__name__}: {str(rt)[:90]}" if kind == "err" else f"ok: {mode}")
    if kind == "err":
        return
    (res_m, target_m, base_m, before_m), (res_t, target_t, base_t, before_t) = rm, rt
    assert (res_m is target_m) == (res_t is target_t)
    assert before_m == before_t
    assert (base_m._version, target_m._version) == (base_t._version, target_t._version)
    assert (case.m[0]._version, case.t[0]._version) == versions
    tol = tolerance(op, case.lowest_precision())
    for a, b in ((target_m, target_t), (base_m, base_t)):
        assert_same(a, b, **tol)
        assert a.requires_grad == b.requires_grad
    gm, gt = upstream(data, base_t)
    base_m.backward(gm)
    base_t.backward(gt)
    check_grads(case, tol, extra=[(pad_m, pad_t)] if mode == "view" else ())
    check_names([target_m, base_m], [target_t, base_t])


@pytest.mark.parametrize("op", INPLACE, ids=repr)
@settings(max_examples=_profile_examples(10))
@given(data=st.data())
def test_inplace_on_leaf_is_refused(op, data):
    """`a leaf Variable that requires grad is being used in an in-place operation.`"""
    case = draw_case(data, op, inplace=True)

    def run(L, tensors):
        args = case.args(L, tensors)
        return op.inplace(L, args[0], *args[1:])

    versions = (case.m[0]._version, case.t[0]._version)
    kind, _, _ = run_both(lambda: run(mg, case.m), lambda: run(torch, case.t))
    assert kind == "err"
    assert (case.m[0]._version, case.t[0]._version) == versions


# ----- kinks, ties and other points where a gradient is a convention -----

INF = math.inf
KINKS = [  # (what, fn(L, *inputs), inputs, torch's gradients for an upstream of ones; None: no grad)
    ("relu'(0) = 0", lambda L, x: x.relu(), [[-1.0, 0.0, 2.0]], [[0, 0, 1]]),
    ("abs'(0) = 0", lambda L, x: x.abs(), [[-1.0, 0.0, 2.0]], [[-1, 0, 1]]),
    ("sign is flat", lambda L, x: x.sign(), [[-1.0, 0.0, 2.0]], [[0, 0, 0]]),
    ("floor is flat", lambda L, x: x.floor(), [[1.0, 1.5]], [[0, 0]]),
    ("round is flat", lambda L, x: x.round(), [[0.5, 1.5]], [[0, 0]]),
    ("clamp passes 1 at both bounds", lambda L, x: x.clamp(-1, 1), [[-2.0, -1, 0, 1, 2]], [[0, 1, 1, 1, 0]]),
    ("clamp with min > max", lambda L, x: x.clamp(1, -1), [[0.0, 2, -2]], [[0, 0, 0]]),
    ("clamp_min at its bound", lambda L, x: x.clamp_min(0), [[-1.0, 0, 1]], [[0, 1, 1]]),
    ("clamp_max at its bound", lambda L, x: x.clamp_max(0), [[-1.0, 0, 1]], [[1, 1, 0]]),
    ("clamp tensor bounds: x gets it at the bounds", lambda L, x, lo, hi: x.clamp(lo, hi),
     [[-2.0, -1, 0, 1, 2], [-1.0] * 5, [1.0] * 5], [[0, 1, 1, 1, 0], [1, 0, 0, 0, 0], [0, 0, 0, 0, 1]]),
    ("clamp tensor bounds with min > max", lambda L, x, lo, hi: x.clamp(lo, hi), [[0.0], [1.0], [-1.0]],
     [[0], [0], [1]]),
    ("clamp_min tensor at its bound", lambda L, x, lo: x.clamp_min(lo), [[-1.0, 0, 1], [0.0] * 3],
     [[0, 1, 1], [1, 0, 0]]),
    ("clamp_max tensor at its bound", lambda L, x, hi: x.clamp_max(hi), [[-1.0, 0, 1], [0.0] * 3],
     [[1, 1, 0], [0, 0, 1]]),
    ("max() splits ties evenly", lambda L, x: x.max(), [[1.0, 3, 3, 2]], [[0, 0.5, 0.5, 0]]),
    ("min() splits ties evenly", lambda L, x: x.min(), [[1.0, 0, 0, 1]], [[0, 0.5, 0.5, 0]]),
    ("max(dim) routes to the returned index", lambda L, x: x.max(1)[0], [[[1.0, 3, 3], [2, 2, 0]]],
     [[[0, 1, 0], [1, 0, 0]]]),
    ("min(dim) routes to the returned index", lambda L, x: x.min(0)[0], [[[1.0, 3], [1, 2]]], [[[1, 0], [0, 1]]]),
    ("amax splits ties evenly", lambda L, x: x.amax(1), [[[3.0, 1, 3], [0, 0, 0]]],
     [[[0.5, 0, 0.5], [1 / 3, 1 / 3, 1 / 3]]]),
    ("amin splits ties evenly", lambda L, x: x.amin((0, 1)), [[[3.0, 1], [1, 2]]], [[[0, 0.5], [0.5, 0]]]),
    ("maximum splits ties", lambda L, a, b: L.maximum(a, b), [[1.0, 2, 3], [1.0, 3, 2]], [[0.5, 0, 1], [0.5, 1, 0]]),
    ("minimum splits ties", lambda L, a, b: L.minimum(a, b), [[1.0, 2, 3], [1.0, 3, 2]], [[0.5, 1, 0], [0.5, 0, 1]]),
    ("inf-norm splits ties", lambda L, x: x.norm(INF), [[3.0, -3, 1]], [[0.5, -0.5, 0]]),
    ("-inf-norm splits ties", lambda L, x: x.norm(-INF), [[3.0, -1, 1]], [[0, -0.5, 0.5]]),
    ("2-norm of zeros", lambda L, x: x.norm(), [[0.0, 0]], [[0, 0]]),
    ("3-norm of zeros", lambda L, x: x.norm(3), [[0.0, 0]], [[0, 0]]),
    ("1-norm at 0", lambda L, x: x.norm(1), [[0.0, 2, -1]], [[0, 1, -1]]),
    ("0-norm gives no gradient", lambda L, x: x.norm(0), [[0.0, 2, -1]], [None]),
    ("std of a constant", lambda L, x: x.std(), [[2.0, 2, 2]], [[0, 0, 0]]),
    ("var of a constant", lambda L, x: x.var(), [[2.0, 2, 2]], [[0, 0, 0]]),
    ("prod with one zero", lambda L, x: x.prod(), [[2.0, 0, 3]], [[0, 6, 0]]),
    ("prod with two zeros", lambda L, x: x.prod(), [[0.0, 2, 0]], [[0, 0, 0]]),
    ("prod(dim) with zeros", lambda L, x: x.prod(0), [[[0.0, 2], [3, 0]]], [[[3, 0], [0, 2]]]),
    ("x ** 0", lambda L, x: x ** 0, [[0.0, 2]], [[0, 0]]),
    ("x ** 2 at 0", lambda L, x: x ** 2, [[0.0, 2]], [[0, 4]]),
    ("0 ** x", lambda L, x: 0 ** x, [[0.0, 2]], [[0, 0]]),
    ("sqrt'(0) = inf", lambda L, x: x.sqrt(), [[0.0, 4]], [[INF, 0.25]]),
    ("logsumexp of equal values", lambda L, x: x.logsumexp(0), [[0.0, 0]], [[0.5, 0.5]]),
    ("where routes each element", lambda L, x: L.where(x > 0, x, x * 2), [[-1.0, 0, 1]], [[2, 2, 1]]),
    # xlogy's gradient for x is 0 where x = 0 and y <= 0 (log y is not defined there)
    ("xlogy at x = 0", lambda L, x, y: L.xlogy(x, y), [[0.0, 0, 0, 2], [0.0, -1, 2, 1]],
     [[0, 0, math.log(2), 0], [math.nan, 0, 0, 2]]),
    ("xlogy at x = 0, number y <= 0", lambda L, x: L.xlogy(x, -1.0), [[0.0, 2]], [[0, math.nan]]),
    ("copysign'(0) = 0", lambda L, x, y: L.copysign(x, y), [[0.0, -0.0, 2, -2], [-1.0, 1, -1, 1]],
     [[0, 0, -1, -1], [0, 0, 0, 0]]),
    ("logaddexp of equal infinities", lambda L, x, y: L.logaddexp(x, y), [[INF, -INF, 1], [INF, -INF, 1]],
     [[math.nan, math.nan, 0.5], [math.nan, math.nan, 0.5]]),
    ("hypot at the origin", lambda L, x, y: L.hypot(x, y), [[0.0, 3], [0.0, 4]], [[math.nan, 0.6], [math.nan, 0.8]]),
]


@pytest.mark.parametrize("what,fn,inputs,expected", KINKS, ids=[k[0] for k in KINKS])
@pytest.mark.parametrize("dtype", FLOAT_DTYPES)
def test_kinks_and_ties(what, fn, inputs, expected, dtype):
    ms, ts = [], []
    for x in inputs:
        m, t = make_pair(np.array(x, dtype=DTYPES[dtype][2]))
        ms.append(m.requires_grad_())
        ts.append(t.requires_grad_())
    om, ot = fn(mg, *ms), fn(torch, *ts)
    assert_same(om, ot)
    gm, gt = make_pair(np.ones(tuple(ot.shape), DTYPES[dtype][2]))
    om.backward(gm)
    ot.backward(gt)
    for m, t, e in zip(ms, ts, expected):
        if e is None:
            assert t.grad is None and m.grad is None, (m.grad, t.grad)
        else:
            np.testing.assert_allclose(t.grad.numpy(), np.array(e, np.float64), rtol=1e-6)  # the table is torch's
            assert_same(m.grad, t.grad)


# ----- minigrad.autograd.gradcheck itself, against torch.autograd.gradcheck -----
# This repository's gradcheck runs on torch tensors (its `_LIBRARY` pointed at torch), so both
# implementations see the very same functions, including deliberately wrong backwards.


@pytest.fixture
def ours():
    module = load_gradcheck_copy("_gradcheck_on_torch")
    module._LIBRARY = torch
    return module


class WrongScale(torch.autograd.Function):
    """exp with a backward 10% too large."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x.exp()

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x.exp() * 1.1


class Noisy(torch.autograd.Function):
    """A correct backward plus noise of size `scale`: not reentrant."""

    scale = 1e-3

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * (2 + Noisy.scale * torch.rand_like(g))


class NotLinearInGrad(torch.autograd.Function):
    """Right Jacobian, but a zero grad_output does not give a zero gradient."""

    @staticmethod
    def forward(ctx, x):
        return x * 3

    @staticmethod
    def backward(ctx, g):
        return g * 3 + (1.0 if bool((g == 0).all()) else 0.0)


class NeedsEveryGrad(torch.autograd.Function):
    """Two outputs; backward fails when one of them got no gradient."""

    @staticmethod
    def forward(ctx, x):
        ctx.set_materialize_grads(False)
        return x * 2, x * 3

    @staticmethod
    def backward(ctx, g1, g2):
        if g1 is None or g2 is None:
            raise RuntimeError("an output gradient is undefined")
        return g1 * 2 + g2 * 3


class WrongSecondInput(torch.autograd.Function):
    """(x * y, x + y) with the gradient of the second output wrt y doubled."""

    @staticmethod
    def forward(ctx, x, y):
        ctx.save_for_backward(x, y)
        return x * y, x + y

    @staticmethod
    def backward(ctx, g1, g2):
        x, y = ctx.saved_tensors
        return g1 * y + g2, g1 * x + 2 * g2


class DetachedDoubleBackward(torch.autograd.Function):
    """x ** 3 whose backward is right but not differentiable (it detaches x)."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x ** 3

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * 3 * x.detach() ** 2


MISMATCH_0_0 = r"^Jacobian mismatch for output 0 with respect to input 0,\nnumerical:"


def f64(*shape, grad=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, dtype=torch.float64, generator=g).requires_grad_(grad)


def outcome(check, *args, **kw):
    """('ok', result) or ('err', exception type name, message), with warnings recorded."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = ("ok", check(*args, **kw))
        except Exception as e:  # noqa: BLE001 - compared between implementations
            result = ("err", type(e).__name__, str(e))
    return result, [(w.category.__name__, str(w.message)) for w in caught]


PASSING = [  # (what, fn, inputs)
    ("binary broadcast", lambda x, y: x * y, lambda: (f64(3, 4), f64(4, seed=1))),
    ("transposed input and output view", lambda x: x.t().exp(), lambda: (f64(4, 3).t(),)),
    ("returns its input", lambda x: x, lambda: (f64(2, 2),)),
    ("returns a view of its input", lambda x: x[1], lambda: (f64(3, 2),)),
    ("values and indices", lambda x: x.max(1), lambda: (f64(3, 4),)),
    ("several outputs", lambda x: x.unbind(0), lambda: (f64(3, 2),)),
    ("a differentiable and an integer output", lambda x: (x * 2, x.argmax()), lambda: (f64(4),)),
    ("only an integer output", lambda x: x.argmax(), lambda: (f64(4),)),
    ("0-d", lambda x: (x * x).sum(), lambda: (f64(),)),
    ("empty", lambda x: x.exp(), lambda: (f64(0, 3),)),
    ("non-tensor and non-grad inputs", lambda x, k, y, i: (x * k + y).gather(0, i),
     lambda: (f64(3), 2.5, f64(3, grad=False, seed=1), torch.tensor([2, 0]))),
    ("float32 with loose tolerances", lambda x: x.sin(), lambda: (f64(3).float().detach().requires_grad_(),)),
    ("two inputs, two outputs", lambda x, y: (x * y, x - y), lambda: (f64(3), f64(3, seed=1))),
]

FAILING = [  # (what, fn, inputs)
    ("wrong backward", lambda x: WrongScale.apply(x), lambda: (f64(3),)),
    ("detached factor", lambda x: x.detach() * x, lambda: (f64(2, 2),)),
    ("wrong gradient of output 1 wrt input 1", lambda x, k, y: WrongSecondInput.apply(x * k, y),
     lambda: (f64(3), 2.0, f64(3, seed=1))),
    ("not reentrant", lambda x: Noisy.apply(x), lambda: (f64(3),)),
    ("backward not multiplied by grad_output", lambda x: NotLinearInGrad.apply(x), lambda: (f64(3),)),
    ("undefined output grads", lambda x: NeedsEveryGrad.apply(x), lambda: (f64(3),)),
    ("no differentiable output, yet depends on the input", lambda x: x.detach() * 2, lambda: (f64(3),)),
    ("no input requires grad", lambda x: x * 2, lambda: (f64(3, grad=False),)),
    ("expanded input", lambda x: x * 2, lambda: (f64(1).detach().expand(3).requires_grad_(),)),
]


@pytest.mark.parametrize("what,fn,make", PASSING + FAILING, ids=[c[0] for c in PASSING + FAILING])
@pytest.mark.parametrize("raise_exception", [True, False])
def test_gradcheck_agrees_with_torch(ours, what, fn, make, raise_exception):
    kw = dict(raise_exception=raise_exception)
    if what.startswith("float32"):
        kw.update(eps=1e-3, atol=1e-2, rtol=1e-2)
    inputs = make()
    before = [(x._version, x.detach().clone()) for x in inputs if isinstance(x, torch.Tensor)]
    theirs = outcome(torch.autograd.gradcheck, fn, inputs, **kw)
    mine = outcome(ours.gradcheck, fn, inputs, **kw)
    assert mine == theirs
    expect_pass = what in {c[0] for c in PASSING}
    assert theirs[0] == (("ok", True) if expect_pass else theirs[0])
    if not expect_pass and raise_exception and theirs[0][0] == "err" and theirs[0][1] == "GradcheckError":
        assert isinstance(ours.GradcheckError("x"), RuntimeError)
    # the perturbations write around the version counter and restore every value
    after = [(x._version, x.detach()) for x in inputs if isinstance(x, torch.Tensor)]
    for (v0, a), (v1, b) in zip(before, after):
        assert v0 == v1 and torch.equal(a, b)


def test_gradcheck_failures_are_gradcheck_errors(ours):
    with pytest.raises(ours.GradcheckError, match=MISMATCH_0_0):
        ours.gradcheck(lambda x: WrongScale.apply(x), (f64(3),))
    assert ours.gradcheck(lambda x: WrongScale.apply(x), (f64(3),), raise_exception=False) is False
    assert issubclass(ours.GradcheckError, RuntimeError)


def test_gradcheck_tolerances_and_nondet_tol(ours):
    class Slightly(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2 * (1 + 1e-4)

    x = f64(3)
    for kw in [{}, dict(rtol=1e-6, atol=0.0), dict(eps=1e-3), dict(atol=1e-3, rtol=0.0)]:
        f = lambda t: Slightly.apply(t)  # noqa: E731
        assert outcome(ours.gradcheck, f, (x,), **kw) == outcome(torch.autograd.gradcheck, f, (x,), **kw)
    Noisy.scale = 1e-9
    try:
        kw = dict(nondet_tol=1e-6)
        f = lambda t: Noisy.apply(t)  # noqa: E731
        mine, theirs = outcome(ours.gradcheck, f, (x,), **kw), outcome(torch.autograd.gradcheck, f, (x,), **kw)
        assert mine == theirs == (("ok", True), [])
    finally:
        Noisy.scale = 1e-3


@pytest.mark.parametrize("kw", [
    dict(check_forward_ad=False, check_backward_ad=False),
    dict(check_batched_grad=True, check_backward_ad=False, check_forward_ad=True),
    dict(check_batched_forward_grad=True),
])
def test_gradcheck_flag_assertions_match_torch(ours, kw):
    x = f64(3)
    f = lambda t: t * 2  # noqa: E731
    assert outcome(ours.gradcheck, f, (x,), **kw) == outcome(torch.autograd.gradcheck, f, (x,), **kw)


@pytest.mark.parametrize("kw", [dict(fast_mode=True), dict(check_forward_ad=True), dict(check_batched_grad=True),
                                dict(check_forward_ad=True, check_batched_forward_grad=True)])
def test_gradcheck_refuses_what_minigrad_lacks(ours, kw):
    with pytest.raises(NotImplementedError, match="not supported"):
        ours.gradcheck(lambda t: t * 2, (f64(3),), **kw)


@pytest.mark.parametrize("what,fn,make,passes", [
    ("sin of a product", lambda x, y: (x * y).sin(), lambda: (f64(2, 3), f64(3, seed=1)), True),
    ("cube, summed", lambda x: (x ** 3).sum(), lambda: (f64(4),), True),
    ("two outputs", lambda x: (x.exp(), x * x), lambda: (f64(3),), True),
    ("detached double backward", lambda x: DetachedDoubleBackward.apply(x), lambda: (f64(3),), False),
])
@pytest.mark.parametrize("noncontig", [False, True])
def test_gradgradcheck_agrees_with_torch(ours, what, fn, make, passes, noncontig):
    inputs = make()
    kw = dict(gen_non_contig_grad_outputs=noncontig)
    theirs, _ = outcome(torch.autograd.gradgradcheck, fn, inputs, **kw)
    mine, _ = outcome(ours.gradgradcheck, fn, inputs, **kw)
    assert theirs == (("ok", True) if passes else theirs)
    # random grad_outputs: a failure's numbers differ, its kind and first line do not
    assert mine[:2] == theirs[:2]
    if not passes:
        first_line = "Jacobian mismatch for output 0 with respect to input 0,"
        assert mine[2].split("\n")[0] == theirs[2].split("\n")[0] == first_line
    assert outcome(ours.gradgradcheck, fn, inputs, raise_exception=False)[0] == ("ok", passes)


def test_gradgradcheck_with_given_grad_outputs(ours):
    x = f64(3)
    go = f64(3, seed=2)
    fn = lambda t: t.sin() * t  # noqa: E731
    assert outcome(ours.gradgradcheck, fn, (x,), (go,)) == outcome(torch.autograd.gradgradcheck, fn, (x,), (go,))


# ----- minigrad's own gradcheck on minigrad tensors -----


def test_minigrad_gradcheck_passes_and_fails():
    gradcheck = minigrad_gradcheck()
    module = importlib.import_module("minigrad.autograd.gradcheck")
    x = mg.tensor([[0.5, -1.25], [2.0, 0.75]], dtype=mg.float64).requires_grad_()
    y = mg.tensor([1.5, -0.5], dtype=mg.float64).requires_grad_()
    assert gradcheck(lambda a, b: (a * b).exp().sum(0), (x, y)) is True
    with pytest.raises(module.GradcheckError, match=MISMATCH_0_0):
        gradcheck(lambda a: a.detach() * a, (x,))
    assert gradcheck(lambda a: a.detach() * a, (x,), raise_exception=False) is False
    assert issubclass(module.GradcheckError, RuntimeError)
    with pytest.warns(UserWarning, match=r"^Input #0 requires gradient and is not a double precision floating point"):
        gradcheck(lambda a: a * 2, (mg.tensor([1.0, 2.0]).requires_grad_(),), eps=1e-3, atol=1e-2, rtol=1e-2)
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        gradcheck(lambda a: a * 2, (mg.tensor([1.0], dtype=mg.float64),))
    assert x._version == 0 and y._version == 0
