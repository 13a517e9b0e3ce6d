"""`minigrad.nn.functional`: convolution, pooling and padding.

Each function turns torch's flexible arguments (an int or a tuple) into plain lists and calls
the core (`minigrad._C`), which checks the values with torch's messages, runs the kernels and
records the backward node torch records.
"""

import numbers

from ... import _C
from ..._formatting import type_name

__all__ = ["conv2d", "max_pool2d", "avg_pool2d", "adaptive_avg_pool2d", "pad"]


def _tensor(fn, name, pos, value, optional=False):
    if optional and value is None:
        return None
    if not isinstance(value, _C.TensorBase):
        raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be Tensor, not {type_name(value)}")
    return value


def _ints(fn, name, pos, value, n=2):
    """An int or a sequence of ints as a list (a single int, or a one-element list, repeats)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return [int(value)] * n
    if isinstance(value, (tuple, list)) and all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in value):
        value = [int(v) for v in value]
        return value * n if len(value) == 1 else value
    raise TypeError(f"{fn}(): argument '{name}' (position {pos}) must be tuple of ints, not {type_name(value)}")


def _pool_pair(fn, what, value, message):
    """torch's pooling argument rule: an int or a tuple of one or two ints."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return [int(value)] * 2
    if isinstance(value, (tuple, list)):
        if len(value) not in (1, 2):
            raise RuntimeError(f"{fn}: {what} {message}")
        value = [int(v) for v in value]
        return value * 2 if len(value) == 1 else value
    raise TypeError(f"{fn}(): argument '{what}' must be tuple of ints, not {type_name(value)}")


def conv2d(input, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    """2-d convolution over (N, C, H, W) or unbatched (C, H, W) input (ConvolutionBackward0)."""
    _tensor("conv2d", "input", 1, input)
    _tensor("conv2d", "weight", 2, weight)
    _tensor("conv2d", "bias", 3, bias, optional=True)
    stride = _ints("conv2d", "stride", 4, stride)
    dilation = _ints("conv2d", "dilation", 6, dilation)
    if not isinstance(groups, numbers.Integral) or isinstance(groups, bool):
        raise TypeError(f"conv2d(): argument 'groups' (position 7) must be int, not {type_name(groups)}")
    if isinstance(padding, str):
        if padding not in ("same", "valid"):
            raise RuntimeError(f"Invalid padding string: '{padding}'")
        out = _C.conv2d(input, weight, bias, stride, [], dilation, int(groups), padding)
    else:
        out = _C.conv2d(input, weight, bias, stride, _ints("conv2d", "padding", 5, padding), dilation, int(groups))
    return out


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """2-d max pooling (MaxPool2DWithIndicesBackward0); with `return_indices` also the int64
    positions of the maxima within each H*W plane."""
    _tensor("max_pool2d", "input", 1, input)
    kernel = _pool_pair("max_pool2d", "kernel_size", kernel_size, "must either be a single int, or a tuple of two ints")
    if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0):
        stride = kernel
    else:
        stride = _pool_pair("max_pool2d", "stride", stride, "must either be omitted, a single int, or a tuple of two ints")
    padding = _pool_pair("max_pool2d", "padding", padding, "must either be a single int, or a tuple of two ints")
    dilation = _pool_pair("max_pool2d", "dilation", dilation, "must be either a single int, or a tuple of two ints")
    if not return_indices:
        # values only: the kernel skips the indices unless autograd keeps them for backward
        return _C.max_pool2d_values(input, kernel, stride, padding, dilation, bool(ceil_mode))
    return _C.max_pool2d(input, kernel, stride, padding, dilation, bool(ceil_mode))


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True, divisor_override=None):
    """2-d average pooling (AvgPool2DBackward0)."""
    _tensor("avg_pool2d", "input", 1, input)
    kernel = _pool_pair("avg_pool2d", "kernel_size", kernel_size, "must either be a single int, or a tuple of two ints")
    if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0):
        stride = kernel
    else:
        stride = _pool_pair("avg_pool2d", "stride", stride, "must either be omitted, a single int, or a tuple of two ints")
    padding = _pool_pair("avg_pool2d", "padding", padding, "must either be a single int, or a tuple of two ints")
    if divisor_override is not None:
        divisor_override = int(divisor_override)
    return _C.avg_pool2d(input, kernel, stride, padding, bool(ceil_mode), bool(count_include_pad), divisor_override)


def adaptive_avg_pool2d(input, output_size):
    """Average pooling to a fixed (H, W) output (AdaptiveAvgPool2DBackward0; a 1x1 output is a
    mean, MeanBackward1, as in torch). `None` in `output_size` keeps that input size."""
    _tensor("adaptive_avg_pool2d", "input", 1, input)
    if isinstance(output_size, numbers.Integral):
        sizes = [int(output_size)] * 2
    else:
        sizes = list(output_size)
        if any(s is None for s in sizes):
            shape = input.shape[-len(sizes):] if input.dim() >= len(sizes) else [None] * len(sizes)
            sizes = [shape[i] if s is None else s for i, s in enumerate(sizes)]
        sizes = [int(s) for s in sizes]
    return _C.adaptive_avg_pool2d(input, sizes)


def pad(input, pad, mode="constant", value=None):
    """Pads (or, with negative amounts, crops) the last len(pad)//2 dims; `pad` lists
    (left, right) pairs from the last dim backwards. mode='constant' (ConstantPadNdBackward0) for
    any dims; 'reflect'/'replicate' for the last two dims (ReflectionPad2DBackward0 /
    ReplicationPad2DBackward0)."""
    _tensor("pad", "input", 1, input)
    if not isinstance(pad, (tuple, list)):
        raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, not {type(pad).__name__}")
    for i, p in enumerate(pad):
        if isinstance(p, (float, bool)) or isinstance(p, _C.TensorBase) and p.dim() > 0:
            raise TypeError(f"pad(): argument 'pad' (position 2) must be tuple of ints, but found element of type {type(p).__name__} at pos {i}")
    pad = [int(p) for p in pad]
    if mode == "constant":
        return _C.constant_pad(input, pad, 0.0 if value is None else float(value))
    if mode not in ("reflect", "replicate", "circular"):
        raise NotImplementedError(f"Unrecognised padding mode {mode}")
    if value is not None and value != 0:
        raise RuntimeError(f'Padding mode "{mode}" doesn\'t take in value argument')
    dim, n = input.dim(), len(pad)
    if not ((n == 2 and dim in (2, 3)) or (n == 4 and dim in (3, 4)) or (n == 6 and dim in (4, 5))):
        raise NotImplementedError(
            f"Padding size {n} is not supported for {dim}D input tensor.\n"
            "Supported combinations for non-constant padding:\n"
            "  - 2D or 3D input: padding size = 2 (pads last dimension)\n"
            "  - 3D or 4D input: padding size = 4 (pads last 2 dimensions)\n"
            "  - 4D or 5D input: padding size = 6 (pads last 3 dimensions)"
        )
    if mode == "circular" or n != 4:
        raise NotImplementedError(f"minigrad: pad(mode='{mode}') supports the last two dims only (4 padding values), not circular")
    return _C.pad2d(input, pad, mode)
