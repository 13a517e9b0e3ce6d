"""Matrix products against torch: matmul/@ in every rank combination (with broadcast batch
dims), mm, bmm, mv, dot; strided operands, empty dims, every dtype, and torch's errors."""

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
from parity import DTYPES, assert_same, assert_same_error, check_parity, make_pair, recipes, values

NUMERIC = ["float32", "float64", "int64", "int32"]


def tolerance(dtype_key, k):
    """float32 sums of k products of values up to 10 in magnitude: error grows with k."""
    if dtype_key == "float32":
        return {"rtol": 1e-4, "atol": 1e-4 * 100 * max(k, 1)}
    if dtype_key == "float64":
        return {"rtol": 1e-10, "atol": 1e-10 * 100 * max(k, 1)}
    return {}


@st.composite
def operand(draw, key, shape):
    """A (minigrad, torch) pair of `shape` with a random layout (transposed, strided, offset)."""
    arr = draw(values(key, tuple(shape)))
    return make_pair(arr, draw(recipes(len(shape))))


@st.composite
def matmul_shapes(draw, compatible=True):
    """Shapes for matmul of ranks 1..4 with broadcastable batch dims; when not `compatible`,
    sometimes a mismatched inner size or batch size."""
    d1, d2 = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    side = st.integers(0, 4)
    n, k, p = draw(side), draw(side), draw(side)
    batch = [draw(st.integers(0, 3)) for _ in range(max(d1, d2) - 2)]

    def batch_for(rank):  # the last `rank` batch dims, some of them 1 (broadcast)
        return [1 if draw(st.booleans()) else b for b in batch[len(batch) - rank:]] if rank else []

    s1 = batch_for(max(d1 - 2, 0)) + ([n, k] if d1 > 1 else [k])
    s2 = batch_for(max(d2 - 2, 0)) + ([k, p] if d2 > 1 else [k])
    if not compatible and draw(st.booleans()):
        if d2 > 2 and draw(st.booleans()):
            s2[0] += 2  # a batch size that cannot broadcast (unless the other side has 1)
        else:
            s2[-2 if d2 > 1 else -1] += 1  # inner size mismatch
    return s1, s2, k


@given(st.data())
def test_matmul_matches_torch(data):
    key = data.draw(st.sampled_from(NUMERIC))
    s1, s2, k = data.draw(matmul_shapes())
    (m1, t1), (m2, t2) = data.draw(operand(key, s1)), data.draw(operand(key, s2))
    check_parity(lambda: m1 @ m2, lambda: t1 @ t2, check_stride=True, **tolerance(key, k))
    check_parity(lambda: mg.matmul(m1, m2), lambda: torch.matmul(t1, t2), **tolerance(key, k))


@given(st.data())
def test_matmul_errors_and_bool_match_torch(data):
    """Mismatched shapes, bool operands (torch has no CPU bool kernels but allows empty work)."""
    key = data.draw(st.sampled_from(NUMERIC + ["bool"]))
    s1, s2, k = data.draw(matmul_shapes(compatible=False))
    (m1, t1), (m2, t2) = data.draw(operand(key, s1)), data.draw(operand(key, s2))
    check_parity(lambda: m1 @ m2, lambda: t1 @ t2, check_stride=True, **tolerance(key, k))


@given(st.data())
def test_matmul_dtype_mismatch_matches_torch(data):
    """Which message a dtype mismatch gets depends on the path torch takes (mm, mv, bmm, dot)."""
    k1, k2 = data.draw(st.sampled_from(NUMERIC + ["bool"])), data.draw(st.sampled_from(NUMERIC + ["bool"]))
    s1, s2, k = data.draw(matmul_shapes(compatible=data.draw(st.booleans())))
    (m1, t1), (m2, t2) = data.draw(operand(k1, s1)), data.draw(operand(k2, s2))
    check_parity(lambda: m1 @ m2, lambda: t1 @ t2, **tolerance(k1, k))


