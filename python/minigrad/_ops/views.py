"""Views, and the other tensor methods the Rust core defines on `_C.TensorBase` (clone, detach,
numel, ...): their module functions, the transpose properties T, mT, H and mH, `adjoint`,
`ravel`, and `minigrad.is_tensor`.

The methods themselves (view, reshape, permute, squeeze, t_, ...) are inherited from TensorBase
(rust/py/src/tensor.rs -> rust/core/src/ops/views.rs); no data moves, only shape/strides/offset.
"""

import warnings

from .. import _C
from .registry import add_method, forward, function

forward(
    "flatten", "squeeze", "unsqueeze", "transpose", "swapaxes", "t", "permute", "narrow", "select",
    "diagonal", "as_strided", "unbind", "split", "split_with_sizes", "chunk", "reshape",
    "clone", "numel", "detach", "detach_", "is_floating_point",
)


@function
def is_tensor(obj):
    return isinstance(obj, _C.TensorBase)


# ----- transposes (properties, with torch's deprecation warnings) -----

def T(self):
    n = self.dim()
    if n != 2 and n != 0:
        _warn_once(
            "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated and it "
            "will throw an error in a future release. Consider `x.mT` to transpose batches of matrices or "
            "`x.permute(*minigrad.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor."
        )
    if n == 0:
        _warn_once("Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.")
    return self.permute(tuple(range(n - 1, -1, -1)))


def mT(self):
    if self.dim() == 0:
        _warn_once("Tensor.mT is deprecated on 0-D tensors. This function is the identity in these cases.")
        return self
    if self.dim() < 2:
        raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got {self.dim()}-D tensor.")
    return self.transpose(-2, -1)


def H(self):
    """The conjugate transpose of a matrix; minigrad's tensors are real, so its transpose."""
    n = self.dim()
    if n == 0:
        _warn_once("Tensor.H is deprecated on 0-D tensors. Consider using x.conj().")
        return self
    if n != 2:
        hint = " For batches of matrices, consider using tensor.mH" if n > 2 else ""
        raise RuntimeError(f"tensor.H is only supported on matrices (2-D tensors). Got {n}-D tensor.{hint}")
    return self.transpose(-2, -1)


def _adjoint(self, name, deprecated):
    if self.dim() == 0:
        _warn_once(f"{deprecated} is deprecated on 0-D tensors. Consider using x.conj().")
        return self
    if self.dim() < 2:
        raise RuntimeError(f"tensor.{name} is only supported on matrices or batches of matrices. Got {self.dim()}-D tensor.")
    return self.transpose(-2, -1)  # conjugation is the identity on real tensors


def mH(self):
    return _adjoint(self, "mH", "Tensor.mH")


def adjoint(self):
    """The conjugate transpose of the last two dims (a view; minigrad's tensors are real)."""
    return _adjoint(self, "adjoint()", "adjoint()")


add_method("T", property(T))
add_method("mT", property(mT))
add_method("H", property(H))
add_method("mH", property(mH))
add_method("adjoint", adjoint)
forward("adjoint")


def ravel(self):
    """The elements as one dim: a view when they are contiguous, else a contiguous copy (torch's
    `contiguous().view(-1)`, so the graph shows CloneBackward0 then ViewBackward0)."""
    return self.contiguous().view(-1)


add_method("ravel", ravel)
forward("ravel")

_WARNED = set()


def _warn_once(message):
    """torch's TORCH_WARN_ONCE: a UserWarning the first time in the process."""
    if message not in _WARNED:
        _WARNED.add(message)
        warnings.warn(message, UserWarning, stacklevel=3)
