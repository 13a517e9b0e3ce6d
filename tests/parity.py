"""Differential-testing helpers: build the same tensor in minigrad and torch (values, dtype,
shape *and* strides), compare results, compare raised errors.

A "recipe" is a list of view steps applied identically to both libraries, so tests exercise
non-contiguous, offset, transposed and broadcast inputs, not just fresh contiguous ones.
"""

import math

import hypothesis.extra.numpy as hnp
import numpy as np
import torch
from hypothesis import strategies as st

import minigrad as mg

DTYPES = {  # name -> (minigrad dtype, torch dtype, numpy dtype)
    "float32": (mg.float32, torch.float32, np.float32),
    "float64": (mg.float64, torch.float64, np.float64),
    "int64": (mg.int64, torch.int64, np.int64),
    "int32": (mg.int32, torch.int32, np.int32),
    "bool": (mg.bool, torch.bool, np.bool_),
}
FLOAT_DTYPES = ["float32", "float64"]
INT_DTYPES = ["int64", "int32"]
ALL_DTYPES = list(DTYPES)


def dtype_name(dt):
    return str(dt).split(".")[-1]


# ----- building pairs -----

def shapes(min_dims=0, max_dims=4, min_side=0, max_side=5):
    return hnp.array_shapes(min_dims=min_dims, max_dims=max_dims, min_side=min_side, max_side=max_side)


def values(dtype_key, shape, *, min_value=None, max_value=None, allow_nan=False):
    """Hypothesis arrays with small, well-behaved values (no overflow surprises in int math)."""
    np_dtype = DTYPES[dtype_key][2]
    if dtype_key == "bool":
        elements = st.booleans()
    elif dtype_key in INT_DTYPES:
        elements = st.integers(-50 if min_value is None else min_value, 50 if max_value is None else max_value)
    else:
        width = 32 if dtype_key == "float32" else 64
        elements = st.floats(
            -10.0 if min_value is None else min_value, 10.0 if max_value is None else max_value,
            allow_infinity=False, width=width,
        )
        if allow_nan:  # hypothesis refuses NaN together with bounds: mix it in explicitly
            elements = elements | st.just(float("nan"))
    return hnp.arrays(np_dtype, shape, elements=elements)


@st.composite
def recipes(draw, ndim):
    """A random sequence of layout changes that keeps the logical shape's rank."""
    steps = [("offset",)] if draw(st.booleans()) else []
    if ndim >= 2 and draw(st.booleans()):
        steps.append(("permute", draw(st.permutations(range(ndim)))))
    if ndim >= 1 and draw(st.booleans()):
        steps.append(("step", draw(st.integers(0, ndim - 1)), draw(st.integers(2, 3))))
    return steps


def _base_shape(shape, recipe):
    """The shape to allocate so that applying `recipe` yields `shape`."""
    shape = list(shape)
    for step in reversed(recipe):
        if step[0] == "step":
            _, d, k = step
            shape[d] = shape[d] * k if shape[d] else 0
        elif step[0] == "permute":
            perm = step[1]
            inv = [0] * len(perm)
            for i, p in enumerate(perm):
                inv[p] = i
            shape = [shape[inv[i]] for i in range(len(perm))]
        elif step[0] == "offset":
            shape = [2] + shape
    return shape


