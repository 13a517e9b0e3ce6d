"""Graphs of the backward pass (create_graph=True) node for node as torch's: the gradient's
grad_fn and every node reachable from it, the saved values torch shows, requires_grad, and the
second and third derivatives' values (float64, against torch).

torch's first-order formula for tanh, sigmoid, relu, leaky_relu, elu, gelu, softmax and log_softmax (and
for the views slice, select, diagonal) is one backward op of its own (tanh_backward,
_softmax_backward_data, slice_backward, ...), so the gradient's grad_fn is `TanhBackwardBackward0`
(split and unbind join their pieces' gradients with cat / stack: CatBackward0); relu's
`threshold_backward` is differentiable in the saved result, so its gradient requires grad and a
second `grad` returns zeros instead of raising. Where torch's C++ formulas multiply by a Scalar
(`2 * result`, `exponent * self.pow(exponent - 1)`) the node is MulBackward1, and a leaf's node
is named `torch::autograd::AccumulateGrad`."""

import numpy as np
import pytest
import torch

import minigrad as mg


def graph_names(fn):
    """Node names reachable from `fn`, breadth first, each node once (nodes kept alive so their
    ids stay unique while walking)."""
    names, seen, keep, queue = [], set(), [], [fn]
    while queue:
        f = queue.pop(0)
        if f is None or id(f) in seen:
            continue
        seen.add(id(f))
        keep.append(f)
        names.append(f.name())
        queue.extend(n for n, _ in f.next_functions)
    return names


def to_numpy(t):
    # force: torch's sgn backward gives an efficient ZeroTensor, which numpy() refuses
    return t.detach().numpy(force=True) if isinstance(t, torch.Tensor) else t.detach().numpy()


def x_values():
    # both signs, and a value that is 0 after relu
    return np.array([[-1.3, 0.4, 2.1], [0.0, -0.2, 0.9]])


def F(lib):
    return lib.nn.functional


OPS = {
    "tanh": lambda lib, x: x.tanh(),
    "sigmoid": lambda lib, x: x.sigmoid(),
    "relu": lambda lib, x: x.relu(),
    "leaky_relu": lambda lib, x: F(lib).leaky_relu(x, 0.1),
    "leaky_relu_": lambda lib, x: F(lib).leaky_relu(x * 1, 0.1, inplace=True),
    "elu": lambda lib, x: F(lib).elu(x, 0.7),
    "elu_": lambda lib, x: F(lib).elu(x * 1, 0.7, inplace=True),
    "selu": lambda lib, x: lib.selu(x),
    "selu_": lambda lib, x: F(lib).selu(x * 1, inplace=True),
    "celu": lambda lib, x: lib.celu(x, 0.6),
    "celu_": lambda lib, x: F(lib).celu(x * 1, 0.6, inplace=True),
    "gelu": lambda lib, x: F(lib).gelu(x),
    "gelu_tanh": lambda lib, x: F(lib).gelu(x, approximate="tanh"),
    "sqrt": lambda lib, x: (x * x + 1).sqrt(),
    "rsqrt": lambda lib, x: (x * x + 1).rsqrt(),
    "reciprocal": lambda lib, x: (x * x + 1).reciprocal(),
    "pow_3": lambda lib, x: x.pow(3),
    "pow_2.5": lambda lib, x: (x * x + 1).pow(2.5),
    "rpow": lambda lib, x: 2 ** x,
    "log1p": lambda lib, x: (x * x).log1p(),
    "expm1": lambda lib, x: x.expm1(),
    "abs": lambda lib, x: x.abs() * x,
    "silu": lambda lib, x: F(lib).silu(x),
    "exp": lambda lib, x: x.exp(),
    "tan": lambda lib, x: (x * 0.5).tan(),
    "asin": lambda lib, x: (x * 0.4).asin(),
    "acos": lambda lib, x: (x * 0.4).acos(),
    "atan": lambda lib, x: x.atan(),
    "sinh": lambda lib, x: x.sinh(),
    "cosh": lambda lib, x: x.cosh(),
    "asinh": lambda lib, x: x.asinh(),
    "acosh": lambda lib, x: (x * x + 1.5).acosh(),
    "atanh": lambda lib, x: (x * 0.4).atanh(),
    "log2": lambda lib, x: (x * x + 1).log2(),
    "log10": lambda lib, x: (x * x + 1).log10(),
    "exp2": lambda lib, x: x.exp2(),
    "erf": lambda lib, x: x.erf(),
    "erfc": lambda lib, x: x.erfc(),
    "erfinv": lambda lib, x: (x * 0.4).erfinv(),
    "frac": lambda lib, x: x.frac() * x,
    "deg2rad": lambda lib, x: x.deg2rad() * x,
    "rad2deg": lambda lib, x: x.rad2deg() * x,
    "sinc": lambda lib, x: x.sinc(),
    "softmax": lambda lib, x: x.softmax(-1),
    "softmax_dim0": lambda lib, x: (x * 2).softmax(0),
    "log_softmax": lambda lib, x: x.log_softmax(-1),
    "log_softmax_dim0": lambda lib, x: (x * 2).log_softmax(0),
    "add_sub_alpha": lambda lib, x: lib.add(x * x, x.exp(), alpha=2.5) - lib.sub(x, x * x, alpha=1.5),
    "add_sub": lambda lib, x: (x * x + x.exp()) * (x - x * x),
    # views whose backward is torch's own op (slice_backward, ...): SliceBackwardBackward0
    # (each output x-shaped, as the seed gradient is)
    "slice": lambda lib, x: x * x[:, 1:2].exp(),
    "slice_step": lambda lib, x: x * x[:, ::2].tanh().sum(1, keepdim=True),
    "narrow": lambda lib, x: x * x.narrow(1, 0, 1).sigmoid(),
    "select": lambda lib, x: x * x[1].exp(),
    "select_column": lambda lib, x: x * x[:, 2].unsqueeze(1).exp(),
    "diagonal": lambda lib, x: x * x.diagonal(1).tanh().sum(),
    # multi-output views: torch joins the pieces' gradients by cat / stack (CatBackward0)
    "split": lambda lib, x: x * x.split(2, 1)[0].exp().sum(1, keepdim=True),
    "split_sizes_both": lambda lib, x: x * sum(p.tanh().sum(1, keepdim=True) for p in x.split([1, 2], 1)),
    "chunk": lambda lib, x: x * x.chunk(2, 0)[1].tanh(),
    "unbind": lambda lib, x: x * x.unbind(1)[2].exp().unsqueeze(1),
}


