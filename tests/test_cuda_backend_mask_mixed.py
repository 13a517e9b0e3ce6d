"""A bool mask mixed with integer indices on cuda (`x[mask, idx]`, `x[idx, :, mask]`,
index_put_ with such indices, their gradients), against torch's CPU.

The position table is made on the device (`Backend::index_*_table`, index.cu's
`mg_index_table_*`): the mask becomes its nonzero() columns there (only the count, 8 bytes,
comes back) and only the integer indices are copied to the host, to raise torch's CPU error
before anything is written. On the host emulation the copies are recorded: nothing goes to the
device (no host-built table), and what comes back is the count and the integer indices.
"""

import pytest
import torch

import minigrad as mg
from cuda_host.backend import REAL_GPU, back, cuda_device, on, same, spying_on_copies  # noqa: F401


def _rand(shape, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g, dtype=dtype)
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=g).bool()
    return torch.randint(-50, 50, shape, generator=g, dtype=dtype)


M3 = torch.tensor([True, False, True])
M4 = torch.tensor([False, True, True, True])
M45 = torch.tensor([[True, False, True, False, True]] * 2 + [[False, True, False, False, True]] * 2)

# keys into a (3, 4, 5) tensor, in torch's terms (t: how an index tensor is passed)
KEYS = [
    ("mask, idx", lambda t: (t(M3), t(torch.tensor([1, -1])))),
    ("idx, mask", lambda t: (t(torch.tensor([2, 0, 1])), t(M4))),
    ("mask, broadcast idx", lambda t: (t(M3), t(torch.tensor([[3], [0]])))),
    ("idx, :, mask", lambda t: (t(torch.tensor([0, 2, 1])), slice(None), t(torch.tensor([False, True, True, False, True])))),
    (":, mask, idx", lambda t: (slice(None), t(M4), t(torch.tensor([4, 0, -5])))),
    ("idx, 2-d mask", lambda t: (t(torch.tensor([1, 0, 2, 2, 1, 0, 0, 1, 2, 0])), t(M45))),
    ("mask, int32 idx", lambda t: (t(M3), t(torch.tensor([3, 1], dtype=torch.int32)))),
    ("idx, idx (no mask)", lambda t: (t(torch.tensor([2, 0])), t(torch.tensor([[1], [3]])))),
    ("empty mask, idx", lambda t: (t(torch.zeros(3, dtype=torch.bool)), t(torch.tensor([1])))),
]


def _mg_index(t):
    return on(t)


@pytest.mark.parametrize("name,key", KEYS, ids=[k[0] for k in KEYS])
@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool, torch.float16])
def test_read(name, key, dtype):
    x = _rand((3, 4, 5), dtype)
    want = x[key(lambda t: t)]
    xm = on(x.float()).to(mg.float16) if dtype == torch.float16 else on(x)
    got = xm[key(_mg_index)]
    if dtype == torch.float16:
        got, want = got.to(mg.float32), want.float()
    same(got, want)
    # a transposed source
    xt = x.transpose(0, 2).contiguous().transpose(0, 2)
    if dtype != torch.float16:
        same(on(x.transpose(0, 2).contiguous()).transpose(0, 2)[key(_mg_index)], xt[key(lambda t: t)])


@pytest.mark.parametrize("name,key", KEYS, ids=[k[0] for k in KEYS])
@pytest.mark.parametrize("accumulate", [False, True])
def test_write_and_accumulate(name, key, accumulate):
    x = _rand((3, 4, 5))
    xm = on(x)
    ks, km = key(lambda t: t), key(_mg_index)
    v = _rand(x[ks].shape, seed=3)
    if all(isinstance(k, torch.Tensor) for k in ks):
        x.index_put_(ks, v, accumulate=accumulate)
        xm.index_put_(km, on(v), accumulate=accumulate)
    elif accumulate:  # with a slice: read, add, write back (both paths)
        x[ks] += v
        xm[km] += on(v)
    else:
        x[ks] = v
        xm[km] = on(v)
    same(xm, x)
    # one value broadcast over every position
    x[ks] = 2.5
    xm[km] = 2.5
    same(xm, x)


