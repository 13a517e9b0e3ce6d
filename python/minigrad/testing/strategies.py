"""Hypothesis strategies for differential tests: dtypes, shapes (0-d and empty included), values,
layouts (contiguous, transposed, strided slice, offset, expanded) and whole tensors.

Everything drawn is library-neutral: dtypes are names ("float32"), tensors are `TensorSpec`s
(a NumPy base array plus view steps) that build the same tensor, strides and storage offset
included, in minigrad and in torch:

    from hypothesis import given
    from minigrad.testing import compare_with_torch, strategies as mst

    @given(mst.tensors(dtypes=["float32", "float64"]))
    def test_exp(x):
        compare_with_torch(lambda lib, x: x.exp(), x)
"""

try:
    import hypothesis.extra.numpy as hnp
    from hypothesis import strategies as st
except ImportError as e:  # tests/test_testing_imports.py runs this without hypothesis
    raise ImportError("minigrad.testing.strategies needs hypothesis: pip install hypothesis") from e

from ._dtypes import DTYPE_NAMES, INT_DTYPE_NAMES, numpy_dtype
from ._layout import TensorSpec, layout_base_shape

__all__ = ["dtypes", "shapes", "arrays", "layouts", "tensors"]


def dtypes(names=DTYPE_NAMES):
    """A dtype name, valid in both libraries: `getattr(lib, name)`."""
    return st.sampled_from(list(names))


def shapes(min_dims=0, max_dims=4, min_side=0, max_side=5):
    """Shapes from 0-d up to `max_dims` dims; sides from `min_side` (0: empty tensors)."""
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def arrays(dtype, shape, *, min_value=None, max_value=None, allow_nan=False):
    """NumPy arrays of dtype name `dtype` with small, well-behaved values: integers in [-50, 50],
    finite floats in [-10, 10] (bounds adjustable), NaN mixed in with `allow_nan`."""
    if dtype == "bool":
        elements = st.booleans()
    elif dtype in INT_DTYPE_NAMES:
        elements = st.integers(-50 if min_value is None else min_value, 50 if max_value is None else max_value)
    else:
        elements = st.floats(
            -10.0 if min_value is None else min_value, 10.0 if max_value is None else max_value,
            allow_infinity=False, width=32 if dtype == "float32" else 64,
        )
        if allow_nan:  # hypothesis refuses NaN together with bounds: mix it in explicitly
            elements = elements | st.just(float("nan"))
    return hnp.arrays(numpy_dtype(dtype), shape, elements=elements)


@st.composite
def layouts(draw, shape, *, offset=True, transpose=True, strided_slice=True, expand=True):
    """View steps that turn a base (of shape `layout_base_shape(shape, steps)`) into a tensor of
    `shape`: each kind enabled here is drawn or not, in the order offset, permute, slice with a
    step, expand; no step at all is the contiguous layout."""
    ndim = len(shape)
    steps = []
    if offset and draw(st.booleans()):
        steps.append(("offset",))
    if transpose and ndim >= 2 and draw(st.booleans()):
        perm = tuple(draw(st.permutations(range(ndim))))
        if perm != tuple(range(ndim)):  # the identity would be no step at all
            steps.append(("permute", perm))
    if strided_slice and ndim >= 1 and draw(st.booleans()):
        steps.append(("step", draw(st.integers(0, ndim - 1)), draw(st.integers(2, 3))))
    if expand and ndim >= 1 and draw(st.booleans()):
        d = draw(st.integers(0, ndim - 1))
        steps.append(("expand", d, shape[d]))
    return steps


@st.composite
def tensors(draw, dtypes=DTYPE_NAMES, shape=None, *, min_dims=0, max_dims=4, max_side=5, layout=True, **value_kw):
    """A TensorSpec: one drawn dtype (among `dtypes`), shape (or the given one), layout (with
    `layout`; or contiguous) and values (`arrays`' keywords). Pass it to compare_with_torch, or
    `spec.build(lib)` it yourself."""
    name = draw(st.sampled_from(list(dtypes)))
    shp = tuple(draw(shapes(min_dims, max_dims, 0, max_side)) if shape is None else shape)
    steps = draw(layouts(shp)) if layout else []
    base = draw(arrays(name, layout_base_shape(shp, steps), **value_kw))
    return TensorSpec(base, tuple(steps))
