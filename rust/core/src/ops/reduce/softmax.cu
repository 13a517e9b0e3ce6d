// softmax / log_softmax along the middle axis of a contiguous (outer, n, inner) tensor, fused (one
// kernel reads each slice for its max, its sum and the output), and their backward formulas
// (softmax.rs), in the CPU kernel's arithmetic (rust/kernels/src/softmax.rs): the max in T
// (NaN-propagating: a NaN makes its whole slice NaN), exp(x - max) in T, sums in double.
//
// Kernels (instances in cuda_kernels.rs), LOG = false (softmax) or true (log_softmax):
//   mg_softmax<T, LOG>(T* out, const T* in, long long outer, long long n, long long inner)
//       softmax:     out = T(double(exp(x - max)) * (1 / sum))
//       log_softmax: out = T((double(x) - double(max)) - log(sum))   (torch's order: the sign of a 0)
//   mg_softmax_backward<T, LOG>(T* gi, const T* g, const T* r, long long outer, long long n,
//                               long long inner)   r is the forward's result
//       softmax:     gi = r * (g - T(sum(g * r)))
//       log_softmax: gi = g - exp(r) * T(sum(g))
// blockDim.x must be MG_REDUCE_THREADS (fixed combination order, cuda_common.cuh). A block
// takes slices in a grid-stride loop: whole rows when inner == 1, else tiles of 32 adjacent
// columns with 8 row lanes each (a warp reads 32 consecutive elements).
//
// Short rows (inner == 1, n <= 32 * PER) take the warp-per-row kernels instead:
//   mg_softmax_warp<T, LOG, PER>(T* out, const T* in, long long rows, long long n)
//   mg_softmax_warp_backward<T, LOG, PER>(T* gi, const T* g, const T* r, long long rows, long long n)
// One warp holds a row in registers (PER elements per lane), so the row is read from memory
// once and exp is computed once, with no block barrier: a block-wide row costs three passes and
// two __syncthreads per row, which is what made softmax twice torch's time on an H100. Same
// arithmetic as above; the combination order is fixed by n alone (lane l sums elements l, l + 32,
// ...; then a shuffle tree to lane 0, which broadcasts), so results do not depend on the grid.
// Any blockDim.x that is a multiple of 32 works (the backend uses 128: four rows per block).
#include "cuda_common.cuh"

namespace mg {

template <class T> struct MaxNan {
  static __device__ __forceinline__ T init() { return -inf(); }
  static __device__ __forceinline__ T merge(T a, T b) { return (is_nan(a) || is_nan(b)) ? a + b : (b > a ? b : a); }
};
// fmax for the warp kernel's per-lane max (why there, and why it changes no output: its comment).
__device__ __forceinline__ float lane_max(float a, float b) { return fmaxf(a, b); }
__device__ __forceinline__ double lane_max(double a, double b) { return fmax(a, b); }
struct SumD {
  static __device__ __forceinline__ double init() { return 0.0; }
  static __device__ __forceinline__ double merge(double a, double b) { return a + b; }
};

// Every slice runs the same three steps: fold1 over the slice, then fold2 (which sees fold1's
// result), then out(idx, r1, r2) for each element. Row mode combines through block_reduce, column
// mode through shared memory, each in a fixed order; both broadcast the results to all threads.
template <class Op1, class A1, class Op2, class A2, class F1, class F2, class Out>
__device__ __forceinline__ void slice_loop(long long outer, long long n, long long inner, F1 fold1, F2 fold2,
                                           Out out) {
  if (blockDim.x != MG_REDUCE_THREADS) __trap();
  const int tid = threadIdx.x;
  if (inner == 1) {
    __shared__ A1 b1;
    __shared__ A2 b2;
    for (long long o = blockIdx.x; o < outer; o += gridDim.x) {
      const long long base = o * n;
      A1 r1 = Op1::init();
      for (long long k = tid; k < n; k += MG_REDUCE_THREADS) r1 = fold1(r1, base + k);
      r1 = block_reduce<Op1>(r1);
      if (tid == 0) b1 = r1;
      __syncthreads();
      r1 = b1;
      A2 r2 = Op2::init();
      for (long long k = tid; k < n; k += MG_REDUCE_THREADS) r2 = fold2(r2, base + k, r1);
      r2 = block_reduce<Op2>(r2);
      if (tid == 0) b2 = r2;
      __syncthreads();
      r2 = b2;
      for (long long k = tid; k < n; k += MG_REDUCE_THREADS) out(base + k, r1, r2);
      __syncthreads();  // b1/b2 are rewritten by the next slice
    }
    return;
  }
  constexpr int LANES = MG_REDUCE_THREADS / 32;
  __shared__ A1 c1[LANES][32];
  __shared__ A2 c2[LANES][32];
  const int tx = tid & 31, ty = tid >> 5;
  const long long tiles = (inner + 31) / 32;
  for (long long w = blockIdx.x; w < outer * tiles; w += gridDim.x) {
    const long long o = w / tiles, j = (w - o * tiles) * 32 + tx;
    const bool live = j < inner;
    const long long base = o * n * inner + j;
    A1 r1 = Op1::init();
    if (live)
      for (long long k = ty; k < n; k += LANES) r1 = fold1(r1, base + k * inner);
    c1[ty][tx] = r1;
    __syncthreads();
    r1 = c1[0][tx];
#pragma unroll
    for (int l = 1; l < LANES; ++l) r1 = Op1::merge(r1, c1[l][tx]);
    A2 r2 = Op2::init();
    if (live)
      for (long long k = ty; k < n; k += LANES) r2 = fold2(r2, base + k * inner, r1);
    c2[ty][tx] = r2;
    __syncthreads();
    r2 = c2[0][tx];
#pragma unroll
    for (int l = 1; l < LANES; ++l) r2 = Op2::merge(r2, c2[l][tx]);
    if (live)
      for (long long k = ty; k < n; k += LANES) out(base + k * inner, r1, r2);
    __syncthreads();  // c1/c2 are rewritten by the next tile
  }
}

}  // namespace mg

