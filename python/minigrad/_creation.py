"""Factory functions with torch's signatures: tensor, as_tensor, from_numpy, zeros/ones/full/empty
(and their `_like` forms), arange, linspace, eye, rand, randn, randint, manual_seed.

Argument checking follows torch's argument parser closely enough that the same mistakes raise the
same exception types (and, for the common ones, the same words)."""

import operator as _operator
import warnings as _warnings

import numpy as _np

from . import _C
from ._formatting import type_name
from ._cuda_probe import require as _require_cuda
from ._device import check_device
from ._size import Size

_NP_DTYPES = {
    _np.dtype(_np.float32): _C.float32, _np.dtype(_np.float64): _C.float64, _np.dtype(_np.int64): _C.int64,
    _np.dtype(_np.int32): _C.int32, _np.dtype(_np.bool_): _C.bool, _np.dtype(_np.float16): _C.float16,
    _np.dtype(_np.uint8): _C.uint8, _np.dtype(_np.int8): _C.int8, _np.dtype(_np.int16): _C.int16,
}
_TO_NP = {v: k for k, v in _NP_DTYPES.items()}
_MAX_DIMS = 64
_DLPACK_CUDA = 2  # DLPack's kDLCUDA device type
_WARNED = set()


def _warn_once(message):
    if message not in _WARNED:
        _WARNED.add(message)
        _warnings.warn(message, UserWarning, stacklevel=3)


def _check_dtype(name, dtype):
    if dtype is not None and not isinstance(dtype, _C.dtype):
        raise TypeError(f"{name}(): argument 'dtype' must be minigrad.dtype, not {type_name(dtype)}")
    return dtype


def _np_dtype_error(arr_dtype):
    return TypeError(
        f"can't convert np.ndarray of type numpy.{arr_dtype.type.__name__}. The only supported types are: "
        "float64, float32, float16, int64, int32, int16, int8, uint8, and bool."
    )


def _dtype_of_numpy(arr_dtype):
    try:
        return _NP_DTYPES[_np.dtype(arr_dtype)]
    except KeyError:
        raise _np_dtype_error(_np.dtype(arr_dtype)) from None


# ----- tensor(data): torch's compute_sizes / infer_scalar_type / recursive_store -----

def _is_sequence(obj):
    """Python's PySequence_Check, with tensors treated as leaves (as torch's are)."""
    if isinstance(obj, (dict, _C.TensorBase)):
        return False
    return hasattr(type(obj), "__getitem__") and not isinstance(obj, (int, float, complex, _np.generic))


def _compute_sizes(seq):
    sizes = []
    while _is_sequence(seq):
        n = len(seq)
        sizes.append(n)
        if len(sizes) > _MAX_DIMS:
            raise ValueError(f"too many dimensions '{type_name(seq)}'")
        if n == 0:
            break
        seq = seq[0]
    return sizes


def _infer_dtype(obj):
    if isinstance(obj, _C.TensorBase):
        return obj.dtype
    if isinstance(obj, (_np.generic, _np.ndarray)):
        return _dtype_of_numpy(obj.dtype)
    if isinstance(obj, bool):
        return _C.bool
    if isinstance(obj, int):
        return _C.int64
    if isinstance(obj, float):
        return _C.float32
    if isinstance(obj, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type_name(obj)}'")
    if _is_sequence(obj):
        if len(obj) == 0:
            return _C.float32
        result = None
        for item in obj:
            if item is obj:
                raise TypeError("new(): self-referential lists are incompatible")
            d = _infer_dtype(item)
            result = d if result is None else _promote(result, d)
        return result
    raise RuntimeError(f"Could not infer dtype of {type_name(obj)}")


_promote = _C.promote_types

