"""minigrad.nn.utils (gradient clipping, parameters <-> vector) and the nn.init initialisers added
beside them (eye_, dirac_, trunc_normal_, orthogonal_, sparse_), against torch 2.13: values, the
returned norm, `_version` of parameters and gradients (every write is an in-place op, as torch's),
warnings and error texts. Random initialisers cannot match torch's numbers (another stream), so
they are checked for torch's write counts, shapes, bounds and defining properties."""

import math
import warnings

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import minigrad as mg
import minigrad.nn as mnn
from parity import assert_same, assert_same_error, run_both

LIBS = (torch, mg)


def params_with_grads(L, grads, extra_without_grad=True):
    """Parameters (zeros) whose .grad is set to a copy of each array; one more without a grad."""
    ps = []
    for g in grads:
        p = L.nn.Parameter(L.zeros(g.shape, dtype=L.float64 if g.dtype == np.float64 else L.float32))
        p.grad = L.from_numpy(g.copy())
        ps.append(p)
    if extra_without_grad:
        ps.append(L.nn.Parameter(L.zeros(2)))
    return ps


def state(ps):
    return ([p._version for p in ps], [None if p.grad is None else p.grad._version for p in ps],
            [None if p.grad is None else p.grad.numpy().copy() for p in ps])


def assert_same_state(ms, ts, rtol=2e-6):
    assert ms[0] == ts[0], ("param versions", ms[0], ts[0])
    assert ms[1] == ts[1], ("grad versions", ms[1], ts[1])
    for a, b in zip(ms[2], ts[2]):
        if b is None:
            assert a is None
        else:
            np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-7, equal_nan=True)


grad_arrays = st.lists(
    st.tuples(hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4), st.sampled_from([np.float32, np.float64]))
    .flatmap(lambda sd: hnp.arrays(sd[1], sd[0], elements=st.floats(-100, 100, width=32))),
    min_size=1, max_size=4,
)
NORM_TYPES = [2.0, 1, 3, 1.5, 0, float("inf"), -float("inf"), "inf"]


@settings(max_examples=40)
@given(grads=grad_arrays, norm_type=st.sampled_from(NORM_TYPES), max_norm=st.sampled_from([0.1, 1.0, 1e3]),
       foreach=st.sampled_from([None, False]))
def test_clip_grad_norm_matches_torch(grads, norm_type, max_norm, foreach):
    def run(L):
        ps = params_with_grads(L, grads)
        total = L.nn.utils.clip_grad_norm_(ps, max_norm, norm_type=norm_type, foreach=foreach)
        return total, state(ps)
    kind, m, t = run_both(lambda: run(mg), lambda: run(torch))
    if kind == "err":  # the inf / -inf norm of an empty gradient
        return
    (mt, ms), (tt, ts) = m, t
    assert_same(mt, tt, rtol=2e-6, atol=1e-6)  # minigrad's float32 norms accumulate in float64
    assert not mt.requires_grad
    assert_same_state(ms, ts)


@settings(max_examples=25)
@given(grads=grad_arrays, clip=st.sampled_from([0.0, 0.5, 10.0, 1e6]))
def test_clip_grad_value_matches_torch_and_bumps_twice(grads, clip):
    out = {}
    for L in LIBS:
        ps = params_with_grads(L, grads)
        assert L.nn.utils.clip_grad_value_(ps, clip) is None
        out[L] = state(ps)
    assert_same_state(out[mg], out[torch], rtol=0)
    assert all(v == 2 for v in out[mg][1] if v is not None)  # clamp_min_, then clamp_max_


@pytest.mark.parametrize("norm_type", [2.0, float("inf")])
@pytest.mark.parametrize("bad", [float("nan"), float("inf")])
def test_non_finite_norm_raises_or_scales_as_torch(norm_type, bad):
    def run(L, error):
        g = np.array([1.0, bad, 2.0], dtype=np.float32)
        ps = params_with_grads(L, [g])
        total = L.nn.utils.clip_grad_norm_(ps, 1.0, norm_type, error_if_nonfinite=error)
        return total, state(ps)
    assert_same_error(lambda: run(mg, True), lambda: run(torch, True))
    (mt, ms), (tt, ts) = run(mg, False), run(torch, False)
    assert_same(mt, tt)
    assert_same_state(ms, ts)


