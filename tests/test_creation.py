"""Factories, conversions and NumPy interop against torch."""

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, strategies as st

import minigrad as mg
from parity import ALL_DTYPES, DTYPES, assert_same, assert_same_error, check_parity, make_pair, pairs, run_both

LIBS = {"mg": mg, "torch": torch}


def both(f, **kw):
    """check_parity of f(minigrad) against f(torch), with strides."""
    kw.setdefault("check_stride", True)
    return check_parity(lambda: f(mg), lambda: f(torch), **kw)


def dt(lib, name):
    return getattr(lib, name) if name is not None else None


# ----- tensor(data) -----

nested = st.recursive(
    st.one_of(st.integers(-5, 5), st.floats(-3, 3, allow_nan=False, width=32), st.booleans()),
    lambda children: st.lists(children, max_size=3) | st.lists(children, max_size=3).map(tuple),
    max_leaves=12,
)


@st.composite
def regular(draw):
    """Nested lists of a regular shape, with a random leaf kind mix."""
    shape = draw(st.lists(st.integers(0, 3), max_size=3))
    kinds = draw(st.sampled_from(["int", "float", "bool", "mixed", "int_bool"]))

    def leaf():
        k = kinds if kinds not in ("mixed", "int_bool") else draw(st.sampled_from(["int", "float", "bool"] if kinds == "mixed" else ["int", "bool"]))
        return {"int": lambda: draw(st.integers(-5, 5)), "float": lambda: draw(st.sampled_from([0.5, -1.25, 2.0, 0.0])),
                "bool": lambda: draw(st.booleans())}[k]()

    def build(dims):
        if not dims:
            return leaf()
        seq = [build(dims[1:]) for _ in range(dims[0])]
        return tuple(seq) if draw(st.booleans()) else seq

    return build(shape)


@given(data=regular(), dtype=st.sampled_from([None] + ALL_DTYPES))
def test_tensor_from_nested_data(data, dtype):
    both(lambda lib: lib.tensor(data, dtype=dt(lib, dtype)))


@given(data=nested)
def test_tensor_ragged_and_odd_data(data):
    both(lambda lib: lib.tensor(data))


@pytest.mark.parametrize(
    "data",
    [[[1, 2], [3]], [[1, 2], 3], [1, [2, 3]], [[[1]], [2]], [[], [1]], [[1], []], [[1, 2], [3, 4, 5]], [[1.0], [2.0, 3.0]],
     "abc", ["a"], [None], None, [1, None], {}, {1: 2}, [[1, 2], (3, 4)], [[[]]], [[], []], ((),), [1.5, True, 3]],
)
def test_tensor_data_errors_and_edges(data):
    both(lambda lib: lib.tensor(data))


@pytest.mark.parametrize("value", [0, -3, 2**40, 2.5, float("nan"), float("inf"), True, False])
@pytest.mark.parametrize("dtype", [None] + ALL_DTYPES)
def test_tensor_from_scalar(value, dtype):
    both(lambda lib: lib.tensor(value, dtype=dt(lib, dtype)))


@given(pair=pairs())
def test_tensor_from_tensor_copies(pair):
    m, t = pair
    with pytest.warns(UserWarning):
        rm = mg.tensor(m)
    rt = torch.tensor(t.clone())
    assert_same(rm, rt, check_stride=True)
    assert not rm._shares_storage(m)


@given(a=pairs(layout=False, max_dims=1), b=pairs(layout=False, max_dims=1), dtype=st.sampled_from([None] + ALL_DTYPES))
def test_tensors_in_list(a, b, dtype):
    """Tensors inside data are leaves: 0-d ones are numbers, others raise torch's conversion errors."""
    (ma, ta), (mb, tb) = a, b
    check_parity(lambda: mg.tensor([ma, mb], dtype=dt(mg, dtype)), lambda: torch.tensor([ta, tb], dtype=dt(torch, dtype)), check_stride=True)
    check_parity(lambda: mg.tensor([[ma], [1]], dtype=dt(mg, dtype)), lambda: torch.tensor([[ta], [1]], dtype=dt(torch, dtype)), check_stride=True)


