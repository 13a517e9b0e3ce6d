"""Module-level ops (`minigrad.exp(x)`, `minigrad.add(a, b, alpha=2)`, ...), each forwarding to
the Tensor method of the same name so the op is defined once."""

import numbers as _numbers

from . import _C
from ._formatting import type_name
from ._mixins import MIXINS
from ._tensor import BINARY_OPS, TENSOR_OTHER, UNARY_OPS, Tensor

# Unary ops whose in-place form torch has only as a method.
_METHOD_ONLY_INPLACE = {"absolute", "sign", "logical_not", "bitwise_not"}

__all__ = []


def _forward(name):
    def function(*args, **kwargs):
        if args:
            input, args = args[0], args[1:]
        elif "input" in kwargs:
            input = kwargs.pop("input")
        else:
            raise TypeError(f"{name}() missing 1 required positional argument: 'input'")
        if not isinstance(input, _C.TensorBase):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type_name(input)}")
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = name
    function.__doc__ = f"minigrad.{name}(input, ...) is input.{name}(...)."
    return function


_FORWARDED = (
    list(UNARY_OPS) + [n + "_" for n in UNARY_OPS if n not in _METHOD_ONLY_INPLACE] + list(BINARY_OPS)
    + ["add", "sub", "subtract", "div", "divide", "clamp", "clip", "clamp_min", "clamp_max",
       "clamp_", "clip_", "clamp_min_", "clamp_max_", "fill_", "zero_", "square_",
       "masked_fill", "logical_and", "logical_or", "logical_xor", "square",
       "flatten", "squeeze", "unsqueeze", "transpose", "swapaxes", "t", "permute", "narrow", "select",
       "diagonal", "as_strided", "unbind", "split", "split_with_sizes", "chunk", "reshape", "clone",
       "numel", "detach", "detach_", "is_floating_point", "positive"]
)

# Each op-family mixin lists the methods that also exist as `minigrad.<name>` in FUNCTIONS,
# and may provide functions with no method form (cat, stack, ...) in MODULE_FUNCTIONS.
for _mixin in MIXINS:
    _FORWARDED += list(getattr(_mixin, "FUNCTIONS", ()))
    for _n, _f in getattr(_mixin, "MODULE_FUNCTIONS", {}).items():
        globals()[_n] = _f
        __all__.append(_n)

for _n in _FORWARDED:
    globals()[_n] = _forward(_n)
    __all__.append(_n)


def _binary_function(name, number_input):
    """`minigrad.<name>(input, other)`; like torch, arithmetic also takes a number as `input`,
    while maximum/minimum take tensors only."""
    method = getattr(Tensor, name)

    def function(input, other, **kwargs):
        if not (isinstance(input, _C.TensorBase) or (number_input and isinstance(input, _numbers.Number))):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type_name(input)}")
        if name in TENSOR_OTHER and not isinstance(other, _C.TensorBase):
            raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not {type_name(other)}")
        return method(input, other, **kwargs)

    function.__name__ = name
    function.__doc__ = f"minigrad.{name}(input, other, ...) is input.{name}(other, ...)."
    return function


_NUMBER_INPUT = {
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "remainder",
    "pow", "bitwise_and", "bitwise_or", "bitwise_xor",
}
for _n in list(BINARY_OPS) + ["add", "sub", "subtract", "div", "divide"]:
    globals()[_n] = _binary_function(_n, _n in _NUMBER_INPUT)


def where(condition, input, other):
    return _C.where(condition, input, other)


def is_tensor(obj):
    return isinstance(obj, _C.TensorBase)


def result_type(tensor1, tensor2):
    """The dtype `tensor1 op tensor2` would have (torch's promotion rules)."""
    return _C.binary(tensor1, tensor2, "add").dtype


__all__ += ["where", "is_tensor", "result_type"]