# (lowest int, highest, lowest float, name): torch's `overflows` lets an unsigned type take
# negative ints down to -max (they wrap) but no negative float.
_INT_RANGE = {
    _C.int64: (-(2**63), 2**63 - 1, -(2**63), "int64"), _C.int32: (-(2**31), 2**31 - 1, -(2**31), "int32"),
    _C.int16: (-(2**15), 2**15 - 1, -(2**15), "int16"), _C.int8: (-128, 127, -128, "int8"),
    _C.uint8: (-255, 255, 0, "uint8"),
}
# narrow dtypes are stored through a wide container and one cast (float: through float32, as
# c10::Half(double) converts; ints wrap)
_CONTAINER = {_C.float16: _C.float32, _C.bfloat16: _C.float32, _C.uint8: _C.int64, _C.int8: _C.int64,
              _C.int16: _C.int64}


def _to_double(obj):
    if isinstance(obj, float):
        return obj
    tp = type(obj)
    if hasattr(tp, "__float__"):
        return float(tp.__float__(obj))
    if hasattr(tp, "__index__"):
        return float(_operator.index(obj))
    raise TypeError(f"must be real number, not {tp.__name__}")


def _to_long(obj):
    v = _operator.index(obj)
    if not -(2**63) <= v < 2**63:
        raise ValueError("Overflow when unpacking long long")
    return v


def _store_scalar(obj, dtype):
    """One leaf, converted as torch's store_scalar converts it."""
    if dtype.is_floating_point:
        return _to_double(obj)
    if dtype == _C.bool:
        return bool(obj) if isinstance(obj, float) else bool(_operator.index(obj))
    lo, hi, flo, name = _INT_RANGE[dtype]
    if isinstance(obj, float):
        if obj != obj or not flo <= obj <= hi:
            raise RuntimeError(f"value cannot be converted to type {name} without overflow")
        return int(obj)
    v = _to_long(obj)
    if not lo <= v <= hi:
        raise RuntimeError(f"value cannot be converted to type {name} without overflow")
    return v


def _recursive_store(obj, sizes, dim, dtype, out):
    if dim == len(sizes):
        out.append(_store_scalar(obj, dtype))
        return
    n = sizes[dim]
    try:
        items = obj if isinstance(obj, (list, tuple)) else list(obj)
    except TypeError:
        raise TypeError("not a sequence") from None
    if len(items) != n:
        raise ValueError(f"expected sequence of length {n} at dim {dim} (got {len(items)})")
    for item in items:
        if isinstance(item, _np.ndarray):
            _warn_once(
                "Creating a tensor from a list of numpy.ndarrays is extremely slow. Please consider converting "
                "the list to a single numpy.ndarray with numpy.array() before converting to a tensor."
            )
        _recursive_store(item, sizes, dim + 1, dtype, out)


def _from_python(data, dtype):
    sizes = _compute_sizes(data)
    dtype = _infer_dtype(data) if dtype is None else dtype
    container = _CONTAINER.get(dtype, dtype)
    out = _C.empty(*sizes, dtype=container)
    if out.numel():  # (torch reads no element at all when there is none to store)
        flat = []
        _recursive_store(data, sizes, 0, dtype, flat)
        with _np.errstate(over="ignore"):
            out.numpy()[...] = _np.array(flat, dtype=_TO_NP[container]).reshape(sizes)
    return out if container is dtype else _C.to_dtype_(out, dtype)


def tensor(data, *, dtype=None, device=None, requires_grad=False):
    """Copies `data` (nested sequences of numbers or tensors, an ndarray, a number or a tensor)."""
    _check_dtype("tensor", dtype)
    target = check_device(device)
    if isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type_name(data)}'")
    if isinstance(data, _C.TensorBase):
        _warnings.warn(
            "To copy construct from a tensor, it is recommended to use sourceTensor.detach().clone() or "
            "sourceTensor.detach().clone().requires_grad_(True), rather than minigrad.tensor(sourceTensor).",
            UserWarning, stacklevel=2,
        )
        out = data.detach().clone() if dtype is None else data.detach().to(dtype, copy=True)
    elif isinstance(data, _np.ndarray):
        out = _numpy_to_tensor(data).to(dtype or _data_dtype(data), copy=True)
    elif isinstance(data, _np.generic):
        out = _from_python(data.item(), dtype or _dtype_of_numpy(data.dtype))
    else:
        out = _from_python(data, dtype)
    out = _place(out, target)
    if requires_grad:
        out._requires_grad_factory()
    return out


