"""The GPU's random generator (rust/core/src/ops/random.cu, rust/py/src/cuda/random.rs): Philox4x32-10
checked against Random123's published known answers, every value of a fill checked against a
reference written here from the algorithm (element i draws from counter offset + i), the stream's
seeding and advance, fills of views, the errors torch gives, and dropout on cuda. On a GPU when
there is one, else on the host-emulated device (tests/cuda_host/backend.py)."""

import ctypes
import math
import subprocess

import numpy as np
import pytest
import torch

import minigrad as mg
import minigrad.nn.functional as F
from cuda_host import harness as H
from cuda_host.backend import REAL_GPU, back, cuda_device  # noqa: F401  (cuda_device: autouse fixture)

M32 = 0xFFFFFFFF

# Random123's known-answer vectors for Philox4x32-10 (its tests/kat_vectors): counter, key, output.
PHILOX_KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((M32,) * 4, (M32, M32), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


def philox(c, k):
    """Philox4x32-10 (Salmon et al. 2011), the reference the kernel is checked against."""
    c0, c1, c2, c3 = c
    k0, k1 = k
    for _ in range(10):
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0) & M32, p1 & M32, ((p0 >> 32) ^ c3 ^ k1) & M32, p0 & M32
        k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
    return c0, c1, c2, c3


def words(seed, counter):
    seed &= (1 << 64) - 1
    return philox((counter & M32, counter >> 32, 0, 0), (seed & M32, seed >> 32))


def unit53(hi, lo):
    return ((hi << 32 | lo) >> 11) * 2.0 ** -53


def expected_uniform(seed, offset, n, lo, hi, dtype):
    out = []
    for i in range(n):
        w = words(seed, offset + i)
        u = (w[0] >> 8) * 2.0 ** -24 if dtype == np.float32 else unit53(w[0], w[1])
        r = dtype(lo + (hi - lo) * u)
        if r >= dtype(hi) and hi > lo:
            r = np.nextafter(dtype(hi), dtype(lo))
        out.append(r)
    return np.array(out, dtype=dtype)


def expected_normal(seed, offset, n, mean, std, dtype):
    out = []
    for i in range(n):
        w = words(seed, offset + i)
        u1, u2 = 1.0 - unit53(w[0], w[1]), unit53(w[2], w[3])
        out.append(mean + std * (math.sqrt(-2.0 * math.log(u1)) * math.cos(6.283185307179586 * u2)))
    return np.array(out, dtype=np.float64).astype(dtype)


KAT_TU = r"""
#include "random.cu"
extern "C" void mg_philox_kat(const unsigned int* c, unsigned int k0, unsigned int k1, unsigned int* w) {
  const unsigned int cc[4] = {c[0], c[1], c[2], c[3]};
  unsigned int out[4];
  mg::philox(cc, k0, k1, out);
  for (int i = 0; i < 4; ++i) w[i] = out[i];
}
"""


@pytest.mark.parametrize("counter,key,want", PHILOX_KAT)
def test_philox_matches_random123_known_answers(tmp_path, counter, key, want):
    assert philox(counter, key) == want  # the Python reference below is the algorithm itself
    cxx = H.compiler()
    if cxx is None:
        pytest.skip("g++ not found: the kernel's Philox is compiled for the host to check it")
    src, lib = tmp_path / "kat.cpp", tmp_path / "kat.so"
    src.write_text(KAT_TU)
    subprocess.run([cxx, *H.CXXFLAGS, "-include", str(H.HERE / "shim.h"), "-I", str(H.REPO / "rust/core/src/ops"),
                    "-shared", str(src), "-o", str(lib)], check=True, capture_output=True)
    f = ctypes.CDLL(str(lib)).mg_philox_kat
    c = (ctypes.c_uint * 4)(*counter)
    w = (ctypes.c_uint * 4)()
    f(c, ctypes.c_uint(key[0]), ctypes.c_uint(key[1]), w)
    assert tuple(w) == want


@pytest.mark.parametrize("dtype", [mg.float32, mg.float64])
@pytest.mark.parametrize("lo,hi", [(0.0, 1.0), (-2.5, 3.0), (1.0, 1.0000001), (5.0, 5.0)])
def test_uniform_values_are_philox_draws_in_order(dtype, lo, hi):
    mg.cuda.manual_seed(1234)
    x = mg.empty(300, dtype=dtype, device="cuda").uniform_(lo, hi)
    np_dtype = np.float32 if dtype == mg.float32 else np.float64
    want = expected_uniform(1234, 0, 300, lo, hi, np_dtype)
    got = x.cpu().numpy()
    assert np.array_equal(got, want)
    assert (got >= np_dtype(lo)).all() and ((got < np_dtype(hi)).all() or lo == hi)