@pytest.mark.parametrize("op", ["mm", "bmm", "mv", "dot"])
@given(data=st.data())
def test_named_products_match_torch(op, data):
    key = data.draw(st.sampled_from(NUMERIC + ["bool"]))
    side = st.integers(0, 5)
    b, m, k, n = (data.draw(side) for _ in range(4))
    k2 = k if data.draw(st.integers(0, 4)) else data.draw(side)  # mostly compatible
    shapes = {"mm": ([m, k], [k2, n]), "bmm": ([b, m, k], [b, k2, n]), "mv": ([m, k], [k2]), "dot": ([k], [k2])}[op]
    if data.draw(st.integers(0, 9)) == 0:  # a wrong rank now and then
        shapes = (shapes[0][1:] or [m, k], shapes[1])
    (m1, t1), (m2, t2) = data.draw(operand(key, shapes[0])), data.draw(operand(key, shapes[1]))
    check_parity(lambda: getattr(m1, op)(m2), lambda: getattr(t1, op)(t2), check_stride=True, **tolerance(key, k))
    check_parity(lambda: getattr(mg, op)(m1, m2), lambda: getattr(torch, op)(t1, t2), **tolerance(key, k))


ERROR_CASES = [
    # (lhs shape, lhs dtype, rhs shape, rhs dtype, op)
    ((2, 3), "float32", (4, 5), "float32", "mm"),
    ((2, 3), "float32", (3, 5), "float64", "mm"),
    ((2, 3), "int64", (3, 5), "int32", "mm"),
    ((2, 3), "bool", (3, 5), "float32", "mm"),
    ((3,), "float32", (3, 3), "float32", "mm"),
    ((3, 3), "float32", (3,), "float32", "mm"),
    ((2, 2), "bool", (2, 2), "bool", "mm"),
    ((2, 0), "bool", (0, 2), "bool", "mm"),
    ((2, 3, 4), "float32", (2, 5, 6), "float32", "bmm"),
    ((2, 3, 4), "float32", (3, 4, 6), "float32", "bmm"),
    ((2, 3, 4), "float32", (4, 6), "float32", "bmm"),
    ((2, 2, 3), "float32", (2, 3, 4), "float64", "bmm"),
    ((2, 2, 3), "bool", (2, 3, 4), "float64", "bmm"),
    ((0, 2, 3), "float32", (0, 3, 2), "float64", "bmm"),
    ((2, 2, 0), "int64", (2, 0, 2), "float64", "bmm"),
    ((2, 2, 2), "bool", (2, 2, 2), "bool", "bmm"),
    ((2, 3), "float32", (3,), "float64", "mv"),
    ((2, 3), "float64", (3,), "float32", "mv"),
    ((3, 4), "float32", (3,), "float32", "mv"),
    ((3, 4), "float32", (3, 4), "float32", "mv"),
    ((2, 3), "bool", (3,), "bool", "mv"),
    ((2, 0), "bool", (0,), "bool", "mv"),
    ((3,), "float32", (3,), "float64", "dot"),
    ((3,), "float32", (4,), "float32", "dot"),
    ((2, 3), "float32", (3,), "float32", "dot"),
    ((0,), "bool", (0,), "bool", "dot"),
    ((), "float32", (3,), "float32", "matmul"),
    ((3,), "float32", (), "float32", "matmul"),
    ((2, 3, 4), "float32", (5,), "float32", "matmul"),
    ((2, 3, 4), "float32", (4,), "float64", "matmul"),
    ((3,), "float32", (2, 3, 4), "float64", "matmul"),
    ((2, 1), "float32", (2, 1, 4), "float32", "matmul"),
    ((5, 3, 3, 4), "float32", (2, 4, 6), "float32", "matmul"),
    ((3, 3, 4), "float32", (2, 4, 6), "float64", "matmul"),
    ((2, 3, 4), "bool", (4, 6), "bool", "matmul"),
    ((2, 3, 4), "bool", (4,), "bool", "matmul"),
    ((3,), "bool", (2, 3, 4), "bool", "matmul"),
    ((2, 2, 0), "bool", (0,), "bool", "matmul"),
    ((3, 5, 0), "float32", (0, 0), "float32", "matmul"),
]


@pytest.mark.parametrize("s1,k1,s2,k2,op", ERROR_CASES)
def test_product_edge_cases_match_torch(s1, k1, s2, k2, op):
    (m1, t1), (m2, t2) = make_pair(np.ones(s1, DTYPES[k1][2])), make_pair(np.ones(s2, DTYPES[k2][2]))
    check_parity(lambda: getattr(m1, op)(m2), lambda: getattr(t1, op)(t2), check_stride=True)


