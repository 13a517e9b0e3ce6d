"""`utils.checkpoint` against torch: values, gradients, how many times (and how far) the function
runs in forward and backward, RNG replay with dropout, both variants, their errors and warnings;
and, minigrad alone, that a checkpointed forward keeps fewer bytes alive (the allocator's count).

Scenarios are written once against a library `L` and return plain data; the two stories must match
(see test_saved_tensor_hooks.py for the helpers' conventions)."""

import importlib
import warnings

import numpy as np
import pytest
import torch

import minigrad as mg
from test_saved_tensor_hooks import assert_same_story, outcome

VARIANTS = [False, True]


def ckpt(L):
    return importlib.import_module(L.__name__ + ".utils.checkpoint")


def inputs(L):
    x = L.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
    w = L.tensor(np.linspace(0, 1, 12).reshape(3, 4), requires_grad=True)
    return x, w


def traced(log):
    """A function that logs how far it got, so early stopping shows."""
    def fn(x, w):
        log.append("start")
        h = (x @ w).sin()
        log.append("mid")
        y = (h * h).sum()
        log.append("end")
        return y
    return fn


@pytest.mark.parametrize("reentrant", VARIANTS)
def test_values_gradients_and_forward_calls(reentrant):
    def scenario(L, log):
        x, w = inputs(L)
        out = ckpt(L).checkpoint(traced(log), x, w, use_reentrant=reentrant)
        log.append("backward")
        out.backward()
        return out, x.grad, w.grad
    story = assert_same_story(scenario)
    # non-reentrant recomputation stops once the last saved tensor (h, for h * h) is back
    expected = ["start", "mid", "end", "backward", "start", "mid"] + ([] if not reentrant else ["end"])
    assert story[0] == expected


@pytest.mark.parametrize("reentrant", VARIANTS)
def test_gradients_equal_those_without_checkpointing(reentrant):
    for L in (mg, torch):
        x, w = inputs(L)
        traced([])(x, w).backward()
        plain = (x.grad.tolist(), w.grad.tolist())
        x.grad = w.grad = None
        ckpt(L).checkpoint(traced([]), x, w, use_reentrant=reentrant).backward()
        np.testing.assert_allclose(x.grad.tolist(), plain[0], rtol=1e-12)
        np.testing.assert_allclose(w.grad.tolist(), plain[1], rtol=1e-12)


def test_early_stop_can_be_turned_off():
    def scenario(L, log):
        x, w = inputs(L)
        C = ckpt(L)
        with C.set_checkpoint_early_stop(False):
            out = C.checkpoint(traced(log), x, w, use_reentrant=False)
        log.append("backward")
        out.backward()
        out = C.checkpoint(traced(log), x, w, use_reentrant=False, early_stop=False)
        log.append("backward")
        out.backward()
        return x.grad
    assert_same_story(scenario)


def test_use_reentrant_not_passed_warns_and_picks_the_reentrant_variant():
    def scenario(L, log):
        x, w = inputs(L)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = ckpt(L).checkpoint(traced(log), x, w)
        log.extend((c.category.__name__, str(c.message).replace("torch", "minigrad")) for c in caught)
        log.append("backward")
        out.backward()
        return out
    story = assert_same_story(scenario)
    assert story[0][-4:] == ["backward", "start", "mid", "end"]  # reentrant: runs to the end


@pytest.mark.parametrize("reentrant", VARIANTS)
def test_autograd_grad_and_backward_inputs(reentrant):
    """The non-reentrant variant works with autograd.grad and backward(inputs=); the reentrant
    one raises torch's error."""
    def scenario(L, log):
        x, w = inputs(L)
        C = ckpt(L)
        out = []
        (g,) = L.autograd.grad(C.checkpoint(traced(log), x, w, use_reentrant=reentrant), x)
        out.append(g)
        C.checkpoint(traced(log), x, w, use_reentrant=reentrant).backward(inputs=[w])
        out.append((w.grad, x.grad))
        return out
    assert_same_story(scenario)


def test_keyword_arguments_reach_the_function_in_both_runs():
    def scenario(L, log):
        x, w = inputs(L)

        def fn(x, *, scale):
            log.append(scale)
            return (x.sin() * scale).sum()
        out = ckpt(L).checkpoint(fn, x, scale=3.0, use_reentrant=False)
        out.backward()
        return x.grad
    assert_same_story(scenario)


def test_errors_of_the_arguments():
    def scenario(L, log):
        x, w = inputs(L)
        C = ckpt(L)
        out = []
        for call in (
            lambda: C.checkpoint(traced(log), x, w, use_reentrant=True, extra=1),
            lambda: C.checkpoint(traced(log), x, w, use_reentrant=True, context_fn=lambda: (None, None)),
            lambda: C.checkpoint(traced(log), x, w, use_reentrant=False, determinism_check="strict"),
        ):
            try:
                call()
            except ValueError as e:
                out.append(str(e))
        return out
    assert len(assert_same_story(scenario)[1][1]) == 3


