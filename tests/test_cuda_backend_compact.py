"""Stream compaction on the device (compact.cu): nonzero, masked_select and the bool masks of
advanced indexing (`x[mask]`, `where(cond)`, index_put_ with a mask) against torch on the CPU --
values, the row-major order, torch's column-major nonzero layout, every dtype (the narrow ones
too), strided / 0-d / empty inputs, sizes that span several chunks and tiles, gradients, and that
only the count (8 bytes) comes back to the host. On a GPU when there is one, else on the
host-emulated device (tests/cuda_host/backend.py).
"""

import pytest
import torch

import minigrad as mg
from cuda_host.backend import spying_on_copies
from cuda_host.backend import on_any as cu, same_any as _same_any  # any dtype, bit for bit
from cuda_host.backend import REAL_GPU, ALL, back, cuda_device, on, same, to_mg  # noqa: F401  (cuda_device: autouse fixture)

NARROW = [torch.float16, torch.bfloat16, torch.uint8, torch.int8, torch.int16]
CHUNK = 4096  # compact.cu's MG_COMPACT_CHUNK: sizes around it cross chunk and tile edges


def _data(shape, dtype, seed=0, density=0.3):
    """Zeros (and -0.0) with nonzeros (NaN and inf among the floats) at about `density`."""
    g = torch.Generator().manual_seed(seed)
    keep = torch.rand(shape, generator=g) < density
    if dtype == torch.bool:
        return keep
    x = torch.randint(1, 50, shape, generator=g).to(dtype)
    if dtype.is_floating_point:
        pick = torch.randint(0, 20, shape, generator=g)
        x = torch.where(pick == 0, torch.tensor(float("nan"), dtype=dtype), x)
        x = torch.where(pick == 1, torch.tensor(float("-inf"), dtype=dtype), x)
        zero = torch.where(pick < 10, torch.tensor(-0.0, dtype=dtype), torch.tensor(0.0, dtype=dtype))
        return torch.where(keep, x, zero)
    return torch.where(keep, x, torch.zeros((), dtype=dtype))


# ----- nonzero -----

@pytest.mark.parametrize("dtype", ALL + NARROW)
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, CHUNK + 5), (3 * CHUNK + 300,)])
def test_nonzero_matches_torch_for_every_dtype_and_size(dtype, shape):
    x = _data(shape, dtype, seed=len(shape))
    nz = cu(x).nonzero()
    ref = torch.nonzero(x)
    assert nz.device.type == "cuda"
    assert torch.equal(back(nz), ref)
    assert nz.stride() == ref.stride()  # torch's CPU layout: (1, n)


