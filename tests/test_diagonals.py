"""trace / diag / diag_embed / diagflat against torch for every dtype and layout (values, dtype,
shape, strides), their refusals (wrong ranks, identical or out-of-range dims, bool trace) and
argument parsing. Gradients, gradcheck and graphs: tests/test_grad_ops.py; saved arguments:
tests/test_saved_values.py."""

import hypothesis.extra.numpy as hnp
import pytest
import torch
from hypothesis import given, strategies as st

import minigrad as mg
from parity import ALL_DTYPES, assert_same_error, check_parity, pairs


@given(data=st.data())
def test_trace(data):
    m, t = data.draw(pairs(ALL_DTYPES, shape=data.draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4))))
    check_parity(lambda: m.trace(), lambda: t.trace(), check_stride=True)
    check_parity(lambda: mg.trace(m), lambda: torch.trace(t), check_stride=True)


@given(data=st.data())
def test_diag(data):
    m, t = data.draw(pairs(ALL_DTYPES, shape=data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))))
    d = data.draw(st.integers(-5, 5))
    check_parity(lambda: m.diag(d), lambda: t.diag(d), check_stride=True)
    check_parity(lambda: mg.diagflat(m, d), lambda: torch.diagflat(t, d), check_stride=True)
    check_parity(lambda: m.diagflat(), lambda: t.diagflat(), check_stride=True)


@given(data=st.data())
def test_diag_embed(data):
    m, t = data.draw(pairs(ALL_DTYPES, shape=data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))))
    o = data.draw(st.integers(-3, 3))
    d1, d2 = data.draw(st.integers(-4, 3)), data.draw(st.integers(-4, 3))
    check_parity(lambda: m.diag_embed(o, d1, d2), lambda: t.diag_embed(o, d1, d2), check_stride=True)
    check_parity(lambda: mg.diag_embed(m, offset=o), lambda: torch.diag_embed(t, offset=o), check_stride=True)


def test_errors_match_torch():
    m, t = mg.ones(2, 3), torch.ones(2, 3)
    cases = [
        lambda L, x: L.trace(x[0]), lambda L, x: L.trace(x[None]), lambda L, x: L.trace(x > 0),
        lambda L, x: L.diag(x[None]), lambda L, x: L.diag(x[0, 0]), lambda L, x: L.diag_embed(x, 0, 1, 1),
        lambda L, x: L.diag_embed(x, 0, 3, 0), lambda L, x: L.diag_embed(x[0, 0]), lambda L, x: x.diag(1.5),
        lambda L, x: x.diag_embed(0, None), lambda L, x: L.diagflat(x, "1"), lambda L, x: L.trace(2),
        lambda L, x: x.diag(2**63),
    ]
    for case in cases:
        assert_same_error(lambda: case(mg, m), lambda: case(torch, t))
    with pytest.raises(RuntimeError, match=r"^diagonal dimensions cannot be identical 1, -2$"):
        mg.diag_embed(m, 0, 1, -2)
    with pytest.raises(RuntimeError, match=r"^trace: expected a matrix, but got tensor with dim 1$"):
        m[0].trace()
