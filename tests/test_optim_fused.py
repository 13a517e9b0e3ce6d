"""The fused optimizer steps (`_C._sgd_step`, `_C._adam_step`, docs/optim.md) against torch.optim.

Gradients are given, not computed, so both libraries see the same gradients at every step and
any difference comes from the update itself. SGD is torch's for-loop step bit for bit. Adam's
moments are bit for bit too; its parameters differ by torch's CPU square root, which is MKL's
vectorised one and is off the correctly rounded result by an ulp for about one element in five
(ours is IEEE's), so parameters are compared to a few ulps of the update (rtol 1e-6 / 1e-14).
"""

import numpy as np
import pytest
import torch

import minigrad as mg
from minigrad import _C, optim

SHAPES = [(3, 4), (7,), (), (0, 3), (5, 1, 2), (33,)]


def _np(t):
    return np.array(t.detach().cpu().tolist() if t.dim() == 0 else t.detach().cpu().numpy())


def _pair(dtype, seed=0, transposed=False):
    """The same start values as torch and minigrad leaves, one per shape (one transposed)."""
    g = torch.Generator().manual_seed(seed)
    tps, mps = [], []
    for shape in SHAPES:
        v = torch.randn(shape, generator=g, dtype=dtype)
        tps.append(v.clone().requires_grad_())
        mps.append(mg.from_numpy(v.numpy().copy()).requires_grad_())
    if transposed:  # a non-contiguous leaf: the step runs on a contiguous copy and writes back
        v = torch.randn(4, 6, generator=g, dtype=dtype)
        tps.append(v.t().detach().requires_grad_())
        mps.append(mg.from_numpy(v.numpy().copy()).t().detach().requires_grad_())
    return tps, mps


def _grads(tps, dtype, step, skip=()):
    g = torch.Generator().manual_seed(1000 + step)
    out = []
    for i, p in enumerate(tps):
        out.append(None if i in skip else torch.randn(p.shape, generator=g, dtype=dtype))
    return out


def _run(name, kwargs, dtype, steps=5, torch_kwargs=None, mg_kwargs=None, skip=(), transposed=True):
    tps, mps = _pair(dtype, transposed=transposed)
    topt = getattr(torch.optim, name)(tps, **kwargs, **(torch_kwargs or {}))
    mopt = getattr(optim, name)(mps, **kwargs, **(mg_kwargs or {}))
    for step in range(steps):
        for tp, mp, g in zip(tps, mps, _grads(tps, dtype, step, skip)):
            tp.grad = None if g is None else g.clone()
            mp.grad = None if g is None else mg.from_numpy(g.numpy().copy())
        topt.step()
        mopt.step()
    return tps, mps, topt, mopt


SGD_CONFIGS = [
    dict(lr=0.1),
    dict(lr=0.05, momentum=0.9),
    dict(lr=0.05, momentum=0.9, dampening=0.3),
    dict(lr=0.02, momentum=0.8, nesterov=True, weight_decay=0.01),
    dict(lr=0.1, momentum=0.5, weight_decay=0.1, maximize=True),
]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("config", SGD_CONFIGS)
@pytest.mark.parametrize("foreach", [None, False, True])
def test_sgd_equals_torch_bit_for_bit(config, dtype, foreach):
    tps, mps, topt, mopt = _run("SGD", config, dtype, torch_kwargs=dict(foreach=foreach), mg_kwargs=dict(foreach=foreach))
    for i, (tp, mp) in enumerate(zip(tps, mps)):
        np.testing.assert_array_equal(_np(mp), _np(tp), err_msg=f"param {i}")
        assert mp._version == tp._version, f"param {i}"
        tstate, mstate = topt.state[tp], mopt.state[mp]
        assert set(mstate) == set(tstate)
        if "momentum_buffer" in tstate:
            np.testing.assert_array_equal(_np(mstate["momentum_buffer"]), _np(tstate["momentum_buffer"]))
            assert mstate["momentum_buffer"]._version == tstate["momentum_buffer"]._version


