"""`minigrad.save` / `minigrad.load`: tensors and containers of tensors in safetensors files.

Never pickle: a file holds only raw tensor bytes plus a JSON header, so loading
cannot run code. Tensors become safetensors entries; everything around them
(dicts with str/int keys, lists, tuples, None, bools, numbers, strings — e.g. an
optimizer's state_dict) is stored as JSON in the header's `__metadata__`.

A flat `{str: Tensor}` dict (a module's state_dict) is stored under its own keys,
so `safetensors.torch.load_file` reads the same dict back in torch.
"""

import json
import os
import struct

import numpy as np

from . import _creation
from ._tensor import Tensor

__all__ = ["save", "load"]

_FORMAT_KEY = "minigrad"  # metadata entry holding the JSON structure
_FORMAT_VERSION = 1
_DTYPES = {np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.int32),
           np.dtype(np.bool_), np.dtype(np.float16), np.dtype(np.uint8), np.dtype(np.int8), np.dtype(np.int16)}
# NumPy has no bfloat16: its entries travel as uint16 bit patterns (a dtype minigrad has not, so
# every uint16 array here is one) and the header says "BF16", as torch's safetensors files do.
_BF16_BITS = np.dtype(np.uint16)


# ----- saving -------------------------------------------------------------------------

class _Encoder:
    """Walks an object: tensors go to `self.arrays` (by entry name), the rest to JSON nodes.

    JSON nodes: scalars and strings as themselves, lists as lists, every other
    container as a tagged object ({"kind": "dict" | "tuple" | "tensor", ...}), so no
    user value can be mistaken for a tag.
    """

    def __init__(self):
        self.arrays = {}

    def entry_name(self, path):
        name = ".".join(path) or "tensor"
        unique, n = name, 1
        while unique in self.arrays:  # "a.b" as a key and as a nested path can collide
            unique, n = f"{name}#{n}", n + 1
        return unique

    def encode(self, obj, path):
        if isinstance(obj, Tensor):
            name = self.entry_name(path)
            self.arrays[name] = _tensor_to_array(obj)
            return {"kind": "tensor", "name": name, "requires_grad": bool(obj.requires_grad)}
        if obj is None or isinstance(obj, (bool, int, float, str)):
            return obj
        if isinstance(obj, list):
            return [self.encode(v, path + (str(i),)) for i, v in enumerate(obj)]
        if isinstance(obj, tuple):
            return {"kind": "tuple", "items": [self.encode(v, path + (str(i),)) for i, v in enumerate(obj)]}
        if isinstance(obj, dict):
            items = []
            for key, value in obj.items():
                if not (key is None or isinstance(key, (bool, int, float, str))):
                    raise TypeError(
                        f"minigrad.save: dict keys must be str, int, float, bool or None, "
                        f"got {type(key).__name__} at '{'.'.join(path) or '<root>'}'"
                    )
                items.append([key, self.encode(value, path + (str(key),))])
            return {"kind": "dict", "items": items}
        raise TypeError(
            f"minigrad.save: cannot save an object of type {type(obj).__module__}.{type(obj).__qualname__} "
            f"at '{'.'.join(path) or '<root>'}'; supported: Tensor, dict, list, tuple, str, int, float, "
            "bool, None"
        )


def _tensor_to_array(tensor):
    if str(tensor.dtype) == "minigrad.bfloat16":
        # bfloat16 is the top half of a float32 (the widening is exact)
        wide = tensor.detach().cpu().float().numpy()
        return (wide.view(np.uint32) >> 16).astype(np.uint16)
    array = tensor.detach().cpu().numpy()  # a cuda tensor is copied to the host (and loads there)
    if array.dtype not in _DTYPES:
        raise TypeError(f"minigrad.save: unsupported tensor dtype {tensor.dtype}")
    return np.array(array, order="C", copy=True)  # saved contiguous, independent of the tensor


def _is_flat_state_dict(obj):
    return isinstance(obj, dict) and all(isinstance(k, str) and isinstance(v, Tensor) for k, v in obj.items())


def save(obj, f):
    """Save a tensor, or a (nested) container of tensors and plain values, to `f`.

    `f` is a path (str or os.PathLike) or a binary file object opened for writing.
    """
    encoder = _Encoder()
    if _is_flat_state_dict(obj):
        for key, value in obj.items():
            encoder.arrays[key] = _tensor_to_array(value)
        structure = {"kind": "state_dict", "keys": list(obj),
                     "requires_grad": [bool(v.requires_grad) for v in obj.values()]}
    else:
        try:
            structure = encoder.encode(obj, ())
        except RecursionError:
            raise ValueError("minigrad.save: the object contains a reference cycle or is nested too deeply") from None
    import safetensors.numpy  # imported on use: `import minigrad` stays light

    metadata = {_FORMAT_KEY: json.dumps({"version": _FORMAT_VERSION, "root": structure})}
    data = safetensors.numpy.save(encoder.arrays, metadata=metadata)
    if any(a.dtype == _BF16_BITS for a in encoder.arrays.values()):
        data = _retag(data, "U16", "BF16")

    if isinstance(f, (str, os.PathLike)):
        with open(f, "wb") as handle:
            handle.write(data)
    elif hasattr(f, "write"):
        f.write(data)
    else:
        raise TypeError(f"minigrad.save: f must be a path or a writable binary file object, got {type(f).__name__}")


# ----- loading ------------------------------------------------------------------------