def _data_dtype(arr):
    return _dtype_of_numpy(arr.dtype)


# ----- NumPy -----

def _numpy_to_tensor(arr):
    """A tensor over the array's memory (torch's tensor_from_numpy)."""
    dtype = _dtype_of_numpy(arr.dtype)
    if any(s < 0 for s in arr.strides):
        raise ValueError(
            "At least one stride in the given numpy array is negative, and tensors with negative strides are not "
            "currently supported. (You can probably work around this by making a copy of your array  with "
            "array.copy().) "
        )
    if any(s % arr.itemsize for s in arr.strides):
        raise ValueError(
            "given numpy array strides not a multiple of the element byte size. Copy the numpy array to "
            "reallocate the memory."
        )
    if not arr.flags.aligned:
        arr = arr.copy()
    del dtype
    return _C.from_numpy(arr)


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor over another library's memory through DLPack (torch's `from_dlpack`): `ext_tensor`
    is any object with `__dlpack__` (a torch, NumPy or CuPy array, a minigrad tensor) or a DLPack
    capsule. The memory is shared, the version counter is not (as in torch). `device` moves the
    result, `copy=True` always copies, `copy=False` refuses to."""
    if hasattr(ext_tensor, "__dlpack__"):
        if hasattr(ext_tensor, "__dlpack_device__"):
            _require_backend(*ext_tensor.__dlpack_device__())  # before the producer hands anything over
        capsule = ext_tensor.__dlpack__()
    else:
        if device is not None or copy is not None:
            raise AssertionError("device and copy kwargs not supported when ext_tensor is already a DLPack capsule.")
        capsule = ext_tensor
    out = _C.from_dlpack_capsule(capsule)
    _require_backend(*_C.dlpack_device(out))  # a bare capsule says its device only once consumed
    if device is not None:
        target = check_device(device)
        if target != out.device:
            if copy is False:
                raise BufferError("from_dlpack: copy=False, but the tensor is on another device")
            return _C.to_device(out, target.type, target.index)
    return out.clone() if copy else out


def _require_backend(device_type, index):
    """GPU memory from another library is usable only through the engine's CUDA backend, which
    is set up the first time a GPU is asked for: ask now (an imported tensor is often the first
    GPU tensor a program has), raising the RuntimeError that names what is missing."""
    if int(device_type) == _DLPACK_CUDA:
        _require_cuda(int(index))


def from_numpy(ndarray):
    """A tensor sharing the array's memory (writes are visible both ways)."""
    if not isinstance(ndarray, _np.ndarray):
        raise TypeError(f"expected np.ndarray (got {type_name(ndarray)})")
    if not ndarray.flags.writeable:
        _warn_once(
            "The given NumPy array is not writable, and minigrad does not support non-writable tensors. This means "
            "writing to this tensor will result in undefined behavior. You may want to copy the array to protect "
            "its data or make it writable before converting it to a tensor. This type of warning will be suppressed "
            "for the rest of this program."
        )
    return _numpy_to_tensor(ndarray)


def as_tensor(data, *, dtype=None, device=None):
    target = check_device(device) if device is not None else None
    out = _as_tensor(data, dtype, device)
    return out if target is None else _place(out, target)


def _as_tensor(data, dtype, device):
    """Avoids a copy where it can: the same tensor, or an ndarray's memory shared."""
    _check_dtype("as_tensor", dtype)
    check_device(device)
    if isinstance(data, _C.TensorBase):
        return data if dtype is None else data.to(dtype)
    if isinstance(data, _np.ndarray):
        t = _numpy_to_tensor(data)
        return t if dtype is None else t.to(dtype)
    if isinstance(data, _np.generic):
        return tensor(data, dtype=dtype)
    if isinstance(data, (str, bytes)):
        raise TypeError(f"new(): invalid data type '{type_name(data)}'")
    return _from_python(data, dtype)


