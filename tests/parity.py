"""Differential-testing helpers for minigrad's own tests: a thin layer over `minigrad.testing`.

Tests here receive (minigrad tensor, torch tensor) pairs with equal values, dtype, shape *and*
strides, built by a "recipe" (a `minigrad.testing` layout: offset, permute, strided-slice steps),
and compare results and raised errors with `minigrad.testing`'s comparisons. What this file adds
is the test suite's conventions: pairs ordered (minigrad, torch), values written with `copy_`
into the laid-out tensors, and tighter tolerances than torch.testing's.
"""

import numpy as np
import torch
from hypothesis import strategies as st

import minigrad as mg
from minigrad import testing as mt
from minigrad.testing import strategies as mst
from minigrad.testing._compare import guarded, to_numpy  # noqa: F401  (to_numpy is re-exported)

DTYPES = {  # name -> (minigrad dtype, torch dtype, numpy dtype)
    name: (getattr(mg, name), getattr(torch, name), np.dtype(np.bool_ if name == "bool" else name))
    for name in mt.DTYPE_NAMES
}
FLOAT_DTYPES = list(mt.FLOAT_DTYPE_NAMES)
INT_DTYPES = list(mt.INT_DTYPE_NAMES)
ALL_DTYPES = list(mt.DTYPE_NAMES)

# the suite's tolerances: tighter than torch.testing's defaults (minigrad's kernels are meant to
# agree with torch's to the last few bits, not just within what a user would accept)
TOLERANCES = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-12)}

dtype_name = mt.dtype_name
normalize_message = mt.normalize_message


# ----- building pairs -----

shapes = mst.shapes
values = mst.arrays


def recipes(ndim):
    """A random layout that keeps the rank: offset, permutation, strided slice (no expand, so
    values can be written into it)."""
    return mst.layouts((1,) * ndim, expand=False)


def make_pair(arr, recipe=()):
    """(minigrad tensor, torch tensor) holding `arr` with the same strides and offset: a zero base
    laid out by `recipe`, then `copy_(arr)` in both (so both are at `_version` 1)."""
    base = np.zeros(mt.layout_base_shape(arr.shape, recipe), dtype=arr.dtype)
    tt = mt.apply_layout(torch.from_numpy(base.copy()), recipe)
    mm = mt.apply_layout(mg.from_numpy(base.copy()), recipe)
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

def assert_same(m, t, *, rtol=None, atol=None, check_stride=False, equal_nan=True):
    """minigrad result `m` equals torch result `t`: type, dtype, shape, values (and strides)."""
    mt.assert_same(m, t, rtol=rtol, atol=atol, check_stride=check_stride, equal_nan=equal_nan, tolerances=TOLERANCES)


def run_both(fm, ft):
    """Runs both sides; returns ('ok', m, t) or ('err', m_exc, t_exc) after checking they agree."""
    t, t_exc = guarded(ft)
    m, m_exc = guarded(fm)
    diffs = mt.diff_exceptions(m_exc, t_exc, "call", m_result=m, t_result=t)
    assert not diffs, "\n".join(str(d) for d in diffs)
    if t_exc is not None:
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


def outputs_at_thread_counts(script, counts=("1", "2", "3", "4")):
    """What `python -c script` prints with minigrad's pool at each thread count, one fresh process
    each (the pool's size is fixed at its first use); the determinism tests compare them."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    outs = []
    for threads in counts:
        env = dict(os.environ, RAYON_NUM_THREADS=threads, PYTHONPATH=os.path.join(root, "python"))
        run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
        outs.append(run.stdout)
    return outs