def test_get_total_norm_and_clip_grads_with_norm_compose_to_clip_grad_norm_():
    grads = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array([-4.0, 0.5], dtype=np.float64)]
    out = {}
    for L in LIBS:
        ps = params_with_grads(L, grads)
        total = L.nn.utils.get_total_norm([p.grad for p in ps if p.grad is not None], 3.0)
        assert L.nn.utils.clip_grads_with_norm_(ps, 2.0, total) is None
        out[L] = (total, state(ps))
    # float64: the float32 and float64 norms stack as float64 (the float32 norm is rounded differently)
    assert_same(out[mg][0], out[torch][0], rtol=1e-6)
    assert_same_state(out[mg][1], out[torch][1])


def test_clip_grad_norm_single_tensor_empty_list_and_generators():
    for L in LIBS:
        p = L.nn.Parameter(L.ones(3))
        p.grad = L.full((3,), 4.0)
        total = L.nn.utils.clip_grad_norm_(p, 1.0)
        assert math.isclose(total.item(), math.sqrt(48), rel_tol=1e-6) and p.grad._version == 1
        assert L.nn.utils.clip_grad_norm_([], 1.0).item() == 0.0
        q = L.nn.Parameter(L.ones(2))
        q.grad = L.full((2,), 3.0)
        # a generator is read once and still clipped
        total = L.nn.utils.clip_grad_norm_((x for x in [q]), 1.0)
        assert q.grad._version == 1 and abs(q.grad.norm().item() - 1.0) < 1e-5


def test_warnings_match_torch():
    caught = {}
    for L in LIBS:
        p = L.nn.Parameter(L.ones(2))
        p.grad = L.ones(2)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            L.nn.utils.clip_grad_norm_((x for x in []), 1.0)
            L.nn.utils.clip_grad_norm([p], 1.0)
        caught[L] = [(x.category, str(x.message).replace("torch.", "minigrad."), x.filename) for x in w]
    assert caught[mg] == caught[torch]
    assert caught[mg][0][2] == __file__  # stacklevel points at the caller, as torch's


def test_clip_grad_norm_leaves_parameters_leaves_and_runs_under_no_grad():
    for L in LIBS:
        lin = L.nn.Linear(3, 2)
        L.nn.functional.mse_loss(lin(L.ones(4, 3)), L.zeros(4, 2)).backward()
        total = L.nn.utils.clip_grad_norm_(lin.parameters(), 0.01)
        assert not total.requires_grad and total.grad_fn is None
        assert lin.weight.is_leaf and lin.weight.grad.grad_fn is None


def test_clip_after_backward_bumps_the_grad_once_more_than_backward_did():
    """Version deltas from a real backward pass (the absolute numbers depend on how backward stored
    the gradient, see the next test)."""
    deltas = {}
    for L in LIBS:
        lin = L.nn.Linear(3, 2)
        L.nn.functional.mse_loss(lin(L.ones(4, 3)), L.zeros(4, 2)).backward()
        before = [p.grad._version for p in lin.parameters()]
        L.nn.utils.clip_grad_norm_(lin.parameters(), 0.01)
        L.nn.utils.clip_grad_value_(lin.parameters(), 0.001)
        deltas[L] = [p.grad._version - b for p, b in zip(lin.parameters(), before)]
    assert deltas[mg] == deltas[torch] == [3, 3]


@pytest.mark.parametrize("make", [
    lambda L: L.ones(3, requires_grad=True),                        # dense leaf: empty_strided + copy_
    lambda L: L.ones(3, 4).t().requires_grad_(),                    # dense, transposed
    lambda L: L.ones(4, 6)[:, ::2].detach().requires_grad_(),       # not dense: clone()
])
def test_grad_version_after_backward_of_a_sum_matches_torch(make):
    versions = []
    for L in LIBS:
        x = make(L)
        x.sum().backward()
        first = x.grad._version
        x.sum().backward()
        versions.append((first, x.grad._version))
    assert versions[0] == versions[1]


# ----- parameters_to_vector / vector_to_parameters -----

def test_parameters_to_vector_is_differentiable_as_torch():
    grads = {}
    for L in LIBS:
        L.manual_seed(0)
        a = L.nn.Parameter(L.arange(6.0).reshape(2, 3))
        b = L.nn.Parameter(L.tensor([7.0, 8.0]))
        vec = L.nn.utils.parameters_to_vector([a, b])
        assert type(vec.grad_fn).__name__ == "CatBackward0" and vec.shape == (8,)
        (vec * L.arange(8.0)).sum().backward()
        grads[L] = (vec.detach(), a.grad, b.grad)
    assert_same(list(grads[mg]), list(grads[torch]))


