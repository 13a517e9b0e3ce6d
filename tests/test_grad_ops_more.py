"""Gradients of the scans, sorting and selection ops, shaping ops, fused pointwise ops and einsum
against torch, through the four tests of test_grad_ops.py (values and grads with grad_fn names,
gradcheck in float64, in-place on a non-leaf and on a view with `_version` and CopySlices, in-place
on a leaf refused). This file only adds op tables; the harness is test_grad_ops's. (sgn is
tested in test_pointwise_shape_ops.py: torch's sgn gradient is a ZeroTensor, which the harness
cannot read.)

Ties are part of what is compared: sort/topk/kthvalue/median draw small integers (SMALL), so
equal values are common and the gradient goes where torch's indices say.
"""

import numpy as np
import pytest
from hypothesis import strategies as st

import test_grad_ops as g
from test_grad_ops import MAG, R, SMALL, UNIT, Dom, Op, leaf, method, operand, tensor_leaf  # noqa: F401

OPS = []


def register(*ops):
    OPS.extend(ops)


def dim_of(draw, shape):
    n = max(len(shape), 1)
    return draw(st.integers(-n, n - 1))


# --- scans ---


def scan_args(dom, *, dtype=True):
    @st.composite
    def make(draw, key, inplace, side):
        x = draw(tensor_leaf(dom, side=side))
        dt = draw(st.sampled_from([None, "float64"])) if dtype and not inplace else None
        return [x, dim_of(draw, x.shape), dt]

    return make


def scan_call(name):
    def f(L, x, d, dt):
        return getattr(x, name)(d) if dt is None else getattr(x, name)(d, dtype=getattr(L, dt))

    return f


register(
    Op("cumsum", scan_args(R), scan_call("cumsum"), lambda L, y, d, dt: y.cumsum_(d), tol="sum"),
    Op("cumsum_function", scan_args(R), lambda L, x, d, dt: L.cumsum(x, d, dtype=None if dt is None else getattr(L, dt)),
       tol="sum"),
    # UNIT's integers put zeros in (cumprod's other backward formula)
    Op("cumprod", scan_args(UNIT), scan_call("cumprod"), lambda L, y, d, dt: y.cumprod_(d), tol="sum"),
    Op("logcumsumexp", scan_args(R, dtype=False), lambda L, x, d, dt: x.logcumsumexp(d), tol="sum"),
)

# --- sorting and selection ---


@st.composite
def sort_args(draw, key, inplace, side):
    x = draw(tensor_leaf(SMALL, side=side))
    return [x, dim_of(draw, x.shape), draw(st.booleans()), draw(st.booleans())]


@st.composite
def topk_args(draw, key, inplace, side):
    x = draw(tensor_leaf(SMALL, side=side))
    d = dim_of(draw, x.shape)
    size = x.shape[d] if x.shape else 1
    return [x, draw(st.integers(0, size)), d, draw(st.booleans()), draw(st.booleans())]


@st.composite
def kthvalue_args(draw, key, inplace, side):
    x = draw(tensor_leaf(SMALL, side=side, min_side=1))
    d = dim_of(draw, x.shape)
    size = x.shape[d] if x.shape else 1
    return [x, draw(st.integers(1, size)), d, draw(st.booleans())]


@st.composite
def median_dim_args(draw, key, inplace, side):
    x = draw(tensor_leaf(SMALL, side=side, min_side=1))
    return [x, dim_of(draw, x.shape), draw(st.booleans())]


register(
    Op("sort", sort_args, lambda L, x, d, desc, stable: x.sort(dim=d, descending=desc, stable=stable)),
    Op("sort_positional", sort_args, lambda L, x, d, desc, stable: L.sort(x, d, desc)),
    Op("argsort", sort_args, lambda L, x, d, desc, stable: x.argsort(dim=d, descending=desc, stable=stable),
       gradcheck=False),
    Op("msort", g.unary_args(SMALL), lambda L, x: L.msort(x)),
    Op("topk", topk_args, lambda L, x, k, d, largest, srt: x.topk(k, d, largest, srt)),
    Op("kthvalue", kthvalue_args, lambda L, x, k, d, keep: x.kthvalue(k, d, keep)),
    Op("median", g.unary_args(SMALL, min_side=1), method("median")),
    Op("median_dim", median_dim_args, lambda L, x, d, keep: x.median(d, keep)),
)

