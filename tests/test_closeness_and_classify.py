"""isclose / allclose / equal and the float classifications (isnan, isinf, isposinf, isneginf,
isfinite, signbit) against torch: every dtype and layout, values full of NaN, infinities, -0.0
and near-equal pairs, broadcasting, result dtypes and strides, the tolerance and dtype errors, and
argument parsing (types checked before values)."""

import math

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

import minigrad as mg
from parity import ALL_DTYPES, DTYPES, assert_same, assert_same_error, check_parity, make_pair, recipes

SPECIALS = [math.nan, -math.nan, math.inf, -math.inf, -0.0, 0.0, 1.0, 1.0 + 1e-6, 1.0 - 1e-9, -2.5, 1e30, 3.0]


@st.composite
def special_pairs(draw, shape, dtypes=ALL_DTYPES):
    key = draw(st.sampled_from(list(dtypes)))
    elements = st.sampled_from(SPECIALS) | st.floats(-10, 10, allow_nan=False)
    arr = draw(hnp.arrays(np.float64, shape, elements=elements))
    np_dtype = DTYPES[key][2]
    if np_dtype.kind in "iub":
        arr = np.nan_to_num(arr, nan=0.0, posinf=7.0, neginf=-7.0).clip(-100, 100)
    if key == "bfloat16":
        arr = np.where(np.isnan(arr), math.nan, arr)  # torch drops a NaN's sign there (divergences.md)
    with np.errstate(over="ignore", invalid="ignore"):
        arr = np.asarray(arr).astype(np_dtype)
    return make_pair(arr, draw(recipes(len(shape))))


CLASSIFY = ["isnan", "isinf", "isposinf", "isneginf", "isfinite", "signbit"]


@pytest.mark.parametrize("name", CLASSIFY)
@given(data=st.data())
def test_classification_matches_torch(name, data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4))
    m, t = data.draw(special_pairs(shape))
    # signbit: the strides of size-1 dims may differ (divergences.md); every other stride is torch's
    strides = not (name == "signbit" and 1 in shape)
    check_parity(lambda: getattr(m, name)(), lambda: getattr(t, name)(), check_stride=strides)
    check_parity(lambda: getattr(mg, name)(m), lambda: getattr(torch, name)(t), check_stride=strides)


@pytest.mark.parametrize("name", CLASSIFY)
def test_classification_of_expanded_and_grad_inputs(name):
    m, t = mg.tensor([math.nan, -0.0, math.inf]), torch.tensor([math.nan, -0.0, math.inf])
    assert_same(getattr(m[:1].expand(4), name)(), getattr(t[:1].expand(4), name)(), check_stride=True)
    mr, tr = m.clone().requires_grad_(), t.clone().requires_grad_()
    got, want = getattr(mr, name)(), getattr(tr, name)()
    assert got.requires_grad is want.requires_grad is False and got.grad_fn is None
    assert_same_error(lambda: getattr(mg, name)(1.0), lambda: getattr(torch, name)(1.0))


def test_signbit_sees_the_sign_of_zero_and_nan():
    vals = [-0.0, 0.0, -math.nan, math.nan, -1.0, math.inf, -math.inf]
    for dtype in ("float32", "float64", "float16"):
        got = mg.tensor(vals, dtype=getattr(mg, dtype)).signbit()
        want = torch.tensor(vals, dtype=getattr(torch, dtype)).signbit()
        assert got.tolist() == want.tolist() == [True, False, True, False, True, False, True]
    # torch rounds every NaN to bfloat16's one positive NaN; minigrad keeps the sign (divergences.md)
    vals = [-0.0, 0.0, math.nan, -1.0, math.inf, -math.inf]
    got, want = mg.tensor(vals, dtype=mg.bfloat16).signbit(), torch.tensor(vals, dtype=torch.bfloat16).signbit()
    assert got.tolist() == want.tolist() == [True, False, False, True, False, True]


