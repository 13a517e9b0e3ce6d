"""View ops against torch: values, shape, strides, storage offset, contiguity, `_base` (the root
of the view chain), version-counter sharing (R6/R7), data_ptr relations and error texts."""

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
import torch
from hypothesis import assume, given, strategies as st

import minigrad as mg
from parity import ALL_DTYPES, DTYPES, assert_same, assert_same_error, make_pair, pairs, run_both


def _flat(r):
    return list(r) if isinstance(r, (tuple, list)) else [r]


def check_view(fm, ft, m, t, *, view=True):
    """Runs a view op on both. On success each result must match torch's in values, strides,
    offset and contiguity, relate to the input the same way (`_base`, `_is_view`, `is`, data_ptr),
    and share (or not) the version counter as torch's does."""
    kind, rm, rt = run_both(fm, ft)
    if kind == "err":
        return kind
    assert isinstance(rm, tuple) == isinstance(rt, tuple) and isinstance(rm, list) == isinstance(rt, list), (rm, rt)
    for a, b in zip(_flat(rm), _flat(rt), strict=True):
        assert_same(a, b, check_stride=True)
        assert a.storage_offset() == b.storage_offset()
        assert a.is_contiguous() == b.is_contiguous()
        assert a._is_view() == b._is_view()
        assert (a is m) == (b is t)
        if b._base is None:
            assert a._base is None
        else:
            assert (a._base is m) == (b._base is t) and (a._base is m._base) == (b._base is t._base)
            assert a._base is not None
        if b.untyped_storage().data_ptr() == t.untyped_storage().data_ptr():
            assert a._shares_storage(m)
            if b.numel() and t.numel():
                assert a.data_ptr() - m.data_ptr() == b.data_ptr() - t.data_ptr()
            else:  # torch reports 0 for a tensor without elements
                assert (a.data_ptr() == 0) == (b.data_ptr() == 0)
        else:
            assert not a._shares_storage(m)
        assert a._version == b._version
    # a write to the input shows through the views (and their version counters) as in torch
    if t.numel() and not m.dtype == mg.bool:
        vm = [a._version for a in _flat(rm)]
        vt = [b._version for b in _flat(rt)]
        m.add_(1)
        t.add_(1)
        for a, b, va, vb in zip(_flat(rm), _flat(rt), vm, vt):
            assert a._version - va == b._version - vb
            assert_same(a, b)
    return kind


dims = st.integers(-5, 5)


@given(pair=pairs(), data=st.data())
def test_view_and_reshape(pair, data):
    m, t = pair
    n = t.numel()
    # a random factorisation of numel (sometimes with -1, sometimes wrong)
    shape = []
    rest = n
    for _ in range(data.draw(st.integers(0, 3))):
        d = data.draw(st.sampled_from([k for k in range(1, 7) if rest % k == 0] or [1]))
        shape.append(d)
        rest //= d if d else 1
    shape.append(rest)
    if data.draw(st.booleans()):
        shape[data.draw(st.integers(0, len(shape) - 1))] = -1
    if data.draw(st.integers(0, 5)) == 0:
        shape.append(data.draw(st.sampled_from([-1, 2, 0, -2])))
    shape = tuple(shape)
    for name in ("view", "reshape"):
        check_view(lambda: getattr(m, name)(*shape), lambda: getattr(t, name)(*shape), m, t)
        check_view(lambda: getattr(m, name)(shape), lambda: getattr(t, name)(shape), m, t)
    check_view(lambda: mg.reshape(m, shape), lambda: torch.reshape(t, shape), m, t)


@given(pair=pairs(), other=pairs(layout=False))
def test_view_as_reshape_as_expand_as(pair, other):
    (m, t), (mo, to) = pair, other
    check_view(lambda: m.view_as(mo), lambda: t.view_as(to), m, t)
    check_view(lambda: m.reshape_as(mo), lambda: t.reshape_as(to), m, t)
    check_view(lambda: m.expand_as(mo), lambda: t.expand_as(to), m, t)


