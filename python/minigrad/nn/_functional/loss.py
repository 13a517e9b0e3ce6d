"""`minigrad.nn.functional`: losses. The kernels and autograd nodes (MseLossBackward0,
NllLossBackward0, BinaryCrossEntropyBackward0, ...) live in the Rust core (`ops/loss.rs`); here
are torch's Python-level rules (legacy size_average/reduce, size warnings)."""

import warnings

from ... import _C

__all__ = [
    "mse_loss",
    "l1_loss",
    "nll_loss",
    "cross_entropy",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "smooth_l1_loss",
    "huber_loss",
]


def _legacy_reduction(size_average, reduce, reduction):
    """torch's `_Reduction.legacy_get_string`: the deprecated flags override `reduction`. The
    flags are tested in torch's order (`size_average and reduce`, then `reduce`), so a flag that
    cannot be a truth value (a tensor of several elements) fails as it does there."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if size_average and reduce:
        ret = "mean"
    elif reduce:
        ret = "sum"
    else:
        ret = "none"
    warnings.warn(f"size_average and reduce args will be deprecated, please use reduction='{ret}' instead.", stacklevel=3)
    return ret


def _warn_broadcast(input, target):
    if target.size() != input.size():
        warnings.warn(
            f"Using a target size ({target.size()}) that is different to the input size ({input.size()}). "
            "This will likely lead to incorrect results due to broadcasting. Please ensure they have the same size.",
            stacklevel=3,
        )


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean squared error (MseLossBackward0); input and target broadcast against each other."""
    _warn_broadcast(input, target)  # torch reads the sizes first
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if weight is not None:
        raise NotImplementedError("mse_loss(weight=...) is not supported by minigrad")
    return _C.pointwise_loss("mse_loss", input, target, reduction)


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """Mean absolute error, composed as torch composes it: (input - target).abs().mean()."""
    _warn_broadcast(input, target)  # torch reads the sizes first
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if weight is not None:
        raise NotImplementedError("l1_loss(weight=...) is not supported by minigrad")
    return _C.pointwise_loss("l1_loss", input, target, reduction)


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """Smooth L1 (SmoothL1LossBackward0): squared over 2 beta below |input - target| = beta,
    linear above; beta=0 is l1_loss, as in torch."""
    _warn_broadcast(input, target)  # torch reads the sizes first
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _C.pointwise_loss("smooth_l1_loss", input, target, reduction, float(beta))


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """Huber loss (HuberLossBackward0): squared over 2 below |input - target| = delta, delta
    times the distance less delta / 2 above."""
    _warn_broadcast(input, target)  # torch reads the sizes first
    if weight is not None:
        raise NotImplementedError("huber_loss(weight=...) is not supported by minigrad")
    return _C.pointwise_loss("huber_loss", input, target, reduction, float(delta))


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean"):
    """Negative log likelihood of class-index targets: (C), (N, C) or (N, C, d1, ...) input."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _C.nll_loss(input, target, weight, reduction, int(ignore_index))


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None, reduction="mean",
                  label_smoothing=0.0):
    """log_softmax over the class dim then nll_loss; class-probability targets (shaped like the
    input) and label smoothing as torch composes them."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _C.cross_entropy(input, target, weight, reduction, int(ignore_index), float(label_smoothing))


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None, reduction="mean"):
    """-(t log(x) + (1 - t) log(1 - x)), each log clamped at -100 (BinaryCrossEntropyBackward0)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _C.binary_cross_entropy(input, target, weight, reduction)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None, reduction="mean",
                                     pos_weight=None):
    """Sigmoid and binary cross entropy in one numerically stable step
    (BinaryCrossEntropyWithLogitsBackward0)."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _C.binary_cross_entropy_with_logits(input, target, weight, pos_weight, reduction)
