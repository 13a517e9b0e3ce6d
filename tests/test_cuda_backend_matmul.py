"""matmul on cuda through cuBLAS with raw device pointers (rust/py/src/cuda/gemm.rs): every
operand layout the op layer hands over is expressed by cuBLAS's op flags, leading dimensions
and batch strides, with no copy. On the host emulation the driver's `gemm` reads the memory as
cuBLAS would (column-major, `ld`, `stride`) and checks cuBLAS's argument rules, so wrong
arguments give wrong values or an error here; the calls it records show which form each layout
took. Values are compared with torch's CPU result.
"""

import pytest
import torch

import minigrad as mg
from cuda_host.backend import REAL_GPU, back, cuda_device, on, same  # noqa: F401  (cuda_device: autouse fixture)


def _rand(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=dtype)


def _like(view):
    """The same view of the same values on cuda: the base copied, the view's geometry kept."""
    base = view._base if view._base is not None else view
    m = on(base.contiguous())
    return m.as_strided(view.shape, view.stride(), view.storage_offset())


def close(got, want):
    """Float products in another summation order: cancellation leaves an absolute error."""
    assert got.device.type == "cuda" and tuple(got.shape) == tuple(want.shape)
    tol = 2e-5 if want.dtype == torch.float32 else 1e-12
    torch.testing.assert_close(back(got), want, rtol=tol, atol=tol)


def _calls(driver, before):
    return [] if driver is None else driver.gemm_calls[before:]


def _check(driver, x, y, fn=torch.matmul, mfn=mg.matmul, forms=None, ncalls=None):
    n0 = 0 if driver is None else len(driver.gemm_calls)
    f0 = 0 if driver is None else driver.matmul_fallbacks
    got = mfn(_like(x), _like(y))
    close(got, fn(x, y))
    if driver is None:
        return
    calls = _calls(driver, n0)
    assert driver.matmul_fallbacks == f0, "took the CuPy fallback"
    if ncalls is not None:
        assert len(calls) == ncalls, calls
    if forms is not None:
        assert {(c[1], c[2]) for c in calls} == {forms}, calls


