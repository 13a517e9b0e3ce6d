"""Saved-tensor hooks (`autograd.graph.saved_tensors_hooks`, `save_on_cpu`,
`disable_saved_tensors_hooks`) against torch.

Each scenario is written once against a library `L` (minigrad or torch) and returns plain data: the
log of pack/unpack calls (what each hook saw: shape, version, requires_grad, grad_fn, grad mode,
which of the scenario's tensors it was), values and gradients rounded, and the type and text of
anything raised. The two libraries must tell the same story."""

import numpy as np
import pytest
import torch

import minigrad as mg
from parity import normalize_message

LIBS = (mg, torch)


def plain(x):
    """Comparable data: tensors as rounded nested lists, containers element by element."""
    if isinstance(x, (mg.Tensor, torch.Tensor)):
        return ("tensor", tuple(x.shape), np.round(np.asarray(x.detach().tolist(), dtype=float), 5).tolist())
    if isinstance(x, (list, tuple)):
        return type(x)(plain(v) for v in x)
    if isinstance(x, dict):
        return {k: plain(v) for k, v in x.items()}
    if isinstance(x, float):
        return round(x, 5)
    return x


def outcome(scenario):
    """Runs `scenario(L)` on both libraries; returns (minigrad's story, torch's story)."""
    stories = []
    for L in LIBS:
        log = []
        try:
            result = ("ok", plain(scenario(L, log)))
        except Exception as e:  # noqa: BLE001 - the exception is part of the story
            result = ("raised", type(e).__name__, normalize_message(str(e)))
        stories.append((plain(log), result))
    return stories


def assert_same_story(scenario):
    m, t = outcome(scenario)
    assert m == t, f"\nminigrad: {m}\ntorch:    {t}"
    return t


def seen(L, t, names):
    """What a hook saw: shape, version, requires_grad, grad_fn name, grad mode, and which named
    tensor of the scenario it is (identity), if any."""
    who = next((k for k, v in names.items() if v is t), None)
    fn = None if t.grad_fn is None else normalize_message(t.grad_fn.name())
    return (tuple(t.shape), t._version, t.requires_grad, fn, L.is_grad_enabled(), who)


def logging_hooks(L, log, names, pack_result=lambda t: t, unpack_result=lambda p: p):
    def pack(t):
        log.append(("pack",) + seen(L, t, names))
        return pack_result(t)

    def unpack(p):
        out = unpack_result(p)
        log.append(("unpack",) + seen(L, out, names))
        return out
    return L.autograd.graph.saved_tensors_hooks(pack, unpack)