@given(data=st.data())
def test_isclose_matches_torch(data):
    shapes = data.draw(hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4))
    key = data.draw(st.sampled_from(ALL_DTYPES))
    (ma, ta) = data.draw(special_pairs(shapes.input_shapes[0], [key]))
    (mb, tb) = data.draw(special_pairs(shapes.input_shapes[1], [key]))
    rtol = data.draw(st.sampled_from([1e-5, 0.0, 0.1, 1.0, 1e-9, 2]))
    atol = data.draw(st.sampled_from([1e-8, 0.0, 0.5, 1e-3, 3]))
    equal_nan = data.draw(st.booleans())
    check_parity(lambda: ma.isclose(mb, rtol, atol, equal_nan), lambda: ta.isclose(tb, rtol, atol, equal_nan),
                 check_stride=True)
    check_parity(lambda: mg.isclose(ma, mb, rtol=rtol, atol=atol, equal_nan=equal_nan),
                 lambda: torch.isclose(ta, tb, rtol=rtol, atol=atol, equal_nan=equal_nan), check_stride=True)
    got = mg.allclose(ma, mb, rtol, atol, equal_nan)
    want = torch.allclose(ta, tb, rtol, atol, equal_nan)
    assert got is want
    assert ma.allclose(mb, rtol=rtol, atol=atol, equal_nan=equal_nan) is want


@given(data=st.data())
def test_equal_matches_torch(data):
    shape = data.draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    ma, ta = data.draw(special_pairs(shape))
    other_shape = data.draw(st.sampled_from([shape, shape[1:], (1,) + shape]))
    mb, tb = data.draw(special_pairs(other_shape))
    if data.draw(st.booleans()) and other_shape == shape:
        mb, tb = ma.clone(), ta.clone()  # equal unless NaN is present
    got, want = mg.equal(ma, mb), torch.equal(ta, tb)
    assert type(got) is bool and got is want
    assert ma.equal(mb) is want


def test_closeness_errors_match_torch():
    f, i = (mg.ones(3), torch.ones(3)), (mg.ones(3, dtype=mg.int64), torch.ones(3, dtype=torch.int64))
    for name in ("isclose", "allclose"):
        fm, ft = getattr(mg, name), getattr(torch, name)
        assert_same_error(lambda: fm(f[0], i[0]), lambda: ft(f[1], i[1]))  # "Float did not match Long"
        assert_same_error(lambda: fm(f[0], f[0], -1), lambda: ft(f[1], f[1], -1))
        assert_same_error(lambda: fm(f[0], f[0], atol=-1e-20), lambda: ft(f[1], f[1], atol=-1e-20))
        assert_same_error(lambda: fm(f[0], f[0], math.nan), lambda: ft(f[1], f[1], math.nan))
        assert_same_error(lambda: fm(f[0], mg.ones(2)), lambda: ft(f[1], torch.ones(2)))  # broadcast
        assert_same_error(lambda: fm(f[0], 1.0), lambda: ft(f[1], 1.0))
        assert_same_error(lambda: fm(f[0], f[0], "a"), lambda: ft(f[1], f[1], "a"))
        # (positional: a keyword argument's type error has no "(position N)" in torch; divergences.md)
        assert_same_error(lambda: fm(f[0], f[0], 1e-5, 1e-8, 1), lambda: ft(f[1], f[1], 1e-5, 1e-8, 1))
        # types first: a wrong equal_nan type wins over a negative rtol
        assert_same_error(lambda: fm(f[0], f[0], -1, 0, None), lambda: ft(f[1], f[1], -1, 0, None))
    with pytest.raises(RuntimeError, match=r"^rtol must be greater than or equal to zero, but got -1$"):
        mg.isclose(f[0], f[0], -1)
    with pytest.raises(RuntimeError, match=r"^Float did not match Long$"):
        mg.isclose(f[0], i[0])
    assert_same_error(lambda: mg.equal(f[0], 2), lambda: torch.equal(f[1], 2))


def test_tolerances_take_numbers_bools_and_zero_dim_tensors_as_torch():
    a, b = [1.0, 2.0], [1.05, 2.0]
    for rtol in (True, 0, 0.1, np.float32(0.1), 3):
        got = mg.isclose(mg.tensor(a), mg.tensor(b), rtol=rtol if not isinstance(rtol, np.floating) else float(rtol))
        want = torch.isclose(torch.tensor(a), torch.tensor(b), rtol=rtol if not isinstance(rtol, np.floating) else float(rtol))
        assert got.tolist() == want.tolist()
    got = mg.isclose(mg.tensor(a), mg.tensor(b), rtol=mg.tensor(0.1))
    want = torch.isclose(torch.tensor(a), torch.tensor(b), rtol=torch.tensor(0.1))
    assert got.tolist() == want.tolist() == [True, True]


def test_results_record_no_graph():
    m = mg.tensor([1.0, 2.0], requires_grad=True)
    r = mg.isclose(m, m * 1.0)
    assert r.dtype == mg.bool and not r.requires_grad and r.grad_fn is None
