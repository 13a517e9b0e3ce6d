"""Hostile files (issue 14, hardening 5): truncated, corrupt or malicious safetensors files and
pickles of other formats. `minigrad.load` must raise a RuntimeError naming the file (or load a
well-formed file) and never run code: it reads a JSON header and raw bytes, and never unpickles.
The basic corruptions (empty, short, bad JSON, bad dtype, bad structure metadata) are in
test_serialization.py; the shape-overflow header in test_sizes.py."""

import io
import json
import os
import pickle
import struct
import zipfile

import pytest

import minigrad as mg


def header(h, payload=b"", pad=True):
    raw = json.dumps(h).encode()
    if pad:  # safetensors aligns the data to 8 bytes with spaces
        raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + payload


def entry(dtype="F32", shape=(2,), offsets=(0, 8)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


HOSTILE = {
    "header length past the file": lambda: struct.pack("<Q", 1000) + b"{}",
    "header length 2**63": lambda: struct.pack("<Q", 2**63) + b"{}" + b" " * 6,
    "header length 2**64-1": lambda: b"\xff" * 8 + b"{}",
    "header not utf-8": lambda: struct.pack("<Q", 8) + b"\xff\xfe{}\x00\x00\x00\x00",
    "offsets past the data": lambda: header({"x": entry(offsets=(0, 8))}, b"\0" * 4),
    "offsets reversed": lambda: header({"x": entry(offsets=(8, 0))}, b"\0" * 8),
    "negative offset": lambda: header({"x": entry(offsets=(-8, 0))}, b"\0" * 8),
    "offset 2**64": lambda: header({"x": entry(offsets=(0, 2**64))}, b"\0" * 8),
    "overlapping entries": lambda: header({"x": entry(offsets=(0, 8)), "y": entry(offsets=(4, 12))}, b"\0" * 12),
    "gap between entries": lambda: header({"x": entry(offsets=(0, 8)), "y": entry(offsets=(16, 24))}, b"\0" * 24),
    "shape and offsets disagree": lambda: header({"x": entry(shape=(3,), offsets=(0, 8))}, b"\0" * 8),
    "negative dimension": lambda: header({"x": entry(shape=(-2,), offsets=(0, 8))}, b"\0" * 8),
    "float dimension": lambda: header({"x": entry(shape=(2.5,), offsets=(0, 8))}, b"\0" * 8),
    "shape product overflows": lambda: header({"x": entry(shape=(2**32, 2**32, 16), offsets=(0, 8))}, b"\0" * 8),
    "dimension 2**70": lambda: header({"x": entry(shape=(2**70,), offsets=(0, 8))}, b"\0" * 8),
    "unknown dtype": lambda: header({"x": entry(dtype="PICKLE")}, b"\0" * 8),
    "dtype not a string": lambda: header({"x": entry(dtype=["F32"])}, b"\0" * 8),
    "entry not an object": lambda: header({"x": [1, 2, 3]}, b"\0" * 8),
    "metadata not an object": lambda: header({"__metadata__": ["minigrad"]}),
    "metadata values not strings": lambda: header({"__metadata__": {"minigrad": {"version": 1}}}),
    "structure root refers to a dtype-less entry": lambda: header(
        {"__metadata__": {"minigrad": json.dumps({"version": 1, "root": {"kind": "tensor"}})}}),
    "structure dict with unhashable key": lambda: header(
        {"__metadata__": {"minigrad": json.dumps({"version": 1, "root": {"kind": "dict", "items": [[[1], 2]]}})}}),
    "structure items not a list": lambda: header(
        {"__metadata__": {"minigrad": json.dumps({"version": 1, "root": {"kind": "tuple", "items": 7}})}}),
    "structure without root": lambda: header({"__metadata__": {"minigrad": json.dumps({"version": 1})}}),
    "requires_grad on an int tensor": lambda: header(
        {"__metadata__": {"minigrad": json.dumps({"version": 1, "root": {"kind": "tensor", "name": "x",
                                                                       "requires_grad": True}})},
         "x": entry(dtype="I64", shape=(1,), offsets=(0, 8))}, b"\0" * 8),
    "requires_grad not a bool": lambda: header(
        {"__metadata__": {"minigrad": json.dumps({"version": 1, "root": {"kind": "tensor", "name": "x",
                                                                       "requires_grad": "yes"}})},
         "x": entry()}, b"\0" * 8),
    "state_dict keys not a list": lambda: header(
        {"__metadata__": {"minigrad": json.dumps({"version": 1, "root": {"kind": "state_dict", "keys": 5}})}}),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_safetensors_raise_runtime_error(case, tmp_path):
    path = tmp_path / "hostile.safetensors"
    path.write_bytes(HOSTILE[case]())
    with pytest.raises(RuntimeError, match="minigrad.load: cannot load") as err:
        mg.load(path)
    assert str(path) in str(err.value)


class _Trap:
    """Unpickling this runs os.system: it must never happen."""

    def __init__(self, flag):
        self.flag = flag

    def __reduce__(self):
        return (os.system, (f"touch {self.flag}",))


def pickles(flag):
    trap = _Trap(str(flag))
    raw = {f"pickle protocol {p}": pickle.dumps({"weight": trap}, protocol=p) for p in (0, 2, 4, 5)}
    zipped = io.BytesIO()  # torch.save's layout: a zip holding data.pkl
    with zipfile.ZipFile(zipped, "w") as z:
        z.writestr("archive/data.pkl", pickle.dumps(trap, protocol=2))
        z.writestr("archive/version", "3\n")
    raw["torch.save zip with a pickle"] = zipped.getvalue()
    # a valid safetensors file whose metadata carries a pickle (as bytes in a string)
    raw["pickle inside metadata"] = header(
        {"__metadata__": {"minigrad": json.dumps({"version": 1, "root": {"kind": "pickle",
                                                                        "data": pickle.dumps(trap).hex()}})}})
    # a header that is valid JSON followed by a pickle as the "data"
    raw["pickle as tensor bytes"] = header({"x": entry(dtype="U8", shape=(len(pickle.dumps(trap)),),
                                                        offsets=(0, len(pickle.dumps(trap))))}, pickle.dumps(trap))
    return raw


@pytest.mark.parametrize("case", sorted(pickles("x")))
def test_pickled_payloads_never_run(case, tmp_path):
    flag = tmp_path / "ran"
    data = pickles(flag)[case]
    assert not flag.exists()
    path = tmp_path / "model.pt"
    path.write_bytes(data)
    try:
        loaded = mg.load(path)
    except RuntimeError as e:
        assert "minigrad.load: cannot load" in str(e)
    else:
        # only raw bytes can come back: a tensor of the pickle's bytes, never an object
        assert case == "pickle as tensor bytes" and isinstance(loaded["x"], mg.Tensor), loaded
    for f in (io.BytesIO(data),):
        try:
            mg.load(f)
        except RuntimeError:
            pass
    assert not flag.exists(), "loading ran code"


def test_truncations_of_a_valid_file_all_raise(tmp_path):
    buffer = io.BytesIO()
    mg.save({"w": mg.arange(12.0).reshape(3, 4), "opt": {"step": 3, "m": [mg.ones(5)]}}, buffer)
    data = buffer.getvalue()
    # every prefix, and every single flipped byte of the header length, fails cleanly or loads
    for n in range(len(data)):
        with pytest.raises(RuntimeError, match="cannot load"):
            mg.load(io.BytesIO(data[:n]))
    for i in range(8):
        for bit in range(8):
            bad = bytearray(data)
            bad[i] ^= 1 << bit
            with pytest.raises(RuntimeError, match="cannot load"):
                mg.load(io.BytesIO(bytes(bad)))
    assert mg.load(io.BytesIO(data))["w"].tolist() == mg.arange(12.0).reshape(3, 4).tolist()