ADAM_CONFIGS = [
    ("Adam", dict(lr=1e-2)),
    ("Adam", dict(lr=1e-2, amsgrad=True)),
    ("Adam", dict(lr=3e-3, betas=(0.8, 0.99), weight_decay=0.1, maximize=True)),
    ("Adam", dict(lr=1e-2, betas=(0.3, 0.9), eps=1e-6)),  # 1 - beta1 >= 0.5: lerp's other formula
    ("AdamW", dict(lr=1e-2)),
    ("AdamW", dict(lr=1e-2, weight_decay=0.0, amsgrad=True)),
    ("AdamW", dict(lr=5e-3, weight_decay=0.3, amsgrad=True, maximize=True)),
]


def _assert_adam_close(tps, mps, topt, mopt, dtype, exact_moments):
    rtol, atol = (1e-6, 1e-7) if dtype == torch.float32 else (1e-14, 1e-15)
    for i, (tp, mp) in enumerate(zip(tps, mps)):
        np.testing.assert_allclose(_np(mp), _np(tp), rtol=rtol, atol=atol, err_msg=f"param {i}")
        tstate, mstate = topt.state[tp], mopt.state[mp]
        assert set(mstate) == set(tstate), i
        assert mstate["step"].item() == tstate["step"].item()
        for key in ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"):
            if key not in tstate:
                continue
            if exact_moments:
                np.testing.assert_array_equal(_np(mstate[key]), _np(tstate[key]), err_msg=key)
            else:
                np.testing.assert_allclose(_np(mstate[key]), _np(tstate[key]), rtol=rtol, atol=atol, err_msg=key)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("name,config", ADAM_CONFIGS)
def test_adam_family_matches_torch(name, config, dtype):
    tps, mps, topt, mopt = _run(name, config, dtype, steps=6)
    # the moments see only the gradients (and, with L2 decay, the parameters, which carry the
    # square root's ulp): bit for bit without it
    exact = name == "AdamW" or config.get("weight_decay", 0) == 0
    _assert_adam_close(tps, mps, topt, mopt, dtype, exact)


@pytest.mark.parametrize("name,config", [ADAM_CONFIGS[1], ADAM_CONFIGS[6], ("SGD", SGD_CONFIGS[3])])
@pytest.mark.parametrize("foreach", [None, False, True])
def test_versions_follow_torch(name, config, foreach):
    tps, mps, topt, mopt = _run(name, config, torch.float32, steps=3, torch_kwargs=dict(foreach=foreach),
                                mg_kwargs=dict(foreach=foreach))
    for tp, mp in zip(tps, mps):
        assert mp._version == tp._version
        for key, value in topt.state[tp].items():
            assert mopt.state[mp][key]._version == value._version, key


