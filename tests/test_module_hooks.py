"""Module hooks against torch: full backward hooks and pre-hooks, forward pre-hooks (with_kwargs,
prepend), forward hooks (always_call), the global module hooks, the deprecated non-full backward
hook; call order, arguments (grad_input / grad_output tuples with their Nones), replacement by a
returned value, handles' remove(), and torch's errors (in-place on an output of a module with
backward hooks, wrong tuple lengths, mixing hook kinds). Stories are compared as in
test_saved_tensor_hooks.py."""

import warnings

import numpy as np
import pytest
import torch

import minigrad as mg
from test_saved_tensor_hooks import assert_same_story


def desc(x):
    """A hook argument as data: None, or (shape, sum) per tensor, element by element."""
    if x is None:
        return None
    if isinstance(x, (tuple, list)):
        return tuple(desc(v) for v in x)
    if isinstance(x, (mg.Tensor, torch.Tensor)):
        return (tuple(x.shape), round(float(x.detach().sum()), 5))
    return repr(x)


def fixed(module, L):
    """Parameters set to fixed values (the libraries' random inits differ)."""
    with L.no_grad():
        for i, p in enumerate(module.parameters()):
            p.copy_(L.tensor(np.linspace(-1, 1, p.numel()).reshape(tuple(p.shape)) * (i + 1) / 3, dtype=p.dtype))
    return module


def model(L):
    nn = L.nn
    lin1, act, lin2 = nn.Linear(3, 4).double(), nn.Tanh(), nn.Linear(4, 2).double()
    return fixed(nn.Sequential(lin1, act, lin2), L), {"lin1": lin1, "act": act, "lin2": lin2}


def x_of(L, requires_grad=True):
    return L.tensor(np.linspace(-1, 1, 6).reshape(2, 3), dtype=L.float64, requires_grad=requires_grad)


def test_full_backward_hooks_order_and_arguments():
    def scenario(L, log):
        seq, mods = model(L)
        mods["seq"] = seq
        for name, m in mods.items():
            m.register_full_backward_pre_hook(lambda m, go, name=name: log.append(("pre", name, desc(go))))
            m.register_full_backward_hook(lambda m, gi, go, name=name: log.append(("hook", name, desc(gi), desc(go))))
        x = x_of(L)
        y = seq(x)
        log.append("backward")
        y.sum().backward()
        return x.grad, [p.grad for p in seq.parameters()]
    assert_same_story(scenario)


def test_prepend_and_several_hooks_run_in_registration_order():
    def scenario(L, log):
        seq, mods = model(L)
        lin = mods["lin1"]
        for tag in ("a", "b"):
            lin.register_full_backward_hook(lambda m, gi, go, tag=tag: log.append(("hook", tag)))
            lin.register_full_backward_pre_hook(lambda m, go, tag=tag: log.append(("pre", tag)))
        lin.register_full_backward_hook(lambda m, gi, go: log.append(("hook", "first")), prepend=True)
        lin.register_full_backward_pre_hook(lambda m, go: log.append(("pre", "first")), prepend=True)
        seq(x_of(L)).sum().backward()
    assert_same_story(scenario)


def test_returned_values_replace_the_gradients():
    """A pre-hook's grad_output replaces what flows into the module; a hook's grad_input replaces
    what flows out to its inputs (and on to the earlier layers)."""
    def scenario(L, log):
        seq, mods = model(L)
        mods["lin2"].register_full_backward_pre_hook(lambda m, go: (go[0] * 3,))
        mods["act"].register_full_backward_hook(lambda m, gi, go: (gi[0] + 1,))
        mods["lin2"].register_full_backward_hook(lambda m, gi, go: log.append(desc(gi)))
        x = x_of(L)
        seq(x).sum().backward()
        return x.grad, [p.grad for p in seq.parameters()]
    assert_same_story(scenario)


