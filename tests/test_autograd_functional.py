"""minigrad.autograd.functional (jacobian, hessian, vjp, jvp, hvp, vhp) and minigrad.func (grad,
grad_and_value, vjp) against torch 2.13: values, which results carry a graph (`requires_grad`, the
last node's name), second derivatives through `create_graph=True`, the `strict` errors, argument
errors, and the unsupported modes (vectorize, forward-mode) raising where torch can or cannot."""

import numpy as np
import pytest
import torch
import torch.autograd.functional as TAF
import torch.func as TF
from hypothesis import given, settings
from hypothesis import strategies as st
import hypothesis.extra.numpy as hnp

import minigrad as mg
import minigrad.autograd.functional as MAF
import minigrad.func as MF
from parity import assert_same, assert_same_error, run_both

APIS = {torch: (TAF, TF), mg: (MAF, MF)}


def lib_tensor(L, a, requires_grad=False):
    return L.tensor(np.asarray(a, dtype=np.float64), requires_grad=requires_grad)


def graph_info(t):
    """What a result says about its history: requires_grad and the name of its last node."""
    return t.requires_grad, None if t.grad_fn is None else type(t.grad_fn).__name__


def assert_same_tree(m, t, *, graph=True):
    if isinstance(t, (tuple, list)):
        assert type(m) is type(t) and len(m) == len(t), (m, t)
        for a, b in zip(m, t):
            assert_same_tree(a, b, graph=graph)
        return
    if isinstance(t, dict):
        assert list(m) == list(t)
        for k in t:
            assert_same_tree(m[k], t[k], graph=graph)
        return
    assert_same(m, t)
    if graph:
        assert m.requires_grad == t.requires_grad, (graph_info(m), graph_info(t))


# ----- functions of one or two tensors, written once for both libraries -----

FUNCS = {  # name -> (f(L, *xs), input shapes, output is a scalar)
    "exp_reducer": (lambda L, x: x.exp().sum(dim=1), [(2, 3)], False),
    "cubic": (lambda L, x: x.pow(3).sum(), [(2, 2)], True),
    "tanh_mix": (lambda L, x, y: (x.tanh() * y).sum(), [(3,), (3,)], True),
    "adder": (lambda L, x, y: 2 * x + 3 * y, [(2,), (2,)], False),
    "matvec": (lambda L, w, x: (w @ x).sin(), [(2, 3), (3,)], False),
    "two_outputs": (lambda L, x: (x * x, x.sum().exp()), [(3,)], False),
    "softmax_loss": (lambda L, x: (x.softmax(0) * x).sum(), [(4,)], True),
    "linear_in_y": (lambda L, x, y: (x.sin() * x + y).sum(), [(2,), (2,)], True),
}


@st.composite
def func_and_inputs(draw, scalar_only=False):
    names = [n for n, (_, _, s) in FUNCS.items() if s or not scalar_only]
    name = draw(st.sampled_from(sorted(names)))
    f, shapes, _ = FUNCS[name]
    xs = [draw(hnp.arrays(np.float64, s, elements=st.floats(-2, 2, allow_subnormal=False))) for s in shapes]
    return name, f, xs


def call_both(api, fn, f, xs, *, tuple_inputs, requires_grad=False, v=None, **kw):
    """Runs `API.fn(f, inputs, ...)` on both libraries (same inputs, same v); returns run_both's."""
    def run(L):
        inputs = [lib_tensor(L, x, requires_grad) for x in xs]
        inputs = tuple(inputs) if tuple_inputs else inputs[0]
        args = {} if v is None else {"v": tuple(lib_tensor(L, a) for a in v) if isinstance(v, tuple) else lib_tensor(L, v)}
        return getattr(APIS[L][api], fn)(lambda *a: f(L, *a), inputs, **args, **kw)
    return run_both(lambda: run(mg), lambda: run(torch))


def random_like(rng, out):
    return tuple(rng.standard_normal(o.shape) for o in out) if isinstance(out, tuple) else rng.standard_normal(out.shape)


