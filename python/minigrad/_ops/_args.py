"""Argument checks in torch's words, for the op families that take ints, int lists, flags and
dtypes (scans, sorting, shaping, fused pointwise ops).

torch numbers a method's arguments from the first one after `self` and a function's from `input`;
each check takes the position as torch would print it. Python's own binding errors are not used:
torch's messages differ ("missing 1 required positional arguments: "dim"").
"""

import numbers

from .. import _C

MISSING = object()
"""Default of an argument torch requires (so that its own message can be raised)."""


def type_name(value):
    return type(value).__name__


def is_int(value):
    """An int as torch's parser takes it: not a bool; NumPy integers and 0-d integer tensors
    (read with __index__) count."""
    if isinstance(value, _C.TensorBase):
        return value.dim() == 0 and not value.dtype.is_floating_point and not str(value.dtype).endswith("bool")
    return isinstance(value, numbers.Integral) and not isinstance(value, bool) and type(value).__name__ != "bool_"


_SCALAR_NAMES = {"bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int", "int64": "Long",
                 "float16": "Half", "bfloat16": "BFloat16", "float32": "Float", "float64": "Double"}


def scalar_name(dtype):
    """torch's ScalarType spelling of a dtype in messages ("Float", "Long", ...)."""
    return _SCALAR_NAMES[str(dtype).split(".")[-1]]


def wrap_dim(dim, ndim):
    """torch's maybe_wrap_dim: a negative dim counts from the end (a 0-d tensor takes -1 and 0)."""
    n = max(ndim, 1)
    if not -n <= dim < n:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    return dim + n if dim < 0 else dim


def required(op, name, value):
    if value is MISSING:
        raise TypeError(f'{op}() missing 1 required positional arguments: "{name}"')
    return value


def wrong(op, name, position, expected, value):
    where = f" (position {position})" if position else ""
    return TypeError(f"{op}(): argument '{name}'{where} must be {expected}, not {type_name(value)}")


def int_arg(op, name, position, value):
    """torch's `int` argument: an int (or a 0-d integer tensor) that fits int64, as its parser
    unpacks it (a wider one is its "Overflow when unpacking long long")."""
    if not is_int(value):
        raise wrong(op, name, position, "int", value)
    if not -2**63 <= int(value) < 2**63:
        raise ValueError("Overflow when unpacking long long")
    return int(value)


def bool_arg(op, name, position, value):
    if not isinstance(value, bool):
        raise wrong(op, name, position, "bool", value)
    return value


def tensor_arg(op, name, position, value):
    if not isinstance(value, _C.TensorBase):
        raise wrong(op, name, position, "Tensor", value)
    return value


def number_arg(op, name, position, value):
    if isinstance(value, _C.TensorBase) or not isinstance(value, numbers.Number):
        raise wrong(op, name, position, "Number", value)
    return value


def float_arg(op, name, position, value):
    """torch's `float` (C++ double) argument: any real number, bool included, or a 0-d tensor
    that does not require grad, as a Python float."""
    if isinstance(value, _C.TensorBase):
        if value.dim() == 0 and not value.requires_grad:
            return float(value.item())
    elif isinstance(value, numbers.Real):
        return float(value)
    raise wrong(op, name, position, "float", value)


def cpp_double(v):
    """A double as C++'s `<<` prints it in torch's messages (`-1`, `0.5`, `1e-20`, `nan`)."""
    return format(v, "g")


def dtype_arg(op, value):
    if value is not None and not isinstance(value, _C.dtype):
        raise wrong(op, "dtype", None, "torch.dtype", value)
    return value


def ints_arg(op, name, position, value, *, single=True):
    """torch's `int[]` argument: a tuple or list of ints (or one int when `single`; a 0-d or
    one-element integer tensor counts as an int, as torch reads it with __index__)."""
    if single and (is_int(value) or _int_tensor(value)):
        return [int(value)]
    if isinstance(value, (tuple, list)) and all(is_int(v) or _int_tensor(v) for v in value):
        return [int(v) for v in value]
    raise wrong(op, name, position, "tuple of ints", value)


def tensors_arg(op, tensors):
    """torch's `Tensor[]` argument (position 1): a list or tuple of tensors, as a list."""
    if isinstance(tensors, _C.TensorBase) or not isinstance(tensors, (list, tuple)):
        raise wrong(op, "tensors", 1, "tuple of Tensors", tensors)
    for i, t in enumerate(tensors):
        if not isinstance(t, _C.TensorBase):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type_name(t)}")
    return list(tensors)


def _int_tensor(value):
    return isinstance(value, _C.TensorBase) and value.numel() == 1 and not value.dtype.is_floating_point


def varargs_ints(op, name, position, args):
    """A method's `*sizes` (`x.repeat(2, 3)`, `x.repeat((2, 3))`, `x.flip(0, 1)`)."""
    if len(args) == 1 and not is_int(args[0]):
        return ints_arg(op, name, position, args[0])
    for i, v in enumerate(args):
        if not is_int(v):
            raise TypeError(
                f"{op}(): argument '{name}' failed to unpack the object at pos {i + 1} with error "
                f'"type must be tuple of ints,but got {type_name(v)}"'
            )
    return [int(v) for v in args]