# --- shaping ---


@st.composite
def flip_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, side=side))
    n = max(len(x.shape), 1)
    picked = draw(st.permutations(range(n)))[: draw(st.integers(0, n))]
    return [x, tuple(p - n if draw(st.booleans()) else p for p in picked)]


@st.composite
def roll_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, side=side))
    if not x.shape or draw(st.integers(0, 3)) == 0:
        return [x, draw(st.integers(-7, 7)), ()]
    n = len(x.shape)
    dims = [draw(st.integers(-n, n - 1)) for _ in range(draw(st.integers(1, 3)))]
    return [x, tuple(draw(st.integers(-7, 7)) for _ in dims), tuple(dims)]


@st.composite
def tri_args(draw, key, inplace, side):
    return [draw(tensor_leaf(R, side=side, min_dims=2)), draw(st.integers(-4, 4))]


@st.composite
def repeat_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, side=3))
    extra = draw(st.integers(0, 2))
    return [x, tuple(draw(st.integers(0, 3)) for _ in range(len(x.shape) + extra))]


@st.composite
def tile_args(draw, key, inplace, side):
    x = draw(tensor_leaf(R, side=3))
    return [x, tuple(draw(st.integers(0, 3)) for _ in range(draw(st.integers(0, len(x.shape) + 1))))]


register(
    Op("flip", flip_args, lambda L, x, d: L.flip(x, d)),
    Op("flip_method", flip_args, lambda L, x, d: x.flip(*d) if d else x.flip(dims=d)),
    Op("roll", roll_args, lambda L, x, s, d: x.roll(s, d)),
    Op("tril", tri_args, lambda L, x, k: x.tril(k), lambda L, y, k: y.tril_(k)),
    Op("triu", tri_args, lambda L, x, k: L.triu(x, k), lambda L, y, k: y.triu_(k)),
    Op("repeat", repeat_args, lambda L, x, r: x.repeat(*r) if r else x.repeat(r), tol="sum"),
    Op("tile", tile_args, lambda L, x, r: L.tile(x, r), tol="sum"),
)

# --- fused pointwise ---

VALUES = st.sampled_from([1, 0.5, -2, 0])


def ternary_args(doms, *, weight=False):
    @st.composite
    def make(draw, key, inplace, side):
        shapes = draw(g.broadcast_shapes(3, inplace, side))
        first = draw(leaf(shapes[0], doms[0])) if inplace else draw(operand(shapes[0], doms[0], key, scalar=False))
        rest = [draw(operand(s, d, key, scalar=False)) for s, d in zip(shapes[1:], doms[1:])]
        if weight and draw(st.booleans()):
            rest[1] = draw(st.sampled_from([0.25, 0.5, 0.75, -1, 1.5, 0]))
        return [first] + rest + ([] if weight else [draw(VALUES)])

    return make


register(
    Op("addcmul", ternary_args((R, R, R)), lambda L, x, a, b, v: L.addcmul(x, a, b, value=v),
       lambda L, y, a, b, v: y.addcmul_(a, b, value=v)),
    Op("addcdiv", ternary_args((R, R, MAG)), lambda L, x, a, b, v: x.addcdiv(a, b, value=v),
       lambda L, y, a, b, v: y.addcdiv_(a, b, value=v)),
    Op("lerp", ternary_args((R, R, Dom(-1, 2)), weight=True), lambda L, x, e, w: L.lerp(x, e, w),
       lambda L, y, e, w: y.lerp_(e, w)),
)

# --- matrix products: addmm and addmm_ ---


@st.composite
def addmm_args(draw, key, inplace, side):
    m, k, n = (draw(st.integers(0, 3)) for _ in range(3))
    shape = (m, n) if inplace else draw(g.broadcastable_to((m, n)))
    return [draw(leaf(shape, g.PRODUCT)), draw(g.product_operand((m, k))), draw(g.product_operand((k, n))),
            draw(st.sampled_from([1, 0.5, 0])), draw(st.sampled_from([1, -2]))]