@settings(max_examples=25)
@given(case=func_and_inputs(), create_graph=st.booleans(), data=st.data())
def test_jacobian_vjp_jvp_match_torch(case, create_graph, data):
    name, f, xs = case
    tuple_inputs = len(xs) > 1 or data.draw(st.booleans())
    rg = data.draw(st.booleans())
    kind, m, t = call_both(0, "jacobian", f, xs, tuple_inputs=tuple_inputs, requires_grad=rg, create_graph=create_graph)
    assert kind == "ok"
    assert_same_tree(m, t)
    rng = np.random.default_rng(0)
    out = f(torch, *[torch.tensor(x) for x in xs])
    v_out = random_like(rng, out)
    v_in = tuple(rng.standard_normal(x.shape) for x in xs) if tuple_inputs else rng.standard_normal(xs[0].shape)
    for fn, v in (("vjp", v_out), ("jvp", v_in)):
        kind, m, t = call_both(0, fn, f, xs, tuple_inputs=tuple_inputs, requires_grad=rg, v=v, create_graph=create_graph)
        assert kind == "ok", (fn, m, t)
        assert_same_tree(m, t)


@settings(max_examples=20)
@given(case=func_and_inputs(scalar_only=True), create_graph=st.booleans(), data=st.data())
def test_hessian_hvp_vhp_match_torch(case, create_graph, data):
    name, f, xs = case
    tuple_inputs = len(xs) > 1 or data.draw(st.booleans())
    rg = data.draw(st.booleans())
    kind, m, t = call_both(0, "hessian", f, xs, tuple_inputs=tuple_inputs, requires_grad=rg, create_graph=create_graph)
    assert kind == "ok"
    assert_same_tree(m, t)
    rng = np.random.default_rng(1)
    v = tuple(rng.standard_normal(x.shape) for x in xs) if tuple_inputs else rng.standard_normal(xs[0].shape)
    for fn in ("hvp", "vhp"):
        kind, m, t = call_both(0, fn, f, xs, tuple_inputs=tuple_inputs, requires_grad=rg, v=v, create_graph=create_graph)
        assert kind == "ok", (fn, m, t)
        assert_same_tree(m, t)


@pytest.mark.parametrize("fn", ["jacobian", "hessian", "vjp", "jvp", "hvp", "vhp"])
def test_create_graph_results_are_differentiable_to_the_inputs(fn):
    """With create_graph=True and inputs that require grad, backward through the result reaches the
    inputs: third derivatives for hessian/hvp/vhp, second for the others."""
    grads = {}
    for L in (torch, mg):
        x = lib_tensor(L, [0.3, -0.7, 1.1], requires_grad=True)
        f = (lambda x: x.pow(4).sum()) if fn in ("hessian", "hvp", "vhp") else (lambda x: x.sin() * x.sum())
        api = APIS[L][0]
        if fn in ("jacobian", "hessian"):
            res = getattr(api, fn)(f, x, create_graph=True)
        else:
            res = getattr(api, fn)(f, x, lib_tensor(L, [1.0, 2.0, -1.0]), create_graph=True)[1]
        assert res.requires_grad and res.grad_fn is not None
        (res * res).sum().backward()
        grads[L] = x.grad
    assert_same(grads[mg], grads[torch])


def test_results_are_detached_without_create_graph_and_inputs_untouched():
    for L in (torch, mg):
        x = lib_tensor(L, [1.0, 2.0], requires_grad=True)
        out, g = APIS[L][0].vjp(lambda x: (x ** 2).sum(), x)
        assert not out.requires_grad and not g.requires_grad
        assert x.grad is None and x._version == 0


def test_no_grad_around_vjp_with_create_graph_keeps_the_graph():
    for L in (torch, mg):
        x = lib_tensor(L, [1.0, 2.0], requires_grad=True)
        with L.no_grad():
            _, g = APIS[L][0].vjp(lambda x: (x ** 3).sum(), x, create_graph=True)
            _, g2 = APIS[L][0].vjp(lambda x: (x ** 3).sum(), x)
        assert g.requires_grad and not g2.requires_grad


