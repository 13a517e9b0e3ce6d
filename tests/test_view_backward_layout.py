"""The backward of a view that only renames elements (view, t, transpose, permute, unsqueeze,
squeeze) is
a view of the gradient, as torch's formulas are (`grad.reshape(sizes)`, `grad.t()`,
`grad.transpose(d0, d1)`, `permute_backwards`, `grad.squeeze(dim)`): the gradient reaching the
input keeps torch's strides, the `.grad` a leaf receives has torch's strides and `_version`, and
create_graph differentiates through the inverse view. Two gradients of one input add as torch's
engine adds them: in place into a buffer nobody else holds when the pass has no create_graph."""

import numpy as np
import pytest
import torch

import minigrad as mg
from parity import assert_same


def rand(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype("float64")


# (name, the view, the input's shape); each applied to a leaf, then an elementwise op so the
# gradient reaching the view's node is a fresh contiguous tensor.
VIEWS = [
    ("t", lambda x: x.t(), (3, 5)),
    ("transpose", lambda x: x.transpose(0, 2), (2, 3, 4)),
    ("transpose_neg", lambda x: x.transpose(-1, -3), (2, 3, 4)),
    ("permute", lambda x: x.permute(2, 0, 1), (2, 3, 4)),
    ("permute_neg", lambda x: x.permute(-1, 2, -4, 1), (2, 1, 3, 4)),
    ("view", lambda x: x.view(4, 6), (2, 3, 4)),
    ("view_flat", lambda x: x.view(-1), (2, 3, 4)),
    ("unsqueeze", lambda x: x.unsqueeze(1), (3, 4)),
    ("unsqueeze_neg", lambda x: x.unsqueeze(-1), (3, 4)),
    ("t_of_permute", lambda x: x.permute(1, 0, 2).reshape(6, 4).t(), (2, 3, 4)),
    ("squeeze_all", lambda x: x.squeeze(), (1, 3, 1, 4, 1)),
    ("squeeze_all_none", lambda x: x.squeeze(), (3, 4)),
    ("squeeze_all_to_0d", lambda x: x.squeeze(), (1, 1)),
    ("squeeze_dim", lambda x: x.squeeze(2), (3, 4, 1, 2)),
    ("squeeze_dim_neg", lambda x: x.squeeze(-2), (3, 4, 1, 2)),
    ("squeeze_dim_noop", lambda x: x.squeeze(1), (3, 4, 1)),
    ("squeeze_dims", lambda x: x.squeeze((0, 2, 3)), (1, 3, 1, 5, 1)),
    ("squeeze_dims_neg", lambda x: x.squeeze((-1, 0)), (1, 3, 1, 1)),
    ("squeeze_dims_noop", lambda x: x.squeeze((1,)), (2, 3)),
    ("squeeze_of_t", lambda x: x.t().squeeze(), (1, 4)),
    ("squeeze_of_permute", lambda x: x.permute(2, 0, 1).squeeze(0), (3, 4, 1)),
]


@pytest.mark.parametrize("name,view,shape", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_gradient_strides_version_and_grad_fn_match_torch(name, view, shape):
    results = {}
    for lib in (mg, torch):
        x = lib.tensor(rand(*shape)).requires_grad_()
        v = view(x)
        seen = {}
        v.register_hook(lambda g: seen.update(stride=tuple(g.stride())))
        y = v * lib.tensor(rand(*v.shape, seed=1))
        y.sum().backward()
        results[lib.__name__] = (x, v, seen)
    (mx, mv, mseen), (tx, tv, tseen) = results["minigrad"], results["torch"]
    assert mv.grad_fn.name() == tv.grad_fn.name()
    assert mseen == tseen
    assert_same(mx.grad, tx.grad, check_stride=True)
    assert mx.grad._version == tx.grad._version
    assert (mx.grad._base is None) == (tx.grad._base is None)


@pytest.mark.parametrize("name,view,shape", VIEWS, ids=[v[0] for v in VIEWS])
def test_view_double_backward_matches_torch(name, view, shape):
    out = {}
    for lib in (mg, torch):
        x = lib.tensor(rand(*shape)).requires_grad_()
        w = lib.tensor(rand(*view(x).shape, seed=2))
        (g,) = lib.autograd.grad((view(x) ** 3 * w).sum(), x, create_graph=True)
        (gg,) = lib.autograd.grad((g * g).sum(), x)
        out[lib.__name__] = (g, gg)
    assert_same(out["minigrad"][0], out["torch"][0], check_stride=True)
    # the second order without create_graph: where two gradients of different layouts meet in
    # the engine's input buffer, the sum goes in place into the one nobody else holds (torch's
    # InputBuffer::accumulate), so its strides are that buffer's (t_of_permute)
    assert_same(out["minigrad"][1], out["torch"][1], check_stride=True)


def test_linear_weight_grad_version_matches_torch():
    arrays = [rand(5, 4, seed=3).astype("float32"), rand(3, 4, seed=4).astype("float32"), rand(3, seed=5).astype("float32")]
    grads = {}
    for lib in (mg, torch):
        x, w, b = (lib.tensor(a).requires_grad_() for a in arrays)
        lib.nn.functional.linear(x, w, b).sum().backward()
        grads[lib.__name__] = (w.grad, b.grad, x.grad)
    for m, t in zip(grads["minigrad"], grads["torch"]):
        assert_same(m, t, check_stride=True, rtol=1e-5, atol=1e-5)
        assert m._version == t._version


def test_view_gradient_is_not_shared_with_other_consumers():
    # the same gradient feeds two views' backward and the leaf twice: every path sums correctly,
    # and writing into .grad afterwards touches nothing else.
    mx = mg.tensor(rand(3, 4)).requires_grad_()
    tx = torch.tensor(rand(3, 4)).requires_grad_()
    for x in (mx, tx):
        (x.t() * 2 + x.t().t().t() * 3).sum().backward()
    assert_same(mx.grad, tx.grad, check_stride=True)
    assert np.array_equal(tx.grad.numpy(), np.full((3, 4), 5.0))
    assert mx.grad._version == tx.grad._version
    mx.grad.zero_()
    tx.grad.zero_()
    assert_same(mx.grad, tx.grad, check_stride=True)


@pytest.mark.parametrize("form", ["all", "dim", "dims"])
def test_squeeze_gradient_of_a_strided_gradient_keeps_its_strides(form):
    # the gradient reaching squeeze's node is itself a transposed view: unsqueezing it (torch)
    # keeps those strides, where scattering into zeros would make it contiguous
    sq = {"all": lambda x: x.squeeze(), "dim": lambda x: x.squeeze(-1).squeeze(1), "dims": lambda x: x.squeeze((1, 3))}[form]
    out = {}
    for lib in (mg, torch):
        x = lib.tensor(rand(4, 1, 3, 1)).requires_grad_()
        v = sq(x)
        seen = {}
        x.register_hook(lambda g: seen.update(stride=tuple(g.stride())))
        (v.t().t().t() * lib.tensor(rand(3, 4, seed=6))).sum().backward()
        out[lib.__name__] = (x.grad, seen)
    assert out["minigrad"][1] == out["torch"][1]
    assert_same(out["minigrad"][0], out["torch"][0], check_stride=True)
    assert out["minigrad"][0]._version == out["torch"][0]._version


def test_squeeze_noop_passes_the_gradient_itself():
    # torch's unsqueeze_to returns the gradient unchanged when nothing was squeezed: the leaf's
    # .grad is then the fresh gradient of `v * 2`, not a view of it.
    for lib in (mg, torch):
        x = lib.tensor(rand(2, 3)).requires_grad_()
        v = x.squeeze(0)
        (v * 2).sum().backward()
        assert x.grad._base is None
        assert x.grad._version == 0