def _apply(t, recipe):
    for step in recipe:
        if step[0] == "offset":
            t = t.select(0, 1)
        elif step[0] == "permute":
            t = t.permute(*step[1])
        elif step[0] == "step":
            _, d, k = step
            t = t.as_strided(
                tuple(s // k if i == d and s else s for i, s in enumerate(t.shape)),
                tuple(st_ * k if i == d else st_ for i, st_ in enumerate(t.stride())),
                t.storage_offset(),
            )
    return t


def make_pair(arr, recipe=()):
    """(minigrad tensor, torch tensor) holding `arr` with the same strides and offset."""
    recipe = list(recipe)
    base_shape = _base_shape(arr.shape, recipe)
    base = np.zeros(base_shape, dtype=arr.dtype)
    t_base = torch.from_numpy(base.copy())
    m_base = mg.from_numpy(base.copy())
    tt, mm = _apply(t_base, recipe), _apply(m_base, recipe)
    tt.copy_(torch.from_numpy(arr.copy()))
    mm.copy_(mg.from_numpy(arr.copy()))
    assert tuple(mm.shape) == tuple(tt.shape) and tuple(mm.stride()) == tuple(tt.stride())
    return mm, tt


@st.composite
def pairs(draw, dtypes=ALL_DTYPES, shape=None, min_dims=0, max_dims=4, max_side=5, layout=True, **value_kw):
    """Draws (minigrad, torch) tensors of one random dtype/shape/layout with equal values."""
    key = draw(st.sampled_from(list(dtypes)))
    shp = draw(shapes(min_dims, max_dims, 0, max_side)) if shape is None else shape
    arr = draw(values(key, shp, **value_kw))
    recipe = draw(recipes(len(shp))) if layout else []
    return make_pair(arr, recipe)


# ----- comparing -----

def to_numpy(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.numpy())


def assert_same(m, t, *, rtol=None, atol=None, check_stride=False, equal_nan=True):
    """minigrad result `m` equals torch result `t`: type, dtype, shape, values (and strides)."""
    if isinstance(t, (tuple, list)):
        assert isinstance(m, (tuple, list)) and len(m) == len(t), (m, t)
        for a, b in zip(m, t):
            assert_same(a, b, rtol=rtol, atol=atol, check_stride=check_stride)
        return
    if not isinstance(t, torch.Tensor):
        assert not isinstance(m, mg.Tensor), (m, t)
        if isinstance(t, float) and math.isnan(t):
            assert math.isnan(m)
        else:
            assert m == t or (rtol is not None and math.isclose(m, t, rel_tol=rtol, abs_tol=atol or 0)), (m, t)
        return
    assert isinstance(m, mg.Tensor), f"expected a minigrad.Tensor, got {type(m)}"
    assert dtype_name(m.dtype) == dtype_name(t.dtype), (m.dtype, t.dtype)
    assert tuple(m.shape) == tuple(t.shape), (m.shape, t.shape)
    if check_stride:
        assert tuple(m.stride()) == tuple(t.stride()), (m.stride(), t.stride())
    a, b = to_numpy(m), to_numpy(t)
    if t.dtype.is_floating_point:
        if rtol is None:
            rtol = 1e-5 if t.dtype == torch.float32 else 1e-12
        if atol is None:
            atol = 1e-6 if t.dtype == torch.float32 else 1e-12
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    else:
        np.testing.assert_array_equal(a, b)


def normalize_message(msg):
    return str(msg).replace("torch.", "minigrad.").replace("torch", "minigrad")


def run_both(fm, ft):
    """Runs both sides; returns ('ok', m, t) or ('err', m_exc, t_exc) after checking they agree."""
    m_exc = t_exc = None
    m = t = None
    try:
        t = ft()
    except Exception as e:  # noqa: BLE001 - torch's exception is the reference
        t_exc = e
    try:
        m = fm()
    except Exception as e:  # noqa: BLE001
        m_exc = e
    if t_exc is not None or m_exc is not None:
        assert t_exc is not None, f"minigrad raised {type(m_exc).__name__}: {m_exc}; torch returned {t!r}"
        assert m_exc is not None, f"torch raised {type(t_exc).__name__}: {t_exc}; minigrad returned {m!r}"
        assert type(m_exc).__name__ == type(t_exc).__name__, (repr(m_exc), repr(t_exc))
        assert normalize_message(m_exc) == normalize_message(t_exc), (str(m_exc), str(t_exc))
        return "err", m_exc, t_exc
    return "ok", m, t


def assert_same_error(fm, ft):
    kind, m, t = run_both(fm, ft)
    assert kind == "err", f"expected both to raise; minigrad={m!r} torch={t!r}"


def check_parity(fm, ft, **kw):
    """Same result or the same error."""
    kind, m, t = run_both(fm, ft)
    if kind == "ok":
        assert_same(m, t, **kw)
    return kind, m, t