class _Corrupt(Exception):
    """Raised inside the loader; turned into a RuntimeError naming the file."""


def _read_header(data):
    """The JSON header of a safetensors blob (checked before the library parses it)."""
    if len(data) < 8:
        raise _Corrupt(f"file is {len(data)} bytes long, shorter than the 8-byte safetensors header length")
    (header_len,) = struct.unpack("<Q", data[:8])
    if header_len > len(data) - 8:
        raise _Corrupt(
            f"header claims {header_len} bytes but only {len(data) - 8} follow (truncated or not a safetensors file)"
        )
    try:
        header = json.loads(data[8:8 + header_len].decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise _Corrupt(f"header is not valid JSON ({type(e).__name__}: {e})") from None
    if not isinstance(header, dict):
        raise _Corrupt("header is not a JSON object")
    return header


def _retag(data, old, new):
    """`data` with every tensor entry of dtype `old` relabelled `new` (same bytes, new header)."""
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n].decode("utf-8"))
    for name, entry in header.items():
        if name != "__metadata__" and isinstance(entry, dict) and entry.get("dtype") == old:
            entry["dtype"] = new
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)  # the data section stays 8-byte aligned
    return struct.pack("<Q", len(text)) + text + data[8 + n:]


class _Bf16Bits:
    """A loaded entry the header called BF16: its uint16 bit patterns."""

    def __init__(self, bits):
        self.bits = bits


def _array_to_tensor(array, requires_grad=False):
    if isinstance(array, _Bf16Bits):
        wide = _creation.from_numpy((array.bits.astype(np.uint32) << 16).view(np.float32))
        tensor = wide.bfloat16()
        return tensor.requires_grad_(True) if requires_grad else tensor
    if array.dtype not in _DTYPES:
        raise _Corrupt(f"tensor dtype {array.dtype} is not supported by minigrad")
    if requires_grad not in (True, False):
        raise _Corrupt(f"requires_grad must be true or false, got {requires_grad!r}")
    if requires_grad and array.dtype.kind not in "f":
        raise _Corrupt(f"a {array.dtype} tensor cannot require grad (only floating point tensors can)")
    tensor = _creation.from_numpy(np.array(array, order="C", copy=True))  # a fresh leaf
    return tensor.requires_grad_(True) if requires_grad else tensor


class _Decoder:
    def __init__(self, arrays):
        self.arrays = arrays

    def decode(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list):
            return [self.decode(v) for v in node]
        if not isinstance(node, dict):
            raise _Corrupt(f"unexpected structure node {node!r}")
        kind = node.get("kind")
        if kind == "tensor":
            if node.get("name") not in self.arrays:
                raise _Corrupt(f"structure refers to a missing tensor entry {node.get('name')!r}")
            return _array_to_tensor(self.arrays[node["name"]], node.get("requires_grad", False))
        if kind == "tuple":
            return tuple(self.decode(v) for v in node["items"])
        if kind == "dict":
            return {key: self.decode(value) for key, value in node["items"]}
        if kind == "state_dict":
            keys, flags = node["keys"], node.get("requires_grad", [False] * len(node["keys"]))
            missing = [k for k in keys if k not in self.arrays]
            if missing:
                raise _Corrupt(f"missing tensor entries {missing}")
            return {k: _array_to_tensor(self.arrays[k], rg) for k, rg in zip(keys, flags)}
        raise _Corrupt(f"unknown structure node kind {kind!r}")


def load(f):
    """Load what `save` wrote. A safetensors file from elsewhere loads as a `{name: Tensor}` dict.

    Raises RuntimeError (naming the file) when the file is corrupt, truncated or not safetensors.
    """
    if isinstance(f, (str, os.PathLike)):
        source = os.fspath(f)
        with open(f, "rb") as handle:
            data = handle.read()
    elif hasattr(f, "read"):
        source = getattr(f, "name", None) or repr(f)
        data = f.read()
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"minigrad.load: f must be opened in binary mode, read() returned {type(data).__name__}")
        data = bytes(data)
    else:
        raise TypeError(f"minigrad.load: f must be a path or a readable binary file object, got {type(f).__name__}")

    import safetensors.numpy

    try:
        header = _read_header(data)
        bf16 = {n for n, e in header.items() if isinstance(e, dict) and e.get("dtype") == "BF16"}
        if bf16:
            data = _retag(data, "BF16", "U16")
        try:
            arrays = safetensors.numpy.load(data)
        except Exception as e:  # the library's SafetensorError and numpy's errors on bad shapes/dtypes
            raise _Corrupt(str(e)) from None
        arrays = {n: _Bf16Bits(a) if n in bf16 else a for n, a in arrays.items()}
        metadata = header.get("__metadata__") or {}
        if _FORMAT_KEY not in metadata:
            return {name: _array_to_tensor(array) for name, array in arrays.items()}
        try:
            document = json.loads(metadata[_FORMAT_KEY])
            root = document["root"]
        except (ValueError, KeyError, TypeError, RecursionError) as e:
            raise _Corrupt(f"minigrad structure metadata is unreadable ({type(e).__name__}: {e})") from None
        try:
            return _Decoder(arrays).decode(root)
        except (KeyError, TypeError, ValueError, RecursionError) as e:
            raise _Corrupt(f"minigrad structure metadata is malformed ({type(e).__name__}: {e})") from None
    except _Corrupt as e:
        raise RuntimeError(f"minigrad.load: cannot load '{source}': {e}") from None
