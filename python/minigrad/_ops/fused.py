"""Pointwise ops torch fuses into one kernel: addcmul, addcdiv, lerp, sgn, nan_to_num and logit,
each with its in-place `_` variant. Argument kinds are checked here with torch's TypeErrors; the
work and every value error are in `_C` (rust/py/src/composite.rs -> rust/core/src/ops/fused.rs,
sgn.rs, nan_to_num.rs, logit.rs)."""

import numbers

from .. import _C
from ._args import MISSING, number_arg, tensor_arg, type_name
from .linalg import _method_and_function, _need_tensor
from .registry import add_function, method


def _addc(op, shift, inplace):
    def addc(input, tensor1=MISSING, tensor2=MISSING, *, value=1):
        if shift:
            _need_tensor(op, "input", 1, input)
        if tensor1 is MISSING or tensor2 is MISSING:
            given = [a for a in (tensor1, tensor2) if a is not MISSING]
            got = ", ".join(type_name(a) for a in ([input] if shift else []) + given)
            lead = "Tensor input, " if shift else ""
            raise TypeError(f"{op}() received an invalid combination of arguments - got ({got}), but expected "
                            f"({lead}Tensor tensor1, Tensor tensor2, *, Number value = 1)")
        tensor_arg(op, "tensor1", 1 + shift, tensor1)
        tensor_arg(op, "tensor2", 2 + shift, tensor2)
        number_arg(op, "value", None, value)
        return _C.addc(input, tensor1, tensor2, value, op.rstrip("_"), inplace)

    addc.__name__ = op
    return addc


@_method_and_function
def addcmul(shift):
    f = _addc("addcmul", shift, False)
    f.__doc__ = "self + value * tensor1 * tensor2 (broadcast, promoted)."
    return f


@_method_and_function
def addcdiv(shift):
    f = _addc("addcdiv", shift, False)
    f.__doc__ = "self + value * tensor1 / tensor2 (broadcast, promoted; not for two integer tensors)."
    return f


addcmul_ = method()(_addc("addcmul_", 0, True))
addcdiv_ = method()(_addc("addcdiv_", 0, True))

_LERP_OPTIONS = ("(Tensor end, Tensor weight)", "(Tensor end, Number weight)")


def _lerp(op, shift, inplace):
    def lerp(input, end=MISSING, weight=MISSING):
        if shift:
            _need_tensor(op, "input", 1, input)
        number = not isinstance(weight, _C.TensorBase) and weight is not MISSING and not isinstance(weight, str)
        if not isinstance(end, _C.TensorBase) or weight is MISSING or not (isinstance(weight, _C.TensorBase) or number):
            given = [a for a in (end, weight) if a is not MISSING]
            got = ", ".join(type_name(a) for a in ([input] if shift else []) + given)
            lead = "Tensor input, " if shift else ""
            tail = ", *, Tensor out = None" if shift else ""
            lines = "".join(f" * ({lead}{o[1:-1]}{tail})\n" for o in _LERP_OPTIONS)
            raise TypeError(f"{op}() received an invalid combination of arguments - got ({got}), but expected one of:\n{lines}")
        if number:
            number_arg(op, "weight", 2 + shift, weight)
        return _C.lerp(input, end, weight, inplace)

    lerp.__name__ = op
    return lerp


@_method_and_function
def lerp(shift):
    f = _lerp("lerp", shift, False)
    f.__doc__ = "self + weight * (end - self), weight a number or a tensor (torch's two formulas)."
    return f


lerp_ = method()(_lerp("lerp_", 0, True))


@_method_and_function
def sgn(shift):
    def sgn(input):
        """The sign of each element (for real tensors, `sign`, with its own SgnBackward0)."""
        if shift:
            _need_tensor("sgn", "input", 1, input)
        return _C.sgn(input, False)

    return sgn


@method()
def sgn_(self):
    """In-place sgn."""
    return _C.sgn(self, True)


def _float_or_none(op, name, value, position=None):
    """torch's `float?` argument: None, or a real number (a bool, an int of any size, a 0-d
    tensor read as its value), as a Python float. `position` is named in the TypeError where
    torch names it (a positional parameter)."""
    if value is None:
        return None
    if isinstance(value, _C.TensorBase) and value.dim() == 0:
        return float(value.item())
    if isinstance(value, _C.TensorBase) or not isinstance(value, numbers.Real):
        where = f" (position {position})" if position else ""
        raise TypeError(f"{op}(): argument '{name}'{where} must be float, not {type_name(value)}")
    return float(value)


def _nan_to_num(op, self, nan, posinf, neginf, inplace):
    values = [_float_or_none(op, name, v) for name, v in (("nan", nan), ("posinf", posinf), ("neginf", neginf))]
    return _C.nan_to_num(self, 0.0 if values[0] is None else values[0], values[1], values[2], inplace)


@_method_and_function
def nan_to_num(shift):
    def nan_to_num(input, nan=0.0, posinf=None, neginf=None):
        """NaN, +inf and -inf replaced by `nan`, `posinf` and `neginf` (by default 0, the dtype's
        largest finite value and its lowest); integer and bool tensors come back as a copy."""
        if shift:
            _need_tensor("nan_to_num", "input", 1, input)
        return _nan_to_num("nan_to_num", input, nan, posinf, neginf, False)

    return nan_to_num


@method()
def nan_to_num_(self, nan=0.0, posinf=None, neginf=None):
    """In-place nan_to_num (one write, NanToNumBackward0 saving self as it was)."""
    return _nan_to_num("nan_to_num_", self, nan, posinf, neginf, True)


@_method_and_function
def logit(shift):
    def logit(input, eps=None):
        """log(x / (1 - x)), x first clamped to [eps, 1 - eps] when eps is given (and >= 0)."""
        if shift:
            _need_tensor("logit", "input", 1, input)
        return _C.logit(input, _float_or_none("logit", "eps", eps, 1 + shift), False)

    return logit


@method()
def logit_(self, eps=None):
    """In-place logit (LogitBackward0, saving a clone of self as it was)."""
    return _C.logit(self, _float_or_none("logit_", "eps", eps), True)


def _logit_function_(input, eps=None):
    _need_tensor("logit_", "input", 1, input)
    return _C.logit(input, _float_or_none("logit_", "eps", eps, 2), True)


_logit_function_.__name__ = _logit_function_.__qualname__ = "logit_"
add_function("logit_", _logit_function_)