@given(arr=st.sampled_from(ALL_DTYPES).flatmap(lambda k: __import__("parity").values(k, (2, 3))))
def test_tensor_from_numpy_copies(arr):
    m, t = mg.tensor(arr), torch.tensor(arr)
    assert_same(m, t, check_stride=True)
    arr.flat[0] = not arr.flat[0] if arr.dtype == bool else arr.flat[0] + 1
    assert_same(m, t)


@pytest.mark.parametrize("np_dtype", [np.complex64, np.uint16, np.uint32, np.object_])
@pytest.mark.parametrize("fn", ["from_numpy", "tensor", "as_tensor"])
def test_unsupported_numpy_dtypes(np_dtype, fn):
    """torch has more dtypes than minigrad's ten (a documented divergence): minigrad refuses the
    others with torch's error type and wording, listing the dtypes it does support."""
    arr = np.zeros(3, dtype=np_dtype)
    with pytest.raises(TypeError) as e:
        getattr(mg, fn)(arr)
    assert str(e.value) == (f"can't convert np.ndarray of type numpy.{np.dtype(np_dtype).type.__name__}. "
                            "The only supported types are: float64, float32, float16, int64, int32, int16, int8, "
                            "uint8, and bool.")
    if np_dtype is np.object_:
        with pytest.raises(TypeError, match="can't convert np.ndarray of type numpy.object_"):
            torch.from_numpy(arr)


# ----- as_tensor / from_numpy / numpy(): memory sharing -----

@given(arr=st.sampled_from(ALL_DTYPES).flatmap(lambda k: __import__("parity").values(k, (3, 4))))
def test_from_numpy_shares_memory_both_ways(arr):
    a = arr.copy()
    m = mg.from_numpy(a)
    t = torch.from_numpy(a.copy())
    assert_same(m, t, check_stride=True)
    # numpy -> tensor
    a[0, 0] = a[1, 1]
    assert m.tolist()[0][0] == a[1, 1].item()
    # tensor -> numpy
    m.fill_(1)
    assert (a == 1).all()
    assert m._version == 1


def test_from_numpy_strides_and_errors():
    base = np.arange(24, dtype=np.float32).reshape(4, 6)
    for view in (base[:, ::2], base.T, base[1:, 2:], base[::2, ::-1], base[:, ::-1], base.reshape(2, 3, 4).transpose(2, 0, 1)):
        check_parity(lambda: mg.from_numpy(view), lambda: torch.from_numpy(view), check_stride=True)
    check_parity(lambda: mg.from_numpy([1, 2]), lambda: torch.from_numpy([1, 2]))
    ro = np.arange(3.0)
    ro.flags.writeable = False
    with pytest.warns(UserWarning):
        mg.from_numpy(ro)


@pytest.mark.parametrize("view", ["plain", "T", "step", "neg"])
@pytest.mark.parametrize("dtype", [None, "float64", "int64", "float32"])
def test_as_tensor_numpy(view, dtype):
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    v = {"plain": a, "T": a.T, "step": a[:, ::2], "neg": a[::-1]}[view]
    kind, m, t = check_parity(lambda: mg.as_tensor(v, dtype=dt(mg, dtype)), lambda: torch.as_tensor(v, dtype=dt(torch, dtype)), check_stride=True)
    if kind == "ok":
        shares_t = np.shares_memory(t.numpy(), a)
        shares_m = np.shares_memory(m.numpy(), a)
        assert shares_m == shares_t


@given(pair=pairs())
def test_as_tensor_tensor_is_same_object(pair):
    m, t = pair
    assert mg.as_tensor(m) is m and torch.as_tensor(t) is t
    assert (mg.as_tensor(m, dtype=m.dtype) is m) == (torch.as_tensor(t, dtype=t.dtype) is t)
    both(lambda lib: lib.as_tensor([[1, 2], [3, 4]], dtype=lib.float64))