# ----- sizes -----

def _is_int(x):
    if isinstance(x, _C.TensorBase):
        return x.dim() == 0 and not x.dtype.is_floating_point and x.dtype != _C.bool
    return isinstance(x, int) or (hasattr(type(x), "__index__") and not isinstance(x, (float, _np.floating)))


def _unpack_sizes(name, seq, start_pos):
    out = []
    for i, d in enumerate(seq):
        if not _is_int(d):
            raise TypeError(
                f"{name}(): argument 'size' failed to unpack the object at pos {start_pos + i} with error "
                f"\"type must be tuple of ints,but got {type_name(d)}\""
            )
        out.append(_operator.index(d))
    return tuple(out)


def _parse_size(name, args, size=None):
    """`f(2, 3)`, `f((2, 3))`, `f([2, 3])`, `f(size=(2, 3))`, as torch's parser reads a size."""
    if size is not None:
        if args:
            raise TypeError(f"{name}() got multiple values for argument 'size'")
        if not isinstance(size, (tuple, list, Size)):
            raise TypeError(f"{name}(): argument 'size' must be tuple of ints, not {type_name(size)}")
        return _unpack_sizes(name, size, 1)
    if not args:
        raise TypeError(f'{name}() missing 1 required positional arguments: "size"')
    first = args[0]
    if isinstance(first, (tuple, list, Size)):
        if len(args) > 1:
            raise TypeError(f"{name}() takes 1 positional argument but {len(args)} were given")
        if first and isinstance(first[0], bool):  # torch's parser refuses a leading bool
            raise TypeError(f"{name}(): argument 'size' (position 1) must be tuple of ints, but found element of type bool at pos 0")
        return _unpack_sizes(name, first, 1)
    if isinstance(first, bool) and len(args) > 1:
        raise TypeError(f"{name}() takes 1 positional argument but {len(args)} were given")
    if len(args) == 1 and (isinstance(first, bool) or not _is_int(first)):
        raise TypeError(f"{name}(): argument 'size' (position 1) must be tuple of ints, not {type_name(first)}")
    return _unpack_sizes(name, args, 1)


def _check_non_negative(name, shape):
    if any(d < 0 for d in shape):
        if name == "zeros":
            raise RuntimeError("zeros: Dimension size must be non-negative.")
        bad = next(d for d in shape if d < 0)
        raise RuntimeError(f"Trying to create tensor with negative dimension {bad}: [{', '.join(map(str, shape))}]")
    return shape


def _factory_size(name, args, size, dtype, device):
    _check_dtype(name, dtype)
    check_device(device)
    return _check_non_negative(name, _parse_size(name, args, size))


def _place(t, target):
    """`t` (built on the CPU) on the device `target` (a checked device), moved before any
    requires_grad, so the result is a leaf as torch's factories return. Constant factories
    allocate on the device directly instead (`_C.zeros(..., device=)`)."""
    if target is None or target.type == "cpu":
        return t
    return _C.to_device(t, target.type, target.index)


# ----- constant factories -----

def empty(*args, size=None, dtype=None, device=None, requires_grad=False):
    shape = _factory_size("empty", args, size, dtype, device)
    return _grad(_on_device(_C.empty, device, shape, dtype), requires_grad)


def zeros(*args, size=None, dtype=None, device=None, requires_grad=False):
    shape = _factory_size("zeros", args, size, dtype, device)
    return _grad(_on_device(_C.zeros, device, shape, dtype), requires_grad)


def ones(*args, size=None, dtype=None, device=None, requires_grad=False):
    shape = _factory_size("ones", args, size, dtype, device)
    return _grad(_on_device(_C.full, device, shape, 1, dtype or _C.float32), requires_grad)