def test_vector_to_parameters_rebinds_data_without_a_write():
    """torch assigns `param.data` to slices of `vec`: no version bump, and the parameters share
    `vec`'s memory afterwards."""
    out = {}
    for L in LIBS:
        a = L.nn.Parameter(L.zeros(2, 3))
        b = L.nn.Parameter(L.zeros(2))
        with L.no_grad():
            a.add_(1)
        vec = L.arange(8.0)
        L.nn.utils.vector_to_parameters(vec, [a, b])
        snapshot = (a.detach().clone(), b.detach().clone(), a._version, b._version, a.is_leaf, a.requires_grad)
        vec.mul_(10)  # the parameters see it
        out[L] = snapshot + (a.detach().clone(), type(a).__name__)
    m, t = out[mg], out[torch]
    assert_same([m[0], m[1], m[6]], [t[0], t[1], t[6]])
    assert m[2:6] == t[2:6] == (1, 0, True, True)
    assert m[7] == t[7] == "Parameter"


@pytest.mark.parametrize("prog", [
    lambda L: L.nn.utils.vector_to_parameters([1.0, 2.0], [L.nn.Parameter(L.zeros(2))]),
    lambda L: L.nn.utils.vector_to_parameters(np.zeros(2), [L.nn.Parameter(L.zeros(2))]),
    lambda L: L.nn.utils.vector_to_parameters(L.arange(3.0), [L.zeros(2), L.zeros(2)]),
    lambda L: L.nn.utils.parameters_to_vector([L.zeros(2, 3).t()]),
    lambda L: L.nn.utils.parameters_to_vector([]),
], ids=["list", "ndarray", "too_short", "non_contiguous", "empty"])
def test_conversion_errors_match_torch(prog):
    assert_same_error(lambda: prog(mg), lambda: prog(torch))


# ----- nn.init -----

@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (2, 2)])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_eye_matches_torch_with_one_write(shape, dtype):
    out = {}
    for L in LIBS:
        t = L.empty(shape, dtype=getattr(L, dtype), requires_grad=True)
        r = L.nn.init.eye_(t)
        assert r is t and t.is_leaf and t.requires_grad
        out[L] = (t.detach(), t._version)
    assert_same(out[mg][0], out[torch][0])
    assert out[mg][1] == out[torch][1] == 1


def test_eye_on_a_transposed_view_writes_through_it():
    out = {}
    for L in LIBS:
        base = L.zeros(3, 4)
        L.nn.init.eye_(base.t())
        out[L] = (base, base._version)
    assert_same(out[mg][0], out[torch][0])
    assert out[mg][1] == out[torch][1]


@pytest.mark.parametrize("shape,groups", [((4, 3, 3), 1), ((4, 3, 3, 3), 2), ((6, 2, 1, 3, 2), 3), ((2, 5, 3, 3), 1)])
def test_dirac_matches_torch_values_and_versions(shape, groups):
    out = {}
    for L in LIBS:
        t = L.full(shape, 7.0, requires_grad=True)
        L.nn.init.dirac_(t, groups)
        out[L] = (t.detach(), t._version)
    assert_same(out[mg][0], out[torch][0])
    assert out[mg][1] == out[torch][1]


@pytest.mark.parametrize("shape,gain", [((3, 5), 1.0), ((5, 3), 2.0), ((6, 2, 2), 0.5), ((4, 4), 1)])
def test_orthogonal_is_orthogonal_with_torchs_two_writes(shape, gain):
    versions = []
    for L in LIBS:
        L.manual_seed(0)
        t = L.empty(shape, requires_grad=True)
        L.nn.init.orthogonal_(t, gain)
        versions.append(t._version)
        flat = t.detach().reshape(shape[0], -1).numpy().astype(np.float64)
        small = flat @ flat.T if flat.shape[0] <= flat.shape[1] else flat.T @ flat
        np.testing.assert_allclose(small, gain ** 2 * np.eye(small.shape[0]), atol=1e-5)
    assert versions[0] == versions[1] == 2


def test_orthogonal_of_an_empty_tensor_is_a_no_op():
    for L in LIBS:
        t = L.empty(0, 3)
        assert L.nn.init.orthogonal_(t) is t and t._version == 0


