"""`minigrad.selu`, `selu_`, `celu`, `celu_`: torch's module-level forms of nn.functional's selu and
celu, with torch's signatures there (no `inplace` argument)."""

from .nn._functional import activation as _F


def selu(input):
    return _F.selu(input)


def selu_(input):
    return _F.selu_(input)


def celu(input, alpha=1.0):
    return _F.celu(input, alpha)


def celu_(input, alpha=1.0):
    return _F.celu_(input, alpha)