@given(pair=pairs(), a=dims, b=dims)
def test_flatten(pair, a, b):
    m, t = pair
    check_view(lambda: m.flatten(), lambda: t.flatten(), m, t)
    check_view(lambda: m.flatten(a), lambda: t.flatten(a), m, t)
    check_view(lambda: m.flatten(a, b), lambda: t.flatten(a, b), m, t)
    check_view(lambda: mg.flatten(m, start_dim=a, end_dim=b), lambda: torch.flatten(t, start_dim=a, end_dim=b), m, t)


@given(pair=pairs(max_side=2), data=st.data())
def test_squeeze_unsqueeze(pair, data):
    m, t = pair
    d = data.draw(dims)
    ds = tuple(data.draw(st.lists(dims, max_size=3)))
    check_view(lambda: m.squeeze(), lambda: t.squeeze(), m, t)
    check_view(lambda: m.squeeze(d), lambda: t.squeeze(d), m, t)
    check_view(lambda: m.squeeze(ds), lambda: t.squeeze(ds), m, t)
    check_view(lambda: mg.squeeze(m, d), lambda: torch.squeeze(t, d), m, t)
    check_view(lambda: m.unsqueeze(d), lambda: t.unsqueeze(d), m, t)
    check_view(lambda: mg.unsqueeze(m, d), lambda: torch.unsqueeze(t, d), m, t)


@given(pair=pairs(), a=dims, b=dims, data=st.data())
def test_transpose_permute_t(pair, a, b, data):
    m, t = pair
    check_view(lambda: m.transpose(a, b), lambda: t.transpose(a, b), m, t)
    check_view(lambda: mg.transpose(m, a, b), lambda: torch.transpose(t, a, b), m, t)
    check_view(lambda: m.swapaxes(a, b), lambda: t.swapaxes(a, b), m, t)
    check_view(lambda: m.t(), lambda: t.t(), m, t)
    check_view(lambda: mg.t(m), lambda: torch.t(t), m, t)
    check_view(lambda: m.T, lambda: t.T, m, t)
    check_view(lambda: m.mT, lambda: t.mT, m, t)
    perm = data.draw(st.one_of(st.permutations(range(t.dim())), st.lists(dims, max_size=4)))
    perm = tuple(p - t.dim() if data.draw(st.booleans()) and p >= 0 else p for p in perm)
    check_view(lambda: m.permute(*perm), lambda: t.permute(*perm), m, t)
    check_view(lambda: m.permute(perm), lambda: t.permute(perm), m, t)
    check_view(lambda: mg.permute(m, perm), lambda: torch.permute(t, perm), m, t)


@given(pair=pairs(max_side=3), data=st.data())
def test_expand(pair, data):
    m, t = pair
    # (-1 in a new leading dim is left out: torch 2.13 answers it with a negative size or an overflow
    # message; minigrad raises the "isn't allowed in a leading, non-existing dimension" error)
    lead = data.draw(st.lists(st.integers(0, 3), max_size=2))
    own = [data.draw(st.sampled_from([-1, s, 3, 0])) if s == 1 else data.draw(st.sampled_from([-1, s, s, s + 1])) for s in t.shape]
    sizes = tuple(lead + own)
    check_view(lambda: m.expand(*sizes), lambda: t.expand(*sizes), m, t)
    check_view(lambda: m.expand(sizes), lambda: t.expand(sizes), m, t)


@given(pair=pairs(min_dims=0), d=dims, start=st.integers(-6, 6), length=st.integers(-1, 6))
def test_narrow(pair, d, start, length):
    m, t = pair
    check_view(lambda: m.narrow(d, start, length), lambda: t.narrow(d, start, length), m, t)
    check_view(lambda: mg.narrow(m, d, start, length), lambda: torch.narrow(t, d, start, length), m, t)


@given(pair=pairs(min_dims=0), d=dims, i=st.integers(-6, 6))
def test_select_and_unbind(pair, d, i):
    m, t = pair
    check_view(lambda: m.select(d, i), lambda: t.select(d, i), m, t)
    check_view(lambda: mg.select(m, d, i), lambda: torch.select(t, d, i), m, t)
    check_view(lambda: m.unbind(d), lambda: t.unbind(d), m, t)
    check_view(lambda: mg.unbind(m, d), lambda: torch.unbind(t, d), m, t)
    check_view(lambda: m.unbind(), lambda: t.unbind(), m, t)


