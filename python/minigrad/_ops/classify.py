"""Float classification, elementwise, as bool tensors: `isnan`, `isinf`, `isposinf`, `isneginf`,
`isfinite`, `signbit`. None of them records a graph (the intermediates are taken of a detached
view). Integer and bool inputs hold no NaN or infinity: isfinite is all True, the others all
False.

The layout is torch's. isnan, isinf and isfinite are composites in ATen (`x != x`, `x.abs() ==
inf`, `(x == x) * (x.abs() != inf)`; `zeros_like` / `ones_like` for integers) and are composed
the same way here. isposinf, isneginf and signbit are unary TensorIterator ops there, laid out as
`x != x` is; a comparison with a Python number lays out size-1 and empty dims differently, so
theirs compare with a tensor laid out like `x` (`full_like` keeps its strides), and an empty
input answers `x != x` directly."""

import math

from .. import _C, _creation
from .registry import method


def _floating(x):
    return x.dtype.is_floating_point


def _unary(x, compute):
    """`compute(x detached)` for a non-empty float x; all False laid out as torch's unary op."""
    if x.numel() == 0:
        return x != x
    return compute(x.detach())


@method(function=True)
def isnan(self):
    """True where self is NaN (NaN is the one value not equal to itself)."""
    return self != self


@method(function=True)
def isinf(self):
    """True where self is +inf or -inf."""
    if not _floating(self):
        return _creation.zeros_like(self, dtype=_C.bool)
    return self.detach().abs() == math.inf  # ATen's isinf, composed as it is


@method(function=True)
def isposinf(self):
    if not _floating(self):
        return self != self  # torch fills a TensorIterator output (isinf: zeros_like)
    return _unary(self, lambda x: x == _creation.full_like(x, math.inf))


@method(function=True)
def isneginf(self):
    if not _floating(self):
        return self != self
    return _unary(self, lambda x: x == _creation.full_like(x, -math.inf))


@method(function=True)
def isfinite(self):
    """True where self is neither NaN nor infinite."""
    if not _floating(self):
        return _creation.ones_like(self, dtype=_C.bool)
    x = self.detach()
    return (x == x) & (x.abs() != math.inf)  # ATen's isfinite (its `*` of two bools is `&`)


@method(function=True)
def signbit(self):
    """True where the sign bit is set: negative numbers, -0.0 and NaNs with the bit, which no
    comparison sees (`copysign(1, -x)` carries it, flipped, to a number that compares)."""
    if self.dtype == _C.bool or self.numel() == 0:
        return self != self
    x = self.detach()
    if not _floating(x):
        return x < _creation.zeros_like(x)
    # `-x` (a unary op) is laid out as torch's unary signbit and is dense, so the tensors made
    # like it keep its strides; negation flips exactly the sign bit, NaNs' too
    neg = -x
    return _C.binary(_creation.ones_like(neg), neg, "copysign") > _creation.zeros_like(neg)