def test_fold_versus_bmm_path_follows_strides():
    """A 3-D @ 1-D whose batch dims cannot be flattened takes torch's bmm path (and message)."""
    for make in (lambda x: x, lambda x: x.transpose(0, 1)):
        a = np.ones((3, 2, 4), np.float32)
        (m1, t1), (m2, t2) = make_pair(a), make_pair(np.ones(5, np.float32))
        assert_same_error(lambda: make(m1) @ m2, lambda: make(t1) @ t2)


def test_argument_type_errors_match_torch():
    m, t = mg.ones(3, 3), torch.ones(3, 3)
    for fm, ft in [
        (lambda: m @ 2, lambda: t @ 2),
        (lambda: 2 @ m, lambda: 2 @ t),
        (lambda: m @ [1.0, 2.0, 3.0], lambda: t @ [1.0, 2.0, 3.0]),
        (lambda: m.mm(2), lambda: t.mm(2)),
        (lambda: mg.mm(m, 2), lambda: torch.mm(t, 2)),
        (lambda: m.dot(1), lambda: t.dot(1)),
        (lambda: mg.matmul(m, 2), lambda: torch.matmul(t, 2)),
    ]:
        assert_same_error(fm, ft)


def test_keyword_arguments_match_torch():
    a, b = make_pair(np.arange(6, dtype=np.float32).reshape(2, 3)), make_pair(np.arange(6, dtype=np.float32).reshape(3, 2))
    assert_same(mg.matmul(input=a[0], other=b[0]), torch.matmul(input=a[1], other=b[1]))
    assert_same(a[0].mm(mat2=b[0]), a[1].mm(mat2=b[1]))
    assert_same(mg.mm(input=a[0], mat2=b[0]), torch.mm(input=a[1], mat2=b[1]))
    v = make_pair(np.arange(3, dtype=np.float32))
    assert_same(a[0].mv(vec=v[0]), a[1].mv(vec=v[1]))
    assert_same(v[0].dot(tensor=v[0]), v[1].dot(tensor=v[1]))


def test_inplace_matmul_operator_rebinds_like_torch():
    """Tensor has no __imatmul__ in torch: `x @= y` builds a new tensor and leaves x's version."""
    m = mg.ones(2, 2)
    before = m
    m @= mg.ones(2, 2)
    assert m is not before and before._version == 0
    assert not hasattr(mg.Tensor, "__imatmul__") and not hasattr(torch.Tensor, "__imatmul__")


@pytest.mark.parametrize("key", ["float32", "float64", "int64", "int32"])
def test_large_strided_products_match_torch(key):
    """Sizes that take the parallel paths (gemm's threads, row-parallel integer loop)."""
    rng = np.random.default_rng(0)
    np_dtype = DTYPES[key][2]
    a = (rng.standard_normal((150, 130)) * 4).astype(np_dtype)
    b = (rng.standard_normal((150, 170)) * 4).astype(np_dtype)
    (ma, ta), (mb, tb) = make_pair(a, [("offset",)]), make_pair(b, [("permute", (1, 0))])
    # ma: [150,130] at an offset; mb: [150,170] column-major
    m_out, t_out = ma.t() @ mb, ta.t() @ tb
    assert_same(m_out, t_out, check_stride=True, **tolerance(key, 150))
    assert np.array_equal((ma.t() @ mb).numpy(), m_out.numpy())  # deterministic


def test_many_small_batched_products_match_torch():
    """A batch of small products takes the batch-parallel path; a broadcast operand is read
    in place through stride 0."""
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 1, 12, 16)).astype(np.float32)
    b = rng.standard_normal((5, 16, 9)).astype(np.float32)
    (ma, ta), (mb, tb) = make_pair(a), make_pair(b)
    out = ma @ mb
    assert_same(out, ta @ tb, check_stride=True, **tolerance("float32", 16))
    assert np.array_equal((ma @ mb).numpy(), out.numpy())


def test_expanded_operands():
    v = make_pair(np.arange(4, dtype=np.float64))
    me, te = v[0].expand(3, 4), v[1].expand(3, 4)
    assert_same(me @ me.t(), te @ te.t(), check_stride=True)
    assert_same(me.mv(v[0]), te.mv(v[1]))