@given(pair=pairs(min_dims=0), off=st.integers(-5, 5), a=dims, b=dims)
def test_diagonal(pair, off, a, b):
    m, t = pair
    check_view(lambda: m.diagonal(), lambda: t.diagonal(), m, t)
    check_view(lambda: m.diagonal(off, a, b), lambda: t.diagonal(off, a, b), m, t)
    check_view(lambda: m.diagonal(offset=off, dim1=a, dim2=b), lambda: t.diagonal(offset=off, dim1=a, dim2=b), m, t)
    check_view(lambda: mg.diagonal(m, off, a, b), lambda: torch.diagonal(t, off, a, b), m, t)


@given(pair=pairs(), data=st.data())
def test_split_chunk(pair, data):
    m, t = pair
    d = data.draw(dims)
    size = data.draw(st.integers(-1, 6))
    check_view(lambda: m.split(size, d), lambda: t.split(size, d), m, t)
    check_view(lambda: m.split(size), lambda: t.split(size), m, t)
    check_view(lambda: mg.split(m, size, d), lambda: torch.split(t, size, d), m, t)
    sizes = data.draw(st.lists(st.integers(-1, 4), max_size=4))
    check_view(lambda: m.split(sizes, d), lambda: t.split(sizes, d), m, t)
    check_view(lambda: m.split_with_sizes(sizes, d), lambda: t.split_with_sizes(sizes, d), m, t)
    if -t.dim() <= d < t.dim():
        # sections that add up exactly
        n, exact = t.shape[d], []
        while sum(exact) < n:
            exact.append(data.draw(st.integers(0, n - sum(exact))))
        check_view(lambda: m.split(exact, d), lambda: t.split(exact, d), m, t)
    chunks = data.draw(st.integers(-1, 7))
    check_view(lambda: m.chunk(chunks, d), lambda: t.chunk(chunks, d), m, t)
    check_view(lambda: mg.chunk(m, chunks, d), lambda: torch.chunk(t, chunks, d), m, t)
    check_view(lambda: m.chunk(chunks), lambda: t.chunk(chunks), m, t)


@given(pair=pairs(max_dims=3), data=st.data())
def test_as_strided(pair, data):
    m, t = pair
    nd = data.draw(st.integers(0, 3))
    size = tuple(data.draw(st.lists(st.integers(0, 3), min_size=nd, max_size=nd)))
    stride = tuple(data.draw(st.lists(st.integers(0, 4), min_size=nd, max_size=nd)))
    if data.draw(st.integers(0, 6)) == 0:
        stride = stride + (1,)
    offset = data.draw(st.one_of(st.none(), st.integers(0, 8)))
    check_view(lambda: m.as_strided(size, stride, offset), lambda: t.as_strided(size, stride, offset), m, t)
    check_view(lambda: m.as_strided(size, stride), lambda: t.as_strided(size, stride), m, t)
    check_view(lambda: mg.as_strided(m, size, stride, offset), lambda: torch.as_strided(t, size, stride, offset), m, t)


def test_as_strided_negative():
    m, t = mg.zeros(6), torch.zeros(6)
    for size, stride, off in [((2,), (-1,), 1), ((-1,), (1,), 0), ((2,), (1,), -1), ((2, 2), (1,), 0)]:
        assert_same_error(lambda: m.as_strided(size, stride, off), lambda: t.as_strided(size, stride, off))


# ----- copies and aliases -----

@given(pair=pairs())
def test_contiguous_clone_detach_data(pair):
    m, t = pair
    check_view(lambda: m.contiguous(), lambda: t.contiguous(), m, t)
    check_view(lambda: m.clone(), lambda: t.clone(), m, t)
    check_view(lambda: mg.clone(m), lambda: torch.clone(t), m, t)
    check_view(lambda: m.detach(), lambda: t.detach(), m, t)
    check_view(lambda: m.data, lambda: t.data, m, t)


def test_same_object_when_nothing_changes():
    """contiguous()/to(same dtype)/float() on a matching tensor return the very object (R6)."""
    for lib in (mg, torch):
        x = lib.zeros(2, 3)
        assert x.contiguous() is x
        assert x.to(lib.float32) is x
        assert x.float() is x
        assert x.to(x) is x
        assert x.to("cpu") is x
        assert x.cpu() is x
        assert x.to(lib.float32, copy=True) is not x
        y = x.long()
        assert y.long() is y and y.to(lib.int64) is y
        assert x.t().contiguous() is not x.t()
        v = x.flatten()
        assert v is not x and lib.zeros(3).flatten() is not None