def leaves(L, *shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [L.tensor(rng.uniform(0.5, 2.0, s), dtype=L.float64, requires_grad=True) for s in shapes]


# ----- call order and arguments -----

F_OPS = {
    "mul": lambda L, a, b: a * b,
    "mul_number": lambda L, a, b: a * 2,  # torch never packs a Python number
    "div": lambda L, a, b: a / b,
    "pow": lambda L, a, b: a ** b,
    "maximum": lambda L, a, b: L.maximum(a, b),
    "exp_saves_result": lambda L, a, b: a.exp(),
    "matmul": lambda L, a, b: a @ b.t(),
    "clamp_tensors": lambda L, a, b: a.clamp(b * 0.9, b * 1.1),
    "gather": lambda L, a, b: a.gather(1, L.tensor([[0], [2]])),
    "softmax": lambda L, a, b: a.softmax(1),
    "layer_norm": lambda L, a, b: L.nn.functional.layer_norm(a, (3,), b[0], b[0] * 2),
    "mse_loss": lambda L, a, b: L.nn.functional.mse_loss(a, b.expand(2, 3)),
    "inplace_mul": lambda L, a, b: (a * 1).mul_(b),
    "inplace_exp": lambda L, a, b: (a * 1).exp_(),
    "inplace_relu": lambda L, a, b: L.relu_(a - 1),
    "max_all_result_after_self": lambda L, a, b: a.max(),
    "chain": lambda L, a, b: ((a * b).sin() * a).tanh(),
}


@pytest.mark.parametrize("name", list(F_OPS))
def test_pack_and_unpack_order_and_arguments(name):
    """Which tensors are packed, in which order, what each looked like (the very tensor, with its
    version and grad_fn, under no_grad); what backward unpacks in which order; the gradients."""
    def scenario(L, log):
        a, b = leaves(L, (2, 3), (1, 3))
        with logging_hooks(L, log, {"a": a, "b": b}):
            y = F_OPS[name](L, a, b)
        log.append("backward")
        y.sum().backward()
        return a.grad, b.grad
    assert_same_story(scenario)


def test_pack_sees_the_output_itself_with_its_grad_fn():
    def scenario(L, log):
        (a,) = leaves(L, (3,))
        got = []
        with L.autograd.graph.saved_tensors_hooks(lambda t: got.append(t) or t, lambda t: t):
            y = a.exp()
        return got[0] is y, got[0].grad_fn is y.grad_fn
    assert assert_same_story(scenario)[1] == ("ok", (True, True))


# ----- interaction with the version counter -----

def test_identity_hooks_switch_the_version_check_off():
    """The saved tensor is the tensor itself: a later in-place change reaches backward silently
    (cos of the modified value), where without hooks backward raises."""
    def scenario(L, log):
        (a,) = leaves(L, (2,))
        with logging_hooks(L, log, {}):
            x = a * 1
            y = x.sin()
        x.mul_(2)
        y.sum().backward()
        return a.grad
    assert_same_story(scenario)


def test_without_hooks_the_same_program_raises_the_version_error():
    def scenario(L, log):
        (a,) = leaves(L, (2,))
        x = a * 1
        y = x.sin()
        x.mul_(2)
        y.sum().backward()
    assert assert_same_story(scenario)[1][0] == "raised"


def test_a_cloning_pack_hook_keeps_the_original_values():
    def scenario(L, log):
        (a,) = leaves(L, (2,))
        with L.autograd.graph.saved_tensors_hooks(lambda t: t.clone(), lambda t: t):
            x = a * 1
            y = x.sin()
        x.mul_(2)
        y.sum().backward()
        return a.grad
    assert_same_story(scenario)


def test_unpacked_tensor_shares_the_version_counter_of_what_unpack_returned():
    def scenario(L, log):
        (a,) = leaves(L, (2,))
        x = a * 1
        with L.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t):
            y = x.sin()
        x.mul_(3)
        s = y.grad_fn._saved_self
        return s._version, s is x, s.requires_grad, s.grad_fn is not None, s.data_ptr() == x.data_ptr()
    assert_same_story(scenario)


def test_pack_hook_modifying_its_input_raises():
    def scenario(L, log):
        (a,) = leaves(L, (2,))
        x = a * 1

        def pack(t):
            t.mul_(2)
            return t
        with L.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            x.sin()
    assert assert_same_story(scenario)[1][0] == "raised"


# ----- what _saved_<name> gives back under hooks -----

def test_saved_attributes_under_hooks():
    """A leaf comes back as a new leaf that requires grad; a non-leaf as a new tensor on the same
    grad_fn; a constant the unpack hook returns unchanged is that very object."""
    def scenario(L, log):
        (a,) = leaves(L, (2,))
        w = L.tensor([2.0, 3.0], dtype=L.float64)
        with logging_hooks(L, log, {"a": a, "w": w}):
            y = a.sin()
            x = a * 1
            z = x.cos()
            c = a * w
        s, t, k = y.grad_fn._saved_self, z.grad_fn._saved_self, c.grad_fn._saved_other
        return [
            (s is a, s.is_leaf, s.requires_grad),
            (t is x, t.grad_fn is x.grad_fn, t.requires_grad),
            (k is w, k.requires_grad),
            s, t, k,
        ]
    assert_same_story(scenario)


def test_unpack_result_requiring_grad_for_a_constant_is_cut_from_the_graph():
    def scenario(L, log):
        (a,) = leaves(L, (2,))
        w = L.tensor([2.0, 3.0], dtype=L.float64)
        q = L.ones(2, dtype=L.float64, requires_grad=True)
        with L.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: q * 1):
            c = a * w
        k = c.grad_fn._saved_other
        return k.requires_grad, k.grad_fn is None
    assert_same_story(scenario)


