"""minigrad.optim against torch.optim (for-loop path, foreach=False).

Each run builds the same random least-squares problem in both libraries, starts from the
same parameter values, computes gradients with each library's autograd, and compares the
parameters and their `_version` counters after every step.
"""

import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings, strategies as st

import minigrad as mg
from minigrad import optim

STEPS = 6


class Problem:
    """loss = mean((X @ W + b - Y)**2) + 0.1 * sum(v**2), the same numbers in both libraries."""

    def __init__(self, seed, n=5, d_in=3, d_out=2):
        rng = np.random.default_rng(seed)
        self.arrays = {
            "X": rng.standard_normal((n, d_in)).astype(np.float32),
            "Y": rng.standard_normal((n, d_out)).astype(np.float32),
            "W": rng.standard_normal((d_in, d_out)).astype(np.float32),
            "b": rng.standard_normal(d_out).astype(np.float32),
            "v": rng.standard_normal(4).astype(np.float32),
        }

    def params(self, lib):
        make = (lambda a: torch.tensor(a, requires_grad=True)) if lib is torch else (
            lambda a: mg.tensor(a.tolist(), requires_grad=True))
        return [make(self.arrays[k]) for k in ("W", "b", "v")]

    def loss(self, lib, params):
        W, b, v = params
        tensor = torch.tensor if lib is torch else (lambda a: mg.tensor(a.tolist()))
        X, Y = tensor(self.arrays["X"]), tensor(self.arrays["Y"])
        return ((X @ W + b - Y) ** 2).mean() + 0.1 * (v * v).sum()


