"""`minigrad.nn.functional.linear`: `input @ weight.T + bias`, built as torch's at::linear so
the graph has the same nodes: 2-D input with bias is one `addmm` (AddmmBackward0); other
contiguous input with a contiguous bias of one non-1 dim is flattened to 2-D, `addmm`-ed and
viewed back (ViewBackward0);
otherwise `matmul` then an in-place `add_` of the bias (AddBackward0, version bumped).
"""

from .activation import _tensor

__all__ = ["linear"]


def linear(input, weight, bias=None):
    _tensor("linear", input)
    _tensor("linear", weight, "weight", 2)
    if bias is not None:
        _tensor("linear", bias, "bias", 3)
    if input.dim() == 0 or weight.dim() == 0:
        raise RuntimeError("both arguments to linear need to be at least 1D, but they are "
                           f"{input.dim()}D and {weight.dim()}D")
    if bias is not None and input.dim() == 2:
        return bias.addmm(input, weight.t())
    # torch flattens only when the bias could fuse into addmm: one dim other than 1, contiguous.
    # Another bias is added after matmul, so its errors come from matmul (e.g. bool `dot`) or
    # from `add_`'s broadcast check.
    if bias is not None and input.is_contiguous() and _fusable(bias):
        rows = 1
        for s in input.shape[:-1]:
            rows *= s
        out = bias.addmm(input.reshape(rows, input.shape[-1]), weight.t())
        return out.view(*input.shape[:-1], out.shape[1])
    output = input.matmul(weight.t())
    if bias is not None:
        output.add_(bias)
    return output


def _fusable(bias):
    """torch's `is_bias_likely_fusable`: 1-D, or one dim other than 1 (`bias.squeeze().dim() == 1`),
    and contiguous."""
    return (bias.dim() == 1 or sum(1 for s in bias.shape if s != 1) == 1) and bias.is_contiguous()
