"""minigrad.save / minigrad.load: safetensors round trips, torch interop, corrupt files."""

import io
import json
import struct

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
import safetensors.numpy
import safetensors.torch
import torch
from hypothesis import given, settings, strategies as st

import minigrad as mg
from minigrad import optim

NP_DTYPES = {"float32": np.float32, "float64": np.float64, "int64": np.int64, "int32": np.int32, "bool": np.bool_}


def arrays(dtype_name):
    dtype = NP_DTYPES[dtype_name]
    if dtype is np.bool_:
        elements = st.booleans()
    elif dtype in (np.int64, np.int32):
        elements = st.integers(-(2**31), 2**31 - 1)
    else:
        elements = st.floats(width=32 if dtype is np.float32 else 64, allow_nan=False)
    return hnp.arrays(dtype, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4), elements=elements)


def round_trip(obj):
    buffer = io.BytesIO()
    mg.save(obj, buffer)
    buffer.seek(0)
    return mg.load(buffer)


def assert_same_tensor(loaded, original):
    assert isinstance(loaded, mg.Tensor)
    assert loaded.dtype == original.dtype
    assert tuple(loaded.shape) == tuple(original.shape)
    np.testing.assert_array_equal(loaded.numpy(), original.detach().numpy())
    assert loaded.is_leaf and loaded.grad_fn is None and loaded.is_contiguous()


@settings(max_examples=30)
@given(data=st.data(), dtype_name=st.sampled_from(sorted(NP_DTYPES)))
def test_single_tensor_round_trip(data, dtype_name):
    array = data.draw(arrays(dtype_name))
    tensor = mg.from_numpy(array.copy())
    loaded = round_trip(tensor)
    assert_same_tensor(loaded, tensor)
    assert loaded.data_ptr() != tensor.data_ptr() or tensor.numel() == 0


@settings(max_examples=20)
@given(shape=hnp.array_shapes(min_dims=2, max_dims=3, min_side=1, max_side=4), step=st.integers(1, 2))
def test_non_contiguous_tensors_are_saved_contiguous(shape, step):
    base = mg.arange(int(np.prod(shape)), dtype=mg.float64).reshape(*shape)
    view = base.transpose(0, 1)[::step]
    loaded = round_trip({"view": view})
    assert_same_tensor(loaded["view"], view)


def test_module_style_state_dict_round_trip_and_torch_reads_it(tmp_path):
    state = {
        "layer.weight": mg.randn(3, 4),
        "layer.bias": mg.randn(3, dtype=mg.float64),
        "steps": mg.tensor([1, 2, 3]),
        "counts": mg.tensor([4, 5], dtype=mg.int32),
        "mask": mg.tensor([True, False, True]),
        "scalar": mg.tensor(1.5),
        "empty": mg.zeros(0, 2),
        "transposed": mg.randn(2, 5).t(),
    }
    path = tmp_path / "model.safetensors"
    mg.save(state, path)
    loaded = mg.load(str(path))
    assert list(loaded) == list(state)
    for key in state:
        assert_same_tensor(loaded[key], state[key])

    from_torch = safetensors.torch.load_file(str(path))
    assert set(from_torch) == set(state)
    for key, tensor in state.items():
        torch_tensor = from_torch[key]
        assert str(torch_tensor.dtype).split(".")[-1] == str(tensor.dtype).split(".")[-1]
        np.testing.assert_array_equal(torch_tensor.numpy(), tensor.numpy())


def test_torch_written_file_loads_as_flat_dict(tmp_path):
    path = tmp_path / "torch.safetensors"
    original = {"w": torch.randn(2, 3), "i": torch.arange(4), "b": torch.tensor([True])}
    safetensors.torch.save_file(original, str(path))
    loaded = mg.load(path)
    assert set(loaded) == set(original)
    for key, tensor in original.items():
        np.testing.assert_array_equal(loaded[key].numpy(), tensor.numpy())


def test_nested_containers_round_trip():
    obj = {
        "name": "run-1", "epoch": 3, "lr": 0.125, "done": False, "note": None, "nan": float("inf"),
        "tensors": [mg.ones(2), (mg.zeros(1, dtype=mg.int64), "x")],
        1: {"inner": mg.tensor([[1.0, 2.0]], dtype=mg.float64)},
        "a.b": mg.ones(1), "a": {"b": mg.zeros(1)},  # entry names that would collide
    }
    loaded = round_trip(obj)
    assert list(loaded) == list(obj)
    assert loaded["name"] == "run-1" and loaded["epoch"] == 3 and isinstance(loaded["epoch"], int)
    assert loaded["lr"] == 0.125 and loaded["done"] is False and loaded["note"] is None
    assert loaded["nan"] == float("inf")
    assert isinstance(loaded["tensors"], list) and isinstance(loaded["tensors"][1], tuple)
    assert_same_tensor(loaded["tensors"][0], obj["tensors"][0])
    assert_same_tensor(loaded["tensors"][1][0], obj["tensors"][1][0])
    assert loaded["tensors"][1][1] == "x"
    assert_same_tensor(loaded[1]["inner"], obj[1]["inner"])
    assert loaded["a.b"].tolist() == [1.0] and loaded["a"]["b"].tolist() == [0.0]