def test_grad_input_has_none_for_arguments_without_gradients():
    def scenario(L, log):
        class Mix(L.nn.Module):
            def forward(self, x, scale, y, flag):
                return x * scale + y.sum(), y * 2
        m = Mix()
        m.register_full_backward_pre_hook(lambda m, go: log.append(("pre", desc(go))))
        m.register_full_backward_hook(lambda m, gi, go: log.append(("hook", desc(gi), desc(go))))
        x = x_of(L)
        y = L.ones(3, dtype=L.float64)  # needs no gradient
        a, b = m(x, 3.0, y, True)
        a.sum().backward()  # b gets no gradient: None in grad_output
        return x.grad
    assert_same_story(scenario)


def test_handles_remove_the_hooks():
    def scenario(L, log):
        seq, mods = model(L)
        lin = mods["lin1"]
        h1 = lin.register_full_backward_hook(lambda m, gi, go: log.append("hook"))
        h2 = lin.register_full_backward_pre_hook(lambda m, go: log.append("pre"))
        seq(x_of(L)).sum().backward()
        h1.remove()
        h2.remove()
        h1.remove()  # twice is harmless
        log.append("removed")
        seq(x_of(L)).sum().backward()
        with lin.register_full_backward_hook(lambda m, gi, go: log.append("scoped")):
            seq(x_of(L)).sum().backward()
        seq(x_of(L)).sum().backward()
        return len(lin._backward_hooks), len(lin._backward_pre_hooks)
    assert_same_story(scenario)


def test_no_input_requires_grad_fires_the_hook_at_the_outputs_with_a_warning():
    def scenario(L, log):
        seq, mods = model(L)
        lin = mods["lin1"]
        lin.register_full_backward_hook(lambda m, gi, go: log.append(("hook", desc(gi), desc(go))))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            seq(x_of(L, requires_grad=False)).sum().backward()
        log.extend((c.category.__name__, str(c.message).replace("torch", "minigrad")) for c in caught)
        bad = L.nn.Linear(3, 2).double()
        bad.register_full_backward_hook(lambda m, gi, go: (L.ones(2, 3),))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            bad(x_of(L, requires_grad=False)).sum().backward()
    story = assert_same_story(scenario)
    assert story[1][0] == "raised"


def test_wrong_number_of_gradients_returned():
    def scenario(L, log):
        out = []
        for kind in ("hook", "pre"):
            seq, mods = model(L)
            if kind == "hook":
                mods["act"].register_full_backward_hook(lambda m, gi, go: (gi[0], gi[0]))
            else:
                mods["act"].register_full_backward_pre_hook(lambda m, go: ())
            try:
                seq(x_of(L)).sum().backward()
            except RuntimeError as e:
                out.append(str(e))
        return out
    assert len(assert_same_story(scenario)[1][1]) == 2


def test_modifying_an_output_of_a_hooked_module_in_place_raises():
    """torch's rule: the outputs of a module with full backward hooks are views made in a custom
    Function, so an in-place op on them (here a following in-place ReLU) raises, as does an
    in-place module that has such hooks itself."""
    def scenario(L, log):
        nn = L.nn
        out = []
        lin = fixed(nn.Linear(3, 2).double(), L)
        lin.register_full_backward_hook(lambda m, gi, go: None)
        relu = nn.ReLU(inplace=True)
        hooked_relu = nn.ReLU(inplace=True)
        hooked_relu.register_full_backward_pre_hook(lambda m, go: None)
        for call in (lambda: relu(lin(x_of(L))), lambda: lin(x_of(L)).add_(1), lambda: hooked_relu(x_of(L) * 1)):
            try:
                call()
                out.append("ok")
            except RuntimeError as e:
                out.append(str(e))
        # without hooks the same in-place ReLU is fine; under no_grad the hooks set nothing up
        with L.no_grad():
            out.append(tuple(relu(lin(x_of(L))).shape))
        return out
    story = assert_same_story(scenario)
    assert all(m.startswith("Output 0 of BackwardHookFunction is a view and is being modified inplace.")
               for m in story[1][1][:3])