def _fill_value(name, value):
    if isinstance(value, _C.TensorBase):
        if value.dim() != 0:
            raise TypeError(f"{name}(): argument 'fill_value' (position 2) must be Number, not Tensor")
        return value.item()
    if isinstance(value, (bool, int, float)) or isinstance(value, (_np.integer, _np.floating, _np.bool_)):
        return value
    raise TypeError(f"{name}(): argument 'fill_value' (position 2) must be Number, not {type_name(value)}")


def full(size, fill_value, *, dtype=None, device=None, requires_grad=False):
    _check_dtype("full", dtype)
    check_device(device)
    if not isinstance(size, (tuple, list, Size)):
        raise TypeError(f"full(): argument 'size' (position 1) must be tuple of ints, not {type_name(size)}")
    for i, d in enumerate(size):
        if not _is_int(d):
            raise TypeError(
                f"full(): argument 'size' (position 1) must be tuple of ints, but found element of type "
                f"{type_name(d)} at pos {i}"
            )
    shape = _check_non_negative("full", tuple(_operator.index(d) for d in size))
    return _grad(_on_device(_C.full, device, shape, _fill_value("full", fill_value), dtype), requires_grad)


def _like(name, input, dtype, device, fill=None):
    """A new tensor with `input`'s shape and memory order (torch's preserve_format)."""
    if not isinstance(input, _C.TensorBase):
        raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type_name(input)}")
    _check_dtype(name, dtype)
    target = input.device if device is None else check_device(device)
    if target != input.device:
        return _place(_C.empty_like(input.cpu() if target.type == "cpu" else input.detach().cpu(), dtype or input.dtype, fill), target)
    return _C.empty_like(input, dtype or input.dtype, fill)


def empty_like(input, *, dtype=None, device=None, requires_grad=False):
    return _grad(_like("empty_like", input, dtype, device), requires_grad)


def zeros_like(input, *, dtype=None, device=None, requires_grad=False):
    return _grad(_like("zeros_like", input, dtype, device, 0), requires_grad)


def ones_like(input, *, dtype=None, device=None, requires_grad=False):
    return _grad(_like("ones_like", input, dtype, device, 1), requires_grad)


def full_like(input, fill_value, *, dtype=None, device=None, requires_grad=False):
    return _grad(_like("full_like", input, dtype, device, _fill_value("full_like", fill_value)), requires_grad)


def _random_like(name, input, dtype, device, kind):
    # drawn where the tensor lives, by that device's generator (docs/gpu.md, "Random numbers")
    return _C.random_(_like(name, input, dtype, device), kind, 0.0, 1.0, True)


def rand_like(input, *, dtype=None, device=None, requires_grad=False):
    return _grad(_random_like("rand_like", input, dtype, device, "uniform"), requires_grad)


def randn_like(input, *, dtype=None, device=None, requires_grad=False):
    return _grad(_random_like("randn_like", input, dtype, device, "normal"), requires_grad)


def _on_device(factory, device, *args):
    """A constant factory's result allocated and filled on `device` itself (no host copy)."""
    target = check_device(device)
    cuda = None if target.type == "cpu" else target.index
    if factory is _C.full:
        return factory(*args, cuda=cuda)
    shape, dtype = args
    return factory(*shape, dtype=dtype, cuda=cuda)


def _grad(t, requires_grad):
    if requires_grad:
        t._requires_grad_factory()
    return t


# ----- ranges -----

def _number(name, arg, value):
    if isinstance(value, _C.TensorBase):
        if name == "arange" and value.dim() != 0:
            raise TypeError(f"arange(): argument '{arg}' (position {1 if arg in ('end', 'start') else 3}) must be Number, not Tensor")
        if value.numel() != 1:
            raise RuntimeError(f"a Tensor with {value.numel()} elements cannot be converted to Scalar")
        return value.item()
    if isinstance(value, (bool, int, float)) or isinstance(value, (_np.integer, _np.floating, _np.bool_)):
        return value.item() if isinstance(value, _np.generic) else value
    raise TypeError(f"{name}(): argument '{arg}' (position {1 if arg in ('end', 'start') else 3}) must be Number, not {type_name(value)}")