def test_version_counter_sharing():
    """R6/R7: views and detach() share the counter; clone(), .data and copies do not."""
    def run(lib):
        x = lib.arange(12.0).reshape(3, 4).clone()
        shared = {
            "view": x.view(12), "reshape": x.reshape(4, 3), "transpose": x.transpose(0, 1), "t": x.t(),
            "select": x.select(0, 0), "narrow": x.narrow(1, 1, 2), "expand": x.narrow(0, 0, 1).expand(3, 4),
            "unsqueeze": x.unsqueeze(0), "diagonal": x.diagonal(), "as_strided": x.as_strided((2,), (1,)),
            "permute": x.permute(1, 0), "unbind": x.unbind(0)[0], "split": x.split(1)[0], "chunk": x.chunk(2, 1)[1],
            "view_of_view": x.select(0, 1).narrow(0, 1, 2), "detach": x.detach(), "flatten": x.flatten(),
            "squeeze": x.unsqueeze(1).squeeze(1), "T": x.T, "mT": x.mT,
        }
        fresh = {"clone": x.clone(), "data": x.data, "reshape_copy": x.t().reshape(12), "contiguous_copy": x.t().contiguous(),
                 "double": x.double(), "to_copy": x.to(lib.float32, copy=True)}
        before = {k: v._version for k, v in {**shared, **fresh}.items()}
        x.add_(1)
        out = {k: v._version - before[k] for k, v in {**shared, **fresh}.items()}
        d = x.detach()
        d.mul_(2)
        dd = x.data
        dd.mul_(2)
        return out, x._version, dd._version, x.tolist()
    assert run(mg) == run(torch)


def test_data_ptr_relations():
    for lib in (mg, torch):
        x = lib.arange(24.0).reshape(2, 3, 4)
        assert x.select(1, 2).data_ptr() == x.data_ptr() + 8 * 4
        assert x.narrow(2, 1, 2).data_ptr() == x.data_ptr() + 4
        assert x.t().data_ptr() == x.data_ptr() if x.dim() <= 2 else True
        assert x.detach().data_ptr() == x.data_ptr() == x.data.data_ptr()
        assert x.clone().data_ptr() != x.data_ptr()
        e = lib.zeros(0)
        assert isinstance(e.data_ptr(), int)


# ----- in-place view ops (R3) -----

INPLACE_VIEW = {
    "t_": lambda x: x.t_(),
    "transpose_": lambda x: x.transpose_(0, -1),
    "swapaxes_": lambda x: x.swapaxes_(0, -1),
    "squeeze_": lambda x: x.squeeze_(),
    "squeeze_dim": lambda x: x.squeeze_(0),
    "unsqueeze_": lambda x: x.unsqueeze_(1),
    "as_strided_": lambda x: x.as_strided_((2,), (1,)),
}


@pytest.mark.parametrize("name", list(INPLACE_VIEW))
@given(pair=pairs(max_side=3))
def test_inplace_view_ops(name, pair):
    m, t = pair
    f = INPLACE_VIEW[name]
    vm, vt = m._version, t._version
    kind, rm, rt = run_both(lambda: f(m), lambda: f(t))
    assert m._version - vm == t._version - vt
    if kind == "ok":
        assert rm is m and rt is t
        assert t._version == vt + 1
        assert_same(m, t, check_stride=True)
        assert m.storage_offset() == t.storage_offset()
        assert (m._base is None) == (t._base is None)


# ----- errors -----

