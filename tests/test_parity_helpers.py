"""The helpers the differential tests rely on must themselves detect differences."""

import numpy as np
import pytest
import torch
from hypothesis import given

import minigrad as mg
from parity import assert_same, assert_same_error, make_pair, pairs


@given(pairs())
def test_pairs_agree_in_values_and_strides(pair):
    m, t = pair
    assert_same(m, t, check_stride=True)
    assert m.storage_offset() == t.storage_offset()


def test_assert_same_detects_value_dtype_and_stride_differences():
    m, t = make_pair(np.arange(6, dtype=np.float32).reshape(2, 3))
    with pytest.raises(AssertionError):
        assert_same(m + 1, t)
    with pytest.raises(AssertionError):
        assert_same(m.double(), t)
    with pytest.raises(AssertionError):
        assert_same(m.t().contiguous(), t.t(), check_stride=True)


def test_error_comparison_detects_wording():
    with pytest.raises(AssertionError):
        assert_same_error(lambda: mg.zeros(2).view(3), lambda: torch.zeros(2).view(4))
    assert_same_error(lambda: mg.zeros(2).view(3), lambda: torch.zeros(2).view(3))