@pytest.mark.parametrize("dtype", [mg.float32, mg.float64])
def test_normal_values_are_box_muller_of_philox_draws(dtype):
    mg.cuda.manual_seed(-7)  # negative seeds wrap to 64 bits, as torch's
    x = mg.randn(257, dtype=dtype, device="cuda") * 1.0
    np_dtype = np.float32 if dtype == mg.float32 else np.float64
    want = expected_normal(-7, 0, 257, 0.0, 1.0, np_dtype)
    # the device's log/cos may differ from the host libm's in the last bit (exact on the host)
    np.testing.assert_allclose(x.cpu().numpy(), want, rtol=2e-7 if dtype == mg.float32 else 1e-14, atol=1e-12)
    y = mg.empty(40, dtype=dtype, device="cuda").normal_(3.0, 0.5)
    np.testing.assert_allclose(y.cpu().numpy(), expected_normal(-7, 257, 40, 3.0, 0.5, np_dtype), rtol=2e-7, atol=1e-6)


def test_fills_advance_the_stream_and_seeding_restarts_it():
    mg.cuda.manual_seed(5)
    a, b = mg.rand(10, device="cuda"), mg.rand(7, 3, device="cuda")
    mg.cuda.manual_seed(5)
    both = mg.rand(31, device="cuda")
    assert torch.equal(torch.cat([back(a), back(b).flatten()]), back(both))
    assert mg.cuda.get_rng_state() == (5, 31)
    assert mg.cuda.initial_seed() == 5
    mg.cuda.set_rng_state((5, 10))
    assert torch.equal(back(mg.rand(7, 3, device="cuda")), back(b))


def test_views_are_filled_in_their_own_row_major_order():
    mg.cuda.manual_seed(9)
    base = mg.zeros(6, 5, device="cuda")
    v = base.t()  # (5, 6), strides (1, 5)
    v.uniform_()
    want = expected_uniform(9, 0, 30, 0.0, 1.0, np.float32).reshape(5, 6)
    assert np.array_equal(v.cpu().numpy(), want)
    assert np.array_equal(base.cpu().numpy(), want.T)
    base.zero_()
    s = base[1:4, ::2]
    s.normal_()
    got = base.cpu().numpy()
    np.testing.assert_allclose(got[1:4, ::2], expected_normal(9, 30, 9, 0.0, 1.0, np.float32).reshape(3, 3), rtol=2e-7, atol=1e-7)
    untouched = np.ones_like(got, dtype=bool)
    untouched[1:4, ::2] = False
    assert (got[untouched] == 0).all()


def test_minigrad_manual_seed_seeds_the_gpu_and_cuda_manual_seed_only_the_gpu():
    mg.manual_seed(11)
    a = back(mg.rand(50, device="cuda"))
    cpu_a = mg.rand(50).numpy()
    mg.manual_seed(11)
    assert torch.equal(back(mg.rand(50, device="cuda")), a)
    mg.cuda.manual_seed(99)  # the CPU stream goes on where it was
    assert np.array_equal(mg.rand(50).numpy(), cpu_a)
    mg.cuda.manual_seed_all(11)
    assert torch.equal(back(mg.rand(50, device="cuda")), a)


def test_distributions():
    mg.cuda.manual_seed(0)
    z = back(mg.randn(20000, dtype=mg.float64, device="cuda"))
    assert abs(z.mean()) < 0.03 and abs(z.std() - 1) < 0.02
    assert abs((z ** 3).mean()) < 0.1 and abs((z ** 4).mean() - 3) < 0.15
    u = back(mg.rand(20000, device="cuda"))
    assert u.min() >= 0 and u.max() < 1
    counts = torch.histc(u, bins=10, min=0, max=1)
    assert (counts - 2000).abs().max() < 200  # about 4.7 standard deviations
    n = back(mg.empty(20000, device="cuda").normal_(-3.0, 2.0))
    assert abs(n.mean() + 3) < 0.06 and abs(n.std() - 2) < 0.05


