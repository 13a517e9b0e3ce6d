"""Three semantic gaps the differential fuzzer found (issue 14), each checked as a class against
torch 2.13: the sign of a zero log_softmax (torch computes (x - max) - log(sum)), views made
under no_grad whose base or sibling is later modified in place (torch's handle_view_on_rebase),
and floor_divide, which has no derivative in torch (its autograd fallback's NotImplemented node)."""

import math
import random

import numpy as np
import pytest
import torch

import minigrad as mg

LIBS = {"minigrad": mg, "torch": torch}


def bits(t):
    a = np.asarray(t.detach().double().numpy() if hasattr(t, "double") else t, dtype=np.float64)
    return [(math.isnan(v), math.copysign(1.0, v), v if not math.isnan(v) else 0.0) for v in a.reshape(-1).tolist()]


def outcome(f):
    try:
        return ("ok", f())
    except Exception as e:  # the class and the words are compared
        return (type(e).__name__, str(e))


# ----- a. log_softmax's signed zero: (x - max) - log(sum), in torch's order -----

# shapes and dims that reach every kernel path: a contiguous row (short, and long enough for the
# vectorised float32 loop), a column block (inner > 1), a long column block and a 0-d tensor
LOG_SOFTMAX_CASES = [((1,), 0), ((3, 1), 1), ((1, 3), 0), ((1, 300), 0), ((2, 1, 5), 1), ((), 0), ((40, 1), -1)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,dim", LOG_SOFTMAX_CASES)
@pytest.mark.parametrize("value", [-0.0, 0.0, 1.0, -3.5, 1e30, -math.inf, math.inf, math.nan])
def test_log_softmax_zero_sign(shape, dim, value, dtype):
    # a slice of one element: log_softmax is exactly zero (or NaN); its sign is the formula's
    n = math.prod(shape)
    res = {}
    for name, L in LIBS.items():
        x = L.full(shape, value, dtype=getattr(L, dtype)) if shape else L.tensor(value, dtype=getattr(L, dtype))
        res[name] = bits(L.log_softmax(x, dim)), bits(L.nn.functional.log_softmax(x, dim=dim))
        assert n == x.numel()
    assert res["minigrad"] == res["torch"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_log_softmax_zero_sign_mixed_rows(dtype):
    # rows with equal maxima give -log(k) where they hit the max, and cross_entropy's -(+0.0)
    vals = [[-0.0], [0.0], [2.0], [-0.0]]
    got = {}
    for name, L in LIBS.items():
        x = L.tensor(vals, dtype=getattr(L, dtype), requires_grad=True)
        y = L.log_softmax(x, 1)
        ce = L.nn.functional.cross_entropy(x, L.tensor([0, 0, 0, 0]), reduction="none")
        g, = L.autograd.grad(y.sum() + ce.sum(), x)
        got[name] = bits(y), bits(ce), bits(g), bits(L.log_softmax(x.detach().t().contiguous(), 0))
    assert got["minigrad"] == got["torch"]


# ----- b. views made under no_grad, then the base or a sibling modified in place -----

def no_grad_call(L, f):
    with L.no_grad():
        return f()


def nograd_view_program(L, base_kind, modifier, reader, grad_operand, set_requires):
    a = L.ones(3, requires_grad=True)
    x = {"plain": lambda: L.ones(3), "nonleaf": lambda: a * 1}[base_kind]()
    with L.no_grad():
        v, w = x[0:2], x[1:3]
    if set_requires:
        {"v": v, "w": w, "x": x}[set_requires].requires_grad_()
    op = (lambda n: L.ones(n, requires_grad=True)) if grad_operand else (lambda n: 2.0)
    mods = {
        "x": lambda: x.mul_(op(3)), "w": lambda: w.mul_(op(2)), "v": lambda: v.mul_(op(2)),
        "x under no_grad": lambda: no_grad_call(L, lambda: x.mul_(op(3))),
        "x[0] =": lambda: x.__setitem__(0, 5.0), "x.copy_": lambda: x.copy_(L.ones(3, requires_grad=grad_operand)),
        "x.zero_": lambda: x.zero_(),
    }
    mods[modifier]()
    reads = {
        "grad_fn": lambda: None if v.grad_fn is None else v.grad_fn.name(),
        "requires_grad": lambda: (v.requires_grad, v.is_leaf),
        "mul": lambda: (v * 2).grad_fn.name() if (v * 2).grad_fn is not None else None,
        "add_": lambda: v.add_(1).grad_fn.name() if v.grad_fn is not None else None,
        "view": lambda: v.view(2).grad_fn is None,
        "backward": lambda: (x.sum().backward(), a.grad.tolist() if a.grad is not None else None)[1],
        "_version": lambda: v._version,
    }
    return reads[reader]()


NOGRAD_CASES = [(b, m, r, g, s)
                for b in ("plain", "nonleaf")
                for m in ("x", "w", "v", "x under no_grad", "x[0] =", "x.copy_", "x.zero_")
                for r in ("grad_fn", "requires_grad", "mul", "add_", "view", "backward", "_version")
                for g in (False, True)
                for s in (None, "v", "w", "x")
                if not (b == "nonleaf" and s == "x")]


@pytest.mark.parametrize("case", [NOGRAD_CASES[i::8] for i in range(8)], ids=lambda c: f"{len(c)}-programs")
def test_nograd_view_then_inplace(case):
    for b, m, r, g, s in case:
        got = {n: outcome(lambda L=L: nograd_view_program(L, b, m, r, g, s)) for n, L in LIBS.items()}
        assert got["minigrad"] == got["torch"], (b, m, r, g, s)


def random_view_program(L, seed):
    """Random chains of views made in and out of no_grad, requires_grad_ on some, in-place
    writes (with and without a requires-grad operand) in and out of no_grad, grad_fn reads."""
    r = random.Random(seed)
    log = []
    a = L.ones(4, requires_grad=True)
    kind = r.choice(["plain", "leaf", "nonleaf"])
    ts = [{"plain": lambda: L.ones(4), "leaf": lambda: L.ones(4, requires_grad=True), "nonleaf": lambda: a * 1}[kind]()]
    makers = [lambda t: t[0:2], lambda t: t.view(-1), lambda t: t.unsqueeze(0)[0], lambda t: t.unbind(0)[0] if t.dim() else t,
              lambda t: t.detach()]
    try:
        for _ in range(r.randint(1, 6)):
            op, i, ng = r.choice(["view", "view", "req", "mod", "read"]), r.randrange(len(ts)), r.random() < 0.5
            t = ts[i]
            log.append((op, i, ng))
            with (L.no_grad() if ng else L.enable_grad()):
                if op == "view":
                    ts.append(r.choice(makers)(t))
                elif op == "req":
                    t.requires_grad_()
                elif op == "mod":
                    t.mul_(L.ones(tuple(t.shape), requires_grad=True) if r.random() < 0.5 else 2.0)
                else:
                    log.append(None if t.grad_fn is None else t.grad_fn.name())
    except Exception as e:
        log.append((type(e).__name__, str(e)))
    for t in ts:
        log.append(outcome(lambda: (t.requires_grad, t.is_leaf, t._version, None if t.grad_fn is None else t.grad_fn.name())))
    return log


def test_nograd_view_random_programs():
    for seed in range(400):
        assert random_view_program(mg, seed) == random_view_program(torch, seed), seed


# ----- c. floor_divide has no derivative (torch's autograd fallback) -----

FLOOR_DIVIDE_FORMS = {
    "floor_divide": lambda L, x, y: L.floor_divide(x, y),
    "method": lambda L, x, y: x.floor_divide(y),
    "//": lambda L, x, y: x // y,
    "// number": lambda L, x, y: x // 2,
    "number //": lambda L, x, y: 2 // y,
    "floor_divide number": lambda L, x, y: L.floor_divide(x, 2.5),
}


def fd_inputs(L, xr, yr):
    return (L.tensor([3.5, -2.0, 7.0], requires_grad=xr), L.tensor([2.0, 1.5, -2.0], requires_grad=yr))


@pytest.mark.parametrize("xr,yr", [(True, True), (True, False), (False, True)])
@pytest.mark.parametrize("form", list(FLOOR_DIVIDE_FORMS))
def test_floor_divide_not_differentiable(form, xr, yr):
    f = FLOOR_DIVIDE_FORMS[form]
    got = {}
    for name, L in LIBS.items():
        x, y = fd_inputs(L, xr, yr)
        out = f(L, x, y)
        fn = out.grad_fn
        desc = (out.tolist(), out.requires_grad, None if fn is None else fn.name(),
                None if fn is None else [type(n).__name__ == "NoneType" for n, _ in fn.next_functions])
        wanted = [t for t in (x, y) if t.requires_grad]
        got[name] = desc, outcome(lambda: out.sum().backward()), \
            outcome(lambda: L.autograd.grad((out * 3).sum() + sum(t.sum() for t in wanted), wanted)) if out.requires_grad else None
    assert got["minigrad"] == got["torch"]


@pytest.mark.parametrize("self_kind", ["nonleaf", "plain", "view of nonleaf", "leaf"])
@pytest.mark.parametrize("other", ["number", "tensor", "requires-grad tensor"])
@pytest.mark.parametrize("form", ["floor_divide_", "//="])
def test_floor_divide_inplace(form, other, self_kind):
    got = {}
    for name, L in LIBS.items():
        a = L.tensor([3.5, -2.0, 7.0, 1.0], requires_grad=True)
        x = {"nonleaf": lambda: a * 1, "plain": lambda: L.tensor([3.5, -2.0, 7.0, 1.0]), "leaf": lambda: a,
             "view of nonleaf": lambda: (a * 1)[1:]}[self_kind]()
        y = {"number": 2.0, "tensor": L.full(tuple(x.shape), 2.0),
             "requires-grad tensor": L.full(tuple(x.shape), 2.0, requires_grad=True)}[other]

        def run():
            if form == "//=":
                z = x
                z //= y
                return z is x
            return x.floor_divide_(y) is x

        r = outcome(run)
        fn = x.grad_fn
        base = x._base
        got[name] = (r, x.tolist(), x._version, None if fn is None else fn.name(),
                     None if fn is None else len(fn.next_functions),
                     None if base is None or base.grad_fn is None else base.grad_fn.name(),
                     outcome(lambda: (base if base is not None else x).sum().backward()) if x.requires_grad else None)
    assert got["minigrad"] == got["torch"]


def test_div_floor_keeps_its_zero_gradient():
    # div(rounding_mode='floor'/'trunc') has DivBackward2 (zeros) in torch: only floor_divide lacks one
    for mode in ("floor", "trunc"):
        got = {}
        for name, L in LIBS.items():
            x, y = fd_inputs(L, True, True)
            out = L.div(x, y, rounding_mode=mode)
            got[name] = out.grad_fn.name(), [g.tolist() for g in L.autograd.grad(out.sum(), (x, y))]
        assert got["minigrad"] == got["torch"]


def test_floor_divide_under_anomaly_mode():
    msgs = {}
    for name, L in LIBS.items():
        x, _ = fd_inputs(L, True, False)
        with L.autograd.set_detect_anomaly(True), pytest.warns(UserWarning):
            msgs[name] = outcome(lambda: (x // 2).sum().backward())
    assert msgs["minigrad"] == msgs["torch"]