def _np(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else t.detach().numpy()


def assert_close_params(mps, tps, step):
    for i, (m, t) in enumerate(zip(mps, tps)):
        np.testing.assert_allclose(_np(m), _np(t), rtol=2e-5, atol=2e-6, err_msg=f"param {i} after step {step}")
        assert m._version == t._version, f"param {i} _version after step {step}: {m._version} vs {t._version}"


def run_both(problem, make_opts, steps=STEPS, closure=False):
    """Step both optimizers `steps` times, comparing after each step; returns both sides."""
    mps, tps = problem.params(mg), problem.params(torch)
    mopt, topt = make_opts(mps, tps)
    for step in range(steps):
        for lib, opt, ps in ((mg, mopt, mps), (torch, topt, tps)):
            def compute(lib=lib, opt=opt, ps=ps):
                opt.zero_grad()
                loss = problem.loss(lib, ps)
                loss.backward()
                return loss
            if closure:
                loss = opt.step(compute)
                assert loss is not None
            else:
                compute()
                assert opt.step() is None
        assert_close_params(mps, tps, step)
    return (mps, mopt), (tps, topt)


def assert_same_state(mopt, topt):
    msd, tsd = mopt.state_dict(), topt.state_dict()
    tgroups = [{k: v for k, v in g.items() if k != "foreach"} for g in tsd["param_groups"]]
    mgroups = [{k: v for k, v in g.items() if k != "foreach"} for g in msd["param_groups"]]
    assert mgroups == tgroups
    assert msd["state"].keys() == tsd["state"].keys()
    for pid, tstate in tsd["state"].items():
        mstate = msd["state"][pid]
        assert mstate.keys() == tstate.keys()
        for key, tval in tstate.items():
            mval = mstate[key]
            assert str(mval.dtype).split(".")[-1] == str(tval.dtype).split(".")[-1], key
            np.testing.assert_allclose(_np(mval), _np(tval), rtol=2e-5, atol=2e-6, err_msg=key)


# ----- SGD ---------------------------------------------------------------------------------

sgd_configs = st.fixed_dictionaries({
    "lr": st.sampled_from([1e-3, 0.01, 0.05]),
    "momentum": st.sampled_from([0.0, 0.5, 0.9]),
    "dampening": st.sampled_from([0.0, 0.3]),
    "weight_decay": st.sampled_from([0.0, 0.1]),
    "nesterov": st.booleans(),
    "maximize": st.booleans(),
}).filter(lambda c: not c["nesterov"] or (c["momentum"] > 0 and c["dampening"] == 0))


@settings(max_examples=20)
@given(config=sgd_configs, seed=st.integers(0, 2**16), closure=st.booleans())
def test_sgd_matches_torch(config, seed, closure):
    (mps, mopt), (tps, topt) = run_both(
        Problem(seed),
        lambda m, t: (optim.SGD(m, **config), torch.optim.SGD(t, foreach=False, **config)),
        closure=closure,
    )
    assert_same_state(mopt, topt)


def test_sgd_defaults_match_torch():
    p, q = mg.zeros(1, requires_grad=True), torch.zeros(1, requires_grad=True)
    mg_group = optim.SGD([p]).param_groups[0]
    torch_group = torch.optim.SGD([q]).param_groups[0]
    assert {k: v for k, v in mg_group.items() if k != "params"} == {
        k: v for k, v in torch_group.items() if k != "params"}


# ----- Adam / AdamW ------------------------------------------------------------------------

adam_configs = st.fixed_dictionaries({
    "lr": st.sampled_from([1e-3, 0.01, 0.1]),
    "betas": st.sampled_from([(0.9, 0.999), (0.8, 0.9), (0.5, 0.99)]),
    "eps": st.sampled_from([1e-8, 1e-3]),
    "weight_decay": st.sampled_from([0.0, 0.1]),
    "amsgrad": st.booleans(),
    "maximize": st.booleans(),
})


@pytest.mark.parametrize("name", ["Adam", "AdamW"])
@settings(max_examples=15)
@given(config=adam_configs, seed=st.integers(0, 2**16))
def test_adam_family_matches_torch(name, config, seed):
    (mps, mopt), (tps, topt) = run_both(
        Problem(seed),
        lambda m, t: (getattr(optim, name)(m, **config), getattr(torch.optim, name)(t, foreach=False, **config)),
    )
    assert_same_state(mopt, topt)


@pytest.mark.parametrize("amsgrad", [False, True])
def test_adamw_default_weight_decay_and_versions(amsgrad):
    # AdamW decays weights with its own in-place mul_: two version bumps per step, like torch
    (mps, mopt), (tps, topt) = run_both(
        Problem(7),
        lambda m, t: (optim.AdamW(m, amsgrad=amsgrad), torch.optim.AdamW(t, foreach=False, amsgrad=amsgrad)),
    )
    assert mopt.param_groups[0]["weight_decay"] == 0.01
    assert [p._version for p in mps] == [2 * STEPS] * 3
    assert_same_state(mopt, topt)


def test_adam_steps_only_params_with_grads():
    p, q = mg.ones(2, requires_grad=True), mg.ones(2, requires_grad=True)
    opt = optim.Adam([p, q], lr=0.1)
    p.grad = mg.tensor([1.0, -1.0])
    opt.step()
    assert q._version == 0 and q not in opt.state and p._version == 1
    assert opt.state[p]["step"].item() == 1.0 and opt.state[p]["step"].dtype == mg.float32


def test_param_groups_with_own_hyperparameters():
    problem = Problem(3)

    def make(m, t):
        mo = optim.SGD([{"params": m[:2]}, {"params": m[2:], "lr": 0.2, "momentum": 0.5}], lr=0.01)
        to = torch.optim.SGD([{"params": t[:2]}, {"params": t[2:], "lr": 0.2, "momentum": 0.5}], lr=0.01,
                             foreach=False)
        return mo, to

    (mps, mopt), (tps, topt) = run_both(problem, make)
    assert_same_state(mopt, topt)


# ----- state dicts -------------------------------------------------------------------------

@pytest.mark.parametrize("name,kwargs", [
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
    ("Adam", {"lr": 0.05, "amsgrad": True, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.05}),
])
def test_state_dict_round_trip_continues_identically(name, kwargs):
    problem = Problem(11)
    ps = problem.params(mg)
    opt = getattr(optim, name)(ps, **kwargs)
    for _ in range(3):
        opt.zero_grad()
        problem.loss(mg, ps).backward()
        opt.step()

    # a fresh optimizer on copies of the parameters, loaded from a saved copy of the state
    copies = [p.detach().clone().requires_grad_(True) for p in ps]
    fresh = getattr(optim, name)(copies, lr=123.0)
    saved = opt.state_dict()
    saved_copy = {
        "state": {k: {n: (v.clone() if isinstance(v, mg.Tensor) else v) for n, v in s.items()}
                  for k, s in saved["state"].items()},
        "param_groups": saved["param_groups"],
    }
    fresh.load_state_dict(saved_copy)
    assert fresh.param_groups[0]["lr"] == kwargs["lr"]
    assert fresh.param_groups[0]["params"] == copies
    for _ in range(3):
        for o, params in ((opt, ps), (fresh, copies)):
            o.zero_grad()
            problem.loss(mg, params).backward()
            o.step()
        for a, b in zip(ps, copies):
            np.testing.assert_array_equal(a.detach().numpy(), b.detach().numpy())


def test_state_dict_format_matches_torch():
    problem = Problem(5)
    (mps, mopt), (tps, topt) = run_both(
        problem,
        lambda m, t: (optim.Adam([{"params": m[:1]}, {"params": m[1:], "lr": 0.01}]),
                      torch.optim.Adam([{"params": t[:1]}, {"params": t[1:], "lr": 0.01}], foreach=False)),
        steps=2,
    )
    assert_same_state(mopt, topt)
    assert [g["params"] for g in mopt.state_dict()["param_groups"]] == [[0], [1, 2]]


def test_state_dict_shares_state_tensors_like_torch():
    p = mg.ones(2, requires_grad=True)
    opt = optim.SGD([p], momentum=0.9)
    p.grad = mg.ones(2)
    opt.step()
    assert opt.state_dict()["state"][0]["momentum_buffer"] is opt.state[p]["momentum_buffer"]


def _torch_and_mg_error(mg_call, torch_call):
    with pytest.raises(Exception) as t_err:
        torch_call()
    with pytest.raises(Exception) as m_err:
        mg_call()
    assert type(m_err.value) is type(t_err.value)
    assert str(m_err.value) == str(t_err.value)


def _two_groups(lib):
    a, b = lib.ones(2, requires_grad=True), lib.ones(3, requires_grad=True)
    return lib.optim.SGD([{"params": [a]}, {"params": [b]}], lr=0.1)


@pytest.mark.parametrize("case", ["groups", "sizes"])
def test_load_state_dict_errors_match_torch(case):
    def call(lib):
        def run():
            if case == "groups":
                one = lib.optim.SGD([lib.ones(2, requires_grad=True)], lr=0.1)
                one.load_state_dict(_two_groups(lib).state_dict())
            else:
                a, b = lib.ones(2, requires_grad=True), lib.ones(3, requires_grad=True)
                other = lib.optim.SGD([{"params": [a, b]}, {"params": []}], lr=0.1)
                _two_groups(lib).load_state_dict(other.state_dict())
        return run

    _torch_and_mg_error(call(mg), call(torch))


# ----- construction errors -----------------------------------------------------------------

def _leaf(lib):
    return lib.ones(2, requires_grad=True)


ERROR_CASES = {
    "sgd negative lr": lambda lib, p: lib.optim.SGD([p], lr=-0.1),
    "sgd negative momentum": lambda lib, p: lib.optim.SGD([p], momentum=-0.5),
    "sgd negative weight_decay": lambda lib, p: lib.optim.SGD([p], weight_decay=-1.0),
    "sgd nesterov without momentum": lambda lib, p: lib.optim.SGD([p], nesterov=True),
    "sgd nesterov with dampening": lambda lib, p: lib.optim.SGD([p], momentum=0.9, dampening=0.1, nesterov=True),
    "adam negative lr": lambda lib, p: lib.optim.Adam([p], lr=-1e-3),
    "adam negative eps": lambda lib, p: lib.optim.Adam([p], eps=-1.0),
    "adam beta0": lambda lib, p: lib.optim.Adam([p], betas=(1.0, 0.999)),
    "adam beta1": lambda lib, p: lib.optim.Adam([p], betas=(0.9, -0.1)),
    "adam int betas": lambda lib, p: lib.optim.Adam([p], betas=(0, 0.5)),
    "adamw negative weight_decay": lambda lib, p: lib.optim.AdamW([p], weight_decay=-0.1),
    "empty params": lambda lib, p: lib.optim.SGD([], lr=0.1),
    "non-leaf": lambda lib, p: lib.optim.SGD([p * 2], lr=0.1),
    "non-tensor": lambda lib, p: lib.optim.Adam([p, 3.0]),
    "set of params": lambda lib, p: lib.optim.SGD([{"params": {p}}], lr=0.1),
    "param in two groups": lambda lib, p: lib.optim.SGD([{"params": [p]}, {"params": [p]}], lr=0.1),
    "group not a dict": lambda lib, p: lib.optim.SGD([p]).add_param_group([p]),
    "names missing": lambda lib, p: lib.optim.SGD([("a", p), _leaf(lib)]),
}


@pytest.mark.parametrize("case", sorted(ERROR_CASES))
def test_construction_errors_match_torch(case):
    build = ERROR_CASES[case]
    _torch_and_mg_error(lambda: build(mg, _leaf(mg)), lambda: build(torch, _leaf(torch)))


def test_tensor_as_params_is_a_type_error():
    with pytest.raises(TypeError, match="params argument given to the optimizer should be an iterable"):
        optim.SGD(_leaf(mg))


def test_duplicate_params_warn_like_torch():
    with pytest.warns(UserWarning, match="duplicate parameters"):
        p = _leaf(mg)
        optim.SGD([p, p], lr=0.1)


# ----- zero_grad, closure, names -----------------------------------------------------------

def test_zero_grad_set_to_none_and_zero():
    p = _leaf(mg)
    opt = optim.SGD([p], lr=0.1)
    p.grad = mg.ones(2)
    grad = p.grad
    opt.zero_grad(set_to_none=False)
    assert p.grad is grad and p.grad.tolist() == [0.0, 0.0]
    opt.zero_grad()
    assert p.grad is None


def test_step_runs_without_grad_and_closure_with_grad():
    p = _leaf(mg)
    opt = optim.SGD([p], lr=0.1)
    seen = []

    def closure():
        seen.append(mg.is_grad_enabled())
        opt.zero_grad()
        loss = (p * p).sum()
        loss.backward()
        return loss

    with mg.no_grad():
        loss = opt.step(closure)
    assert seen == [True] and loss.item() == 2.0
    assert p.grad_fn is None and p.is_leaf and p.tolist() == pytest.approx([0.8, 0.8])


def test_named_params_are_kept_in_groups_and_state_dict():
    p, q = _leaf(mg), _leaf(mg)
    opt = optim.SGD([("w", p), ("b", q)], lr=0.1)
    assert opt.param_groups[0]["param_names"] == ["w", "b"]
    assert opt.state_dict()["param_groups"][0]["param_names"] == ["w", "b"]


def test_repr_matches_torch_layout():
    text = repr(optim.SGD([_leaf(mg)], lr=0.1))
    expected = repr(torch.optim.SGD([_leaf(torch)], lr=0.1))
    assert text == expected


# ----- learning-rate schedulers ------------------------------------------------------------

def _scheduled_lrs(lib, make_sched, epochs, lr=0.1, two_groups=True):
    ps = [lib.ones(1, requires_grad=True), lib.ones(1, requires_grad=True)]
    groups = [{"params": ps[:1]}, {"params": ps[1:], "lr": lr / 3}] if two_groups else ps
    opt = lib.optim.SGD(groups, lr=lr)
    sched = make_sched(lib.optim.lr_scheduler, opt)
    seq = [sched.get_last_lr()]
    for _ in range(epochs):
        opt.step()
        sched.step()
        seq.append(sched.get_last_lr())
    return seq, [g["lr"] for g in opt.param_groups], sched


@settings(max_examples=20)
@given(step_size=st.integers(1, 5), gamma=st.floats(0.05, 0.95), lr=st.floats(1e-4, 1.0))
def test_step_lr_sequence_matches_torch(step_size, gamma, lr):
    make = lambda mod, opt: mod.StepLR(opt, step_size, gamma=gamma)  # noqa: E731
    m = _scheduled_lrs(mg, make, 12, lr)
    t = _scheduled_lrs(torch, make, 12, lr)
    assert m[0] == t[0] and m[1] == t[1]


@settings(max_examples=20)
@given(T_max=st.integers(1, 6), eta_min=st.sampled_from([0.0, 1e-4, 0.01]), lr=st.floats(0.02, 1.0))
def test_cosine_annealing_sequence_matches_torch(T_max, eta_min, lr):
    make = lambda mod, opt: mod.CosineAnnealingLR(opt, T_max, eta_min=eta_min)  # noqa: E731
    m = _scheduled_lrs(mg, make, 3 * T_max + 2, lr)
    t = _scheduled_lrs(torch, make, 3 * T_max + 2, lr)
    assert m[0] == t[0] and m[1] == t[1]  # the recursive formula reproduces torch's floats exactly


@pytest.mark.parametrize("which", ["step", "cosine"])
def test_scheduler_state_dict_round_trip_matches_torch(which):
    def make(mod, opt):
        return mod.StepLR(opt, 2, gamma=0.5) if which == "step" else mod.CosineAnnealingLR(opt, 5, eta_min=0.01)

    results = {}
    for lib in (mg, torch):
        seq, _, sched = _scheduled_lrs(lib, make, 4)
        state = sched.state_dict()
        p = lib.ones(1, requires_grad=True)
        q = lib.ones(1, requires_grad=True)
        opt = lib.optim.SGD([{"params": [p]}, {"params": [q]}], lr=0.1)
        restored = make(lib.optim.lr_scheduler, opt)
        restored.load_state_dict(state)
        for group, lr in zip(opt.param_groups, state["_last_lr"]):
            group["lr"] = lr
        out = []
        for _ in range(4):
            opt.step()
            restored.step()
            out.append(restored.get_last_lr())
        results[lib.__name__] = (sorted(k for k in state if not k.startswith("_get_lr")), state["last_epoch"],
                                 state["base_lrs"], out)
    assert results["minigrad"] == results["torch"]


def test_scheduler_closed_form_with_epoch_matches_torch():
    outs = []
    for lib in (mg, torch):
        opt = lib.optim.SGD([lib.ones(1, requires_grad=True)], lr=0.2)
        sched = lib.optim.lr_scheduler.CosineAnnealingLR(opt, 10)
        opt.step()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sched.step(7)
        outs.append((sched.get_last_lr(), [str(w.message) for w in caught]))
    assert outs[0] == outs[1]


def test_scheduler_warns_when_stepped_before_optimizer():
    opt = optim.SGD([_leaf(mg)], lr=0.1)
    sched = optim.lr_scheduler.StepLR(opt, 1)
    with pytest.warns(UserWarning, match="before `optimizer.step\\(\\)`"):
        sched.step()


def test_scheduler_errors_match_torch():
    _torch_and_mg_error(lambda: optim.lr_scheduler.StepLR(object(), 1),
                        lambda: torch.optim.lr_scheduler.StepLR(object(), 1))
    _torch_and_mg_error(lambda: optim.lr_scheduler.StepLR(optim.SGD([_leaf(mg)]), 1, last_epoch=3),
                        lambda: torch.optim.lr_scheduler.StepLR(torch.optim.SGD([_leaf(torch)]), 1, last_epoch=3))


def test_cosine_reaches_eta_min_at_t_max():
    seq, _, _ = _scheduled_lrs(mg, lambda mod, opt: mod.CosineAnnealingLR(opt, 4, eta_min=0.01), 4,
                               two_groups=False)
    assert seq[-1][0] == pytest.approx(0.01) and math.isclose(seq[0][0], 0.1)


@pytest.mark.parametrize("name,kwargs", [
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True, "maximize": True}),
    ("Adam", {"lr": 0.05, "weight_decay": 0.1, "amsgrad": True}),
    ("AdamW", {"lr": 0.05, "betas": (0.5, 0.9), "maximize": True}),
])
def test_float64_params_follow_torch_op_for_op(name, kwargs):
    # in float64 the only differences left are torch's fused multiply-adds (~1e-16 relative),
    # so a tight tolerance checks that the update is the same sequence of operations
    rng = np.random.default_rng(1)
    start = rng.standard_normal(6)
    mp = mg.tensor(start.tolist(), dtype=mg.float64, requires_grad=True)
    tp = torch.tensor(start, requires_grad=True)
    mopt = getattr(optim, name)([mp], **kwargs)
    topt = getattr(torch.optim, name)([tp], foreach=False, **kwargs)
    assert mp.dtype == mg.float64
    for step in range(8):
        grad = rng.standard_normal(6)
        mp.grad, tp.grad = mg.tensor(grad.tolist(), dtype=mg.float64), torch.tensor(grad)
        mopt.step()
        topt.step()
        np.testing.assert_allclose(mp.detach().numpy(), tp.detach().numpy(), rtol=1e-13, atol=1e-15,
                                   err_msg=f"step {step}")
        assert mp._version == tp._version
    for key, value in topt.state[tp].items():
        mvalue = mopt.state[mp][key]
        assert str(mvalue.dtype).split(".")[-1] == str(value.dtype).split(".")[-1]
        np.testing.assert_allclose(mvalue.numpy(), value.numpy(), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("name,flag", [("SGD", "differentiable"), ("Adam", "capturable"), ("AdamW", "differentiable")])
def test_modes_minigrad_lacks_are_refused(name, flag):
    with pytest.raises(ValueError, match=f"{name}: {flag}=True is not supported by minigrad"):
        getattr(optim, name)([_leaf(mg)], **{flag: True})