@pytest.mark.parametrize("rows,cols,sparsity", [(10, 6, 0.3), (4, 3, 0.5), (5, 2, 0.0), (3, 4, 1.0)])
def test_sparse_zeroes_torchs_count_per_column_with_one_write_per_column(rows, cols, sparsity):
    results = []
    for L in LIBS:
        L.manual_seed(0)
        t = L.empty(rows, cols, requires_grad=True)
        L.nn.init.sparse_(t, sparsity, std=0.5)
        zeros = (t.detach() == 0).sum(0).tolist()
        results.append((zeros, t._version))
    assert results[0] == results[1]
    assert results[1][0] == [math.ceil(sparsity * rows)] * cols and results[1][1] == 1 + cols


@pytest.mark.parametrize("mean,std,a,b", [(0.0, 1.0, -2.0, 2.0), (0.0, 1.0, -0.5, 0.5), (1.0, 2.0, -1.0, 2.0),
                                          (0.0, 1.0, 2.5, 3.0), (0.0, 0.02, -0.04, 0.04)])
def test_trunc_normal_bounds_moments_and_writes(mean, std, a, b):
    moments = []
    for L in LIBS:
        L.manual_seed(0)
        t = L.empty(40000, requires_grad=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            L.nn.init.trunc_normal_(t, mean, std, a, b)
        v = t.detach().numpy()
        assert v.min() >= np.float32(a) and v.max() <= np.float32(b)
        assert t._version in (1, 2) and t.is_leaf  # the first draw, plus one copy if any redraw
        moments.append((v.mean(), v.std()))
    want_mean, want_std = truncated_normal_moments(mean, std, a, b)
    for m, s in moments:
        assert abs(m - want_mean) < 5 * want_std / math.sqrt(40000) + 1e-7
        assert abs(s - want_std) < 0.02 * want_std


def truncated_normal_moments(mu, sigma, a, b):
    pdf = lambda z: math.exp(-z * z / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda z: (1 + math.erf(z / math.sqrt(2))) / 2  # noqa: E731
    al, be = (a - mu) / sigma, (b - mu) / sigma
    z = cdf(be) - cdf(al)
    shift = (pdf(al) - pdf(be)) / z
    var = 1 + (al * pdf(al) - be * pdf(be)) / z - shift ** 2
    return mu + sigma * shift, sigma * math.sqrt(var)


@pytest.mark.parametrize("prog", [
    lambda L: L.nn.init.eye_(L.empty(3)),
    lambda L: L.nn.init.eye_(L.empty(2, 2, 2)),
    lambda L: L.nn.init.dirac_(L.empty(3, 3)),
    lambda L: L.nn.init.dirac_(L.empty(3, 3, 3), 2),
    lambda L: L.nn.init.orthogonal_(L.empty(3)),
    lambda L: L.nn.init.sparse_(L.empty(3), 0.1),
    lambda L: L.nn.init.sparse_(L.empty(2, 2, 2), 0.1),
], ids=["eye_1d", "eye_3d", "dirac_2d", "dirac_groups", "orthogonal_1d", "sparse_1d", "sparse_3d"])
def test_init_errors_match_torch(prog):
    assert_same_error(lambda: prog(mg), lambda: prog(torch))


def test_trunc_normal_warning_matches_torch():
    caught = {}
    for L in LIBS:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            L.nn.init.trunc_normal_(L.empty(10), 10.0, 1.0, -1.0, 1.0)
        caught[L] = [(x.category, str(x.message)) for x in w]
    assert caught[mg] == caught[torch] and len(caught[mg]) == 1


def test_init_has_torchs_common_initialisers_with_torchs_signatures():
    import inspect
    names = ["calculate_gain", "uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_",
             "dirac_", "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
             "sparse_"]
    for name in names:
        m, t = inspect.signature(getattr(mnn.init, name)), inspect.signature(getattr(torch.nn.init, name))
        assert [(p.name, p.default) for p in m.parameters.values()] == \
               [(p.name, p.default) for p in t.parameters.values()], name


def test_nn_utils_signatures_match_torch():
    import inspect
    for name in ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_",
                 "parameters_to_vector", "vector_to_parameters"]:
        m, t = inspect.signature(getattr(mnn.utils, name)), inspect.signature(getattr(torch.nn.utils, name))
        assert [(p.name, p.default) for p in m.parameters.values()] == \
               [(p.name, p.default) for p in t.parameters.values()], name
