"""`tensordot` and `inner`, composed as ATen composes them (LinearAlgebra.cpp), so the graph shows
torch's nodes: contracted dims of size 1 summed away first (SumBackward1), both operands
permuted (PermuteBackward0) so the contracted dims meet, reshaped to matrices and multiplied by
`mm` (MmBackward0), then reshaped to the result (ViewBackward0); a full contraction of two
contiguous operands is a `dot` of them flattened, of others `(a.squeeze() * b.squeeze()).sum()`.
`dims` is parsed as torch.functional.tensordot parses it (an int n: the last n dims of a with
the first n of b; two lists; or a tensor of either)."""

import numbers
import warnings

from .. import _C, _creation
from ._args import int_arg, scalar_name, tensor_arg, type_name, wrap_dim
from .registry import add_function, method


def _dims_list(name, position, value):
    """The C++ parser's `int[]` for tensordot's dim lists (no single int here)."""
    if not isinstance(value, (list, tuple)):
        raise TypeError(f"tensordot(): argument '{name}' (position {position}) must be tuple of ints, not {type_name(value)}")
    for i, v in enumerate(value):
        if not (isinstance(v, numbers.Integral) or (isinstance(v, _C.TensorBase) and v.dim() == 0)):
            raise TypeError(f"tensordot(): argument '{name}' (position {position}) must be tuple of ints, but found "
                            f"element of type {type_name(v)} at pos {i}")
    return [int_arg("tensordot", name, position, v) for v in value]


def _split_dims(a, b, dims):
    """torch.functional.tensordot's reading of `dims`: (dims of a, dims of b)."""
    if not isinstance(dims, (tuple, list, _C.TensorBase, int)):
        raise RuntimeError("tensordot expects dims to be int or tuple[list[int], list[int]] or list[list[int]] "
                           f"containing two lists, but got dims={dims}")
    if isinstance(dims, (tuple, list)):
        dims_a, dims_b = dims
        return dims_a, dims_b
    if isinstance(dims, _C.TensorBase):
        if dims.numel() > 1:
            if dims.shape[0] != 2:
                raise AssertionError(f"dims tensor must have size 2 in first dimension, got {dims.shape[0]}")
            return dims[0].tolist(), dims[1].tolist()
        n = int(dims.item())
        if n < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        return list(range(-n, 0)), list(range(n))
    if dims < 0:
        raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
    if dims > min(a.dim(), b.dim()):
        raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
    return list(range(-dims, 0)), list(range(dims))


def _contracted(dims, ndim):
    """ATen's dim_list_to_bitset: the wrapped dims, each at most once."""
    seen = set()
    for d in dims:
        w = wrap_dim(d, ndim)
        if w in seen:
            raise RuntimeError(f"dim {w} appears multiple times in the list of dims")
        seen.add(w)
    return seen


def _tensordot(a, b, dims_a, dims_b):
    """ATen's tensordot(input1, input2, dims1, dims2), step for step."""
    if len(dims_a) != len(dims_b):
        raise RuntimeError("both dimension lists should have same length")
    if a.dtype != b.dtype:
        raise RuntimeError("both inputs should have same dtype")
    t1, t2, csize = a, b, 1
    for d1, d2 in zip(dims_a, dims_b):
        s1, s2 = a.size(d1), b.size(d2)
        if s2 == 1:  # a broadcast dim can be summed right away
            t1 = t1.sum(d1, True, dtype=t1.dtype)
        elif s1 == 1:
            t2 = t2.sum(d2, True, dtype=t2.dtype)
        else:
            if s1 != s2:
                raise RuntimeError(f"contracted dimensions need to match, but first has size {s1} in dim {d1} and "
                                   f"second has size {s2} in dim {d2}")
            csize *= s1
    c1, c2 = _contracted(dims_a, a.dim()), _contracted(dims_b, b.dim())
    p1 = [i for i in range(a.dim()) if i not in c1] + list(dims_a)
    p2 = list(dims_b) + [i for i in range(b.dim()) if i not in c2]
    kept1 = [t1.shape[i] for i in range(a.dim()) if i not in c1]
    kept2 = [t2.shape[i] for i in range(b.dim()) if i not in c2]
    size1, size2 = _prod(kept1), _prod(kept2)
    rsizes = kept1 + kept2
    if size1 != 1 or size2 != 1:
        return t1.permute(p1).reshape(size1, csize).mm(t2.permute(p2).reshape(csize, size2)).reshape(rsizes)
    # a full contraction: one dot product
    t1, t2 = t1.permute(p1), t2.permute(p2)
    if t1.is_contiguous() and t2.is_contiguous():
        return t1.flatten().dot(t2.flatten()).reshape(rsizes)
    return (t1.squeeze() * t2.squeeze()).sum(dtype=t1.dtype).reshape(rsizes)


def _prod(sizes):
    out = 1
    for s in sizes:
        out *= s
    return out


def tensordot(a, b, dims=2, out=None):
    """Sums the products of a's and b's elements over the dims `dims` pairs up (see the module
    docstring for its forms); the result has a's kept dims, then b's. With `out`, the result is
    written into it (resized to fit, as torch does) and `out` is returned."""
    dims_a, dims_b = _split_dims(a, b, dims)
    tensor_arg("tensordot", "self", 1, a)
    tensor_arg("tensordot", "other", 2, b)
    dims_a, dims_b = _dims_list("dims_self", 3, dims_a), _dims_list("dims_other", 4, dims_b)
    if out is not None:
        tensor_arg("tensordot", "out", 5, out)
    result = _tensordot(a, b, dims_a, dims_b)
    return result if out is None else _into(out, result)


def _into(out, result):
    """ATen's tensordot_out: the result's dtype required, `out` resized to its shape (with torch's
    deprecation warning when `out` had elements), then written (one version bump)."""
    if result.dtype != out.dtype:
        raise RuntimeError(f"tensordot: Expected the output tensor to have dtype {scalar_name(result.dtype)}, but got an "
                           f"output tensor with dtype {scalar_name(out.dtype)}")
    if out.shape != result.shape:
        if out.requires_grad and _C.is_grad_enabled():
            raise RuntimeError("tensordot(): the 'out' tensor was specified and requires gradients, and its shape does not "
                               "match the expected result. Either remove the 'out' argument, ensure it does not require "
                               "gradients, or make sure its shape matches the expected output.")
        if out.numel() != 0:
            warnings.warn(f"An output with one or more elements was resized since it had shape {list(out.shape)}, which "
                          f"does not match the required output shape {list(result.shape)}. This behavior is deprecated, "
                          "and in a future PyTorch release outputs will not be resized unless they have zero elements. "
                          "You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements with "
                          "t.resize_(0).", UserWarning, stacklevel=3)
        out.data = _creation.empty(tuple(result.shape), dtype=out.dtype, device=out.device)
    return out.copy_(result)


add_function("tensordot", tensordot)


def _inner(self, other, position):
    tensor_arg("inner", "other", position, other)
    if self.dim() == 0 or other.dim() == 0:
        return self * other
    if self.shape[-1] != other.shape[-1]:
        raise RuntimeError("inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(self.shape)} and {list(other.shape)}")
    return _tensordot(self, other, [-1], [-1])


@method()
def inner(self, other):
    """Sums over the last dim of both: `out[i..., j...] = sum_k self[i..., k] * other[j..., k]`."""
    return _inner(self, other, 1)


def _inner_function(input, other):
    return _inner(tensor_arg("inner", "input", 1, input), other, 2)


_inner_function.__name__ = _inner_function.__qualname__ = "inner"
add_function("inner", _inner_function)