def test_hooks_returning_a_different_tensor_change_the_gradient():
    def scenario(L, log):
        (a,) = leaves(L, (3,))
        with L.autograd.graph.saved_tensors_hooks(lambda t: ("box", t.detach() * 2), lambda p: p[1]):
            y = a.sin()
        y.sum().backward()
        return a.grad  # cos(2a)
    story = assert_same_story(scenario)
    a = np.random.default_rng(0).uniform(0.5, 2.0, (3,))
    np.testing.assert_allclose(story[1][1][2], np.cos(2 * a), atol=1e-5)


def test_double_backward_through_packed_tensors():
    def scenario(L, log):
        (a,) = leaves(L, (3,))
        with logging_hooks(L, log, {"a": a}):
            y = (a * a).sin()
        (g,) = L.autograd.grad(y.sum(), a, create_graph=True)
        (gg,) = L.autograd.grad(g.sum(), a)
        return g, gg
    assert_same_story(scenario)


# ----- lifetime -----

def test_backward_twice_and_saved_access_after_backward_raise_the_freed_error():
    def scenario(L, log):
        (a,) = leaves(L, (2,))
        with logging_hooks(L, log, {"a": a}):
            y = a.sin()
        y.sum().backward()
        errs = []
        for f in (lambda: y.sum().backward(), lambda: y.grad_fn._saved_self):
            try:
                f()
            except RuntimeError as e:
                errs.append(normalize_message(str(e)))
        return errs
    assert len(assert_same_story(scenario)[1][1]) == 2


def test_retain_graph_unpacks_again_on_each_backward():
    def scenario(L, log):
        (a,) = leaves(L, (2,))
        with logging_hooks(L, log, {"a": a}):
            y = a.sin()
        y.sum().backward(retain_graph=True)
        y.sum().backward()
        return a.grad
    assert_same_story(scenario)


# ----- nesting, disabling, errors -----

def test_nested_contexts_use_the_innermost_pair():
    def scenario(L, log):
        (a,) = leaves(L, (2,))
        G = L.autograd.graph
        with G.saved_tensors_hooks(lambda t: log.append("outer") or t, lambda t: t):
            with G.saved_tensors_hooks(lambda t: log.append("inner") or t, lambda t: t):
                a.sin()
            a.cos()
        a.tan() if hasattr(a, "tan") else a.exp()
        return None
    assert assert_same_story(scenario)[0] == ["inner", "outer"]


def test_disable_saved_tensors_hooks():
    def scenario(L, log):
        G = L.autograd.graph
        out = []
        for body in ("inside", "around"):
            try:
                if body == "inside":
                    with G.disable_saved_tensors_hooks("hooks are off here"):
                        with G.saved_tensors_hooks(lambda t: t, lambda t: t):
                            pass
                else:
                    with G.saved_tensors_hooks(lambda t: t, lambda t: t):
                        with G.disable_saved_tensors_hooks("hooks are on out there"):
                            pass
            except RuntimeError as e:
                out.append(str(e))
        # the switch is back on afterwards: hooks work again
        (a,) = leaves(L, (2,))
        with G.saved_tensors_hooks(lambda t: log.append("packed") or t, lambda t: t):
            a.sin()
        return out
    story = assert_same_story(scenario)
    assert story[1][1] == ["hooks are off here", "hooks are on out there"] and story[0] == ["packed"]


def test_saves_under_disabled_hooks_are_plain_saves():
    def scenario(L, log):
        (a,) = leaves(L, (2,))
        with L.autograd.graph.disable_saved_tensors_hooks("off"):
            x = a * 1
            y = x.sin()
        x.mul_(2)
        y.sum().backward()
    assert assert_same_story(scenario)[1][0] == "raised"


@pytest.mark.parametrize("n", [3, 50_000])  # the large one runs the op with the GIL released
def test_exceptions_raised_in_hooks_reach_the_caller_as_themselves(n):
    def scenario(L, log):
        a = L.ones(n, requires_grad=True)
        out = []

        def bad_pack(t):
            raise ValueError("pack says no")

        def bad_unpack(p):
            raise KeyError("unpack says no")
        for pack, unpack, where in ((bad_pack, lambda p: p, "forward"), (lambda t: t, bad_unpack, "backward"),
                                    (lambda t: t, lambda p: 3, "backward")):
            try:
                with L.autograd.graph.saved_tensors_hooks(pack, unpack):
                    y = a.sin()
                if where == "backward":
                    y.sum().backward()
            except Exception as e:  # noqa: BLE001
                out.append((type(e).__name__, str(e)))
        return out
    story = assert_same_story(scenario)
    assert [k for k, _ in story[1][1]] == ["ValueError", "KeyError", "TypeError"]