_NO_END = object()


def arange(start, end=_NO_END, step=1, *, dtype=None, device=None, requires_grad=False):
    _check_dtype("arange", dtype)
    check_device(device)
    if end is None:  # torch has no overload taking an explicit None end
        raise TypeError("arange() received an invalid combination of arguments - got "
                        f"({type_name(start)}, NoneType), but expected one of:\n * (Number end)\n"
                        " * (Number start, Number end)\n * (Number start, Number end, Number step)\n")
    if end is _NO_END:
        start, end = 0, _number("arange", "end", start)
    else:
        start, end = _number("arange", "start", start), _number("arange", "end", end)
    return _grad(_place(_C.arange(start, end, _number("arange", "step", step), dtype), check_device(device)), requires_grad)


def linspace(start, end, steps, *, dtype=None, device=None, requires_grad=False):
    _check_dtype("linspace", dtype)
    check_device(device)
    if isinstance(steps, bool) or not _is_int(steps):
        raise TypeError(f"linspace(): argument 'steps' (position 3) must be int, not {type_name(steps)}")
    start, end = _number("linspace", "start", start), _number("linspace", "end", end)
    return _grad(_place(_C.linspace(start, end, _operator.index(steps), dtype), check_device(device)), requires_grad)


def eye(n, m=None, *, dtype=None, device=None, requires_grad=False):
    _check_dtype("eye", dtype)
    check_device(device)
    for arg, pos, v in (("n", 1, n), ("m", 2, m)):
        if v is not None and (isinstance(v, bool) or not _is_int(v)):
            raise TypeError(f"eye(): argument '{arg}' (position {pos}) must be int, not {type_name(v)}")
    return _grad(_place(_C.eye(_operator.index(n), None if m is None else _operator.index(m), dtype), check_device(device)), requires_grad)


# ----- random -----

def _random(host_factory, kind, shape, dtype, device):
    """rand/randn: drawn on the CPU by the core's generator, or on a GPU by its own (a
    counter-based generator: the numbers differ, the distribution does not)."""
    target = check_device(device)
    if target is None or target.type == "cpu":
        return host_factory(*shape, dtype=dtype)
    return _C.random_(_on_device(_C.empty, target, shape, dtype), kind, 0.0, 1.0, True)


def rand(*args, size=None, dtype=None, device=None, generator=None, requires_grad=False):
    shape = _factory_size("rand", args, size, dtype, device)
    return _grad(_random(_C.rand, "uniform", shape, dtype, device), requires_grad)


def randn(*args, size=None, dtype=None, device=None, generator=None, requires_grad=False):
    shape = _factory_size("randn", args, size, dtype, device)
    return _grad(_random(_C.randn, "normal", shape, dtype, device), requires_grad)


def randint(low=0, high=None, size=None, *, dtype=None, device=None, generator=None, requires_grad=False):
    """randint(high, size) or randint(low, high, size), as torch."""
    _check_dtype("randint", dtype)
    check_device(device)
    if size is None:
        low, high, size = 0, low, high
    if size is None:
        raise TypeError("randint() missing 1 required positional arguments: \"size\"")
    if not isinstance(size, (tuple, list, Size)):
        raise TypeError(f"randint(): argument 'size' must be tuple of ints, not {type_name(size)}")
    shape = _check_non_negative("randint", _unpack_sizes("randint", size, 1))
    return _grad(_place(_C.randint(_operator.index(low), _operator.index(high), shape, dtype), check_device(device)), requires_grad)


def manual_seed(seed):
    """Seeds minigrad's generators, the CPU's and every GPU's, as torch.manual_seed does
    (reproducible runs; not torch's random streams)."""
    _C.manual_seed(int(seed))
    _C._cuda_manual_seed_all(int(seed))