def test_closure_captured_input_is_not_the_differentiated_one():
    """torch issue 32576: the function receives fresh tensor objects, so the caller's tensor, used by
    closure, is a constant: d(a * x)/da = diag(x), not diag(2x)."""
    res = {}
    for L in (torch, mg):
        x = lib_tensor(L, [1.0, 2.0], requires_grad=True)
        res[L] = APIS[L][0].jacobian(lambda a: a * x, x)
    assert_same(res[mg], res[torch])
    assert res[mg].numpy().tolist() == [[1.0, 0.0], [0.0, 2.0]]


# ----- strict mode -----

STRICT_CASES = {  # (function of L and inputs, inputs, whether create_graph)
    "output_independent": ("jacobian", lambda L, x, y: 2 * x, [[1.0, 2.0], [3.0, 4.0]], False),
    "output_constant": ("vjp", lambda L, x: L.ones(2, dtype=L.float64), [[1.0, 2.0]], False),
    "jvp_output_constant": ("jvp", lambda L, x: L.ones(2, dtype=L.float64), [[1.0, 2.0]], False),
    "vjp_independent_input": ("vjp", lambda L, x, y: (x * 2).sum(), [[1.0, 2.0], [3.0, 4.0]], False),
    "vjp_linear_create_graph": ("vjp", lambda L, x: (x * 2).sum(), [[1.0, 2.0]], True),
    "jacobian_linear_create_graph": ("jacobian", lambda L, x: x * 2, [[1.0, 2.0]], True),
    "hessian_linear": ("hessian", lambda L, x: (x * 2).sum(), [[1.0, 2.0]], False),
    "hessian_independent": ("hessian", lambda L, x, y: (x ** 2).sum(), [[1.0, 2.0], [3.0, 4.0]], False),
    "hessian_quadratic_create_graph": ("hessian", lambda L, x: (x ** 2).sum(), [[1.0, 2.0]], True),
    "hvp_linear": ("hvp", lambda L, x: x.sum(), [[1.0, 2.0]], False),
    "vhp_linear": ("vhp", lambda L, x: x.sum(), [[1.0, 2.0]], False),
    "hvp_quadratic_create_graph": ("hvp", lambda L, x: (x ** 2).sum(), [[1.0, 2.0]], True),
    "vhp_independent": ("vhp", lambda L, x, y: (x ** 3).sum(), [[1.0, 2.0], [3.0, 4.0]], False),
    "jvp_linear_create_graph": ("jvp", lambda L, x: x * 2, [[1.0, 2.0]], True),
}


@pytest.mark.parametrize("case", sorted(STRICT_CASES))
def test_strict_mode_matches_torch(case):
    fn, f, xs, create_graph = STRICT_CASES[case]
    v = None
    if fn in ("jvp", "hvp", "vhp"):
        v = tuple(np.ones(len(x)) for x in xs) if len(xs) > 1 else np.ones(len(xs[0]))
    elif fn == "vjp":
        out = f(torch, *[torch.tensor(x) for x in xs])
        v = np.ones(tuple(out.shape))
    kind, m, t = call_both(0, fn, f, [np.array(x) for x in xs], tuple_inputs=len(xs) > 1, v=v, strict=True,
                           create_graph=create_graph)
    if kind == "ok":
        assert_same_tree(m, t)
    # and without strict the same program gives zeros (the mathematical value) in both
    kind, m, t = call_both(0, fn, f, [np.array(x) for x in xs], tuple_inputs=len(xs) > 1, v=v, create_graph=create_graph)
    assert kind == "ok"
    assert_same_tree(m, t)


# ----- argument errors and unsupported modes -----

