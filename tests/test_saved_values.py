"""`grad_fn._saved_<name>` for non-tensor arguments: the same names, values and Python types as
torch's (ints, floats, bools, None, tuples, strings), for the view nodes and a sample of others.

One torch quirk is not copied: torch shows a negative saved int (dim=-1, index=-2) as its
unsigned 64-bit pattern (2**64 - 1); minigrad shows -1. The comparison maps torch's back."""

import numpy as np
import pytest
import torch

import minigrad as mg


def _signed(v):
    if isinstance(v, int) and not isinstance(v, bool) and v >= 2**63:
        return v - 2**64
    if isinstance(v, tuple):
        return tuple(_signed(e) for e in v)
    return v


def _x(m):
    return m.tensor(np.linspace(-2, 2, 60).reshape(4, 5, 3), dtype=m.float32, requires_grad=True)


PROGRAMS = {
    "slice": lambda m, x: x[1:3],
    "slice_open_end": lambda m, x: x[1:],
    "slice_negative": lambda m, x: x[:, -3:-1],
    "slice_step": lambda m, x: x[::2],
    "slice_past_end": lambda m, x: x[:, 1:100],
    "slice_after_select": lambda m, x: x[1, 2:],
    "select": lambda m, x: x[-1],
    "select_after_slice": lambda m, x: x[1:3, 2],
    "select_method": lambda m, x: x.select(-1, -2),
    "narrow": lambda m, x: x.narrow(-1, 1, 2),
    "narrow_negative_start": lambda m, x: x.narrow(1, -2, 2),
    "diagonal": lambda m, x: x.diagonal(1, -1, -2),
    "transpose": lambda m, x: x.transpose(-1, 0),
    "mT": lambda m, x: x.mT,
    "t": lambda m, x: x[0].t(),
    "permute": lambda m, x: x.permute(-1, 0, 1),
    "unsqueeze": lambda m, x: x.unsqueeze(-1),
    "index_none": lambda m, x: x[..., None],
    "squeeze": lambda m, x: x[:1].squeeze(),
    "squeeze_dim": lambda m, x: x[:1].squeeze(-3),
    "squeeze_dims": lambda m, x: x[:1].squeeze((0, 1)),
    "split": lambda m, x: x.split(2, -1)[0],
    "split_with_sizes": lambda m, x: x.split([1, 3], 0)[1],
    "chunk": lambda m, x: x.chunk(2, -2)[0],
    "unbind": lambda m, x: x.unbind(-1)[0],
    "expand": lambda m, x: x[:, :1].expand(-1, 3, -1),
    "view": lambda m, x: x.view(-1),
    "reshape_alias": lambda m, x: x.transpose(0, 1).reshape(5, 4, 3),
    "flatten": lambda m, x: x.flatten(),
    "as_strided": lambda m, x: x.as_strided((2, 2), (1, 2)),
    "as_strided_offset": lambda m, x: x.as_strided((2,), (1,), 3),
    "sum_dim": lambda m, x: x.sum(1),
    "sum_keepdim": lambda m, x: x.sum((0, -1), keepdim=True),
    "amax": lambda m, x: x.amax(-1),
    "leaky_relu": lambda m, x: m.nn.functional.leaky_relu(x, 0.2),
    "elu": lambda m, x: m.nn.functional.elu(x, 0.5),
    "gelu_tanh": lambda m, x: m.nn.functional.gelu(x, approximate="tanh"),
    "softmax": lambda m, x: m.softmax(x, 1),
    "addmm": lambda m, x: m.addmm(x[0, :, :2], x[1], x[2, :3, :2], beta=0.5, alpha=2),
    "max_pool2d": lambda m, x: m.nn.functional.max_pool2d(x[None], 2, 1, ceil_mode=True),
    "nll_loss": lambda m, x: m.nn.functional.nll_loss(x[0], m.tensor([0, 1, 2, 0, 1]), ignore_index=1),
    "cat": lambda m, x: m.cat([x, x], -1),
    "roll": lambda m, x: x.roll(1, 0),
    "repeat": lambda m, x: x.repeat(2, 1, 1),
    # a number operand is kept as a number; a tensor that needs no gradient is not kept (None)
    "xlogy_number_self": lambda m, x: m.xlogy(2, x.exp()),
    "xlogy_number_other": lambda m, x: m.xlogy(x, 2.5),
    "hypot_other_without_grad": lambda m, x: m.hypot(x, x.detach()),
    "hypot_self_without_grad": lambda m, x: m.hypot(x.detach(), x),
    "fmod_other_without_grad": lambda m, x: m.fmod(x, x.detach() + 3),
    "copysign_self_without_grad": lambda m, x: m.copysign(x.detach(), x),
    "trace": lambda m, x: m.trace(x[1]),
    "diag_of_a_matrix": lambda m, x: m.diag(x[0], -1),
    "diag_embed": lambda m, x: m.diag_embed(x, 1, 0, -1),
    "diagflat": lambda m, x: m.diagflat(x[0], 2),
    "nansum_dims": lambda m, x: x.nansum((0, -1), True),
    "nansum_all": lambda m, x: m.nansum(x),
    "var_mean": lambda m, x: m.var_mean(x, (0, 2), correction=0)[1],
    "std_mean": lambda m, x: m.std_mean(x, unbiased=False)[0],
    "aminmax_dim": lambda m, x: m.aminmax(x, dim=-1, keepdim=True).max,
    "aminmax_all": lambda m, x: x.aminmax().min,
    "mul_other_without_grad": lambda m, x: x.detach() * x,
    "div_self_without_grad": lambda m, x: x / (x.detach() + 5),
}


