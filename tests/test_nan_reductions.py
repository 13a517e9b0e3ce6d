"""nansum / nanmean against torch: values over inputs full of NaN (and infinities), every dtype,
dims in every form, keepdim and dtype=, the graphs (NansumBackward0; nanmean's DivBackward0 over
it), gradients (0 where the input was NaN), and torch's refusals."""

import math

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

import minigrad as mg
from parity import ALL_DTYPES, DTYPES, assert_same, assert_same_error, check_parity, make_pair, recipes

VALUES = [math.nan, 1.5, -2.0, 0.0, math.inf, 3.25]


@st.composite
def cases(draw, dtypes=ALL_DTYPES):
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=3))
    key = draw(st.sampled_from(list(dtypes)))
    arr = draw(hnp.arrays(np.float64, shape, elements=st.sampled_from(VALUES)))
    np_dtype = DTYPES[key][2]
    if np_dtype.kind in "iub":
        arr = np.nan_to_num(arr, nan=1.0, posinf=4.0)
    m, t = make_pair(np.asarray(arr).astype(np_dtype), draw(recipes(len(shape))))
    n = max(len(shape), 1)
    dim = draw(st.sampled_from([None, 0, -1, (0,), tuple(range(n)), ()]))
    return m, t, dim, draw(st.booleans())


@pytest.mark.parametrize("name", ["nansum", "nanmean"])
@given(case=cases())
def test_values_match_torch(name, case):
    m, t, dim, keepdim = case
    check_parity(lambda: getattr(m, name)(dim, keepdim), lambda: getattr(t, name)(dim, keepdim))
    check_parity(lambda: getattr(mg, name)(m, dim=dim), lambda: getattr(torch, name)(t, dim=dim))
    check_parity(lambda: getattr(m, name)(dtype=mg.float64), lambda: getattr(t, name)(dtype=torch.float64))


@pytest.mark.parametrize("name", ["nansum", "nanmean"])
@given(case=cases(["float32", "float64"]))
def test_graph_and_gradients_match_torch(name, case):
    m, t, dim, keepdim = case
    m, t = m.detach().requires_grad_(), t.detach().requires_grad_()
    rm, rt = getattr(m, name)(dim, keepdim), getattr(t, name)(dim, keepdim)
    assert type(rm.grad_fn).__name__ == type(rt.grad_fn).__name__
    if name == "nanmean":
        assert type(rm.grad_fn.next_functions[0][0]).__name__ == "NansumBackward0"
    g = np.linspace(-1, 1, rt.numel()).reshape(tuple(rt.shape)).astype(str(rt.dtype).split(".")[-1])
    rm.backward(mg.tensor(g))
    rt.backward(torch.tensor(g))
    assert_same(m.grad, t.grad)


def test_saved_arguments_and_errors():
    x = torch.tensor([[1.0, math.nan], [2.0, 3.0]], requires_grad=True)
    y = mg.tensor([[1.0, math.nan], [2.0, 3.0]], requires_grad=True)
    for node_t, node_m in ((x.nansum(1).grad_fn, y.nansum(1).grad_fn), (x.nansum().grad_fn, y.nansum().grad_fn)):
        assert node_m._saved_dim == node_t._saved_dim and node_m._saved_keepdim == node_t._saved_keepdim
        assert torch.equal(torch.from_numpy(node_m._saved_self.detach().numpy()).nan_to_num(7.0),
                           node_t._saved_self.detach().nan_to_num(7.0))
    ti, mi = torch.tensor([1, 2]), mg.tensor([1, 2])
    assert_same_error(lambda: mg.nanmean(mi), lambda: torch.nanmean(ti))
    assert_same_error(lambda: y.nanmean(dtype=mg.int64), lambda: x.nanmean(dtype=torch.int64))
    assert_same_error(lambda: y.nansum("a"), lambda: x.nansum("a"))
    assert_same_error(lambda: y.nansum(0, 1), lambda: x.nansum(0, 1))
    assert_same_error(lambda: y.nansum(5), lambda: x.nansum(5))
    assert_same_error(lambda: mg.nansum(2.0), lambda: torch.nansum(2.0))
    with pytest.raises(RuntimeError, match=r"^nanmean\(\): expected input to have floating point or complex dtype but got Long$"):
        mi.nanmean()