ERRORS = {
    "inputs_not_tensor": lambda L, A: A.jacobian(lambda x: x, [1.0]),
    "inputs_tuple_with_float": lambda L, A: A.vjp(lambda x, y: x, (L.ones(2), 3.0), L.ones(2)),
    "output_not_tensor": lambda L, A: A.vjp(lambda x: 3.0, L.ones(2)),
    "v_wrong_size": lambda L, A: A.vjp(lambda x: x * 2, L.ones(2), L.ones(3)),
    "v_tuple_wrong_length": lambda L, A: A.jvp(lambda x, y: x, (L.ones(2), L.ones(2)), (L.ones(2),)),
    "v_tuple_entry_size": lambda L, A: A.hvp(lambda x, y: (x * y).sum(), (L.ones(2), L.ones(2)), (L.ones(2), L.ones(3))),
    "v_single_for_tuple": lambda L, A: A.vhp(lambda x: x.sum(), L.ones(2), (L.ones(2), L.ones(2))),
    "v_none_vjp": lambda L, A: A.vjp(lambda x: x * 2, L.ones(2)),
    "v_none_jvp": lambda L, A: A.jvp(lambda x: x.sum(), L.ones(2)),
    "v_none_hvp": lambda L, A: A.hvp(lambda x: x.sum(), L.ones(2)),
    "hessian_not_scalar": lambda L, A: A.hessian(lambda x: x * 2, L.ones(2)),
    "hessian_tuple_output": lambda L, A: A.hessian(lambda x: (x.sum(),), L.ones(2)),
    "vhp_not_scalar": lambda L, A: A.vhp(lambda x: x * 2, L.ones(2), L.ones(2)),
    "hvp_tuple_output": lambda L, A: A.hvp(lambda x: (x.sum(), x.sum()), L.ones(2), L.ones(2)),
    "bad_strategy": lambda L, A: A.jacobian(lambda x: x, L.ones(2), strategy="sideways"),
    "bad_outer_strategy": lambda L, A: A.hessian(lambda x: x.sum(), L.ones(2), outer_jacobian_strategy="x"),
    "forward_create_graph": lambda L, A: A.jacobian(lambda x: x, L.ones(2), strategy="forward-mode", create_graph=True),
    "forward_strict": lambda L, A: A.jacobian(lambda x: x, L.ones(2), strategy="forward-mode", strict=True),
    "forward_not_vectorized": lambda L, A: A.jacobian(lambda x: x, L.ones(2), strategy="forward-mode"),
    "hessian_forward_not_vectorized": lambda L, A: A.hessian(lambda x: x.sum(), L.ones(2),
                                                             outer_jacobian_strategy="forward-mode"),
    "vectorize_strict": lambda L, A: A.jacobian(lambda x: x, L.ones(2), vectorize=True, strict=True),
}


@pytest.mark.parametrize("case", sorted(ERRORS))
def test_errors_match_torch(case):
    prog = ERRORS[case]
    assert_same_error(lambda: prog(mg, MAF), lambda: prog(torch, TAF))


@pytest.mark.parametrize("call", [
    lambda: MAF.jacobian(lambda x: x * 2, mg.ones(2), vectorize=True),
    lambda: MAF.hessian(lambda x: (x ** 2).sum(), mg.ones(2), vectorize=True),
    lambda: MAF.jacobian(lambda x: x * 2, mg.ones(2), vectorize=True, strategy="forward-mode"),
])
def test_vectorize_raises_not_implemented_where_torch_would_use_vmap(call):
    with pytest.raises(NotImplementedError, match="vmap"):
        call()


# ----- minigrad.func -----

def func_both(fm, ft):
    kind, m, t = run_both(lambda: fm(mg, MF), lambda: ft(torch, TF))
    return kind, m, t


