// Scans along the last dim of contiguous rows (scan.rs: cumsum, cumprod, logcumsumexp; the op
// layer moves the scanned dim last and casts to the result dtype first).
//
// Kernel (instances in cuda_kernels.rs):
//   mg_scan<T, A, Op>(T* dst, const T* src, long long rows, long long n)
//     dst and src are contiguous [rows, n]. Each row is scanned left to right by one thread in
//     the accumulator type A (double for float and double, float for the half types widened to
//     float rows, long long wrapping for the integers), each partial result rounded once into
//     T: the CPU's order and precision (kernels/src/scan.rs), so cumsum and cumprod give the
//     CPU's bits, on every run and every grid. logcumsumexp's exp/log1p are CUDA's libm (within
//     an ulp of glibc's, docs/gpu.md), so it agrees with the CPU to rounding.
//
// Why not a parallel block scan: it would add in another order than torch's CPU (a tree), and
// results would differ in the last bits from the CPU's. The price: a long single row runs on
// one thread (many rows run in parallel, one per thread).
#include "cuda_common.cuh"

namespace mg {

struct ScanSum {
  template <class A> static __device__ __forceinline__ A init() { return (A)0; }
  template <class A> static __device__ __forceinline__ A step(A acc, A x) {
    if constexpr (traits<A>::is_int) {
      return wrap_add(acc, x);
    } else {
      return acc + x;
    }
  }
};

struct ScanProd {
  template <class A> static __device__ __forceinline__ A init() { return (A)1; }
  template <class A> static __device__ __forceinline__ A step(A acc, A x) {
    if constexpr (traits<A>::is_int) {
      return wrap_mul(acc, x);
    } else {
      return acc * x;
    }
  }
};

// torch's _log_add_exp_helper(x, acc): NaN in the running value wins, then a NaN input; two
// equal infinities give that infinity (-inf + -inf stays -inf instead of becoming NaN).
struct ScanLse {
  template <class A> static __device__ __forceinline__ A init() { return (A)(-inf()); }
  template <class A> static __device__ __forceinline__ A step(A acc, A x) {
    A lo, hi;
    if (is_nan(acc)) {
      lo = hi = acc;
    } else if (is_nan(x)) {
      lo = hi = x;
    } else {
      lo = x < acc ? x : acc;
      hi = x < acc ? acc : x;
    }
    const A d = lo - hi;
    if (lo != hi || d == d) {  // lo finite <=> lo - lo is a number; lo != hi covers the rest
      return m_log1p(m_exp(d)) + hi;
    }
    return x;
  }
};

}  // namespace mg

template <class T, class A, class Op>
__global__ void mg_scan(T* dst, const T* src, long long rows, long long n) {
  for (long long r = mg::thread_start(); r < rows; r += mg::thread_step()) {
    const T* x = src + r * n;
    T* y = dst + r * n;
    A acc = Op::template init<A>();
    for (long long j = 0; j < n; ++j) {
      acc = Op::template step<A>(acc, mg::cast<A>(x[j]));
      y[j] = mg::cast<T>(acc);
    }
  }
}