def test_custom_function_saves_go_through_the_hooks_in_save_order():
    def scenario(L, log):
        class Scale(L.autograd.Function):
            @staticmethod
            def forward(ctx, x, w):
                out = x * w
                ctx.save_for_backward(w, out, x)
                return out

            @staticmethod
            def backward(ctx, g):
                w, out, x = ctx.saved_tensors
                return g * w, g * x

        a, b = leaves(L, (3,), (3,))
        with logging_hooks(L, log, {"a": a, "b": b}):
            y = Scale.apply(a, b)
        log.append("backward")
        y.sum().backward()
        return a.grad, b.grad
    assert_same_story(scenario)


def test_register_hooks_on_one_saved_tensor():
    def scenario(L, log):
        (a,) = leaves(L, (2,))
        y = a.sin()
        raw = y.grad_fn._raw_saved_self
        raw.register_hooks(lambda t: log.append(("pack", t is a, t.requires_grad)) or t * 2, lambda t: t)
        out = []
        try:
            raw.register_hooks(lambda t: t, lambda t: t)
        except RuntimeError as e:
            out.append(str(e))
        y.sum().backward()
        try:
            raw.register_hooks(lambda t: t, lambda t: t)
        except RuntimeError as e:
            out.append(str(e))
        return a.grad, out
    assert_same_story(scenario)


def test_save_on_cpu_keeps_values_and_gradients():
    def scenario(L, log):
        a, b = leaves(L, (2, 3), (3, 4))
        out = []
        for pin in (False, True):
            with L.autograd.graph.save_on_cpu(pin_memory=pin):
                y = (a @ b).tanh().sum()
            y.backward()
            out.append(a.grad.clone())
            a.grad = None
        return out
    assert_same_story(scenario)


def test_inference_tensors_cannot_be_saved_under_hooks_either():
    def scenario(L, log):
        (a,) = leaves(L, (2,))
        with L.inference_mode():
            c = L.ones(2, dtype=L.float64)
        with logging_hooks(L, log, {}):
            a * c
    assert assert_same_story(scenario)[1][0] == "raised"


# ----- the teaching example: what nn.ReLU(inplace=True) saves -----

def test_what_inplace_relu_saves():
    """Linear -> ReLU(inplace=True) -> Linear. The in-place ReLU saves its *output*, which is the
    very tensor the first Linear returned (now at version 1): the pack log shows it, and shows
    that nothing else is kept for the ReLU. The first Linear's output is not saved by anyone
    but the ReLU, which is why the in-place version is legal here."""
    def scenario(L, log):
        L.manual_seed(0)
        nn = L.nn
        lin1, relu, lin2 = nn.Linear(4, 3).double(), nn.ReLU(inplace=True), nn.Linear(3, 2).double()
        with L.no_grad():
            for p, v in zip(list(lin1.parameters()) + list(lin2.parameters()),
                            [np.linspace(-1, 1, 12).reshape(3, 4), np.linspace(-0.5, 0.5, 3),
                             np.linspace(1, -1, 6).reshape(2, 3), np.linspace(0.1, 0.2, 2)]):
                p.copy_(L.tensor(v, dtype=L.float64))
        x = L.tensor(np.linspace(-2, 2, 8).reshape(2, 4), dtype=L.float64)
        names = {"x": x, "lin1.weight": lin1.weight, "lin2.weight": lin2.weight}
        h = lin1(x)
        names["h (lin1 output)"] = h
        with logging_hooks(L, log, names):
            r = relu(h)
            names["relu output"] = r
            y = lin2(r)
        log.append(("relu returned its input", r is h, h._version))
        y.sum().backward()
        return lin1.weight.grad
    story = assert_same_story(scenario)
    packs = [e for e in story[0] if e[0] == "pack"]
    assert packs[0][1:] == ((2, 3), 1, True, "ReluBackward0", False, "h (lin1 output)")