@pytest.mark.parametrize("density", [0.0, 1.0, 0.999])
def test_nonzero_all_false_all_true_and_nearly_all(density):
    x = _data((5, CHUNK // 2 + 17), torch.float32, seed=3, density=density)
    same(on(x).nonzero(), torch.nonzero(x))


def test_nonzero_of_layouts_0d_and_empty():
    base = _data((2, 7), torch.float64, seed=4, density=0.5).flatten()
    from cuda_host.backend import layouts

    for name, view in layouts(base):
        m, t = to_mg(view)
        same(m.nonzero(), torch.nonzero(t))
        for got, want in zip(m.nonzero(as_tuple=True), torch.nonzero(t, as_tuple=True)):
            same(got, want)
    for s in (torch.tensor(2.5), torch.tensor(0.0), torch.tensor(-0.0), torch.tensor(float("nan"))):
        got, want = on(s).nonzero(), torch.nonzero(s)
        assert tuple(got.shape) == tuple(want.shape), (s, got.shape, want.shape)  # (1, 0) or (0, 0)
    for shape in [(0,), (3, 0, 2), (0, 4)]:
        e = torch.zeros(shape)
        same(on(e).nonzero(), torch.nonzero(e))
    # a permuted 4-d view (the op layer makes it contiguous first)
    x = _data((3, 4, 5, 6), torch.int32, seed=5).permute(2, 0, 3, 1)
    m, _ = to_mg(x)
    same(m.nonzero(), torch.nonzero(x))


def test_where_with_one_argument():
    x = _data((4, 1000), torch.float32, seed=6)
    for got, want in zip(mg.where(on(x)), torch.where(x)):
        same(got, want)


# ----- masked_select -----

@pytest.mark.parametrize("dtype", ALL + NARROW)
def test_masked_select_matches_torch_for_every_dtype(dtype):
    x = _data((3, CHUNK + 700), dtype, seed=7, density=0.8)
    mask = _data((3, CHUNK + 700), torch.bool, seed=8, density=0.4)
    _same_any(mg.masked_select(cu(x), cu(mask)), torch.masked_select(x, mask))


def test_masked_select_broadcasts_and_takes_any_layout():
    x = _data((6, 500), torch.float64, seed=9, density=0.9)
    row = _data((500,), torch.bool, seed=10, density=0.5)
    col = _data((6, 1), torch.bool, seed=11, density=0.5)
    same(mg.masked_select(on(x), on(row)), torch.masked_select(x, row))
    same(mg.masked_select(on(x), on(col)), torch.masked_select(x, col))
    same(mg.masked_select(on(x[:1]), on(col)), torch.masked_select(x[:1], col))  # the source broadcasts
    xt, mt = x.t(), _data((500, 6), torch.bool, seed=12).t().t()
    m, _ = to_mg(xt)
    same(mg.masked_select(m, on(mt)), torch.masked_select(xt, mt))
    strided = x[::2, 3::7]
    m, _ = to_mg(strided)
    mask = _data(tuple(strided.shape), torch.bool, seed=13)
    same(mg.masked_select(m, on(mask)), torch.masked_select(strided, mask))
    same(on(x).masked_select(on(row)), x.masked_select(row))


def test_masked_select_edges():
    s, t = torch.tensor(3.5), torch.tensor(True)
    same(mg.masked_select(on(s), on(t)), torch.masked_select(s, t))
    same(mg.masked_select(on(s), on(~t)), torch.masked_select(s, ~t))
    e = torch.zeros(0, 3)
    same(mg.masked_select(on(e), on(torch.ones(3, dtype=torch.bool))), torch.masked_select(e, torch.ones(3, dtype=torch.bool)))
    x = torch.arange(10.0)
    none, every = torch.zeros(10, dtype=torch.bool), torch.ones(10, dtype=torch.bool)
    same(mg.masked_select(on(x), on(none)), torch.masked_select(x, none))
    same(mg.masked_select(on(x), on(every)), torch.masked_select(x, every))


def test_only_the_count_comes_back_to_the_host(cuda_device):
    if cuda_device is None:
        # On a real GPU (REAL_GPU) the fixture yields no driver: CuPy's copies have no hook to
        # spy on. CI and every GPU-less run use the emulated driver, where this test runs.
        pytest.skip("spies on the emulated driver's copies; a real GPU run has no driver object to spy on")
    x = on(_data((3, 3 * CHUNK + 11), torch.float32, seed=14))
    mask = on(_data((3, 3 * CHUNK + 11), torch.bool, seed=15))
    with spying_on_copies(cuda_device) as copies:
        a = mg.masked_select(x, mask)
        b = x.nonzero()
        c = x[mask]
        d = x[mask[:, 0]]
    assert a.numel() > 0 and b.numel() > 0 and c.numel() > 0 and d.numel() > 0
    back_to_host = [c for c in copies if c[0] == "d2h"]
    assert back_to_host == [("d2h", 8)] * 4, copies
    assert not [c for c in copies if c[0] == "h2d"], copies


def test_compaction_runs_to_the_same_bits_every_time():
    x = on(_data((5, 3 * CHUNK), torch.float32, seed=16))
    a, b = x.nonzero(), x.nonzero()
    assert torch.equal(back(a), back(b))


# ----- masks in advanced indexing, and gradients -----

def test_mask_indexing_reads_and_writes():
    x = _data((4, 3, 300), torch.float32, seed=17, density=0.9)
    m3 = _data((4, 3, 300), torch.bool, seed=18)
    m2 = _data((4, 3), torch.bool, seed=19, density=0.5)
    m1 = _data((300,), torch.bool, seed=20)
    same(on(x)[on(m3)], x[m3])
    same(on(x)[on(m2)], x[m2])
    same(on(x)[:, :, on(m1)], x[:, :, m1])
    same(on(x)[on(m2), 5:9], x[m2, 5:9])
    for mask in (m3, m2, m2[:, 0]):
        assert on(x)[on(mask)].stride() == x[mask].stride()
        cpu_mask = mg.from_numpy(mask.numpy().copy())  # a CPU mask moves to the device
        assert on(x)[cpu_mask].stride() == x[mask].stride()
        same(on(x)[cpu_mask], x[mask])
    xt = x.transpose(0, 2)  # not contiguous: the general path
    m, _ = to_mg(xt)
    mt = _data(tuple(xt.shape[:2]), torch.bool, seed=24)
    same(m[on(mt)], xt[mt])
    assert m[on(mt)].stride() == xt[mt].stride()
    v = x[:, 1, ::3]  # a strided view indexed by a mask over all its dims
    m, _ = to_mg(v)
    mv = _data(tuple(v.shape), torch.bool, seed=25)
    same(m[on(mv)], v[mv])
    with pytest.raises(IndexError) as ref:
        x[m2[:, :2]]
    with pytest.raises(IndexError) as got:
        on(x)[on(m2[:, :2])]
    assert str(got.value) == str(ref.value)
    e = torch.zeros(0, 3)
    same(on(e)[on(torch.zeros(0, dtype=torch.bool))], e[torch.zeros(0, dtype=torch.bool)])
    same(on(x)[on(torch.zeros(4, dtype=torch.bool))], x[torch.zeros(4, dtype=torch.bool)])
    for mask in (m3, m2):
        y, ym = x.clone(), on(x)
        vals = torch.arange(float(x[mask].numel())).reshape(x[mask].shape)
        y[mask] = vals
        ym[on(mask)] = on(vals)
        same(ym, y)
        y[mask] = 2.5
        ym[on(mask)] = 2.5
        same(ym, y)
    y, ym = x.clone(), on(x)
    y.index_put_((m2,), torch.tensor(1.0), accumulate=True)
    ym.index_put_((on(m2),), on(torch.tensor(1.0)), accumulate=True)
    same(ym, y)


def test_gradients_of_masked_select_and_mask_indexing():
    x = torch.randn(5, 2000, dtype=torch.float64, generator=torch.Generator().manual_seed(21))
    mask = _data((5, 2000), torch.bool, seed=22)
    rows = _data((5,), torch.bool, seed=23, density=0.6)
    cases = [
        (lambda t, m: torch.masked_select(t, m), lambda t, m: mg.masked_select(t, m), mask),
        (lambda t, m: torch.masked_select(t, m), lambda t, m: mg.masked_select(t, m), mask[0]),  # broadcast
        (lambda t, m: t[m], lambda t, m: t[m], mask),
    ]
    for fn_t, fn_m, mk in cases:
        t = x.clone().requires_grad_()
        out_t = fn_t(t, mk)
        w = torch.arange(float(out_t.numel()), dtype=torch.float64)
        (out_t * w).sum().backward()
        m = on(x).requires_grad_()
        out = fn_m(m, on(mk))
        (out * on(w)).sum().backward()
        assert out.grad_fn.name() == out_t.grad_fn.name()
        assert m.grad.device.type == "cuda"
        same(m.grad, t.grad)
    t = x.clone().requires_grad_()
    t[rows].sum().backward()
    m = on(x).requires_grad_()
    m[on(rows)].sum().backward()
    same(m.grad, t.grad)