def test_repeated_positions_accumulate_in_order():
    x, xm = torch.zeros(3, 4), on(torch.zeros(3, 4))
    key = (torch.tensor([True, True, False]), torch.tensor([2, 2]))
    v = torch.tensor([1.5, 2.25])
    x.index_put_(key, v, accumulate=True)
    xm.index_put_((on(key[0]), on(key[1])), on(v), accumulate=True)
    same(xm, x)
    # repeated rows of a 2-d mask against repeated integer columns
    y, ym = torch.zeros(2, 3), on(torch.zeros(2, 3))
    k2 = (torch.tensor([1, 1, 1]), torch.tensor([True, False, True]))
    y.index_put_((k2[0][:2], k2[1]), torch.tensor([4.0, 5.0]), accumulate=True)
    ym.index_put_((on(k2[0][:2]), on(k2[1])), on(torch.tensor([4.0, 5.0])), accumulate=True)
    same(ym, y)


def test_errors_are_torchs_and_nothing_is_written():
    x = _rand((3, 4, 5))
    xm = on(x)
    for key in [(M3, torch.tensor([1, 4])), (torch.tensor([0, 3, 1]), M4), (M3, torch.tensor([-6, 0]))]:
        with pytest.raises(IndexError) as want:
            x[key]
        with pytest.raises(IndexError) as got:
            xm[tuple(on(k) for k in key)]
        assert str(got.value) == str(want.value)
        with pytest.raises(IndexError) as got:
            xm[tuple(on(k) for k in key)] = 1.0
        assert str(got.value) == str(want.value)
        with pytest.raises(IndexError) as got:
            xm.index_put_(tuple(on(k) for k in key), on(torch.ones(5, dtype=torch.float64)), accumulate=True)
        assert str(got.value) == str(want.value)
    same(xm, x)
    assert xm._version == 0
    # a mask of the wrong shape, shapes that do not broadcast
    for key in [(torch.tensor([True, False]), torch.tensor([0])), (M3, torch.tensor([0, 1, 2]))]:
        with pytest.raises(IndexError) as want:
            x[key]
        with pytest.raises(IndexError) as got:
            xm[tuple(on(k) for k in key)]
        assert str(got.value) == str(want.value)


def test_gradients():
    x = _rand((3, 4, 5)).requires_grad_()
    xm = on(x.detach()).requires_grad_()
    key = (M3, torch.tensor([1, 1]))
    out = x[key]
    outm = xm[tuple(on(k) for k in key)]
    assert outm.grad_fn.name() == "IndexBackward0"
    g = _rand(out.shape, seed=4)
    out.backward(g)
    outm.backward(on(g))
    same(xm.grad, x.grad)
    # index_put (out of place) with a mask and an index: IndexPutBackward0
    y = _rand((3, 4)).requires_grad_()
    ym = on(y.detach()).requires_grad_()
    v = _rand((2,), seed=6).requires_grad_()
    vm = on(v.detach()).requires_grad_()
    k = (M3, torch.tensor([0, 3]))
    r = torch.index_put(y, k, v, accumulate=True)
    rm = mg.index_put(ym, (on(k[0]), on(k[1])), vm, accumulate=True)
    same(rm, r.detach())
    (r * r).sum().backward()
    (rm * rm).sum().backward()
    same(ym.grad, y.grad)
    same(vm.grad, v.grad)


@pytest.mark.skipif(REAL_GPU, reason="counts the emulated driver's copies")
def test_only_the_count_and_the_integer_indices_come_back(cuda_device):
    x = on(_rand((6, 4, 5)))
    mask = on(torch.tensor([True, False, True, True, False, True]))
    idx = on(torch.tensor([3, 0, 1, 2]))
    with spying_on_copies(cuda_device) as copies:
        out = x[mask, idx]
    assert ("h2d", 32) not in copies and not [c for c in copies if c[0] == "h2d"], copies
    assert sorted(copies) == [("d2h", 8), ("d2h", 32)], copies  # the count; idx's 4 values
    ref = _rand((6, 4, 5))[torch.tensor([True, False, True, True, False, True]), torch.tensor([3, 0, 1, 2])]
    same(out, ref)
    ones = on(torch.ones(4, 5, dtype=torch.float64))
    with spying_on_copies(cuda_device) as copies:
        x.index_put_((mask, idx), ones, accumulate=True)
    assert not [c for c in copies if c[0] == "h2d"] and sorted(copies) == [("d2h", 8), ("d2h", 32)], copies