@given(pair=pairs())
def test_numpy_is_zero_copy(pair):
    m, t = pair
    a, b = m.numpy(), t.numpy()
    assert a.dtype == b.dtype and a.shape == b.shape and a.strides == b.strides
    np.testing.assert_array_equal(a, b)
    if m.numel():
        assert np.shares_memory(a, m.numpy())
        v = m._version
        a[(0,) * a.ndim] = 1  # a write through NumPy shows in the tensor, uncounted (R4)
        assert m.reshape(-1).tolist()[0] == 1 and m._version == v
    arr = np.asarray(m)
    assert arr.dtype == b.dtype and np.array_equal(arr, m.numpy())
    assert np.array(m, dtype=np.float64).dtype == np.float64


def test_numpy_of_zero_dim_and_empty():
    for f in (lambda lib: lib.tensor(3.5), lambda lib: lib.zeros(0, 3), lambda lib: lib.zeros(2, 0).t()):
        a, b = f(mg).numpy(), f(torch).numpy()
        assert (a.shape, a.dtype, a.strides) == (b.shape, b.dtype, b.strides)


# ----- zeros / ones / full / empty and _like -----

SIZES = [(), (0,), (3,), (2, 3), (2, 0, 4), ((2, 3),), ([2, 3],), ((),), (torch.Size([2, 3]),)]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("dtype", [None] + ALL_DTYPES)
@pytest.mark.parametrize("fn", ["zeros", "ones", "empty"])
def test_constant_factories(size, dtype, fn):
    size_m = tuple(mg.Size(s) if isinstance(s, torch.Size) else s for s in size)

    def f(lib):
        return getattr(lib, fn)(*(size_m if lib is mg else size), dtype=dt(lib, dtype))

    if fn == "empty":
        kind, m, t = run_both(lambda: f(mg), lambda: f(torch))
        if kind == "ok":
            assert m.shape == t.shape and str(m.dtype)[9:] == str(t.dtype)[6:] and m.stride() == t.stride()
    else:
        both(f)


@pytest.mark.parametrize("size", [(2, 3), [2], (), 3, (0,), torch.Size([2])])
@pytest.mark.parametrize("value", [1, 2.5, True, -7])
@pytest.mark.parametrize("dtype", [None] + ALL_DTYPES)
def test_full(size, value, dtype):
    size_m = mg.Size(size) if isinstance(size, torch.Size) else size
    both(lambda lib: lib.full(size_m if lib is mg else size, value, dtype=dt(lib, dtype)))


@pytest.mark.parametrize(
    "f",
    [
        lambda lib: lib.zeros(2, -1), lambda lib: lib.zeros(-3), lambda lib: lib.ones((2, -2)), lambda lib: lib.empty(-1),
        lambda lib: lib.full((2, -1), 1.0), lambda lib: lib.zeros(2.5), lambda lib: lib.zeros("a"), lambda lib: lib.zeros((2, 3), (4,)),
        lambda lib: lib.full((2,), "x"), lambda lib: lib.full((2,), [1]), lambda lib: lib.zeros(2, dtype="float"),
        lambda lib: lib.full((2,), lib.tensor(3.0)), lambda lib: lib.ones(2, 3, dtype=lib.int32),
    ],
)
def test_factory_errors(f):
    kind, m, t = run_both(lambda: f(mg), lambda: f(torch))
    if kind == "ok":
        assert_same(m, t, check_stride=True)


@pytest.mark.parametrize("fn", ["zeros_like", "ones_like", "empty_like", "rand_like", "randn_like"])
@pytest.mark.parametrize("dtype", [None] + ALL_DTYPES)
@given(pair=pairs())
def test_like_factories_preserve_layout(fn, dtype, pair):
    m, t = pair
    kind, rm, rt = run_both(lambda: getattr(mg, fn)(m, dtype=dt(mg, dtype)), lambda: getattr(torch, fn)(t, dtype=dt(torch, dtype)))
    if kind == "ok":
        assert rm.shape == rt.shape and rm.stride() == rt.stride() and str(rm.dtype)[9:] == str(rt.dtype)[6:]
        assert not rm._shares_storage(m) and rm._version == 0
        if fn in ("zeros_like", "ones_like"):
            assert_same(rm, rt, check_stride=True)


