"""`minigrad.nn.functional.linear`: `input @ weight.T + bias`, built as torch's at::linear so
the graph has the same nodes: 2-D input with bias is one `addmm` (AddmmBackward0); other
contiguous input with bias is flattened to 2-D, `addmm`-ed and viewed back (ViewBackward0);
otherwise `matmul` then an in-place `add_` of the bias (AddBackward0, version bumped).
"""

from .activation import _tensor

__all__ = ["linear"]


def linear(input, weight, bias=None):
    _tensor("linear", input)
    _tensor("linear", weight, "weight", 2)
    if bias is not None:
        _tensor("linear", bias, "bias", 3)
    if bias is not None and input.dim() == 2:
        return bias.addmm(input, weight.t())
    if bias is not None and input.dim() >= 1 and input.is_contiguous():
        rows = 1
        for s in input.shape[:-1]:
            rows *= s
        out = bias.addmm(input.reshape(rows, input.shape[-1]), weight.t())
        return out.view(*input.shape[:-1], out.shape[1])
    output = input.matmul(weight.t())
    if bias is not None:
        output.add_(bias)
    return output
