"""`logit(x, eps=None)` and `logit_` against torch: values with and without eps (negative eps
clamps nothing, eps > 1/2 puts every value on one of the bounds), NaN, ±0, 0 and 1; the gradient in both
of torch's forms (the `logit_backward` kernel without create_graph, the recorded
`infinitely_differentiable_logit_backward` with it, which differ at -0.0 and for negative eps);
the node and its saved values; the in-place form (a clone of self saved, the version bumped);
ints and bool; torch's errors; gradcheck."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
from parity import assert_same_error

EDGES = [0.0, -0.0, 1.0, 0.5, 2.0, -0.5, math.nan, math.inf, -math.inf, 0.25, 0.1, 0.9, 1e-8, 1 - 1e-7, 0.6, 0.4] * 4
# 64 elements: every one in torch's vector loop (pairs of 16-lane float32 vectors with AVX-512),
# whose answers minigrad gives everywhere; its scalar tail loop's gradient differs at -0.0 and NaN
# (docs/divergences.md)
EPS = [None, 0.0, 0.1, 0.25, 0.5, 0.6, -0.5, 1e-6, 1.5]


def same(a, b, ulps=2):
    """NaN where torch has NaN, the same infinities and zeros (with signs), finite values within
    `ulps` of torch's (its float32 log is SLEEF's)."""
    a, b = np.asarray(a.tolist(), dtype=np.float64), b.detach().numpy()
    spacing = np.spacing(np.abs(b)).astype(np.float64)
    b = b.astype(np.float64)
    ok = (np.isnan(a) & np.isnan(b)) | ((a == b) & (np.signbit(a) == np.signbit(b)))
    with np.errstate(invalid="ignore"):
        ok |= np.isfinite(a) & np.isfinite(b) & (np.abs(a - b) <= ulps * spacing)
    assert ok.all(), f"minigrad {a[~ok].tolist()} torch {b[~ok].tolist()}"


def call(lib, x, eps):
    return lib.logit(x) if eps is None else lib.logit(x, eps)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("eps", EPS)
def test_values_and_both_gradient_forms_match_torch(eps, dtype):
    rng = np.random.default_rng(0)
    w = rng.standard_normal(len(EDGES))
    got = {}
    for lib in (torch, mg):
        x = lib.tensor(EDGES, dtype=getattr(lib, dtype), requires_grad=True)
        y = call(lib, x, eps)
        (plain,) = lib.autograd.grad(y, x, lib.tensor(w, dtype=getattr(lib, dtype)))
        (graph,) = lib.autograd.grad(call(lib, x, eps), x, lib.tensor(w, dtype=getattr(lib, dtype)), create_graph=True)
        got[lib.__name__] = (y, plain, graph, y.grad_fn.name(), y.grad_fn._saved_eps, graph.grad_fn.name())
    (ym, pm, gm, *rest_m), (yt, pt, gt, *rest_t) = got["minigrad"], got["torch"]
    same(ym, yt)
    same(pm, pt)
    same(gm, gt)
    assert rest_m == rest_t


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.floats(-0.5, 1.5), st.just(math.nan)), min_size=64, max_size=64),
       st.sampled_from(EPS), st.sampled_from(["float32", "float64"]))
def test_random_values(vals, eps, dtype):
    m = mg.tensor(vals, dtype=getattr(mg, dtype))
    t = torch.tensor(vals, dtype=getattr(torch, dtype))
    same(call(mg, m, eps), call(torch, t, eps))
    same(m.logit(eps), t.logit(eps))


def test_the_second_derivative_and_its_graph_match_torch():
    vals = [0.2, 0.5, 0.7, 0.95]
    out = {}
    for lib in (torch, mg):
        x = lib.tensor(vals, dtype=lib.float64, requires_grad=True)
        (g,) = lib.autograd.grad(lib.logit(x, 0.1).sum(), x, create_graph=True)
        names = [n.name() for n, _ in g.grad_fn.next_functions if n is not None]
        (h,) = lib.autograd.grad(g.sum(), x)
        out[lib.__name__] = (g.grad_fn.name(), names, h.tolist())
    assert out["minigrad"][:2] == out["torch"][:2]
    np.testing.assert_allclose(out["minigrad"][2], out["torch"][2], rtol=1e-13)


def test_in_place_saves_a_clone_and_bumps_the_version():
    got = {}
    for lib in (torch, mg):
        x = lib.tensor([0.3, 0.05, 0.99], dtype=lib.float64, requires_grad=True)
        y = x * 1
        assert y.logit_(0.1) is y
        fn = y.grad_fn
        saved = fn._saved_self
        info = (fn.name(), fn._saved_eps, saved.grad_fn.name(), saved.tolist(), y._version)
        y.backward(lib.tensor([1.0, 2.0, 3.0], dtype=lib.float64))
        got[lib.__name__] = (info, x.grad.tolist(), y.tolist())
    assert got["minigrad"][0] == got["torch"][0] == ("LogitBackward0", 0.1, "CloneBackward0", [0.3, 0.05, 0.99], 1)
    np.testing.assert_allclose(got["minigrad"][1], got["torch"][1], rtol=1e-14)
    np.testing.assert_allclose(got["minigrad"][2], got["torch"][2], rtol=1e-14)
    m, t = mg.tensor([0.2, 0.8] * 32), torch.tensor([0.2, 0.8] * 32)
    assert mg.logit_(m) is m
    torch.logit_(t)
    same(m, t)


@pytest.mark.parametrize("dtype", ["int64", "int32", "bool"])
def test_integers_and_bool_compute_in_float32(dtype):
    vals = ([0, 1, 1, 0] if dtype == "bool" else [0, 1, 2, -1]) * 16
    m, t = mg.tensor(vals, dtype=getattr(mg, dtype)), torch.tensor(vals, dtype=getattr(torch, dtype))
    got, want = mg.logit(m, 0.25), torch.logit(t, 0.25)
    assert got.dtype == mg.float32 and want.dtype == torch.float32
    same(got, want)


ERRORS = [
    ("in place on int", lambda L: L.tensor([1, 2]).logit_()),
    ("eps a string", lambda L: L.logit(L.ones(2), "a")),
    ("method eps a string", lambda L: L.ones(2).logit("a")),
    ("in-place eps keyword", lambda L: L.ones(2).logit_(eps="a")),
    ("module in-place eps", lambda L: L.logit_(L.ones(2), "a")),
    ("input not a tensor", lambda L: L.logit(3)),
    ("expanded self in place", lambda L: L.ones(1).expand(3).logit_()),
]


@pytest.mark.parametrize("what,fn", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors_match_torch(what, fn):
    assert_same_error(lambda: fn(mg), lambda: fn(torch))


def test_a_zero_dim_tensor_eps_is_read_as_its_value():
    same(mg.logit(mg.tensor([0.05, 0.5] * 32), mg.tensor(0.1)), torch.logit(torch.tensor([0.05, 0.5] * 32), torch.tensor(0.1)))


def test_gradcheck_and_gradgradcheck():
    x = mg.tensor([0.2, 0.45, 0.8], dtype=mg.float64, requires_grad=True)
    assert mg.autograd.gradcheck(lambda a: mg.logit(a), (x,))
    assert mg.autograd.gradgradcheck(lambda a: mg.logit(a, 0.1), (x,))
