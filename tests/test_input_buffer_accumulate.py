"""Two gradients for one input of a node add as torch's engine adds them (InputBuffer::accumulate):
without create_graph, in place into the first buffer if nobody else holds it, else into the
second, else out of place; with create_graph, always out of place. What shows: the strides of
the sum (a transposed gradient meeting a contiguous one), and that a gradient someone kept (a
hook's list) is never written."""

import numpy as np
import pytest
import torch

import minigrad as mg
from parity import assert_same


def arr(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


# Programs where a non-leaf `h` reaches the loss along two paths whose gradients have different
# layouts; the hook on h sees the buffer's sum, and x.grad the sum pushed through `h`'s op.
PROGRAMS = {
    "transposed_first": lambda lib, h, w: (h.t() * w.t()).sum() + (h * w).sum(),
    "contiguous_first": lambda lib, h, w: (h * w).sum() + (h.t() * w.t()).sum(),
    "permuted_and_plain": lambda lib, h, w: (h.reshape(4, 6).t().reshape(6, 4) * 2).sum() + (h.t().t() * w).sum(),
    "three_paths": lambda lib, h, w: (h.t() * w.t()).sum() + (h * w).sum() + (h.t().contiguous() * 3).sum(),
}


@pytest.mark.parametrize("create_graph", [False, True])
@pytest.mark.parametrize("name", list(PROGRAMS))
def test_the_sum_of_two_gradients_has_torch_strides(name, create_graph):
    seen = {}
    for lib in (mg, torch):
        x = lib.tensor(arr(6, 4)).requires_grad_()
        w = lib.tensor(arr(6, 4, seed=1))
        h = x * 1.5
        got = {}
        h.register_hook(lambda g, got=got: got.update(stride=tuple(g.stride()), value=g.detach().clone()))
        loss = PROGRAMS[name](lib, h, w)
        (gx,) = lib.autograd.grad(loss, x, create_graph=create_graph)
        seen[lib.__name__] = (gx, got)
    (mg_gx, mg_h), (t_gx, t_h) = seen["minigrad"], seen["torch"]
    assert mg_h["stride"] == t_h["stride"]
    assert_same(mg_h["value"], t_h["value"])
    assert_same(mg_gx.detach(), t_gx.detach(), check_stride=True)


def test_a_gradient_a_hook_kept_is_never_written():
    for lib in (mg, torch):
        x = lib.tensor(arr(5, 3)).requires_grad_()
        a = x * 2.0
        kept = []
        b = a.view(5, 3)  # view's backward hands `a` a view of b's gradient, which the hook keeps
        b.register_hook(lambda g: kept.append(g) or None)
        loss = (b * 3.0).sum() + (a.t() * 4.0).sum()
        loss.backward()
        assert len(kept) == 1
        np.testing.assert_array_equal(np.asarray(kept[0].tolist()), np.full((5, 3), 3.0))
        np.testing.assert_array_equal(np.asarray(x.grad.tolist()), np.full((5, 3), 14.0))


def test_the_sum_goes_into_the_buffer_torch_steals():
    """The version counter of a buffer that took the sum in place moved; a hook on the node's
    output sees the result (values and strides), as in torch."""
    out = {}
    for lib in (mg, torch):
        x = lib.tensor(arr(4, 3)).requires_grad_()
        h = x.exp()
        seen = {}
        h.register_hook(lambda g, seen=seen: seen.update(stride=tuple(g.stride()), v=g._version))
        ((h.t() * 2).sum() + (h * 3).sum()).backward()
        out[lib.__name__] = (seen, x.grad)
    assert out["minigrad"][0] == out["torch"][0]
    assert_same(out["minigrad"][1], out["torch"][1], check_stride=True)
