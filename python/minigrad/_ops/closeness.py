"""`isclose`, `allclose` and `equal`: comparing whole tensors, as tests compare results. isclose is
built as ATen builds it (TensorCompare.cpp), op for op, so its roundings are torch's: equal
elements (and NaN pairs with `equal_nan`) are close; otherwise `|self - other| <= atol + |rtol *
other|` where the difference is finite, computed in the input's float dtype (integer and bool
inputs in the default float dtype). Nothing here records a graph: the results are bool."""

from .. import _C
from ._args import bool_arg, cpp_double, float_arg, scalar_name, tensor_arg
from .registry import add_function, method


def _close(op, self, other, rtol, atol, equal_nan, first):
    """The parsed arguments' isclose. `first` is the position of `other` in torch's messages
    (1 for the method, 2 for the function)."""
    tensor_arg(op, "other", first, other)
    rtol = float_arg(op, "rtol", first + 1, rtol)
    atol = float_arg(op, "atol", first + 2, atol)
    bool_arg(op, "equal_nan", first + 3, equal_nan)
    if self.dtype != other.dtype:
        raise RuntimeError(f"{scalar_name(self.dtype)} did not match {scalar_name(other.dtype)}")
    # `not x >= 0` (not `x < 0`): a NaN tolerance is refused too
    if not rtol >= 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {cpp_double(rtol)}")
    if not atol >= 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {cpp_double(atol)}")
    self, other = self.detach(), other.detach()  # the result is bool: no graph to build
    # ATen's steps, in place where it writes in place (the result is laid out as `self == other`)
    close = self == other
    floating = self.dtype.is_floating_point
    if equal_nan and floating:
        close |= self.isnan() & other.isnan()
    if rtol == 0 and atol == 0:
        # the inequality degenerates to equality (and inf - inf would be NaN)
        return close
    cast_self = self.float() if self.dtype == _C.bool else self
    cast_other = other if floating else other.float()
    allowed = (cast_other * rtol).abs() + atol
    actual = (cast_self - cast_other).abs()
    close |= actual.isfinite().logical_and_(actual <= allowed)
    return close


@method()
def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Elementwise `|self - other| <= atol + rtol * |other|` (or equal), as a bool tensor."""
    return _close("isclose", self, other, rtol, atol, equal_nan, 1)


@method()
def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    """`isclose(...).all()` as a Python bool."""
    return bool(_close("allclose", self, other, rtol, atol, equal_nan, 1).all().item())


@method()
def equal(self, other):
    """True when both have the same shape and equal elements (compared after type promotion;
    NaN equals nothing). A shape mismatch is False, not an error."""
    tensor_arg("equal", "other", 1, other)
    if self.shape != other.shape:
        return False
    return bool((self.detach() == other.detach()).all().item())


def _isclose_function(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    tensor_arg("isclose", "input", 1, input)
    return _close("isclose", input, other, rtol, atol, equal_nan, 2)


def _allclose_function(input, other, rtol=1e-05, atol=1e-08, equal_nan=False):
    tensor_arg("allclose", "input", 1, input)
    return bool(_close("allclose", input, other, rtol, atol, equal_nan, 2).all().item())


def _equal_function(input, other):
    tensor_arg("equal", "input", 1, input)
    tensor_arg("equal", "other", 2, other)
    return input.equal(other)


for _name, _f in (("isclose", _isclose_function), ("allclose", _allclose_function), ("equal", _equal_function)):
    _f.__name__ = _f.__qualname__ = _name
    add_function(_name, _f)