def first_grad(lib, name, seed_grad):
    x = lib.tensor(x_values(), dtype=lib.float64, requires_grad=True)
    y = OPS[name](lib, x)
    w = lib.tensor(seed_grad, dtype=lib.float64)
    (g,) = lib.autograd.grad(y, x, w, create_graph=True)
    return x, g


@pytest.mark.parametrize("name", list(OPS))
def test_the_gradients_graph_has_torchs_nodes(name):
    seed = np.random.default_rng(1).standard_normal((2, 3))
    got = {}
    for lib in (torch, mg):
        x, g = first_grad(lib, name, seed)
        got[lib.__name__] = (g.requires_grad, graph_names(g.grad_fn) if g.grad_fn is not None else None)
    assert got["minigrad"] == got["torch"]


@pytest.mark.parametrize("name", list(OPS))
def test_second_and_third_derivatives_match_torch(name):
    rng = np.random.default_rng(2)
    seed, w2, w3 = (rng.standard_normal((2, 3)) for _ in range(3))
    out = {}
    for lib in (torch, mg):
        x, g = first_grad(lib, name, seed)
        (h,) = lib.autograd.grad(g, x, lib.tensor(w2, dtype=lib.float64), create_graph=True)
        third = None
        if h.requires_grad:
            (t,) = lib.autograd.grad(h, x, lib.tensor(w3, dtype=lib.float64), allow_unused=True)
            third = None if t is None else to_numpy(t)
        out[lib.__name__] = (to_numpy(g), to_numpy(h), h.requires_grad, third)
    (g_t, h_t, rg_t, t_t), (g_m, h_m, rg_m, t_m) = out["torch"], out["minigrad"]
    np.testing.assert_allclose(g_m, g_t, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(h_m, h_t, rtol=1e-10, atol=1e-12)
    assert rg_m == rg_t
    if t_t is None:
        assert t_m is None or not np.any(t_m)
    else:
        np.testing.assert_allclose(t_m, t_t, rtol=1e-9, atol=1e-11)


@pytest.mark.parametrize("name", ["tanh", "sigmoid", "relu", "softmax", "log_softmax"])
def test_third_order_graph_names_match(name):
    got = {}
    for lib in (torch, mg):
        x, g = first_grad(lib, name, np.ones((2, 3)))
        (h,) = lib.autograd.grad(g.sum(), x, create_graph=True)
        got[lib.__name__] = graph_names(h.grad_fn) if h.grad_fn is not None else None
    assert got["minigrad"] == got["torch"]


SAVED = {
    "tanh": ["_saved_grad_output", "_saved_output"],
    "sigmoid": ["_saved_grad_output", "_saved_output"],
    "relu": ["_saved_self", "_saved_threshold"],
    "leaky_relu": ["_saved_negative_slope", "_saved_self"],
    "elu": ["_saved_alpha", "_saved_grad_output", "_saved_input_scale", "_saved_is_result", "_saved_scale",
            "_saved_self_or_result"],
    "selu": ["_saved_alpha", "_saved_input_scale", "_saved_is_result", "_saved_scale", "_saved_self_or_result"],
    "celu": ["_saved_alpha", "_saved_input_scale", "_saved_is_result", "_saved_scale", "_saved_self_or_result"],
    "gelu_tanh": ["_saved_approximate", "_saved_grad_output", "_saved_self"],
    # (not `_saved_dim`: torch shows dim -1 as 2**64 - 1 there, minigrad as -1)
    "softmax": ["_saved_grad_output", "_saved_output"],
    "log_softmax": ["_saved_grad_output", "_saved_output"],
}


@pytest.mark.parametrize("name", list(SAVED))
def test_backward_backward_nodes_show_torchs_saved_values(name):
    seen = {}
    for lib in (torch, mg):
        x, g = first_grad(lib, name, np.ones((2, 3)))
        fn = g.grad_fn
        values = {}
        for attr in SAVED[name]:
            v = getattr(fn, attr)
            # numbers and strings compared as their Python text (test_saved_values.py checks types)
            values[attr] = v.detach().numpy().tolist() if hasattr(v, "numpy") else str(v)
        seen[lib.__name__] = values
    mine, theirs = seen["minigrad"], seen["torch"]
    assert mine.keys() == theirs.keys()
    for attr in theirs:
        if isinstance(theirs[attr], str):
            assert mine[attr] == theirs[attr], attr
        else:  # a saved tensor: the forward's values (softmax's may differ in the last bit)
            np.testing.assert_allclose(mine[attr], theirs[attr], rtol=1e-15, atol=0, err_msg=attr)


def test_relu_gradient_penalty_runs_as_in_torch():
    """A WGAN-GP style penalty through relu alone: torch's gradient requires grad (its
    derivative in the input is zero), so the penalty's backward runs and gives zero."""
    for lib in (torch, mg):
        x = lib.tensor(x_values(), dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(x.relu().sum(), x, create_graph=True)
        penalty = ((g - 1) ** 2).sum()
        penalty.backward()
        assert x.grad.tolist() == [[0.0] * 3] * 2


def test_a_saved_grad_output_modified_in_place_raises_torchs_error():
    msgs = {}
    for lib in (torch, mg):
        x = lib.tensor(x_values(), dtype=lib.float64, requires_grad=True)
        y = x * 1.0
        w = lib.ones(2, 3, dtype=lib.float64, requires_grad=True) * 1.0
        (g,) = lib.autograd.grad(y.tanh(), y, w, create_graph=True)
        with lib.no_grad():
            w.mul_(2)
        with pytest.raises(RuntimeError) as e:
            g.sum().backward()
        msgs[lib.__name__] = str(e.value).replace("torch.", "").replace("minigrad.", "")
    assert msgs["minigrad"] == msgs["torch"]


FORWARD_SAVED = {
    "leaky_relu": ["_saved_negative_slope", "_saved_self"],
    "leaky_relu_": ["_saved_negative_slope", "_saved_result"],
    "elu": ["_saved_alpha", "_saved_input_scale", "_saved_scale", "_saved_self"],
    "elu_": ["_saved_alpha", "_saved_input_scale", "_saved_result", "_saved_scale"],
    "selu": ["_saved_alpha", "_saved_input_scale", "_saved_scale", "_saved_self"],
    "selu_": ["_saved_alpha", "_saved_input_scale", "_saved_result", "_saved_scale"],
    "celu": ["_saved_alpha", "_saved_self"],
    "celu_": ["_saved_alpha", "_saved_result"],
}


@pytest.mark.parametrize("name", list(FORWARD_SAVED))
def test_parameterised_activations_show_torchs_saved_parameters(name):
    seen = {}
    for lib in (torch, mg):
        x = lib.tensor(x_values(), dtype=lib.float64, requires_grad=True)
        fn = OPS[name](lib, x).grad_fn
        seen[lib.__name__] = (fn.name(), {a: str(getattr(fn, a)) if not hasattr(getattr(fn, a), "numpy")
                                         else getattr(fn, a).detach().numpy().tolist() for a in FORWARD_SAVED[name]})
    assert seen["minigrad"] == seen["torch"]


# Losses: torch's backward of mse_loss / nll_loss is one op (mse_loss_backward,
# nll_loss_backward), so the gradient's graph holds MseLossBackwardBackward0 /
# NllLossBackwardBackward0. The seed gradient requires grad here, so the derivatives in it
# (nll_loss of the new gradient, mse_loss_backward summed back to the seed's shape) run too.
TARGETS = np.array([0, 2, 1]), np.random.default_rng(5).standard_normal((3, 4))
LOSSES = {
    "mse_mean": lambda lib, x, y: F(lib).mse_loss(x, y),
    "mse_sum": lambda lib, x, y: F(lib).mse_loss(x, y, reduction="sum"),
    "mse_none": lambda lib, x, y: F(lib).mse_loss(x, y, reduction="none"),
    "mse_broadcast": lambda lib, x, y: F(lib).mse_loss(x, y[:1]),
    "nll_mean": lambda lib, x, y: F(lib).nll_loss(x.log_softmax(-1), lib.tensor(TARGETS[0])),
    "nll_sum_weight": lambda lib, x, y: F(lib).nll_loss(x.log_softmax(-1), lib.tensor(TARGETS[0]), reduction="sum",
                                                         weight=lib.tensor([0.5, 1.0, 2.0, 3.0], dtype=lib.float64)),
    "nll_none": lambda lib, x, y: F(lib).nll_loss(x.log_softmax(-1), lib.tensor(TARGETS[0]), reduction="none"),
    "nll_ignore": lambda lib, x, y: F(lib).nll_loss(x.log_softmax(-1), lib.tensor(TARGETS[0]), ignore_index=2),
    "nll_2d": lambda lib, x, y: F(lib).nll_loss(x.reshape(1, 3, 2, 2).log_softmax(1), lib.tensor([[[0, 2], [1, 1]]])),
    "cross_entropy": lambda lib, x, y: F(lib).cross_entropy(x, lib.tensor(TARGETS[0])),
}


def loss_grads(lib, name):
    rng = np.random.default_rng(7)
    x = lib.tensor(rng.standard_normal((3, 4)), dtype=lib.float64, requires_grad=True)
    y = lib.tensor(TARGETS[1], dtype=lib.float64, requires_grad=True)
    loss = LOSSES[name](lib, x, y)
    seed = lib.tensor(rng.standard_normal(tuple(loss.shape)), dtype=lib.float64, requires_grad=True)
    (g,) = lib.autograd.grad(loss, x, seed, create_graph=True)
    return x, y, seed, g


def loss_second_grads(lib, name):
    """loss_grads, and the derivatives of the gradient (weighted) in input, target and seed."""
    x, y, seed, g = loss_grads(lib, name)
    w = lib.tensor(np.random.default_rng(8).standard_normal((3, 4)), dtype=lib.float64)
    return x, y, seed, g, lib.autograd.grad(g, (x, y, seed), w, create_graph=True, allow_unused=True)


# (not mse_broadcast: `y[:1]`'s backward is torch's slice_backward op, SliceBackwardBackward0,
# where minigrad writes the gradient into zeros through a view, CopySlices; values agree)
@pytest.mark.parametrize("name", [n for n in LOSSES if n != "mse_broadcast"])
def test_loss_gradients_graphs_match_torch(name):
    got = {}
    for lib in (torch, mg):
        x, y, seed, g, second = loss_second_grads(lib, name)
        got[lib.__name__] = (graph_names(g.grad_fn),
                             [None if h is None else (h.requires_grad, graph_names(h.grad_fn) if h.grad_fn else None)
                              for h in second])
    assert got["minigrad"] == got["torch"]


@pytest.mark.parametrize("name", list(LOSSES))
def test_loss_second_and_third_derivatives_match_torch(name):
    out = {}
    for lib in (torch, mg):
        x, y, seed, g, second = loss_second_grads(lib, name)
        vals = [None if h is None else to_numpy(h) for h in second]
        # third order: through whichever second derivatives still have a graph
        live = [h for h in second if h is not None and h.requires_grad]
        if live:
            total = sum((h * h).sum() for h in live)
            third = lib.autograd.grad(total, (x, y, seed), allow_unused=True)
            vals += [None if t is None else to_numpy(t) for t in third]
        out[lib.__name__] = vals
    assert len(out["minigrad"]) == len(out["torch"])
    for m, t in zip(out["minigrad"], out["torch"]):
        if t is None or m is None:
            # an unused input: None in one library may be zeros in the other
            assert (m is None or not np.any(m)) and (t is None or not np.any(t))
        else:
            np.testing.assert_allclose(m, t, rtol=1e-10, atol=1e-12)


def test_mse_backward_backward_shows_torchs_saved_values():
    seen = {}
    for lib in (torch, mg):
        x, y, seed, g = loss_grads(lib, "mse_mean")
        fn = g.grad_fn
        seen[lib.__name__] = (fn.name(), str(fn._saved_reduction),
                              [getattr(fn, a).detach().numpy().tolist() for a in ("_saved_grad_output", "_saved_self", "_saved_target")])
    assert seen["minigrad"] == seen["torch"]
