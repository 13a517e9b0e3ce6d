// Reductions over the middle axis of a contiguous input viewed as (outer, red, inner): sum,
// prod, mean, amax/amin, argmax/argmin (with max/min's values), all/any, the vector norms, and
// the passes of var/std (mean, then squared deviations) and logsumexp (shift, then sum of exps).
// Accumulators follow the CPU reducers (rust/kernels/src/reducers.rs): float sums, norms and
// deviations in double, integer and bool sums and products in wrapping int64, extremes in T.
//
// Determinism: every kernel must be launched with blockDim.x == MG_REDUCE_THREADS (it traps
// otherwise). Each output's partial results are then combined in a fixed tree that depends on
// (red, inner, chunk) only, never on the grid size or on timing, so results are bit-identical
// run to run; `chunk` must itself be a function of the shape (docs/gpu.md gives the rule).
//
// Kernels (instances in cuda_kernels.rs), Op = mg::Sum<T, D>, mg::ArgMax<T>, ...:
//   mg_reduce<Op>(Op::out_t* out, Op::in_t* values, const Op::in_t* in, long long outer,
//                 long long red, long long inner, const double* aux, double p0, double p1)
//       one pass: out[o * inner + j] for each (o, j)
//   mg_reduce_split<Op>(Op::out_t* out, Op::in_t* values, mg::AccSlot* part, unsigned int* tickets,
//                       const Op::in_t* in, long long outer, long long red, long long inner,
//                       long long chunk, const double* aux, double p0, double p1)
//       the split pass in one launch: the reduced axis in chunks of `chunk`; part is (outer,
//       nchunk, inner) slots of 16 bytes, nchunk = ceil(red / chunk); tickets is one counter per
//       output item (outer x ceil(inner / 32) when inner > 1, else outer), zero before the
//       launch and zero again after it; the last block of each item combines its slots in order
//   mg_reduce_warp<Op>(Op::out_t* out, Op::in_t* values, const Op::in_t* in, long long rows,
//                      long long red, const double* aux, double p0, double p1)
//       short rows (inner == 1, red <= 1024): one warp per row, lane l folds elements l, l + 32,
//       ... and a shuffle tree combines the lanes; no block barrier, any whole-warp block size.
//       The order is fixed by red alone, so results are as deterministic as the block kernel's.
// `values` is written by ArgMax/ArgMin only (max(dim)/min(dim)'s values; may be null); `aux`
// holds one double per output for SqDev (its mean) and LseSum (its shift), else may be null.
// Parameters: Mean p0 = number of reduced elements; NormP p0 = p; SqDev p0 = divisor
// max(0, N - correction), p1 != 0 takes the square root (std).
#include "cuda_common.cuh"

