"""Module-level ops (`minigrad.exp(x)`, `minigrad.add(a, b, alpha=2)`, ...), each forwarding to
the Tensor method of the same name so the op is defined once."""

from . import _C
from ._mixins import MIXINS
from ._tensor import BINARY_OPS, UNARY_OPS

__all__ = []


def _forward(name):
    def function(*args, **kwargs):
        if args:
            input, args = args[0], args[1:]
        elif "input" in kwargs:
            input = kwargs.pop("input")
        else:
            raise TypeError(f"{name}() missing 1 required positional argument: 'input'")
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = name
    function.__doc__ = f"minigrad.{name}(input, ...) is input.{name}(...)."
    return function


_FORWARDED = (
    list(UNARY_OPS) + [n + "_" for n in UNARY_OPS] + list(BINARY_OPS)
    + ["add", "sub", "subtract", "div", "divide", "clamp", "clip", "clamp_min", "clamp_max",
       "masked_fill", "logical_and", "logical_or", "logical_xor", "square", "gelu",
       "flatten", "squeeze", "unsqueeze", "transpose", "t", "permute", "narrow", "select",
       "diagonal", "as_strided", "unbind", "split", "chunk", "reshape", "clone", "numel"]
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


def where(condition, input, other):
    return _C.where(condition, input, other)


def is_tensor(obj):
    return isinstance(obj, _C.TensorBase)


def result_type(tensor1, tensor2):
    """The dtype `tensor1 op tensor2` would have (torch's promotion rules)."""
    return _C.binary(tensor1, tensor2, "add").dtype


__all__ += ["where", "is_tensor", "result_type"]