ERRORS = [
    lambda lib: lib.zeros(2, 3).view(4),
    lambda lib: lib.zeros(2, 3).view(-1, -1),
    lambda lib: lib.zeros(2, 3).view(-2, 3),
    lambda lib: lib.zeros(2, 3).t().view(6),
    lambda lib: lib.zeros(0, 3).view(-1, 0),
    lambda lib: lib.zeros(2, 3).reshape(5),
    lambda lib: lib.zeros(2, 3).permute(0),
    lambda lib: lib.zeros(2, 3).permute(0, 0),
    lambda lib: lib.zeros(2, 3).permute(0, 2),
    lambda lib: lib.zeros(2, 3).transpose(0, 2),
    lambda lib: lib.zeros(2, 3, 4).t(),
    lambda lib: lib.zeros(3).mT,
    lambda lib: lib.zeros(2, 3).expand(3),
    lambda lib: lib.zeros(2, 3).expand(2, 4),
    lambda lib: lib.zeros(2, 3).expand(-1, 2, 3),
    lambda lib: lib.zeros(2, 3, dtype=lib.int64).expand(5),
    lambda lib: lib.zeros(2, 3).narrow(0, 1, 2),
    lambda lib: lib.zeros(2, 3).narrow(0, 3, 0),
    lambda lib: lib.zeros(2, 3).narrow(0, -3, 1),
    lambda lib: lib.zeros(2, 3).narrow(0, 0, -1),
    lambda lib: lib.tensor(1.0).narrow(0, 0, 1),
    lambda lib: lib.zeros(2, 3).select(1, 3),
    lambda lib: lib.zeros(2, 3).select(-3, 0),
    lambda lib: lib.tensor(1.0).select(0, 0),
    lambda lib: lib.zeros(2, 3).diagonal(0, 1, 1),
    lambda lib: lib.zeros(2, 3).diagonal(0, 0, 2),
    lambda lib: lib.zeros(2, 3).squeeze(2),
    lambda lib: lib.zeros(2, 3).squeeze((0, 0)),
    lambda lib: lib.zeros(2, 3).unsqueeze(3),
    lambda lib: lib.zeros(2, 3).unsqueeze(-4),
    lambda lib: lib.zeros(2, 3).flatten(1, 0),
    lambda lib: lib.zeros(2, 3).flatten(2),
    lambda lib: lib.zeros(2, 3).split(0),
    lambda lib: lib.zeros(2, 3).split(-1),
    lambda lib: lib.zeros(2, 3).split([1, 2]),
    lambda lib: lib.zeros(2, 3).split([1, 1], 1),
    lambda lib: lib.zeros(2, 3).split([3, -1], 1),
    lambda lib: lib.tensor(1.0).split(1),
    lambda lib: lib.zeros(2, 3).chunk(0),
    lambda lib: lib.zeros(2, 3).chunk(-1),
    lambda lib: lib.tensor(1.0).chunk(1),
    lambda lib: lib.tensor(1.0).unbind(),
    lambda lib: lib.zeros(2, 3).unbind(2),
    lambda lib: lib.zeros(6).as_strided((3,), (3,)),
    lambda lib: lib.zeros(6).as_strided((3,), (1,), 4),
    lambda lib: lib.zeros(6).as_strided((2,), (1, 1)),
    lambda lib: lib.zeros(2, 3).view_as(lib.zeros(4)),
    lambda lib: lib.zeros(2, 3).t_().t_().unsqueeze_(5),
    lambda lib: lib.zeros(2, 3, 4).t_(),
    lambda lib: lib.zeros(2, 3).transpose_(0, 3),
    lambda lib: lib.zeros(2, 3).squeeze_(4),
]


@pytest.mark.parametrize("i", range(len(ERRORS)))
def test_view_errors(i):
    f = ERRORS[i]
    assert_same_error(lambda: f(mg), lambda: f(torch))


def test_size_behaves_like_torch_size():
    m, t = mg.zeros(2, 3, 4).shape, torch.zeros(2, 3, 4).shape
    for f in (lambda s: s[1:], lambda s: s + (5,), lambda s: (1,) + s, lambda s: s * 2, lambda s: 2 * s, lambda s: s[0],
              lambda s: s == (2, 3, 4), lambda s: s.numel(), str, repr, lambda s: hash(s) == hash((2, 3, 4)), lambda s: s + [5]):
        kind, rm, rt = run_both(lambda: f(m), lambda: f(t))
        if kind == "ok":
            assert type(rm).__name__ == type(rt).__name__ and normalize(rm) == normalize(rt)


def normalize(v):
    return v.replace("torch.", "minigrad.") if isinstance(v, str) else (tuple(v) if isinstance(v, tuple) else v)