@pytest.mark.parametrize("value", [1, 2.5, True])
@pytest.mark.parametrize("dtype", [None] + ALL_DTYPES)
@given(pair=pairs())
def test_full_like(value, dtype, pair):
    m, t = pair
    check_parity(lambda: mg.full_like(m, value, dtype=dt(mg, dtype)), lambda: torch.full_like(t, value, dtype=dt(torch, dtype)), check_stride=True)


# ----- arange / linspace / eye -----

num = st.one_of(st.integers(-6, 6), st.sampled_from([0.5, -1.5, 2.25, 0.1, -0.3, 3.0, 1e-3]))


@given(a=num, b=st.one_of(st.none(), num), step=st.one_of(st.none(), num), dtype=st.sampled_from([None] + ALL_DTYPES))
def test_arange(a, b, step, dtype):
    def f(lib):
        args = [a] if b is None else [a, b]
        if step is not None and b is not None:
            args.append(step)
        return lib.arange(*args, dtype=dt(lib, dtype))

    both(f)


@pytest.mark.parametrize(
    "args",
    [(0, 1, 0), (0, 10, -1), (10, 0), (0, float("inf")), (float("nan"), 1), (0, 1, 0.1), (1, 0, -0.1), (0, 5, 2),
     (5, -5, -3), (-3, 3, 1.5), (0.0, 1.0, 1 / 3), (2**40, 2**40 + 3), (0, 1e-3, 1e-4), (torch.tensor(3),)],
)
def test_arange_cases(args):
    both(lambda lib: lib.arange(*[lib.tensor(a.item()) if isinstance(a, torch.Tensor) else a for a in args]))


@given(start=num, end=num, steps=st.integers(-1, 12), dtype=st.sampled_from([None] + ALL_DTYPES))
def test_linspace(start, end, steps, dtype):
    both(lambda lib: lib.linspace(start, end, steps, dtype=dt(lib, dtype)))


@given(n=st.integers(-1, 5), m=st.one_of(st.none(), st.integers(-1, 5)), dtype=st.sampled_from([None] + ALL_DTYPES))
def test_eye(n, m, dtype):
    if m is None:
        both(lambda lib: lib.eye(n, dtype=dt(lib, dtype)))
    else:
        both(lambda lib: lib.eye(n, m, dtype=dt(lib, dtype)))


# ----- random factories -----

@pytest.mark.parametrize("fn", ["rand", "randn"])
@pytest.mark.parametrize("dtype", [None] + ALL_DTYPES)
@pytest.mark.parametrize("size", [(), (3,), (2, 3), ((2, 3),), (0,)])
def test_rand_randn_shapes_dtypes(fn, dtype, size):
    kind, m, t = run_both(lambda: getattr(mg, fn)(*size, dtype=dt(mg, dtype)), lambda: getattr(torch, fn)(*size, dtype=dt(torch, dtype)))
    if kind == "ok":
        assert m.shape == t.shape and str(m.dtype)[9:] == str(t.dtype)[6:] and m.stride() == t.stride()


def test_rand_ranges_and_seed():
    mg.manual_seed(123)
    a = mg.rand(10000).numpy()
    b = mg.randn(10000).numpy()
    assert ((a >= 0) & (a < 1)).all() and 0.45 < a.mean() < 0.55
    assert abs(b.mean()) < 0.05 and 0.95 < b.std() < 1.05
    mg.manual_seed(123)
    assert np.array_equal(mg.rand(10000).numpy(), a)
    assert np.array_equal(mg.randn(10000).numpy(), b)
    mg.manual_seed(124)
    assert not np.array_equal(mg.rand(10000).numpy(), a)


@pytest.mark.parametrize(
    "args,kw",
    [((5, (3,)), {}), ((2, 5, (2, 3)), {}), ((-3, 3, (100,)), {}), ((0, 1, (4,)), {}), ((3, (0,)), {}),
     ((5, (3,)), {"dtype": "int32"}), ((5, (3,)), {"dtype": "float32"}), ((2, (3,)), {"dtype": "bool"}),
     ((5, 5, (3,)), {}), ((5, 2, (3,)), {}), ((0, (3,)), {}), ((10, [2, 2]), {})],
)
def test_randint(args, kw):
    kw_m = {k: dt(mg, v) for k, v in kw.items()}
    kw_t = {k: dt(torch, v) for k, v in kw.items()}
    kind, m, t = run_both(lambda: mg.randint(*args, **kw_m), lambda: torch.randint(*args, **kw_t))
    if kind == "ok":
        assert m.shape == t.shape and str(m.dtype)[9:] == str(t.dtype)[6:]
        low, high = (0, args[0]) if len(args) == 2 else args[:2]
        v = m.numpy().astype(np.int64)
        assert ((v >= low) & (v < high)).all()