def _values(node):
    """Every non-tensor `_saved_*` attribute torch's node has, read from `node`."""
    out = {}
    for name in dir(node):
        if name.startswith("_saved_"):
            v = getattr(node, name)
            if not isinstance(v, torch.Tensor):
                out[name] = v
    return out


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_saved_values_match_torch(name):
    want_node = PROGRAMS[name](torch, _x(torch)).grad_fn
    got_node = PROGRAMS[name](mg, _x(mg)).grad_fn
    assert type(got_node).__name__ == type(want_node).__name__
    for attr, want in _values(want_node).items():
        got = getattr(got_node, attr)
        want = _signed(want)
        assert got == want and type(got) is type(want), f"{attr}: {got!r} != {want!r}"


def test_saved_float_values_are_floats_and_flags_are_bools():
    x = _x(mg)
    assert mg.nn.functional.leaky_relu(x, 0.2).grad_fn._saved_negative_slope == 0.2
    assert x.sum(1, keepdim=False).grad_fn._saved_keepdim is False
    assert mg.nn.functional.elu(x, float("inf")).grad_fn._saved_alpha == float("inf")


@pytest.mark.parametrize("view", ["slice", "select", "diagonal", "narrow"])
def test_backward_of_a_view_keeps_its_arguments(view):
    """With create_graph, slice/select/diagonal's gradient is one node (SliceBackwardBackward0,
    ...) that keeps the view's arguments but not the input's shape, as torch's."""
    f = {"slice": lambda x: x[1:3], "select": lambda x: x[-1], "diagonal": lambda x: x.diagonal(1),
         "narrow": lambda x: x.narrow(0, 1, 2)}[view]
    nodes = {}
    for m in (torch, mg):
        x = m.ones(4, 5, dtype=m.float64, requires_grad=True)
        (g,) = m.autograd.grad((f(x) ** 2).sum(), x, create_graph=True)
        nodes[m] = g.grad_fn
    want, got = nodes[torch], nodes[mg]
    assert type(got).__name__ == type(want).__name__
    values = _values(want)
    assert values and "_saved_self_sym_sizes" not in values
    for attr, v in values.items():
        assert getattr(got, attr) == _signed(v), attr
