"""repr(tensor) is torch's, character for character (with `minigrad.` for `torch.`)."""

import re

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

import minigrad as mg
from parity import make_pair, pairs

_SUFFIX = re.compile(r",\s*(?=(?:size|dtype)=)")


def torch_expected(t):
    """torch's repr of `t`; its suffixes renamed to minigrad's and re-wrapped by torch's own rule.

    `dtype=minigrad.float64` is three characters longer than `dtype=torch.float64`, so whether
    the suffix fits on the last line is decided again, by torch's `_add_suffixes`, for our names.
    """
    s = repr(t)
    m = _SUFFIX.search(s)
    if not m:
        return s
    body, rest = s[: m.start()], s[m.start(): -1]
    suffixes = [x.replace("torch.", "minigrad.") for x in _SUFFIX.split(rest)[1:]]
    return torch._tensor_str._add_suffixes(body, suffixes, 7, False)


def check(m, t):
    assert repr(m) == torch_expected(t)
    assert str(m) == torch_expected(t)


@st.composite
def float_arrays(draw):
    shape = draw(st.lists(st.integers(0, 6), min_size=0, max_size=4).map(tuple))
    dt = draw(st.sampled_from([np.float32, np.float64]))
    scale = 10.0 ** draw(st.integers(-12, 12))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    arr = rng.standard_normal(shape) * scale
    kind = draw(st.integers(0, 6))
    n = arr.size
    if kind == 0:
        arr = np.round(arr)
    elif kind == 1 and n:
        arr.flat[rng.integers(0, n)] = np.nan
    elif kind == 2 and n:
        arr.flat[rng.integers(0, n)] = -np.inf
    elif kind == 3:
        arr = arr * 0
    elif kind == 4:
        arr = -(arr * 0)
    return np.asarray(arr.astype(dt)).reshape(shape)


@given(pairs(max_dims=4, max_side=6))
def test_repr_matches_torch_all_dtypes_and_layouts(pair):
    check(*pair)


@given(float_arrays())
def test_repr_float_modes(arr):
    # int mode, fixed, scientific, nan/inf, negative zero, all zeros
    check(mg.from_numpy(arr.copy()), torch.from_numpy(arr.copy()))


@given(st.sampled_from(["int64", "int32", "bool"]), st.integers(1, 9), st.integers(0, 2**32 - 1))
def test_repr_integer_widths(key, digits, seed):
    rng = np.random.default_rng(seed)
    shape = tuple(rng.integers(1, 6, rng.integers(0, 4)))
    if key == "bool":
        arr = rng.random(shape) < 0.5
    else:
        arr = rng.integers(-(10**digits), 10**digits, shape).astype(key)
    arr = np.asarray(arr).reshape(shape)
    check(mg.from_numpy(arr.copy()), torch.from_numpy(arr.copy()))


@pytest.mark.parametrize("shape", [(1001,), (2000,), (40, 30), (3, 400), (11, 12, 13), (2, 3, 4, 50), (7, 1, 200)])
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
def test_repr_summarised(shape, dtype):
    rng = np.random.default_rng(sum(shape))
    arr = rng.standard_normal(shape) * 100
    arr = arr > 0 if dtype == "bool" else arr.astype(dtype)
    m, t = make_pair(arr)
    check(m, t)
    check(m.transpose(0, -1), t.transpose(0, -1))


@pytest.mark.parametrize(
    "make",
    [
        lambda lib: lib.tensor(3.5), lambda lib: lib.tensor(2), lambda lib: lib.tensor(True),
        lambda lib: lib.tensor(1e-5), lambda lib: lib.tensor(float("nan")), lambda lib: lib.tensor(-0.0),
        lambda lib: lib.tensor([]), lambda lib: lib.zeros(0, 3), lambda lib: lib.zeros(2, 0, dtype=lib.int64),
        lambda lib: lib.zeros(0, dtype=lib.int64), lambda lib: lib.zeros(0, dtype=lib.bool),
        lambda lib: lib.zeros(1, 0, 2, dtype=lib.float64), lambda lib: lib.tensor(5, dtype=lib.int32),
        lambda lib: lib.tensor([1.0, 2.5], dtype=lib.float64), lambda lib: lib.tensor([[1, 2], [3, 4]], dtype=lib.int32),
        lambda lib: lib.tensor([1e10, 1.0]), lambda lib: lib.tensor([1e-10, 1.0]), lambda lib: lib.tensor([123456789.0]),
        lambda lib: lib.tensor([float("inf"), -float("inf"), float("nan")]), lambda lib: lib.tensor([0.1, 1000.0]),
        lambda lib: lib.arange(100.0).reshape(10, 10), lambda lib: lib.arange(30).reshape(2, 3, 5),
        lambda lib: lib.ones(4, 30, dtype=lib.float64) / 3,
    ],
)
def test_repr_cases(make):
    check(make(mg), make(torch))


OPTIONS = [
    dict(precision=2), dict(precision=8), dict(threshold=5), dict(edgeitems=1, threshold=10),
    dict(linewidth=40), dict(linewidth=200), dict(sci_mode=True), dict(sci_mode=False),
    dict(edgeitems=0, threshold=3), dict(profile="short"), dict(profile="full"),
]


@pytest.mark.parametrize("opts", OPTIONS, ids=str)
@given(pair=pairs(max_dims=3, max_side=6))
def test_set_printoptions(opts, pair):
    m, t = pair
    torch.set_printoptions(**opts)
    mg.set_printoptions(**opts)
    try:
        assert mg._formatting.get_printoptions() == torch._tensor_str.get_printoptions()
        check(m, t)
        big = np.linspace(-5, 5, 1200).reshape(40, 30)
        check(mg.from_numpy(big.copy()), torch.from_numpy(big.copy()))
    finally:
        torch.set_printoptions(profile="default")
        mg.set_printoptions(profile="default")


def test_printoptions_context_restores():
    before = mg._formatting.get_printoptions()
    with mg._formatting.printoptions(precision=1):
        assert repr(mg.tensor([1.25])) == "tensor([1.2])"
    assert mg._formatting.get_printoptions() == before


def test_format_of_zero_dim_tensor_is_the_item():
    for v in (1.5, 3, True):
        assert f"{mg.tensor(v)}" == f"{torch.tensor(v)}"
        assert f"{mg.tensor(v):>8}" == f"{torch.tensor(v):>8}"
    assert f"{mg.tensor([1.5])}" == f"{torch.tensor([1.5])}"
    with pytest.raises(TypeError):
        f"{mg.tensor([1.5]):>8}"
