"""minigrad.testing.strategies: every drawn tensor is the same tensor in both libraries (values,
dtype, shape, strides, storage offset), layouts included, and works as a compare_with_torch input."""

import numpy as np
import pytest
import torch
from hypothesis import find, given
from hypothesis import strategies as st

import minigrad as mg
from minigrad.testing import apply_layout, compare_with_torch, layout_base_shape, strategies as mst


def layout_of(t):
    return tuple(t.shape), tuple(t.stride()), t.storage_offset()


@given(mst.tensors())
def test_spec_builds_the_same_tensor_in_both_libraries(spec):
    m, t = spec.build(mg), spec.build(torch)
    assert layout_of(m) == layout_of(t)
    assert str(m.dtype).split(".")[-1] == str(t.dtype).split(".")[-1] == spec.dtype
    np.testing.assert_array_equal(m.numpy(), spec.numpy())
    np.testing.assert_array_equal(t.numpy(), spec.numpy())
    assert m._version == t._version == 0


@given(mst.shapes(), st.data())
def test_layouts_reach_the_shape_they_were_drawn_for(shape, data):
    steps = data.draw(mst.layouts(shape))
    base = torch.zeros(layout_base_shape(shape, steps))
    assert tuple(apply_layout(base, steps).shape) == tuple(shape)


@pytest.mark.parametrize("kind, mark", [
    ("offset", lambda t: t.storage_offset() > 0),
    ("permute", lambda t: t.stride() == (1, 3)),                 # base (2, 3) transposed
    ("step", lambda t: t.stride() in ((4, 1), (6, 1), (4, 2), (6, 3))),  # rows or columns ::2 or ::3
    ("expand", lambda t: 0 in t.stride()),
])
def test_each_layout_kind_is_drawn_and_builds_its_view(kind, mark):
    # the smallest drawn example using `kind` alone, built in torch, has that kind's strides
    spec = find(mst.tensors(dtypes=["float32"], shape=(3, 2)), lambda s: [x[0] for x in s.layout] == [kind])
    t, m = spec.build(torch), spec.build(mg)
    assert mark(t), (spec.layout, t.stride(), t.storage_offset())
    assert layout_of(m) == layout_of(t)


@given(mst.tensors(dtypes=["float32", "float64"]))
def test_spec_as_compare_with_torch_input(spec):
    report = compare_with_torch(lambda lib, x: (x * 2).sum(), spec)
    assert report.ok and report.torch.inputs[0].stride() == report.minigrad.inputs[0].stride()


@given(mst.tensors())
def test_in_place_on_drawn_layouts_agrees_with_torch(spec):
    # expanded inputs refuse in-place writes, bools refuse an integer multiply: as torch does
    compare_with_torch(lambda lib, x: x.mul_(2), spec, grad=False)


@given(st.sampled_from(["int32", "int64", "float32", "float64", "bool"]), mst.shapes(max_dims=2), st.data())
def test_arrays_respect_dtype_and_bounds(dtype, shape, data):
    a = data.draw(mst.arrays(dtype, shape, min_value=0, max_value=3) if dtype != "bool" else mst.arrays(dtype, shape))
    assert a.shape == tuple(shape) and (a.dtype == np.bool_ if dtype == "bool" else a.dtype.name == dtype)
    if dtype != "bool":
        assert ((a >= 0) & (a <= 3)).all()