register(
    Op("addmm", addmm_args, lambda L, x, a, b, beta, alpha: L.addmm(x, a, b, beta=beta, alpha=alpha),
       lambda L, y, a, b, beta, alpha: y.addmm_(a, b, beta=beta, alpha=alpha), tol="matmul"),
)

# --- einsum ---

EINSUM = [  # equation, operand labels (sizes in SIZES)
    ("ij,jk->ik", ["ij", "jk"]),
    ("ij,jk", ["ij", "jk"]),
    ("ij->ji", ["ij"]),
    ("ii->i", ["ii"]),
    ("ii", ["ii"]),
    ("ij->", ["ij"]),
    ("ij->j", ["ij"]),
    ("bij,bjk->bik", ["bij", "bjk"]),
    ("i,j->ij", ["i", "j"]),
    ("i,i->", ["i", "i"]),
    ("ij,ij->ij", ["ij", "ij"]),
    ("ij,ij->i", ["ij", "ij"]),
    ("...ij->...ji", ["bij"]),
    ("b...,b...->b", ["bij", "bij"]),
    ("ij,jk,kn->in", ["ij", "jk", "kn"]),
    ("bn,inm,bm->bi", ["bn", "inm", "bm"]),  # bilinear
    ("ijk->kji", ["ijk"]),
    ("iij->j", ["iij"]),
    ("ij,j", ["ij", "j"]),
]
SIZES = {"i": 2, "j": 3, "k": 4, "b": 2, "n": 3, "m": 2}


@st.composite
def einsum_args(draw, key, inplace, side):
    eq, specs = draw(st.sampled_from(EINSUM))
    ops = []
    for spec in specs:
        shape = tuple(1 if draw(st.integers(0, 7)) == 0 else SIZES[c] for c in spec)  # size-1 dims broadcast
        ops.append(draw(leaf(shape, g.PRODUCT, grad=draw(st.integers(0, 3)) > 0)))
    return [eq, ops]


register(
    Op("einsum", einsum_args, lambda L, eq, ops: L.einsum(eq, *ops), tol="matmul"),
    Op("einsum_list", einsum_args, lambda L, eq, ops: L.einsum(eq, ops), tol="matmul"),
)

FORWARD = [op for op in OPS if op.fn is not None]
INPLACE = [op for op in OPS if op.inplace is not None]
GRADCHECK = [op for op in OPS if op.gradcheck]
assert len({op.name for op in OPS}) == len(OPS), "op names must be unique"
assert not {op.name for op in OPS} & {op.name for op in g.OPS}, "names already in test_grad_ops"


@pytest.mark.parametrize("op", FORWARD, ids=repr)
def test_values_and_grads(op):
    g.test_values_and_grads(op)


@pytest.mark.parametrize("op", GRADCHECK, ids=repr)
def test_gradcheck(op):
    g.test_gradcheck(op)


@pytest.mark.parametrize("op", INPLACE, ids=repr)
def test_inplace_on_non_leaf(op):
    g.test_inplace_on_non_leaf(op)


@pytest.mark.parametrize("op", INPLACE, ids=repr)
def test_inplace_on_leaf_is_refused(op):
    g.test_inplace_on_leaf_is_refused(op)


def test_einsum_table_shapes_are_consistent():
    """Each table equation runs on torch with full-size operands (a typo would silently test
    only errors)."""
    import torch

    for eq, specs in EINSUM:
        ops = [torch.ones(tuple(SIZES[c] for c in spec)) for spec in specs]
        assert np.isfinite(torch.einsum(eq, *ops).numpy()).all()


def test_einsum_takes_a_bytes_equation_as_torch_does():
    import torch

    import minigrad

    t, m = torch.tensor([True, False, True, True]), minigrad.tensor([True, False, True, True])
    for eq in [b"i", b"i->"]:
        ref, got = torch.einsum(eq, t), minigrad.einsum(eq, m)
        assert got.tolist() == ref.tolist() and str(got.dtype).split(".")[-1] == str(ref.dtype).split(".")[-1]
    with pytest.raises(RuntimeError, match="more operands were provided than specified in the equation"):
        minigrad.einsum(b"i", m, m)