def test_mixing_regular_and_full_backward_hooks_is_refused():
    def scenario(L, log):
        out = []
        a, b = L.nn.Linear(2, 2), L.nn.Linear(2, 2)
        a.register_full_backward_hook(lambda *args: None)
        b.register_backward_hook(lambda *args: None)
        for call in (lambda: a.register_backward_hook(lambda *args: None),
                     lambda: b.register_full_backward_hook(lambda *args: None)):
            try:
                call()
            except RuntimeError as e:
                out.append(str(e))
        return out
    assert len(assert_same_story(scenario)[1][1]) == 2


def test_deprecated_non_full_backward_hook():
    def scenario(L, log):
        lin = fixed(L.nn.Linear(3, 2).double(), L)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lin.register_backward_hook(lambda m, gi, go: log.append((desc(gi), desc(go))))
            lin(x_of(L)).sum().backward()
        log.extend((c.category.__name__, str(c.message)) for c in caught)
    assert_same_story(scenario)


# ----- forward hooks -----

def test_forward_pre_hooks_with_kwargs_prepend_and_replacement():
    def scenario(L, log):
        class Affine(L.nn.Module):
            def forward(self, x, *, scale=1.0):
                log.append(("forward", desc(x), scale))
                return x * scale
        m = Affine()
        m.register_forward_pre_hook(lambda m, args: log.append(("pre", desc(args))))
        m.register_forward_pre_hook(lambda m, args, kwargs: (args, {**kwargs, "scale": 5.0}), with_kwargs=True)
        m.register_forward_pre_hook(lambda m, args: (args[0] + 1,), prepend=True)
        m.register_forward_pre_hook(lambda m, args: args[0] * 2)  # a single value becomes (value,)
        bad = m.register_forward_pre_hook(lambda m, args, kwargs: "nope", with_kwargs=True)
        try:
            m(x_of(L), scale=2.0)
        except RuntimeError as e:
            log.append(str(e))
        bad.remove()
        return m(x_of(L), scale=2.0), len(m._forward_pre_hooks_with_kwargs)
    assert_same_story(scenario)


def test_forward_hooks_always_call_and_handles():
    def scenario(L, log):
        class Fails(L.nn.Module):
            def forward(self, x):
                raise ValueError("forward failed")
        m = Fails()
        m.register_forward_hook(lambda m, args, out: log.append(("always", out)), always_call=True)
        m.register_forward_hook(lambda m, args, out: log.append("normal"))
        h = m.register_forward_hook(lambda m, args, kwargs, out: log.append(("kw", kwargs)), with_kwargs=True,
                                    always_call=True)
        try:
            m(x_of(L))
        except ValueError as e:
            log.append(str(e))
        h.remove()
        return len(m._forward_hooks_with_kwargs), len(m._forward_hooks_always_called)
    assert_same_story(scenario)


# ----- global module hooks -----

@pytest.fixture
def global_handles():
    handles = []
    yield handles
    for h in handles:
        h.remove()


def test_global_hooks_run_before_the_modules_own(global_handles):
    def scenario(L, log):
        mm = L.nn.modules.module
        hs = [
            mm.register_module_forward_pre_hook(lambda m, args: log.append(("g-pre", type(m).__name__))),
            mm.register_module_forward_hook(lambda m, args, out: log.append(("g-fwd", type(m).__name__))),
            mm.register_module_full_backward_pre_hook(lambda m, go: log.append(("g-bpre", type(m).__name__))),
            mm.register_module_full_backward_hook(lambda m, gi, go: log.append(("g-bwd", type(m).__name__, desc(gi)))),
        ]
        try:
            seq, mods = model(L)
            mods["act"].register_forward_hook(lambda m, args, out: log.append("act-fwd"))
            mods["act"].register_full_backward_hook(lambda m, gi, go: log.append("act-bwd"))
            x = x_of(L)
            seq(x).sum().backward()
            try:
                mm.register_module_backward_hook(lambda m, gi, go: None)
            except RuntimeError as e:
                log.append(str(e))
            return x.grad
        finally:
            for h in hs:
                h.remove()
    assert_same_story(scenario)
