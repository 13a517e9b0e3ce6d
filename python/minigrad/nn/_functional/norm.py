"""`minigrad.nn.functional`: batch_norm, layer_norm and embedding. The work and the autograd
nodes (NativeBatchNormBackward0, NativeLayerNormBackward0, EmbeddingBackward0) live in the
Rust core (`ops/norm.rs`, `ops/embedding.rs`); here are torch's Python-level rules."""

import operator

from ... import _C
from ...autograd import no_grad

__all__ = ["batch_norm", "layer_norm", "embedding"]


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False, momentum=0.1, eps=1e-05):
    """Normalizes each channel (dim 1) over the batch and spatial dims. In training the batch
    statistics are used and the running ones updated in place (unbiased variance), as torch."""
    if training:
        size = input.size()
        values_per_channel = size[0]  # a 0-d input raises IndexError here, as in torch
        for d in size[2:]:
            values_per_channel *= d
        if values_per_channel == 1:
            raise ValueError(f"Expected more than 1 value per channel when training, got input size {size}")
    tensors = (input, running_mean, running_var, weight, bias)
    parsed = isinstance(input, _C.TensorBase) and all(t is None or isinstance(t, _C.TensorBase) for t in tensors[1:]) \
        and all(isinstance(v, (int, float)) for v in (momentum, eps))
    if parsed and input.numel() == 0:
        # torch returns an empty input's clone before any check (any dtype), scaled and shifted by
        # the first weight and bias so the graph still reaches them.
        out = input.clone()
        if weight is not None:
            out = out * weight[0]
        if bias is not None:
            out = out + bias[0]
        return out
    return _C.batch_norm(input, running_mean, running_var, weight, bias, bool(training), float(momentum), float(eps))


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-05):
    """Normalizes over the trailing `normalized_shape` dims, then scales and shifts."""
    if not isinstance(input, _C.TensorBase):  # torch's parser looks at the input first
        raise TypeError(f"layer_norm(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    for pos, arg, value in ((3, "weight", weight), (4, "bias", bias)):
        if value is not None and not isinstance(value, _C.TensorBase):
            raise TypeError(f"layer_norm(): argument '{arg}' (position {pos}) must be Tensor, not {type(value).__name__}")
    if not isinstance(normalized_shape, (tuple, list)):
        raise TypeError(
            "layer_norm(): argument 'normalized_shape' (position 2) must be tuple of ints, not "
            f"{type(normalized_shape).__name__}"
        )
    shape = [operator.index(d) for d in normalized_shape]
    if any(d < 0 for d in shape):  # no input has a negative size: torch's shape error
        raise RuntimeError(f"Given normalized_shape={shape}, expected input with shape [*, {', '.join(map(str, shape))}], "
                           f"but got input of size{list(input.shape)}")
    return _C.layer_norm(input, shape, weight, bias, float(eps))


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0, scale_grad_by_freq=False, sparse=False):
    """Looks up rows of `weight`; `padding_idx` rows get no gradient; `max_norm` renormalizes
    the looked-up rows of `weight` in place first (under no_grad, as torch)."""
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < weight.size(0), "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -weight.size(0), "Padding_idx must be within num_embeddings"
            padding_idx = weight.size(0) + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        input = input.contiguous()
        with no_grad():
            _C.embedding_renorm_(weight, input, float(max_norm), float(norm_type))
    return _C.embedding(weight, input, int(padding_idx), bool(scale_grad_by_freq), bool(sparse))