FUNC_PROGRAMS = {
    "grad": lambda L, F: F.grad(lambda x: (x.sin() * x).sum())(lib_tensor(L, [0.5, -1.0, 2.0])),
    "grad_outer_requires_grad": lambda L, F: F.grad(lambda x: (x.sin() * x).sum())(lib_tensor(L, [0.5, 2.0], True)),
    "grad_of_grad": lambda L, F: F.grad(F.grad(lambda x: x.sin() * x))(lib_tensor(L, 0.7)),
    "grad_of_grad_requires_grad": lambda L, F: F.grad(F.grad(lambda x: x.exp() * x))(lib_tensor(L, 0.7, True)),
    "argnums_tuple": lambda L, F: F.grad(lambda x, y: (x * y.exp()).sum(), argnums=(0, 1))(
        lib_tensor(L, [1.0, 2.0]), lib_tensor(L, [0.5, -0.5])),
    "argnums_negative": lambda L, F: F.grad(lambda x, y: (x * y.exp()).sum(), argnums=-1)(
        lib_tensor(L, [1.0, 2.0]), lib_tensor(L, [0.5, -0.5])),
    "dict_argument": lambda L, F: F.grad(lambda d: (d["a"] * d["b"]).sum())(
        {"a": lib_tensor(L, [1.0, 2.0]), "b": lib_tensor(L, [3.0, 4.0])}),
    "kwargs_not_differentiated": lambda L, F: F.grad(lambda x, scale=1.0: (x * scale).sum())(
        lib_tensor(L, [1.0, 2.0]), scale=lib_tensor(L, 3.0, True)),
    "has_aux": lambda L, F: F.grad(lambda x: ((x ** 2).sum(), {"double": x * 2}), has_aux=True)(lib_tensor(L, [1.0, 2.0])),
    "grad_and_value": lambda L, F: F.grad_and_value(lambda x: (x ** 2).sum())(lib_tensor(L, [1.0, 2.0])),
    "grad_and_value_aux": lambda L, F: F.grad_and_value(lambda x: ((x ** 2).sum(), x.mean()), has_aux=True)(
        lib_tensor(L, [1.0, 2.0], True)),
    "constant_output": lambda L, F: F.grad(lambda x: L.zeros((), dtype=L.float64))(lib_tensor(L, [1.0, 2.0])),
    "no_grad_inside": lambda L, F: F.grad(lambda x: x.sum() * _no_grad_square(L, x).sum())(lib_tensor(L, [1.0, 2.0])),
    "vjp": lambda L, F: _vjp_call(L, F, lib_tensor(L, [0.3, 1.2]), lib_tensor(L, [1.0, -2.0])),
    "vjp_outer_requires_grad": lambda L, F: _vjp_call(L, F, lib_tensor(L, [0.3, 1.2], True), lib_tensor(L, [1.0, -2.0])),
    "vjp_cotangent_requires_grad": lambda L, F: _vjp_call(L, F, lib_tensor(L, [0.3, 1.2]), lib_tensor(L, [1.0, -2.0], True)),
    "vjp_tree": lambda L, F: F.vjp(lambda a, b: [a * b, {"s": a + b}], lib_tensor(L, [1.0, 2.0]), lib_tensor(L, [3.0, 4.0]))[1](
        [lib_tensor(L, [1.0, 1.0]), {"s": lib_tensor(L, [2.0, 0.5])}]),
    "vjp_aux": lambda L, F: F.vjp(lambda x: (x.sin(), x.cos()), lib_tensor(L, [1.0, 2.0]), has_aux=True)[2],
    "vjp_unused_primal": lambda L, F: F.vjp(lambda x, y: x * 2, lib_tensor(L, [1.0]), lib_tensor(L, [2.0]))[1](lib_tensor(L, [1.0])),
    "vjp_no_create_graph": lambda L, F: F.vjp(L.sin, lib_tensor(L, [1.0], True))[1](lib_tensor(L, [1.0]), create_graph=False),
    # errors
    "grad_vector_output": lambda L, F: F.grad(lambda x: x.sin())(lib_tensor(L, [1.0, 2.0])),
    "grad_float_output": lambda L, F: F.grad(lambda x: 3.0)(lib_tensor(L, [1.0])),
    "grad_float_input": lambda L, F: F.grad(lambda x: x)(3.0),
    "grad_int_input": lambda L, F: F.grad(lambda x: x.sum())(L.arange(3)),
    "argnums_repeated": lambda L, F: F.grad(lambda x, y: x.sum(), argnums=(0, 0))(L.ones(1), L.ones(1)),
    "argnums_empty": lambda L, F: F.grad(lambda x: x.sum(), argnums=())(L.ones(1)),
    "argnums_list": lambda L, F: F.grad(lambda x: x.sum(), argnums=[0])(L.ones(1)),
    "argnums_float": lambda L, F: F.grad(lambda x: x.sum(), argnums=(0.0,))(L.ones(1)),
    "argnums_out_of_range": lambda L, F: F.grad(lambda x: x.sum(), argnums=1)(L.ones(1)),
    "has_aux_not_pair": lambda L, F: F.grad(lambda x: x.sum(), has_aux=True)(L.ones(1)),
    "aux_not_tensor": lambda L, F: F.grad(lambda x: (x.sum(), 1), has_aux=True)(L.ones(1)),
    "inplace_on_input": lambda L, F: F.grad(lambda x: x.mul_(2).sum())(L.ones(2)),
    "vjp_int_output": lambda L, F: F.vjp(lambda x: x.long(), L.ones(2)),
    "vjp_none_output": lambda L, F: F.vjp(lambda x: None, L.ones(2)),
    "vjp_empty_output": lambda L, F: F.vjp(lambda x: (), L.ones(2)),
    "vjp_non_tensor_output": lambda L, F: F.vjp(lambda x: (x, 1), L.ones(2)),
    "vjp_has_aux_not_pair": lambda L, F: F.vjp(lambda x: x, L.ones(2), has_aux=True),
    "vjp_cotangent_structure": lambda L, F: F.vjp(L.sin, L.ones(2))[1]((L.ones(2),)),
    "vjp_cotangent_structure_tree": lambda L, F: F.vjp(lambda a: [a, {"s": a}], L.ones(2))[1]([L.ones(2)]),
    "vjp_cotangent_shape": lambda L, F: F.vjp(L.sin, L.ones(3))[1](L.ones(2)),
}