namespace mg {

// One partial result of the split pass, whatever the op's accumulator (at most 16 bytes).
struct alignas(16) AccSlot {
  unsigned char bytes[16];
};

template <class T> struct ArgAcc {
  T v;
  long long i;
};

template <class T> struct limits;
template <> struct limits<float> {
  static __device__ __forceinline__ float lowest() { return -inff(); }
  static __device__ __forceinline__ float highest() { return inff(); }
};
template <> struct limits<double> {
  static __device__ __forceinline__ double lowest() { return -inf(); }
  static __device__ __forceinline__ double highest() { return inf(); }
};
template <> struct limits<int> {
  static __device__ __forceinline__ int lowest() { return traits<int>::lowest; }
  static __device__ __forceinline__ int highest() { return traits<int>::highest; }
};
template <> struct limits<long long> {
  static __device__ __forceinline__ long long lowest() { return traits<long long>::lowest; }
  static __device__ __forceinline__ long long highest() { return traits<long long>::highest; }
};
template <> struct limits<bool> {
  static __device__ __forceinline__ bool lowest() { return false; }
  static __device__ __forceinline__ bool highest() { return true; }
};

// True when x should replace best in a max (MAX) or min: NaN wins and then stays.
template <bool MAX, class T> __device__ __forceinline__ bool beats(T x, T best) {
  const bool better = MAX ? (x > best) : (x < best);
  return !is_nan(best) && (is_nan(x) || better);
}

// Widening an element of the result dtype D into its accumulator, and back.
template <class D> __device__ __forceinline__ typename traits<D>::acc widen(D x) {
  return (typename traits<D>::acc)x;
}
template <class D> __device__ __forceinline__ D narrow(typename traits<D>::acc a) {
  if constexpr (same<D, bool>::value) {
    return a != 0;  // a bool "sum" is true when any element is
  } else if constexpr (traits<D>::is_int) {
    return cast<D>(a);  // int64 -> int32 wraps
  } else {
    return (D)a;
  }
}
template <class A> __device__ __forceinline__ A acc_add(A a, A b) {
  if constexpr (same<A, long long>::value) return wrap_add(a, b); else return a + b;
}
template <class A> __device__ __forceinline__ A acc_mul(A a, A b) {
  if constexpr (same<A, long long>::value) return wrap_mul(a, b); else return a * b;
}

// ----- the reduce ops: in_t, out_t, acc_t, init, step, merge, write -----
// step(a, x, r, aux_o, p0): r is x's index along the reduced axis, aux_o this output's aux value.

// sum and prod of T cast to the result dtype D element by element (torch's dtype=).
template <class T, class D, bool PROD> struct SumProd {
  typedef T in_t;
  typedef D out_t;
  typedef typename traits<D>::acc acc_t;
  static __device__ __forceinline__ acc_t init() { return PROD ? (acc_t)1 : (acc_t)0; }
  static __device__ __forceinline__ acc_t merge(acc_t a, acc_t b) { return PROD ? acc_mul(a, b) : acc_add(a, b); }
  static __device__ __forceinline__ acc_t step(acc_t a, T x, long long, double, double) {
    return merge(a, widen<D>(cast<D>(x)));
  }
  static __device__ __forceinline__ void write(D* out, T*, long long o, acc_t a, double, double, double) {
    out[o] = narrow<D>(a);
  }
};
template <class T, class D> struct Sum : SumProd<T, D, false> {};
template <class T, class D> struct Prod : SumProd<T, D, true> {};

// mean into a float dtype D: the double sum of T cast to D, divided by p0 (the element count).
template <class T, class D> struct Mean {
  typedef T in_t;
  typedef D out_t;
  typedef double acc_t;
  static __device__ __forceinline__ double init() { return 0.0; }
  static __device__ __forceinline__ double merge(double a, double b) { return a + b; }
  static __device__ __forceinline__ double step(double a, T x, long long, double, double) {
    return a + (double)cast<D>(x);
  }
  static __device__ __forceinline__ void write(D* out, T*, long long o, double a, double, double p0, double) {
    out[o] = (D)(a / p0);
  }
};

// amax / amin, NaN-propagating; also logsumexp's shift (LseShift).
template <class T, bool MAX> struct Extreme {
  typedef T in_t;
  typedef T out_t;
  typedef T acc_t;
  static __device__ __forceinline__ T init() { return MAX ? limits<T>::lowest() : limits<T>::highest(); }
  static __device__ __forceinline__ T merge(T a, T b) { return beats<MAX>(b, a) ? b : a; }
  static __device__ __forceinline__ T step(T a, T x, long long, double, double) { return merge(a, x); }
  static __device__ __forceinline__ void write(T* out, T*, long long o, T a, double, double, double) { out[o] = a; }
};
template <class T> struct Amax : Extreme<T, true> {};
template <class T> struct Amin : Extreme<T, false> {};

// argmax / argmin and max(dim) / min(dim): the first extreme element, or the first NaN. Partials
// cover interleaved indices, so ties are settled by the smaller index, not by merge order.
// An empty partial holds index LLONG_MAX and never wins a tie.
template <class T, bool MAX> struct ArgExtreme {
  typedef T in_t;
  typedef long long out_t;
  typedef ArgAcc<T> acc_t;
  static __device__ __forceinline__ acc_t init() {
    acc_t a;
    a.v = MAX ? limits<T>::lowest() : limits<T>::highest();
    a.i = traits<long long>::highest;
    return a;
  }
  static __device__ __forceinline__ acc_t merge(acc_t a, acc_t b) {
    if (beats<MAX>(b.v, a.v)) return b;
    if (beats<MAX>(a.v, b.v)) return a;
    return b.i < a.i ? b : a;
  }
  static __device__ __forceinline__ acc_t step(acc_t a, T x, long long r, double, double) {
    acc_t b;
    b.v = x;
    b.i = r;
    return merge(a, b);
  }
  static __device__ __forceinline__ void write(long long* out, T* values, long long o, acc_t a, double, double,
                                               double) {
    out[o] = a.i;
    if (values) values[o] = a.v;
  }
};
template <class T> struct ArgMax : ArgExtreme<T, true> {};
template <class T> struct ArgMin : ArgExtreme<T, false> {};

// all / any: truthiness of every element (NaN is true).
template <class T, bool ALL> struct AllAny {
  typedef T in_t;
  typedef bool out_t;
  typedef bool acc_t;
  static __device__ __forceinline__ bool init() { return ALL; }
  static __device__ __forceinline__ bool merge(bool a, bool b) { return ALL ? (a && b) : (a || b); }
  static __device__ __forceinline__ bool step(bool a, T x, long long, double, double) { return merge(a, cast<bool>(x)); }
  static __device__ __forceinline__ void write(bool* out, T*, long long o, bool a, double, double, double) { out[o] = a; }
};
template <class T> struct All : AllAny<T, true> {};
template <class T> struct Any : AllAny<T, false> {};

// Vector norms of float T into float D, accumulated in double (linalg.vector_norm's orders).
enum NormKind { kNorm2, kNorm1, kNormInf, kNormNegInf, kNorm0, kNormP };
template <class T, class D, int K> struct Norm {
  typedef T in_t;
  typedef D out_t;
  typedef double acc_t;
  static __device__ __forceinline__ double init() { return K == kNormNegInf ? inf() : 0.0; }
  static __device__ __forceinline__ double merge(double a, double b) {
    if (K == kNormInf) return beats<true>(b, a) ? b : a;
    if (K == kNormNegInf) return beats<false>(b, a) ? b : a;
    return a + b;
  }
  static __device__ __forceinline__ double step(double acc, T x, long long, double, double p) {
    const double a = fabs((double)x);
    switch (K) {
      case kNorm2: return acc + a * a;
      case kNorm1: return acc + a;
      case kNorm0: return acc + (a != 0.0 ? 1.0 : 0.0);
      case kNormP: return acc + pow(a, p);
      default: return merge(acc, a);
    }
  }
  static __device__ __forceinline__ void write(D* out, T*, long long o, double a, double, double p, double) {
    out[o] = (D)(K == kNorm2 ? sqrt(a) : K == kNormP ? pow(a, 1.0 / p) : a);
  }
};
template <class T, class D> struct Norm2 : Norm<T, D, kNorm2> {};
template <class T, class D> struct Norm1 : Norm<T, D, kNorm1> {};
template <class T, class D> struct NormInf : Norm<T, D, kNormInf> {};
template <class T, class D> struct NormNegInf : Norm<T, D, kNormNegInf> {};
template <class T, class D> struct Norm0 : Norm<T, D, kNorm0> {};
template <class T, class D> struct NormP : Norm<T, D, kNormP> {};

// var/std's second pass: squared deviations from aux (the output's mean, from Mean<T, double>),
// divided by p0 = max(0, N - correction); p1 != 0 takes the square root.
template <class T> struct SqDev {
  typedef T in_t;
  typedef T out_t;
  typedef double acc_t;
  static __device__ __forceinline__ double init() { return 0.0; }
  static __device__ __forceinline__ double merge(double a, double b) { return a + b; }
  static __device__ __forceinline__ double step(double a, T x, long long, double mean, double) {
    const double d = (double)x - mean;
    return a + d * d;
  }
  static __device__ __forceinline__ void write(T* out, T*, long long o, double a, double, double p0, double p1) {
    const double v = a / p0;
    out[o] = (T)(p1 != 0.0 ? sqrt(v) : v);
  }
};

// logsumexp's passes: the shift is each output's max as a double, 0 where it is infinite (torch
// masks those); then log(sum(exp(x - shift))) + shift.
template <class T> struct LseShift : Extreme<T, true> {
  typedef double out_t;
  static __device__ __forceinline__ void write(double* out, T*, long long o, T a, double, double, double) {
    const double m = (double)a;
    out[o] = (m == inf() || m == -inf()) ? 0.0 : m;
  }
};
template <class T> struct LseSum {
  typedef T in_t;
  typedef T out_t;
  typedef double acc_t;
  static __device__ __forceinline__ double init() { return 0.0; }
  static __device__ __forceinline__ double merge(double a, double b) { return a + b; }
  static __device__ __forceinline__ double step(double a, T x, long long, double shift, double) {
    return a + exp((double)x - shift);
  }
  static __device__ __forceinline__ void write(T* out, T*, long long o, double a, double shift, double, double) {
    out[o] = (T)(log(a) + shift);
  }
};

// An argmax partial crosses lanes member by member (found by ADL from warp_reduce).
template <class T> __device__ __forceinline__ ArgAcc<T> shfl_down(ArgAcc<T> a, int d) {
  ArgAcc<T> r;
  r.v = shfl_down(a.v, d);
  r.i = shfl_down(a.i, d);
  return r;
}

// Folds the elements at reduced indices r, r + step, ... < hi (element index idx, idx + idx_step,
// ...) into a, in that order, with eight loads in flight (the same result as one at a time). A
// block of 256 threads then has 8 KB of loads outstanding: with four, sum of 1e7 floats took ten
// memory round trips per block and ran at 1.2-1.5x torch's time on an H100 (2026-11-27).
template <class A, class Fetch, class Fold>
__device__ __forceinline__ A fold_range(A a, long long r, long long hi, long long step, long long idx,
                                        long long idx_step, double aux_o, Fetch fetch, Fold fold) {
  constexpr int AHEAD = 8;
  for (; r + (AHEAD - 1) * step < hi; r += AHEAD * step, idx += AHEAD * idx_step) {
    decltype(fetch(idx)) v[AHEAD];
#pragma unroll
    for (int u = 0; u < AHEAD; ++u) v[u] = fetch(idx + u * idx_step);
#pragma unroll
    for (int u = 0; u < AHEAD; ++u) a = fold(a, v[u], r + u * step, aux_o);
  }
  for (; r < hi; r += step, idx += idx_step) a = fold(a, fetch(idx), r, aux_o);
  return a;
}

// One work item: output row o (inner == 1) or the 32-column tile `tile` of row o (inner > 1),
// over reduced indices [lo, hi). The block's threads all call it (it has barriers).
//  - inner == 1 (rows): the block's 256 threads stride along [lo, hi), then block_reduce.
//  - inner > 1 (columns): 32 adjacent columns x 8 row lanes, so a warp reads 32 consecutive
//    elements; the 8 lanes of a column are combined in order through shared memory.
// fetch(idx) reads element idx; fold(a, v, r, aux_o) folds it in (r: its reduced index); emit(o', a)
// gets the result of output o' (o, or o * inner + j).
template <class Op, class A, class Fetch, class Fold, class Emit>
__device__ __forceinline__ void reduce_item(long long o, long long tile, long long red, long long inner, long long lo,
                                            long long hi, const double* aux, Fetch fetch, Fold fold, Emit emit) {
  const int tid = threadIdx.x;
  if (inner == 1) {
    const double aux_o = aux ? aux[o] : 0.0;
    A a = Op::init();
    a = fold_range(a, lo + tid, hi, MG_REDUCE_THREADS, o * red + lo + tid, MG_REDUCE_THREADS, aux_o, fetch, fold);
    a = block_reduce<Op>(a);
    if (tid == 0) emit(o, a);
    return;
  }
  __shared__ A cols[MG_REDUCE_THREADS / 32][32];
  const int tx = tid & 31, ty = tid >> 5;
  const long long j = tile * 32 + tx;
  A a = Op::init();
  if (j < inner) {
    const double aux_o = aux ? aux[o * inner + j] : 0.0;
    const int step = MG_REDUCE_THREADS / 32;
    a = fold_range(a, lo + ty, hi, step, (o * red + lo + ty) * inner + j, step * inner, aux_o, fetch, fold);
  }
  cols[ty][tx] = a;
  __syncthreads();
  if (ty == 0 && j < inner) {
#pragma unroll
    for (int k = 1; k < MG_REDUCE_THREADS / 32; ++k) a = Op::merge(a, cols[k][tx]);
    emit(o * inner + j, a);
  }
  __syncthreads();
}

// The work items of an (outer, red, inner) reduction cut in chunks of `chunk` (0: none):
// (outer index, chunk, column tile), numbered so that a grid-stride loop over them gives every
// block the same sequence of barriers. Returns the count; `item` decodes one.
struct Items {
  long long nchunk, span, tiles;
  __device__ __forceinline__ Items(long long red, long long inner, long long chunk) {
    nchunk = chunk > 0 && red > chunk ? (red + chunk - 1) / chunk : 1;
    span = nchunk == 1 ? red : chunk;
    tiles = inner == 1 ? 1 : (inner + 31) / 32;
  }
  __device__ __forceinline__ void item(long long w, long long& o, long long& c, long long& tile) const {
    tile = w % tiles;
    const long long oc = w / tiles;
    o = oc / nchunk;
    c = oc - o * nchunk;
  }
};

// The loop of the one-pass kernels: work items in a grid-stride loop, each reduce_item'd.
// emit(o', c, a) gets output o''s result for chunk c.
template <class Op, class A, class Fetch, class Fold, class Emit>
__device__ __forceinline__ void reduce_loop(long long outer, long long red, long long inner, long long chunk,
                                            const double* aux, Fetch fetch, Fold fold, Emit emit) {
  if (blockDim.x != MG_REDUCE_THREADS) __trap();
  const Items it(red, inner, chunk);
  const long long items = outer * it.nchunk * it.tiles;
  for (long long w = blockIdx.x; w < items; w += gridDim.x) {
    long long o, c, tile;
    it.item(w, o, c, tile);
    const long long lo = c * it.span, hi = lo + it.span < red ? lo + it.span : red;
    reduce_item<Op, A>(o, tile, red, inner, lo, hi, aux, fetch, fold, [&](long long oo, A a) { emit(oo, c, a); });
  }
}

template <class A> __device__ __forceinline__ void store_slot(AccSlot* p, A a) {
  static_assert(sizeof(A) <= sizeof(AccSlot), "an accumulator fits a 16-byte slot");
  *reinterpret_cast<A*>(p) = a;
}
template <class A> __device__ __forceinline__ A load_slot(const AccSlot* p) { return *reinterpret_cast<const A*>(p); }
// A slot another block wrote during this launch: read through volatile (from L2, never a stale
// L1 line), as two 8-byte words.
template <class A> __device__ __forceinline__ A load_slot_fresh(const AccSlot* p) {
  const volatile long long* q = reinterpret_cast<const volatile long long*>(p);
  union {
    long long w[2];
    A a;
  } u;
  u.w[0] = q[0];
  u.w[1] = q[1];
  return u.a;
}

}  // namespace mg