M, K, N = 5, 7, 3


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_matrix_layouts(cuda_device, dtype):
    a, b = _rand((M, K), dtype, 0), _rand((K, N), dtype, 1)
    at, bt = _rand((K, M), dtype, 2).t(), _rand((N, K), dtype, 3).t()
    wide_a, wide_b = _rand((M, K + 4), dtype, 4)[:, 2:2 + K], _rand((K, N + 6), dtype, 5)[:, 1:1 + N]
    # cuBLAS's first operand is b (its op flag first), its second a
    _check(cuda_device, a, b, forms=(False, False), ncalls=1)
    _check(cuda_device, at, b, forms=(False, True), ncalls=1)
    _check(cuda_device, a, bt, forms=(True, False), ncalls=1)
    _check(cuda_device, at, bt, forms=(True, True), ncalls=1)
    _check(cuda_device, wide_a, wide_b, forms=(False, False), ncalls=1)  # ld > cols
    _check(cuda_device, _rand((K + 3, M), dtype, 6)[1:1 + K].t(), wide_b, forms=(False, True), ncalls=1)
    # one row, one column, vectors (mv, vector @ matrix, dot), strided vectors
    _check(cuda_device, a[2:3], b, ncalls=1)
    _check(cuda_device, a, b[:, 1:2], ncalls=1)
    v, w = _rand((K,), dtype, 7), _rand((2 * K,), dtype, 8)[::2]
    _check(cuda_device, a, v, ncalls=1)
    _check(cuda_device, v, b, ncalls=1)
    _check(cuda_device, v, w, ncalls=1)
    _check(cuda_device, a, w, fn=torch.mv, mfn=mg.mv, ncalls=1)
    _check(cuda_device, v, w, fn=torch.dot, mfn=mg.dot, ncalls=1)
    _check(cuda_device, a, b, fn=torch.mm, mfn=mg.mm, ncalls=1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_batched_layouts(cuda_device, dtype):
    B = 4
    a, b = _rand((B, M, K), dtype, 0), _rand((B, K, N), dtype, 1)
    _check(cuda_device, a, b, fn=torch.bmm, mfn=mg.bmm, forms=(False, False), ncalls=1)
    # transposed matrices in each batch, a permuted batch dim
    at = _rand((B, K, M), dtype, 2).transpose(1, 2)
    bp = _rand((K, B, N), dtype, 3).transpose(0, 1)
    _check(cuda_device, at, bp, fn=torch.bmm, mfn=mg.bmm, forms=(False, True), ncalls=1)
    # broadcast batch: a matrix against a batch (stride 0), an expanded operand
    _check(cuda_device, a, _rand((K, N), dtype, 4), ncalls=1)
    _check(cuda_device, _rand((M, K), dtype, 5), b, ncalls=1)
    _check(cuda_device, _rand((1, M, K), dtype, 6).expand(B, M, K), b, ncalls=1)
    # two batch dims: one run when they merge, a loop over the outer one when they do not
    a4, b4 = _rand((2, 3, M, K), dtype, 7), _rand((2, 3, K, N), dtype, 8)
    _check(cuda_device, a4, b4, ncalls=1)
    _check(cuda_device, a4, _rand((3, K, N), dtype, 9), ncalls=2)  # b broadcast over dim 0 only
    _check(cuda_device, a4, _rand((2, 1, K, N), dtype, 10), ncalls=2)  # b broadcast over dim 1 only
    _check(cuda_device, _rand((3, 2, M, K), dtype, 11).transpose(0, 1), b4, ncalls=2)  # a's batch dims swapped


def test_layouts_cublas_cannot_take_and_integers_use_the_fallback(cuda_device):
    def fallbacks():
        return 0 if cuda_device is None else cuda_device.matmul_fallbacks

    a = _rand((M, K), torch.float32, 0)
    row = _rand((1, N), torch.float32, 1)
    close(mg.matmul(_like(a), on(row).expand(K, N)), a @ row.expand(K, N))  # stride 0 inside a matrix
    b = _rand((K, N), torch.float32, 3)
    step = _rand((M, 2 * K), torch.float32, 2)[:, ::2]  # no unit stride
    f0 = fallbacks()
    close(mg.matmul(_like(step), on(b)), step @ b)
    ai = torch.randint(-9, 9, (M, K))
    bi = torch.randint(-9, 9, (K, N))
    same(mg.matmul(on(ai), on(bi)), ai @ bi)  # cuBLAS has no integer GEMM
    if cuda_device is not None:
        assert fallbacks() - f0 == 2


def test_empty_and_degenerate_sizes():
    for m, k, n in ((0, 3, 2), (3, 0, 2), (3, 2, 0), (1, 1, 1)):
        a, b = _rand((m, k), torch.float64, 0), _rand((k, n), torch.float64, 1)
        close(mg.matmul(on(a), on(b)), a @ b)


def test_linear_and_grouped_conv_go_through_gemm(cuda_device):
    f0 = 0 if cuda_device is None else cuda_device.matmul_fallbacks
    x = _rand((6, 8), torch.float32, 0)
    w = _rand((5, 8), torch.float32, 1)
    bias = _rand((5,), torch.float32, 2)
    close(mg.nn.functional.linear(on(x), on(w), on(bias)), torch.nn.functional.linear(x, w, bias))
    xi = _rand((2, 4, 6, 6), torch.float64, 3)
    wi = _rand((6, 2, 3, 3), torch.float64, 4)
    close(mg.nn.functional.conv2d(on(xi), on(wi), groups=2), torch.nn.functional.conv2d(xi, wi, groups=2))
    if cuda_device is not None:
        assert cuda_device.matmul_fallbacks == f0


@pytest.mark.skipif(REAL_GPU, reason="checks the emulation's cuBLAS argument rules")
def test_the_emulated_cublas_rejects_a_short_leading_dimension(cuda_device):
    import numpy as np

    buf = np.zeros(64, np.float32)
    p = buf.ctypes.data
    with pytest.raises(RuntimeError, match="CUBLAS_STATUS_INVALID_VALUE"):
        cuda_device.gemm("float32", False, False, (4, 2, 3), (p, 3, 0), (p, 3, 0), (p, 4, 0), 1)