def _no_grad_square(L, x):
    with L.no_grad():
        return x ** 2


def _vjp_call(L, F, x, ct):
    out, fn = F.vjp(lambda a: (a * 2, a.sin()), x)
    return out, fn((ct, ct))


@pytest.mark.parametrize("case", sorted(FUNC_PROGRAMS))
def test_func_transforms_match_torch(case):
    prog = FUNC_PROGRAMS[case]
    kind, m, t = func_both(prog, prog)
    if kind == "ok":
        assert_same_tree(m, t)


def test_func_grad_under_no_grad_returns_no_history():
    for L, F in ((torch, TF), (mg, MF)):
        x = lib_tensor(L, [1.0, 2.0], True)
        with L.no_grad():
            g = F.grad(lambda x: (x ** 3).sum())(x)
        assert not g.requires_grad


def test_func_grad_closure_weight_keeps_history_to_it():
    res = {}
    for L, F in ((torch, TF), (mg, MF)):
        w = lib_tensor(L, [0.5, -1.5], True)
        g = F.grad(lambda x: (x.sin() * w).sum())(lib_tensor(L, [1.0, 2.0]))
        assert g.requires_grad
        g.sum().backward()
        res[L] = w.grad
    assert_same(res[mg], res[torch])


@settings(max_examples=20)
@given(x=hnp.arrays(np.float64, st.integers(1, 4), elements=st.floats(-2, 2)))
def test_func_grad_equals_autograd_functional_vjp(x):
    f = lambda t: (t.tanh() * t).sum()  # noqa: E731
    g = MF.grad(f)(mg.tensor(x))
    _, v = MAF.vjp(f, mg.tensor(x))
    assert_same(g, TF.grad(f)(torch.tensor(x)))
    np.testing.assert_array_equal(v.numpy(), g.numpy())