template <class Op>
__global__ void mg_reduce(typename Op::out_t* out, typename Op::in_t* values, const typename Op::in_t* in,
                          long long outer, long long red, long long inner, const double* aux, double p0, double p1) {
  typedef typename Op::acc_t A;
  mg::reduce_loop<Op, A>(
      outer, red, inner, 0, aux, [&](long long idx) { return in[idx]; },
      [&](A a, typename Op::in_t x, long long r, double aux_o) { return Op::step(a, x, r, aux_o, p0); },
      [&](long long o, long long, A a) { Op::write(out, values, o, a, aux ? aux[o] : 0.0, p0, p1); });
}

// The split pass in one launch. Work item (o, c, tile) reduces chunk c of its outputs into the
// slots part[(o * nchunk + c) * inner + j]; then the block draws a ticket of its output item
// (o, tile) (atomicInc wraps the counter back to 0 after the last ticket, so the counters are
// zero again when the kernel ends). The block that draws the last one combines the item's
// nchunk slots in slot order, with the very tree of a one-pass reduction over nchunk elements,
// and writes the result. The ticket decides only WHICH block combines, never the order, so the
// result does not depend on timing or on the grid. Nothing waits for another block.
template <class Op>
__global__ void mg_reduce_split(typename Op::out_t* out, typename Op::in_t* values, mg::AccSlot* part,
                                unsigned int* tickets, const typename Op::in_t* in, long long outer, long long red,
                                long long inner, long long chunk, const double* aux, double p0, double p1) {
  typedef typename Op::acc_t A;
  if (blockDim.x != MG_REDUCE_THREADS) __trap();
  const mg::Items it(red, inner, chunk);
  const long long nchunk = it.nchunk, items = outer * nchunk * it.tiles;
  __shared__ bool last;
  for (long long w = blockIdx.x; w < items; w += gridDim.x) {
    long long o, c, tile;
    it.item(w, o, c, tile);
    const long long lo = c * it.span, hi = lo + it.span < red ? lo + it.span : red;
    mg::reduce_item<Op, A>(
        o, tile, red, inner, lo, hi, aux, [&](long long idx) { return in[idx]; },
        [&](A a, typename Op::in_t x, long long r, double aux_o) { return Op::step(a, x, r, aux_o, p0); },
        [&](long long oo, A a) {
          const long long j = oo - (oo / inner) * inner;
          mg::store_slot(part + (o * nchunk + c) * inner + j, a);
        });
    __threadfence();  // this block's slots are visible device-wide before its ticket is drawn
    __syncthreads();
    if (threadIdx.x == 0) last = atomicInc(tickets + o * it.tiles + tile, (unsigned int)(nchunk - 1)) == nchunk - 1;
    __syncthreads();
    if (last) {  // the same for every thread of the block
      __threadfence();
      mg::reduce_item<Op, A>(
          o, tile, nchunk, inner, 0, nchunk, nullptr, [&](long long idx) { return mg::load_slot_fresh<A>(part + idx); },
          [&](A a, A b, long long, double) { return Op::merge(a, b); },
          [&](long long oo, A a) { Op::write(out, values, oo, a, aux ? aux[oo] : 0.0, p0, p1); });
    }
    __syncthreads();  // `last` is read by every thread before the next item sets it
  }
}

template <class Op>
__global__ void mg_reduce_warp(typename Op::out_t* out, typename Op::in_t* values, const typename Op::in_t* in,
                               long long rows, long long red, const double* aux, double p0, double p1) {
  typedef typename Op::acc_t A;
  const int lane = threadIdx.x & 31;
  const long long per_block = blockDim.x >> 5, warps = (long long)gridDim.x * per_block;
  // `row` depends on the warp only, so its 32 lanes run the same iterations and shuffles.
  for (long long row = blockIdx.x * per_block + (threadIdx.x >> 5); row < rows; row += warps) {
    const double aux_o = aux ? aux[row] : 0.0;
    A a = mg::fold_range(
        Op::init(), (long long)lane, red, 32, row * red + lane, 32, aux_o, [&](long long idx) { return in[idx]; },
        [&](A acc, typename Op::in_t x, long long r, double ax) { return Op::step(acc, x, r, ax, p0); });
    a = mg::warp_reduce<Op>(a, 16);
    if (lane == 0) Op::write(out, values, row, a, aux_o, p0, p1);
  }
}