def test_modifying_a_checkpoint_input_in_place_breaks_backward_with_the_version_error():
    def scenario(L, log):
        x, w = inputs(L)
        x2 = x * 1
        out = ckpt(L).checkpoint(traced(log), x2, w, use_reentrant=False)
        with L.no_grad():
            x2.mul_(2)
        out.backward()
    assert assert_same_story(scenario)[1][0] == "raised"


def test_recomputation_that_saves_different_tensors_is_caught():
    def scenario(L, log):
        (x, w), runs = inputs(L), []

        def fn(x):
            runs.append(1)
            # the re-run saves a tensor of another shape in the same place
            return (x.sin() if len(runs) == 1 else x.t().sin()).sum()
        out = ckpt(L).checkpoint(fn, x, use_reentrant=False)
        try:
            out.backward()
        except RuntimeError as e:
            log.append((type(e).__name__, str(e).split("\nTip")[0].replace("torch.", "minigrad.")))
    story = assert_same_story(scenario)
    assert story[0] and story[0][0][0] == "CheckpointError"


def test_backward_twice_recomputes_each_time():
    def scenario(L, log):
        x, w = inputs(L)
        out = ckpt(L).checkpoint(traced(log), x, w, use_reentrant=False)
        log.append("backward 1")
        out.backward(retain_graph=True)
        log.append("backward 2")
        out.backward()
        return x.grad
    assert_same_story(scenario)


def test_nested_checkpoints():
    def scenario(L, log):
        x, w = inputs(L)
        C = ckpt(L)

        def inner(h):
            log.append("inner")
            return h.exp() * h

        def outer(x, w):
            log.append("outer")
            h = (x @ w).tanh()
            return C.checkpoint(inner, h, use_reentrant=False).sum()
        out = C.checkpoint(outer, x, w, use_reentrant=False)
        log.append("backward")
        out.backward()
        return x.grad, w.grad
    assert_same_story(scenario)


def test_under_no_grad_checkpoint_just_runs_the_function():
    def scenario(L, log):
        x, w = inputs(L)
        with L.no_grad():
            out = ckpt(L).checkpoint(traced(log), x, w, use_reentrant=False)
        return out, out.requires_grad
    assert_same_story(scenario)


def test_checkpoint_sequential():
    def scenario(L, log):
        L.manual_seed(0)
        nn = L.nn
        model = nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 4), nn.Tanh(), nn.Linear(4, 2)).double()
        with L.no_grad():
            for i, p in enumerate(model.parameters()):
                p.copy_(L.tensor(np.linspace(-1, 1, p.numel()).reshape(tuple(p.shape)) * (i + 1) / 4))
        x = L.tensor(np.linspace(-1, 1, 6).reshape(2, 3), requires_grad=True)
        ckpt(L).checkpoint_sequential(model, 2, x, use_reentrant=False).sum().backward()
        return x.grad, [p.grad for p in model.parameters()]
    assert_same_story(scenario)


# ----- RNG replay (dropout) -----

@pytest.mark.parametrize("reentrant", VARIANTS)
@pytest.mark.parametrize("preserve", [True, False])
def test_dropout_replays_the_same_mask_when_the_rng_state_is_preserved(reentrant, preserve):
    """The two libraries draw different random numbers, so each is compared with itself: with
    preserve_rng_state=True the checkpointed gradient equals the plain one (the re-run drops the
    same elements); without it the re-run draws a new mask. The story (equal or not) must match."""
    def scenario(L, log):
        F = L.nn.functional
        x = L.tensor(np.linspace(0.5, 1.5, 64), requires_grad=True)

        def fn(x):
            return (F.dropout(x, 0.5, training=True) * x).sum()
        L.manual_seed(123)
        fn(x).backward()
        plain = x.grad.clone()
        x.grad = None
        L.manual_seed(123)
        out = ckpt(L).checkpoint(fn, x, use_reentrant=reentrant, preserve_rng_state=preserve)
        after_forward = L.rand(1)
        out.backward()
        # the generator is where the forward left it, whatever the re-run drew
        L.manual_seed(123)
        fn(x.detach())
        continued = L.rand(1)
        return [bool((x.grad == plain).all()), bool((after_forward == continued).all())]
    story = assert_same_story(scenario)
    assert story[1][1] == [preserve, True]


# ----- memory (minigrad's allocator counts every byte) -----

def test_a_checkpointed_forward_keeps_fewer_bytes_alive():
    x = mg.randn(64, 256, requires_grad=True)
    ws = [mg.randn(256, 256, requires_grad=True) for _ in range(4)]

    def block(h):
        for w in ws:
            h = (h @ w).tanh()
        return h

    def held(run):
        base = mg.memory.allocated()
        out = run().sum()
        kept = mg.memory.allocated() - base
        out.backward()
        return kept
    plain = held(lambda: block(x))
    checkpointed = held(lambda: mg.utils.checkpoint.checkpoint(block, x, use_reentrant=False))
    activation = 64 * 256 * 4
    # plain keeps every tanh output (and the matmul inputs they are); checkpointing keeps only
    # the block's output
    assert plain >= 4 * activation
    assert checkpointed <= 2 * activation


def test_outcome_helper_sees_differences():
    """The story comparison is not vacuous: a scenario that differs between the libraries is
    caught."""
    m, t = outcome(lambda L, log: L.__name__)
    assert m != t