def test_requires_grad_is_kept_and_loaded_tensors_are_fresh_leaves():
    w = mg.randn(3, requires_grad=True)
    loaded = round_trip({"w": w, "nested": [w * 2]})
    assert loaded["w"].requires_grad and loaded["w"].is_leaf
    # like torch.save/torch.load: a non-leaf comes back as a leaf that still requires grad
    assert loaded["nested"][0].requires_grad and loaded["nested"][0].is_leaf
    np.testing.assert_array_equal(loaded["w"].detach().numpy(), w.detach().numpy())


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_optimizer_state_dict_round_trip_continues_identically(name, tmp_path):
    kwargs = {"SGD": {"lr": 0.1, "momentum": 0.9}, "Adam": {"lr": 0.1, "amsgrad": True}, "AdamW": {"lr": 0.1}}[name]
    target = mg.tensor([1.0, -2.0, 3.0])
    params = [mg.zeros(3, requires_grad=True)]
    opt = getattr(optim, name)(params, **kwargs)

    def train(o, ps, steps):
        for _ in range(steps):
            o.zero_grad()
            ((ps[0] - target) ** 2).sum().backward()
            o.step()

    train(opt, params, 3)
    path = tmp_path / "opt.safetensors"
    mg.save({"optimizer": opt.state_dict(), "params": params}, path)
    checkpoint = mg.load(path)
    assert checkpoint["optimizer"]["param_groups"] == opt.state_dict()["param_groups"]

    resumed_params = [checkpoint["params"][0]]
    resumed = getattr(optim, name)(resumed_params, lr=5.0)
    resumed.load_state_dict(checkpoint["optimizer"])
    train(opt, params, 3)
    train(resumed, resumed_params, 3)
    np.testing.assert_array_equal(resumed_params[0].detach().numpy(), params[0].detach().numpy())


def _valid_bytes():
    buffer = io.BytesIO()
    mg.save({"a": mg.ones(4), "nested": [mg.zeros(2)]}, buffer)
    return buffer.getvalue()


def _with_header(header):
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw


CORRUPT = {
    "empty": lambda data: b"",
    "short": lambda data: data[:5],
    "truncated header": lambda data: data[:40],
    "truncated data": lambda data: data[:-3],
    "not safetensors": lambda data: b"PK\x03\x04 this is a zip file, not safetensors",
    "bad json": lambda data: struct.pack("<Q", 5) + b"{oops",
    "header not an object": lambda data: _with_header([1, 2]),
    "bad dtype": lambda data: _with_header({"x": {"dtype": "Q99", "shape": [1], "data_offsets": [0, 4]}}) + b"\0" * 4,
    "bad offsets": lambda data: _with_header({"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}}) + b"\0" * 4,
    "bad structure": lambda data: _with_header({"__metadata__": {"minigrad": "{not json"}}),
    "missing entry": lambda data: _with_header(
        {"__metadata__": {"minigrad": json.dumps({"version": 1, "root": {"kind": "tensor", "name": "gone"}})}}),
    "unknown kind": lambda data: _with_header(
        {"__metadata__": {"minigrad": json.dumps({"version": 1, "root": {"kind": "pickle", "items": []}})}}),
    "deeply nested structure": lambda data: _with_header(
        {"__metadata__": {"minigrad": '{"version": 1, "root": ' + "[" * 100000 + "]" * 100000 + "}"}}),
    "items not pairs": lambda data: _with_header(
        {"__metadata__": {"minigrad": json.dumps({"version": 1, "root": {"kind": "dict", "items": [[1, 2, 3]]}})}}),
    "unsupported dtype": lambda data: _with_header({"x": {"dtype": "U16", "shape": [2], "data_offsets": [0, 4]}})
    + b"\0" * 4,
}


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_corrupt_files_raise_runtime_error_naming_the_file(case, tmp_path):
    path = tmp_path / f"{case.replace(' ', '_')}.safetensors"
    path.write_bytes(CORRUPT[case](_valid_bytes()))
    with pytest.raises(RuntimeError, match="cannot load") as err:
        mg.load(path)
    assert str(path) in str(err.value)


def test_valid_bytes_load():
    loaded = mg.load(io.BytesIO(_valid_bytes()))
    assert loaded["a"].tolist() == [1.0] * 4 and loaded["nested"][0].tolist() == [0.0, 0.0]


@pytest.mark.parametrize("obj", [object(), {"a": np.zeros(2)}, [mg.ones(1), {1, 2}], {(1, 2): mg.ones(1)}, b"raw"])
def test_unsupported_objects_raise_type_error(obj):
    with pytest.raises(TypeError, match="minigrad.save"):
        mg.save(obj, io.BytesIO())


def test_reference_cycle_is_a_value_error():
    cycle = [mg.ones(1)]
    cycle.append(cycle)
    with pytest.raises(ValueError, match="reference cycle"):
        mg.save(cycle, io.BytesIO())


def test_bad_file_arguments_raise_type_error():
    with pytest.raises(TypeError, match="path or a writable"):
        mg.save(mg.ones(1), 42)
    with pytest.raises(TypeError, match="path or a readable"):
        mg.load(42)
    with pytest.raises(TypeError, match="binary mode"):
        mg.load(io.StringIO("text"))


def test_file_is_plain_safetensors_with_json_metadata():
    data = _valid_bytes()
    arrays = safetensors.numpy.load(data)
    assert set(arrays) == {"a", "nested.0"}
    (length,) = struct.unpack("<Q", data[:8])
    metadata = json.loads(data[8:8 + length])["__metadata__"]
    assert json.loads(metadata["minigrad"])["root"]["kind"] == "dict"