template <class T, bool LOG>
__global__ void mg_softmax(T* out, const T* in, long long outer, long long n, long long inner) {
  mg::slice_loop<mg::MaxNan<T>, T, mg::SumD, double>(
      outer, n, inner, [&](T m, long long i) { return mg::MaxNan<T>::merge(m, in[i]); },
      [&](double s, long long i, T m) { return s + (double)mg::m_exp(in[i] - m); },
      [&](long long i, T m, double s) {
        if (LOG) {
          out[i] = (T)(((double)in[i] - (double)m) - log(s));
        } else {
          out[i] = (T)((double)mg::m_exp(in[i] - m) * (1.0 / s));
        }
      });
}

namespace mg {

// Lane 0's value, on every lane of the warp.
template <class A> __device__ __forceinline__ A warp_broadcast(A a) { return __shfl_sync(0xffffffffu, a, 0); }

// The warp's combined value (a shuffle tree to lane 0, then a broadcast), on every lane.
template <class Op, class A> __device__ __forceinline__ A warp_all(A a) { return warp_broadcast(warp_reduce<Op>(a, 16)); }

}  // namespace mg

template <class T, bool LOG, int PER>
__global__ void mg_softmax_warp(T* out, const T* in, long long rows, long long n) {
  const int lane = threadIdx.x & 31;
  const long long per_block = blockDim.x >> 5, warps = (long long)gridDim.x * per_block;
  // `row` depends on the warp only, so all 32 lanes run the same iterations and shuffles.
  for (long long row = blockIdx.x * per_block + (threadIdx.x >> 5); row < rows; row += warps) {
    const T* x = in + row * n;
    T* y = out + row * n;
    T v[PER];
    // A lane's max with fmax, not MaxNan's merge: on an H100 the merge's per-element chain made
    // softmax of 10000x1000 take 70.6 us against torch's 31.5; this loop took 31.4 (the run-3
    // experiment of docs/gpu.md, 2026-11-27). fmax skips NaN, which changes no output: a NaN in
    // the row makes exp(NaN - m) and so the row's sum NaN, and every output of the row is NaN
    // either way (and +inf with NaN gives exp(inf - inf) = NaN likewise). For other rows fmax and
    // the merge return the same value (at most the sign of a zero max differs, and x - m with
    // either zero gives the same exp, and the same log_softmax: two zeros make the sum >= 2).
    T m = mg::MaxNan<T>::init();
#pragma unroll
    for (int j = 0; j < PER; ++j) {
      const long long k = (long long)j * 32 + lane;
      v[j] = k < n ? x[k] : mg::MaxNan<T>::init();
      m = mg::lane_max(m, v[j]);
    }
    m = mg::warp_all<mg::MaxNan<T>>(m);
    double s = 0.0;
#pragma unroll
    for (int j = 0; j < PER; ++j) {
      if ((long long)j * 32 + lane < n) {
        const T e = mg::m_exp(v[j] - m);
        s += (double)e;
        if (!LOG) v[j] = e;  // softmax writes exp(x - max) scaled; log_softmax needs x
      }
    }
    s = mg::warp_all<mg::SumD>(s);
    const double inv = 1.0 / s, ls = LOG ? log(s) : 0.0;
#pragma unroll
    for (int j = 0; j < PER; ++j) {
      const long long k = (long long)j * 32 + lane;
      if (k < n) y[k] = LOG ? (T)(((double)v[j] - (double)m) - ls) : (T)((double)v[j] * inv);
    }
  }
}

template <class T, bool LOG, int PER>
__global__ void mg_softmax_warp_backward(T* gi, const T* g, const T* r, long long rows, long long n) {
  const int lane = threadIdx.x & 31;
  const long long per_block = blockDim.x >> 5, warps = (long long)gridDim.x * per_block;
  for (long long row = blockIdx.x * per_block + (threadIdx.x >> 5); row < rows; row += warps) {
    const long long base = row * n;
    T gv[PER], rv[PER];
    double s = 0.0;
#pragma unroll
    for (int j = 0; j < PER; ++j) {
      const long long k = (long long)j * 32 + lane;
      gv[j] = k < n ? g[base + k] : (T)0;
      rv[j] = k < n ? r[base + k] : (T)0;
      if (k < n) s += (double)(LOG ? gv[j] : gv[j] * rv[j]);
    }
    const T st = (T)mg::warp_all<mg::SumD>(s);
#pragma unroll
    for (int j = 0; j < PER; ++j) {
      const long long k = (long long)j * 32 + lane;
      if (k < n) gi[base + k] = LOG ? gv[j] - mg::m_exp(rv[j]) * st : rv[j] * (gv[j] - st);
    }
  }
}

// The backward needs one sum per slice: the first fold is a placeholder that reads nothing.
template <class T, bool LOG>
__global__ void mg_softmax_backward(T* gi, const T* g, const T* r, long long outer, long long n, long long inner) {
  mg::slice_loop<mg::SumD, double, mg::SumD, double>(
      outer, n, inner, [&](double a, long long) { return a; },
      [&](double s, long long i, double) { return s + (double)(LOG ? g[i] : g[i] * r[i]); },
      [&](long long i, double, double s) {
        const T st = (T)s;
        if (LOG) {
          gi[i] = g[i] - mg::m_exp(r[i]) * st;
        } else {
          gi[i] = r[i] * (g[i] - st);
        }
      });
}