def test_factories_and_likes_draw_on_the_device():
    mg.cuda.manual_seed(3)
    x = mg.rand(4, 5, device="cuda", requires_grad=True)
    assert x.device.type == "cuda" and x.is_leaf and x.requires_grad and x._version == 0
    y = mg.randn_like(x)
    assert y.device.type == "cuda" and y._version == 0 and not y.requires_grad
    want = expected_normal(3, 20, 20, 0.0, 1.0, np.float32).reshape(4, 5)
    np.testing.assert_allclose(y.cpu().numpy(), want, rtol=2e-7, atol=1e-7)
    z = mg.rand_like(mg.zeros(3, dtype=mg.float64), device="cuda")
    assert z.device.type == "cuda" and z.dtype == mg.float64
    assert mg.cuda.get_rng_state()[1] == 43


def test_in_place_fill_bumps_the_version_once():
    x = mg.zeros(8, device="cuda")
    v = x[2:6]
    v.normal_()
    assert x._version == 1 and v._version == 1
    x.uniform_(-1, 1)
    assert x._version == 2


def test_errors_match_torch():
    for kind, text in [("uniform_", '"check_uniform_bounds" not implemented for \'Long\''),
                       ("normal_", '"normal_kernel_cuda" not implemented for \'Long\'')]:
        with pytest.raises(NotImplementedError, match=text):
            getattr(mg.zeros(3, dtype=mg.int64, device="cuda"), kind)()
    with pytest.raises(NotImplementedError, match="check_uniform_bounds"):
        mg.rand(3, dtype=mg.int32, device="cuda")
    with pytest.raises(RuntimeError, match="uniform_ expects to return a \\[from, to\\) range"):
        mg.zeros(3, device="cuda").uniform_(2, 1)
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        mg.zeros(3, device="cuda").normal_(0, -1)


def test_a_refused_write_draws_nothing():
    leaf = mg.zeros(4, device="cuda", requires_grad=True)
    before = mg.cuda.get_rng_state()
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad"):
        leaf.normal_()
    assert mg.cuda.get_rng_state() == before
    assert leaf._version == 0


def test_empty_fills_draw_nothing():
    before = mg.cuda.get_rng_state()
    mg.empty(0, 3, device="cuda").normal_()
    assert mg.rand(0, device="cuda").shape == (0,)
    assert mg.cuda.get_rng_state() == before


def test_dropout_on_cuda():
    mg.cuda.manual_seed(21)
    x = mg.ones(1000, device="cuda", requires_grad=True)
    y = F.dropout(x, 0.25)
    assert y.device.type == "cuda" and y.grad_fn.name() == "MulBackward0"
    vals = back(y.detach())
    kept = vals != 0
    assert torch.equal(vals[kept], torch.full((int(kept.sum()),), 1 / 0.75))
    assert 650 < int(kept.sum()) < 850
    # the mask is the draws below 1 - p
    mask = torch.from_numpy(expected_uniform(21, 0, 1000, 0.0, 1.0, np.float32) < 0.75)
    assert torch.equal(kept, mask)
    y.sum().backward()
    assert torch.equal(back(x.grad), vals)
    assert torch.equal(back(F.dropout(x, 1.0)), torch.zeros(1000))
    assert F.dropout(x, 0.5, training=False) is x
    net = mg.nn.Sequential(mg.nn.Linear(4, 8), mg.nn.Dropout(0.5), mg.nn.Linear(8, 1)).to("cuda")
    out = net(mg.ones(16, 4, device="cuda"))
    out.sum().backward()
    assert out.device.type == "cuda" and net[0].weight.grad.device.type == "cuda"
    x2 = mg.ones(10, device="cuda")
    F.dropout(x2, 0.5, inplace=True)
    assert x2._version == 1


def test_in_place_fills_cut_the_gradient_as_torch_records():
    for kind, node in [("normal_", "NormalBackward0"), ("uniform_", "UniformBackward0")]:
        for device in ["cpu", "cuda"]:
            leaf = mg.ones(3, device=device, requires_grad=True)
            a = leaf * 2
            getattr(a, kind)()
            assert a.grad_fn.name() == node and a._version == 1
            (a * 3).sum().backward()
            assert torch.equal(back(leaf.grad) if device == "cuda" else torch.from_numpy(leaf.grad.numpy()), torch.zeros(3))
            t_leaf = torch.ones(3, requires_grad=True)
            ta = t_leaf * 2
            getattr(ta, kind)()
            assert type(ta.grad_fn).__name__ == node
