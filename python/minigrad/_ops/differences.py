"""`diff`: n-th forward differences along a dim, built as torch builds it (ATen's diff, a
CompositeImplicitAutograd function) so the graph shows its nodes: `prepend`/`append` joined by one
cat, then per order `narrow(dim, 1, len - 1) - narrow(dim, 0, len - 1)` (SubBackward0 over
SliceBackward0; `logical_xor` for bool); n = 0 is a copy (CopyBackwards)."""

from .. import _C, _creation
from ._args import int_arg, is_int, tensor_arg, wrap_dim, wrong
from .registry import add_function, method


def _check_compatible(self, other, dim):
    """torch's diff_check_compatible_shape for a prepend/append tensor."""
    d = wrap_dim(dim, self.dim())  # torch wraps the dim first
    if self.dim() != other.dim():
        raise RuntimeError("diff expects prepend or append to be the same dimension as input")
    for i in range(other.dim()):
        if i != d and self.shape[i] != other.shape[i]:
            raise RuntimeError(
                "diff expects the shape of tensor to prepend or append to match that of input except along the "
                f"differencing dimension; input.size({i}) = {self.shape[i]}, but got tensor.size({i}) = {other.shape[i]}"
            )


@method()
def diff(self, n=1, dim=-1, prepend=None, append=None):
    """The `n`-th forward difference along `dim` (`out[i] = x[i + 1] - x[i]`, applied n times;
    `logical_xor` of neighbours for bool), after joining `prepend` before and `append` after."""
    op = "diff"
    # torch's parser: every argument's type first, then the ints unpacked (past int64: overflow)
    for name, position, v in (("n", 1, n), ("dim", 2, dim)):
        if not is_int(v):
            raise wrong(op, name, position, "int", v)
    for name, position, t in (("prepend", 3, prepend), ("append", 4, append)):
        if t is not None:
            tensor_arg(op, name, position, t)
    n, dim = int_arg(op, "n", 1, n), int_arg(op, "dim", 2, dim)
    if self.dim() < 1:
        raise RuntimeError("diff expects input to be at least one-dimensional")
    if n < 0:
        raise RuntimeError(f"order must be non-negative but got {n}")
    for t in (prepend, append):
        if t is not None:
            _check_compatible(self, t, dim)
    x = self
    if n != 0 and (prepend is not None or append is not None):
        x = _C.cat([t for t in (prepend, self, append) if t is not None], dim)
    if n == 0:
        return _creation.zeros_like(x).copy_(x)
    length = x.shape[wrap_dim(dim, x.dim())] - 1
    for _ in range(min(n, length + 1)):
        later, earlier = x.narrow(dim, 1, length), x.narrow(dim, 0, length)
        x = later.logical_xor(earlier) if x.dtype == _C.bool else later - earlier
        length -= 1
    return x


def _diff_function(input, n=1, dim=-1, prepend=None, append=None):
    tensor_arg("diff", "input", 1, input)
    return input.diff(n, dim, prepend, append)


_diff_function.__name__ = _diff_function.__qualname__ = "diff"
add_function("diff", _diff_function)
