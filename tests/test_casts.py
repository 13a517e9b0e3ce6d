"""dtype conversions (`to`, `copy_` across dtypes) agree with torch element by element, including
NaN, infinities and values outside the integer range (torch's x86 conversion gives the minimum)."""

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st

import minigrad as mg
from parity import DTYPES, assert_same, make_pair

any_float = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=32),
    st.floats(-3e9, 3e9, width=32),
    st.sampled_from([2.5, -2.5, 2147483647.0, -2147483648.0, 9.3e18, -9.3e18]),
)


@given(st.lists(any_float, max_size=12), st.sampled_from(["float32", "float64"]), st.sampled_from(list(DTYPES)))
def test_float_casts_match_torch(vals, src, dst):
    m, t = make_pair(np.array(vals, dtype=DTYPES[src][2]))
    assert_same(m.to(DTYPES[dst][0]), t.to(DTYPES[dst][1]))
    mo, to = mg.zeros(len(vals), dtype=DTYPES[dst][0]), torch.zeros(len(vals), dtype=DTYPES[dst][1])
    assert_same(mo.copy_(m), to.copy_(t))


@given(st.lists(st.integers(-(2**63), 2**63 - 1), max_size=12), st.sampled_from(list(DTYPES)))
def test_int64_casts_match_torch(vals, dst):
    m, t = make_pair(np.array(vals, dtype=np.int64))
    assert_same(m.to(DTYPES[dst][0]), t.to(DTYPES[dst][1]))