# ----- conversions -----

@pytest.mark.parametrize("method", ["float", "double", "long", "int", "bool"])
@given(pair=pairs())
def test_dtype_methods(method, pair):
    m, t = pair
    kind, rm, rt = check_parity(lambda: getattr(m, method)(), lambda: getattr(t, method)(), check_stride=True)
    assert (rm is m) == (rt is t)


@pytest.mark.parametrize("target", ALL_DTYPES)
@given(pair=pairs(), copy=st.booleans())
def test_to(target, pair, copy):
    m, t = pair
    kind, rm, rt = check_parity(lambda: m.to(DTYPES[target][0], copy=copy), lambda: t.to(DTYPES[target][1], copy=copy), check_stride=True)
    assert (rm is m) == (rt is t)
    check_parity(lambda: m.to(dtype=DTYPES[target][0]), lambda: t.to(dtype=DTYPES[target][1]), check_stride=True)
    check_parity(lambda: m.to("cpu", DTYPES[target][0]), lambda: t.to("cpu", DTYPES[target][1]), check_stride=True)
    other_m, other_t = mg.zeros(1, dtype=DTYPES[target][0]), torch.zeros(1, dtype=DTYPES[target][1])
    check_parity(lambda: m.to(other_m), lambda: t.to(other_t), check_stride=True)
    check_parity(lambda: m.type_as(other_m), lambda: t.type_as(other_t), check_stride=True)


def test_float_to_int_conversion_values():
    vals = [1.7, -1.7, 0.5, -0.5, 2.5, 1e10, -0.0]
    both(lambda lib: lib.tensor(vals).long())
    both(lambda lib: lib.tensor(vals).int() if False else lib.tensor(vals[:-2]).int())
    both(lambda lib: lib.tensor(vals).bool())
    both(lambda lib: lib.tensor([float("nan"), 0.0]).bool())


# ----- Python protocol -----

@given(pair=pairs())
def test_tolist_item_len_iter(pair):
    m, t = pair
    assert m.tolist() == t.tolist()
    for f in (lambda x: x.item(), len, lambda x: [v.tolist() for v in x], bool, float, int, lambda x: x.__index__(), complex):
        kind, rm, rt = run_both(lambda: f(m), lambda: f(t))
        if kind == "ok":
            assert type(rm) is type(rt) and (rm == rt or (rm != rm and rt != rt))


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_scalar_protocol_types(dtype):
    m, t = mg.ones((), dtype=DTYPES[dtype][0]), torch.ones((), dtype=DTYPES[dtype][1])
    for f in (lambda x: x.item(), bool, float, int, lambda x: [1, 2, 3][x], lambda x: range(5)[x], lambda x: x.__index__(), lambda x: f"{x}", lambda x: f"{x:.3f}" if x.is_floating_point() else f"{x}"):
        kind, rm, rt = run_both(lambda: f(m), lambda: f(t))
        if kind == "ok":
            assert type(rm) is type(rt) and rm == rt


def test_numpy_operands_and_ufuncs():
    """NumPy defers to tensors (`__array_priority__`) and ufunc results come back as tensors."""
    cases = (lambda lib: np.float64(2.0) * lib.ones(2), lambda lib: lib.ones(2) * np.float32(2.0),
             lambda lib: np.int64(3) + lib.ones(2), lambda lib: lib.ones(2) + np.ones(2),
             lambda lib: np.sin(lib.ones(2, 3)), lambda lib: np.add(lib.ones(2), lib.ones(2)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # NumPy 2 on torch's __array_wrap__ signature
        for f in cases:
            check_parity(lambda: f(mg), lambda: f(torch))
