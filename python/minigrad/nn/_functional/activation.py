"""`minigrad.nn.functional`: activations, softmax and dropout.

Each is a thin call into an existing core op (`relu` is `Tensor.relu`, `leaky_relu` and the elu
family `elu`/`selu`/`celu` are `_C.param_unary`, ...). With `inplace=True` the input itself is overwritten and returned: its
version counter goes up, and autograd raises torch's error if the old values were needed
(a leaf that requires grad, the output of `sigmoid`, whose backward reads that output, ...).
"""

import numbers
import warnings

from ... import _C
from ..._creation import rand, zeros
from ..._formatting import type_name

__all__ = [
    "relu", "relu_", "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "selu_", "celu", "celu_", "gelu", "silu",
    "sigmoid", "tanh",
    "softmax", "log_softmax", "dropout",
]


def _tensor(fn, input, name="input", position=1):
    """torch's TypeError for a non-tensor argument of a native op."""
    if not isinstance(input, _C.TensorBase):
        raise TypeError(f"{fn}(): argument '{name}' (position {position}) must be Tensor, not {type_name(input)}")
    return input


def relu(input, inplace=False):
    _tensor("relu_" if inplace else "relu", input)
    return input.relu_() if inplace else input.relu()


def relu_(input):
    return _tensor("relu_", input).relu_()


def _number(fn, name, value):
    """torch's `Number` argument: a number or a 0-d tensor; anything else is a TypeError."""
    if isinstance(value, _C.TensorBase) and value.dim() == 0 or isinstance(value, numbers.Number) and not isinstance(value, complex):
        return float(value)
    raise TypeError(f"{fn}(): argument '{name}' (position 2) must be Number, not {type_name(value)}")


def leaky_relu(input, negative_slope=0.01, inplace=False):
    fn = "leaky_relu_" if inplace else "leaky_relu"
    _tensor(fn, input)
    return _C.param_unary(input, "leaky_relu", _number(fn, "negative_slope", negative_slope), bool(inplace))


def leaky_relu_(input, negative_slope=0.01):
    _tensor("leaky_relu_", input)
    return _C.param_unary(input, "leaky_relu", _number("leaky_relu_", "negative_slope", negative_slope), True)


def elu(input, alpha=1.0, inplace=False):
    fn = "elu_" if inplace else "elu"
    _tensor(fn, input)
    return _C.param_unary(input, "elu", _number(fn, "alpha", alpha), bool(inplace))


def elu_(input, alpha=1.0):
    return _C.param_unary(_tensor("elu_", input), "elu", _number("elu_", "alpha", alpha), True)


def selu(input, inplace=False):
    """torch's selu: elu with alpha = 1.6732632423543772 and a scale of 1.0507009873554805 on both
    branches (EluBackward0/1 with those `_saved_alpha` / `_saved_scale`). `minigrad.selu(input)` is
    this without `inplace` (python/minigrad/_torch_activations.py)."""
    _tensor("selu_" if inplace else "selu", input)
    return _C.param_unary(input, "selu", 0.0, bool(inplace))


def selu_(input):
    return _C.param_unary(_tensor("selu_", input), "selu", 0.0, True)


def celu(input, alpha=1.0, inplace=False):
    """torch's celu: max(0, x) + min(0, alpha (exp(x / alpha) - 1)), elu with an input scale of
    1/alpha (CeluBackward0/1; alpha = 0 is torch's "alpha cannot be 0" error). `minigrad.celu(input,
    alpha)` is this without `inplace`."""
    fn = "celu_" if inplace else "celu"
    _tensor(fn, input)
    return _C.param_unary(input, "celu", _number(fn, "alpha", alpha), bool(inplace))


def celu_(input, alpha=1.0):
    return _C.param_unary(_tensor("celu_", input), "celu", _number("celu_", "alpha", alpha), True)


def gelu(input, *, approximate="none"):
    _tensor("gelu", input)
    if approximate == "none":
        return _C.unary(input, "gelu")
    if approximate == "tanh":
        return _C.unary(input, "gelu_tanh")
    raise RuntimeError("approximate argument must be either none or tanh.")


def silu(input, inplace=False):
    _tensor("silu_" if inplace else "silu", input)
    return _C.unary_(input, "silu") if inplace else _C.unary(input, "silu")


def sigmoid(input):
    return input.sigmoid()


def tanh(input):
    return input.tanh()


def _get_softmax_dim(name, ndim, stacklevel):
    """torch's legacy choice of dim when none is given (0 for 0-, 1- and 3-D input, else 1)."""
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. Change the call to include dim=X as an argument.",
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    return input.softmax(dim) if dtype is None else input.softmax(dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
    return input.log_softmax(dim) if dtype is None else input.log_softmax(dim, dtype=dtype)


_SCALAR_NAMES = {"int64": "Long", "int32": "Int", "bool": "Bool"}


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes each element with probability p and scales the rest by 1/(1-p), as torch's CPU
    path: `input * noise` (MulBackward0, the noise saved). Not training, p = 0 or an empty
    input give `input` itself. minigrad's random stream is its own, so the mask differs from
    torch's for the same seed (docs/divergences.md)."""
    # torch's order: its Python range check, the argument parser (input, train), the kernel's
    # check (which catches NaN)
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")
    fn = "dropout_" if inplace else "dropout"
    _tensor(fn, input)
    if not isinstance(training, bool):
        raise TypeError(f"{fn}(): argument 'train' (position 3) must be bool, not {type_name(training)}")
    if p != p:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p == 0 or not training or input.numel() == 0:
        return input
    if p == 1:
        noise = zeros((), dtype=input.dtype, device=input.device)
    elif not input.dtype.is_floating_point:
        # torch's bernoulli mask is a float tensor written into the input's dtype
        raise RuntimeError(f"result type Float can't be cast to the desired output type {_SCALAR_NAMES[str(input.dtype).split('.')[-1]]}")
    else:
        # bernoulli(1 - p): keep where a uniform draw falls below 1 - p (drawn on input's device)
        noise = (rand(input.shape, dtype=input.dtype, device=input.device) < (1 - p)).to(input.dtype).div_(1 - p)
    return input.mul_(noise) if inplace else input * noise