@pytest.mark.parametrize("name,config", [ADAM_CONFIGS[1], ADAM_CONFIGS[6], ("SGD", SGD_CONFIGS[3])])
def test_fused_true_bumps_nothing_like_torch(name, config):
    tps, mps, topt, mopt = _run(name, config, torch.float32, steps=3, torch_kwargs=dict(fused=True),
                                mg_kwargs=dict(fused=True), transposed=False)
    for tp, mp in zip(tps, mps):
        assert mp._version == tp._version == 0
        for key, value in topt.state[tp].items():
            assert mopt.state[mp][key]._version == value._version, key
        # torch's fused CPU kernel computes in another order: close, not equal
        np.testing.assert_allclose(_np(mp), _np(tp), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_params_without_grad_are_skipped(name):
    kwargs = dict(lr=0.1, momentum=0.9) if name == "SGD" else dict(lr=0.1)
    tps, mps, topt, mopt = _run(name, kwargs, torch.float32, steps=3, skip=(1, 3))
    for i, (tp, mp) in enumerate(zip(tps, mps)):
        assert mp._version == tp._version
        assert (mp in mopt.state) == (tp in topt.state), i
        if i in (1, 3):
            assert mp._version == 0 and mp not in mopt.state
        np.testing.assert_allclose(_np(mp), _np(tp), rtol=1e-6, atol=1e-7)


def test_a_param_that_gets_its_grad_later_counts_its_own_steps():
    tps, mps = _pair(torch.float32, transposed=False)
    topt, mopt = torch.optim.Adam(tps, lr=0.1), optim.Adam(mps, lr=0.1)
    for step in range(4):
        skip = (0, 2) if step < 2 else ()
        for tp, mp, g in zip(tps, mps, _grads(tps, torch.float32, step, skip)):
            tp.grad = None if g is None else g.clone()
            mp.grad = None if g is None else mg.from_numpy(g.numpy().copy())
        topt.step()
        mopt.step()
    for tp, mp in zip(tps, mps):
        assert mopt.state[mp]["step"].item() == topt.state[tp]["step"].item()
        np.testing.assert_allclose(_np(mp), _np(tp), rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_param_groups_with_their_own_lrs(name):
    def groups(ps):
        return [{"params": ps[:2], "lr": 0.1}, {"params": ps[2:4], "lr": 0.01, "weight_decay": 0.5}, {"params": ps[4:]}]

    kwargs = dict(momentum=0.9) if name == "SGD" else dict(amsgrad=True)
    tps, mps = _pair(torch.float64)
    topt = getattr(torch.optim, name)(groups(tps), lr=0.003, **kwargs)
    mopt = getattr(optim, name)(groups(mps), lr=0.003, **kwargs)
    for step in range(4):
        for tp, mp, g in zip(tps, mps, _grads(tps, torch.float64, step)):
            tp.grad, mp.grad = g.clone(), mg.from_numpy(g.numpy().copy())
        topt.step()
        mopt.step()
    for tp, mp in zip(tps, mps):
        np.testing.assert_allclose(_np(mp), _np(tp), rtol=1e-14, atol=1e-15)
        assert mp._version == tp._version


@pytest.mark.parametrize("name,kwargs", [("SGD", dict(lr=0.1, momentum=0.9)), ("Adam", dict(lr=0.1, amsgrad=True))])
def test_state_dict_matches_torch_and_round_trips(name, kwargs):
    tps, mps, topt, mopt = _run(name, kwargs, torch.float32, steps=3, transposed=False)
    tsd, msd = topt.state_dict(), mopt.state_dict()
    assert sorted(msd["state"]) == sorted(tsd["state"])
    for k, tstate in tsd["state"].items():
        assert set(msd["state"][k]) == set(tstate)
        for key, value in tstate.items():
            assert msd["state"][k][key].dtype.itemsize == value.dtype.itemsize, key
            np.testing.assert_allclose(_np(msd["state"][k][key]), _np(value), rtol=1e-6, atol=1e-7)
    assert [{k: v for k, v in g.items() if k != "params"} for g in msd["param_groups"]] == \
        [{k: v for k, v in g.items() if k != "params"} for g in tsd["param_groups"]]
    # a second optimizer loaded from the first continues exactly as the first would
    clones = [mp.detach().clone().requires_grad_() for mp in mps]
    other = getattr(optim, name)(clones, **kwargs)
    other.load_state_dict({"state": {k: {kk: vv.clone() for kk, vv in v.items()} for k, v in msd["state"].items()},
                           "param_groups": msd["param_groups"]})
    for opt, ps in ((mopt, mps), (other, clones)):
        for p, g in zip(ps, _grads(tps, torch.float32, 99)):
            p.grad = mg.from_numpy(g.numpy().copy())
        opt.step()
    for a, b in zip(mps, clones):
        np.testing.assert_array_equal(_np(a), _np(b))


def test_half_params_step_op_by_op():
    tp = torch.randn(8).half().requires_grad_()
    mp = mg.from_numpy(tp.detach().float().numpy()).to(mg.float16).requires_grad_()
    topt, mopt = torch.optim.Adam([tp], lr=0.01), optim.Adam([mp], lr=0.01)
    for step in range(3):
        g = torch.randn(8, generator=torch.Generator().manual_seed(step)).half()
        tp.grad, mp.grad = g.clone(), mg.from_numpy(g.float().numpy()).to(mg.float16)
        topt.step()
        mopt.step()
    assert mp.dtype == mg.float16 and mp._version == tp._version == 3
    np.testing.assert_allclose(mp.float().detach().numpy(), tp.float().detach().numpy(), rtol=2e-3, atol=2e-3)


def test_mixed_dtype_group():
    ps = [torch.randn(5, dtype=torch.float64).requires_grad_(), torch.randn(3).requires_grad_()]
    mps = [mg.from_numpy(p.detach().numpy().copy()).requires_grad_() for p in ps]
    topt, mopt = torch.optim.SGD(ps, lr=0.1, momentum=0.9), optim.SGD(mps, lr=0.1, momentum=0.9)
    for step in range(3):
        for tp, mp in zip(ps, mps):
            g = torch.randn(tp.shape, dtype=tp.dtype, generator=torch.Generator().manual_seed(step))
            tp.grad, mp.grad = g, mg.from_numpy(g.numpy().copy())
        topt.step()
        mopt.step()
    for tp, mp in zip(ps, mps):
        assert mp.dtype == getattr(mg, str(tp.dtype).split(".")[-1])
        np.testing.assert_array_equal(_np(mp), _np(tp))


# ----- errors, as torch's -----

def _both(call):
    with pytest.raises(Exception) as t:
        call(torch)
    with pytest.raises(Exception) as m:
        call(mg)
    assert type(m.value).__name__ == type(t.value).__name__
    assert str(m.value) == str(t.value)


@pytest.mark.parametrize("name", ["SGD", "Adam", "AdamW"])
def test_fused_and_foreach_together_is_torchs_error(name):
    def call(lib):
        opt = torch.optim if lib is torch else optim
        getattr(opt, name)([lib.zeros(2, requires_grad=True)], lr=0.1, fused=True, foreach=True)
    _both(call)


@pytest.mark.parametrize("name", ["SGD", "Adam"])
def test_fused_with_differentiable_is_torchs_error(name):
    def call(lib):
        opt = torch.optim if lib is torch else optim
        getattr(opt, name)([lib.zeros(2, requires_grad=True)], lr=0.1, fused=True, differentiable=True)
    _both(call)


def test_fused_step_of_an_integer_param_is_torchs_error():
    def call(lib):
        p = lib.zeros(2, dtype=lib.int64)
        p.grad = lib.ones(2, dtype=lib.int64)
        (torch.optim if lib is torch else optim).Adam([p], fused=True).step()
    with pytest.raises(RuntimeError) as t:
        call(torch)
    with pytest.raises(RuntimeError) as m:
        call(mg)
    assert str(m.value).split(" but ")[0] == str(t.value).split(" but ")[0]


def test_step_with_grad_mode_on_raises_the_leaf_error():
    p = mg.zeros(3, requires_grad=True)
    g = mg.ones(3)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation"):
        _C._sgd_step([p], [g], [None], 0.1, 0.0, 0.0, 0.0, False, False, True)
    assert p._version == 0 and p.tolist() == [0.0, 0.0, 0.0]


def test_mismatched_grad_and_aliasing_state_are_refused_before_any_write():
    p, q = mg.zeros(3, requires_grad=True), mg.zeros(3, requires_grad=True)
    with mg.no_grad():
        with pytest.raises(RuntimeError, match="must match the size"):
            _C._sgd_step([p, q], [mg.ones(3), mg.ones(4)], [None, None], 0.1, 0.0, 0.0, 0.0, False, False, True)
        s = mg.zeros(()); m = mg.zeros(3)
        with pytest.raises(RuntimeError, match="refer to a single memory location"):
            _C._adam_step([p], [mg.ones(3)], [m], [m], None, [s], 0.1, 0.9, 0.999, 1e-8, 0.0, False, False, False, True)
    assert p._version == q._version == 0 and s.item() == 0.0 and p.tolist() == [0.0, 0.0, 0.0]


def test_the_step_is_deterministic():
    def run():
        ps = [mg.from_numpy(np.linspace(-1, 1, 300_001, dtype=np.float32)).requires_grad_()]
        opt = optim.Adam(ps, lr=0.01, amsgrad=True)
        for step in range(2):
            ps[0].grad = mg.from_numpy(np.cos(np.arange(300_001, dtype=np.float32) * (step + 1)))
            opt.step()
        return ps[0].detach().numpy().copy()
    np.testing.assert_array_equal(run(), run())
