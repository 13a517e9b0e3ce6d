// Binary elementwise ops (BinaryOp in mod.rs, per-element rules in compute.rs), `where`,
// `clamp` with number or tensor bounds, and `masked_fill`. Operands arrive already cast to the
// compute type T by the op layer; comparisons and logical ops write bool.
//
// Kernels (instances in cuda_kernels.rs):
//   mg_binary<O, T, Op>(O* out, MgStrides os, const T* a, MgStrides as, const T* b, MgStrides bs,
//                       MgShape shape, long long n, double p0)
//   mg_binary_contig<O, T, Op>(O* out, const T* a, const T* b, long long n, double p0)
//   mg_binary_scalar<O, T, Op>(O* out, MgStrides os, const T* x, MgStrides xs, T s, MgShape shape,
//                              long long n, int scalar_first, double p0)
//   mg_binary_scalar_contig<O, T, Op>(O* out, const T* x, T s, long long n, int scalar_first, double p0)
//       op(x, s), or op(s, x) when scalar_first (`1 - x`, `2 ** x`): a Python number by value
//   mg_where<T>(T* out, MgStrides os, const bool* c, MgStrides cs, const T* a, MgStrides as,
//               const T* b, MgStrides bs, MgShape shape, long long n)
//   mg_where_contig<T>(T* out, const bool* c, const T* a, const T* b, long long n)
//   mg_clamp_scalar<T>(T* out, MgStrides os, const T* x, MgStrides xs, MgShape shape, long long n,
//                      T lo, T hi, int has)              has: bit 0 = lo given, bit 1 = hi given
//   mg_clamp_scalar_contig<T>(T* out, const T* x, long long n, T lo, T hi, int has)
//   mg_clamp<T>(T* out, MgStrides os, const T* x, MgStrides xs, const T* lo, MgStrides ls,
//               const T* hi, MgStrides hs, MgShape shape, long long n, int has)  (absent bound: any pointer)
//   mg_clamp_contig<T>(T* out, const T* x, const T* lo, const T* hi, long long n, int has)
//   mg_masked_fill<T>(T* dst, MgStrides ds, const bool* mask, MgStrides ms, MgShape shape,
//                     long long n, T value)
//   mg_masked_fill_contig<T>(T* dst, const bool* mask, long long n, T value)
// In place, `out` is `a` (or `x`); masked_fill writes only where the mask is true, so an
// expanded destination (aliased elements, which torch allows here) is never raced.
#include "cuda_common.cuh"

namespace mg {

#define MG_BINARY(NAME, ...)                                                      \
  struct NAME {                                                                   \
    template <class O, class T>                                                   \
    static __device__ __forceinline__ O apply(T a, T b, double p0) { __VA_ARGS__ } \
  };

// bool: add and maximum are `or`, mul and minimum are `and` (compute.rs bool_fn).
MG_BINARY(Add, if constexpr (traits<T>::is_int) { return wrap_add(a, b); }
               else if constexpr (same<T, bool>::value) { return a | b; } else { return a + b; })
MG_BINARY(Sub, if constexpr (traits<T>::is_int) { return wrap_sub(a, b); } else { return a - b; })
MG_BINARY(Mul, if constexpr (traits<T>::is_int) { return wrap_mul(a, b); }
               else if constexpr (same<T, bool>::value) { return a & b; } else { return a * b; })
// Float add/sub with alpha (p0; sub passes -alpha): `a + alpha * b` with one rounding, a fused
// multiply-add, as torch's kernels compute it. (minigrad's CPU kernel goes through double for
// float32, which rounds twice in rare halfway cases; compute.rs says so.)
MG_BINARY(AddAlpha, if constexpr (same<T, float>::value) { return fmaf(b, (float)p0, a); } else { return fma(b, p0, a); })
MG_BINARY(Div, return a / b;)

// Python's floor division on floats, as torch's div_floor computes it.
template <class T> __device__ __forceinline__ T float_floor_div(T a, T b) {
  if (b == (T)0) return a / b;
  const T m = m_fmod(a, b);
  T div = (a - m) / b;
  if (m != (T)0 && ((b < (T)0) != (m < (T)0))) div -= (T)1;
  if (div != (T)0) {
    const T f = m_floor(div);
    return div - f > (T)0.5 ? f + (T)1 : f;
  }
  return m_copysign((T)0, a / b);
}
// Integer division by zero is refused by the op layer; 0 keeps the kernel defined anyway.
// x / -1 is negation, which wraps for the minimum (C++'s MIN / -1 and MIN % -1 trap).
template <class T> __device__ __forceinline__ T int_floor_div(T a, T b) {
  if (b == 0) return 0;
  if (b == -1) return wrap_neg(a);
  const T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <class T> __device__ __forceinline__ T int_py_rem(T a, T b) {
  if (b == 0 || b == -1) return 0;
  const T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
// Integer powers wrap; a negative exponent gives 0 except for bases 1 and -1.
template <class T> __device__ __forceinline__ T int_pow(T base, T e) {
  if (e < 0) return base == 1 ? (T)1 : base == -1 ? ((e % 2 == 0) ? (T)1 : (T)-1) : (T)0;
  T r = 1;
  while (e > 0) {
    if (e & 1) r = wrap_mul(r, base);
    base = wrap_mul(base, base);
    e >>= 1;
  }
  return r;
}

// bool floor/trunc division and remainder are refused by the op layer (no bool instances).
MG_BINARY(DivFloor, if constexpr (traits<T>::is_int) { return int_floor_div(a, b); } else { return float_floor_div(a, b); })
MG_BINARY(DivTrunc, if constexpr (traits<T>::is_int) { return (b == 0) ? (T)0 : (b == -1) ? wrap_neg(a) : (T)(a / b); }
                    else { return m_trunc(a / b); })
MG_BINARY(Remainder, if constexpr (traits<T>::is_int) { return int_py_rem(a, b); } else {
                       const T m = m_fmod(a, b);
                       return (m != (T)0 && ((m < (T)0) != (b < (T)0))) ? m + b : m; })
// bool: `b ** True` is b, `b ** False` is True.
MG_BINARY(Pow, if constexpr (traits<T>::is_int) { return int_pow(a, b); }
               else if constexpr (same<T, bool>::value) { return a | !b; } else { return m_pow(a, b); })
// NaN propagates. Equal operands (0.0 and -0.0) give b, as minigrad's CPU kernel and torch's
// vectorised loop do (torch's scalar loop gives a: the sign of such a zero is not specified).
MG_BINARY(Maximum, if constexpr (same<T, bool>::value) { return a | b; } else {
                     if (is_nan(a) || is_nan(b)) return a + b;
                     return a > b ? a : b; })
MG_BINARY(Minimum, if constexpr (same<T, bool>::value) { return a & b; } else {
                     if (is_nan(a) || is_nan(b)) return a + b;
                     return a < b ? a : b; })
// Float-only ops (integer operands are promoted or refused by the op layer); compute.rs holds
// the same per-element rules for the CPU.
MG_BINARY(Atan2, return m_atan2(a, b);)
MG_BINARY(Hypot, return m_hypot(a, b);)
// C's fmod (the dividend's sign); integer division by zero is refused by the op layer
MG_BINARY(Fmod, if constexpr (traits<T>::is_int) { return (b == 0 || b == -1) ? (T)0 : (T)(a % b); }
                else { return m_fmod(a, b); })
MG_BINARY(Copysign, return m_copysign(a, b);)
// torch's xlogy: NaN where y is NaN, 0 where x is 0 (even for y <= 0), else x * log(y)
MG_BINARY(Xlogy, if (is_nan(b)) return b;
                 if (a == (T)0) return (T)0;
                 return a * m_log(b);)
// log(e^a + e^b) (log2(2^a + 2^b)) as torch writes it: the larger operand plus log1p of the
// smaller's share; equal infinities (equal operands whose difference is NaN) give themselves.
// `a < b ? b : a` is std::max.
template <class T> __device__ __forceinline__ T logaddexp_any(T a, T b, bool base2) {
  if (a == b && is_nan(a - b)) return a;
  const T m = a < b ? b : a;
  const T d = -m_fabs(a - b);
  return base2 ? m + m_log1p(m_exp2(d)) * (T)1.4426950408889634 : m + m_log1p(m_exp(d));
}
MG_BINARY(Logaddexp, return logaddexp_any(a, b, false);)
MG_BINARY(Logaddexp2, return logaddexp_any(a, b, true);)
MG_BINARY(BitAnd, return a & b;)
MG_BINARY(BitOr, return a | b;)
MG_BINARY(BitXor, return a ^ b;)
MG_BINARY(Eq, return a == b;)
MG_BINARY(Ne, return a != b;)
MG_BINARY(Lt, return a < b;)
MG_BINARY(Le, return a <= b;)
MG_BINARY(Gt, return a > b;)
MG_BINARY(Ge, return a >= b;)
MG_BINARY(LogicalAnd, return cast<bool>(a) && cast<bool>(b);)
MG_BINARY(LogicalOr, return cast<bool>(a) || cast<bool>(b);)
MG_BINARY(LogicalXor, return cast<bool>(a) != cast<bool>(b);)
#undef MG_BINARY

// torch's clamp: a NaN input or bound gives NaN; else raise to lo, then lower to hi (so lo > hi
// gives hi). `x != x` is false for integers and bool.
template <class T> __device__ __forceinline__ T clamp3(T x, bool has_lo, T lo, bool has_hi, T hi) {
  if (is_nan(x)) return x;
  T v = x;
  if (has_lo) {
    if (is_nan(lo)) return lo;
    if (v < lo) v = lo;
  }
  if (has_hi) {
    if (is_nan(hi)) return hi;
    if (v > hi) v = hi;
  }
  return v;
}

}  // namespace mg

// ----- binary ops -----

template <class O, class T, class Op>
__global__ void mg_binary(O* out, MgStrides os, const T* a, MgStrides as, const T* b, MgStrides bs, MgShape shape,
                          long long n, double p0) {
  const MgStrides* const s[3] = {&os, &as, &bs};
  mg::for_each_strided<3>(n, shape, s, [&](const long long (&off)[3]) {
    out[off[0]] = Op::template apply<O, T>(a[off[1]], b[off[2]], p0);
  });
}

template <class O, class T, class Op>
__global__ void mg_binary_contig(O* out, const T* a, const T* b, long long n, double p0) {
  constexpr int N = 16 / mg::max_size<O, T>::value;
  typedef mg::Vec<T, N> VT;
  typedef mg::Vec<O, N> VO;
  const bool vec_ok = mg::aligned<N>(out) && mg::aligned<N>(a) && mg::aligned<N>(b);
  mg::for_each_contig<N>(
      n, vec_ok,
      [&](long long v) {
        const VT x = reinterpret_cast<const VT*>(a)[v];
        const VT y = reinterpret_cast<const VT*>(b)[v];
        VO r;
#pragma unroll
        for (int k = 0; k < N; ++k) r.v[k] = Op::template apply<O, T>(x.v[k], y.v[k], p0);
        reinterpret_cast<VO*>(out)[v] = r;
      },
      [&](long long i) { out[i] = Op::template apply<O, T>(a[i], b[i], p0); });
}

template <class O, class T, class Op>
__global__ void mg_binary_scalar(O* out, MgStrides os, const T* x, MgStrides xs, T s, MgShape shape, long long n,
                                 int scalar_first, double p0) {
  const MgStrides* const st[2] = {&os, &xs};
  mg::for_each_strided<2>(n, shape, st, [&](const long long (&off)[2]) {
    const T v = x[off[1]];
    out[off[0]] = scalar_first ? Op::template apply<O, T>(s, v, p0) : Op::template apply<O, T>(v, s, p0);
  });
}

template <class O, class T, class Op>
__global__ void mg_binary_scalar_contig(O* out, const T* x, T s, long long n, int scalar_first, double p0) {
  constexpr int N = 16 / mg::max_size<O, T>::value;
  typedef mg::Vec<T, N> VT;
  typedef mg::Vec<O, N> VO;
  const bool vec_ok = mg::aligned<N>(out) && mg::aligned<N>(x);
  auto f = [&](T v) { return scalar_first ? Op::template apply<O, T>(s, v, p0) : Op::template apply<O, T>(v, s, p0); };
  mg::for_each_contig<N>(
      n, vec_ok,
      [&](long long v) {
        const VT a = reinterpret_cast<const VT*>(x)[v];
        VO r;
#pragma unroll
        for (int k = 0; k < N; ++k) r.v[k] = f(a.v[k]);
        reinterpret_cast<VO*>(out)[v] = r;
      },
      [&](long long i) { out[i] = f(x[i]); });
}

// ----- where -----

template <class T>
__global__ void mg_where(T* out, MgStrides os, const bool* c, MgStrides cs, const T* a, MgStrides as, const T* b,
                         MgStrides bs, MgShape shape, long long n) {
  const MgStrides* const s[4] = {&os, &cs, &as, &bs};
  mg::for_each_strided<4>(n, shape, s, [&](const long long (&off)[4]) {
    out[off[0]] = c[off[1]] ? a[off[2]] : b[off[3]];
  });
}

template <class T>
__global__ void mg_where_contig(T* out, const bool* c, const T* a, const T* b, long long n) {
  for (long long i = mg::thread_start(); i < n; i += mg::thread_step()) out[i] = c[i] ? a[i] : b[i];
}

// ----- clamp -----

template <class T>
__global__ void mg_clamp_scalar(T* out, MgStrides os, const T* x, MgStrides xs, MgShape shape, long long n, T lo,
                                T hi, int has) {
  const MgStrides* const s[2] = {&os, &xs};
  const bool has_lo = has & 1, has_hi = has & 2;
  mg::for_each_strided<2>(n, shape, s, [&](const long long (&off)[2]) {
    out[off[0]] = mg::clamp3(x[off[1]], has_lo, lo, has_hi, hi);
  });
}

template <class T>
__global__ void mg_clamp_scalar_contig(T* out, const T* x, long long n, T lo, T hi, int has) {
  constexpr int N = 16 / (int)sizeof(T);
  typedef mg::Vec<T, N> V;
  const bool has_lo = has & 1, has_hi = has & 2;
  const bool vec_ok = mg::aligned<N>(out) && mg::aligned<N>(x);
  mg::for_each_contig<N>(
      n, vec_ok,
      [&](long long v) {
        V a = reinterpret_cast<const V*>(x)[v];
#pragma unroll
        for (int k = 0; k < N; ++k) a.v[k] = mg::clamp3(a.v[k], has_lo, lo, has_hi, hi);
        reinterpret_cast<V*>(out)[v] = a;
      },
      [&](long long i) { out[i] = mg::clamp3(x[i], has_lo, lo, has_hi, hi); });
}

template <class T>
__global__ void mg_clamp(T* out, MgStrides os, const T* x, MgStrides xs, const T* lo, MgStrides ls, const T* hi,
                         MgStrides hs, MgShape shape, long long n, int has) {
  const MgStrides* const s[4] = {&os, &xs, &ls, &hs};
  const bool has_lo = has & 1, has_hi = has & 2;
  mg::for_each_strided<4>(n, shape, s, [&](const long long (&off)[4]) {
    const T l = has_lo ? lo[off[2]] : x[off[1]];
    const T h = has_hi ? hi[off[3]] : x[off[1]];
    out[off[0]] = mg::clamp3(x[off[1]], has_lo, l, has_hi, h);
  });
}

template <class T>
__global__ void mg_clamp_contig(T* out, const T* x, const T* lo, const T* hi, long long n, int has) {
  const bool has_lo = has & 1, has_hi = has & 2;
  for (long long i = mg::thread_start(); i < n; i += mg::thread_step()) {
    const T l = has_lo ? lo[i] : x[i];
    const T h = has_hi ? hi[i] : x[i];
    out[i] = mg::clamp3(x[i], has_lo, l, has_hi, h);
  }
}

// ----- masked_fill -----

template <class T>
__global__ void mg_masked_fill(T* dst, MgStrides ds, const bool* mask, MgStrides ms, MgShape shape, long long n,
                               T value) {
  const MgStrides* const s[2] = {&ds, &ms};
  mg::for_each_strided<2>(n, shape, s, [&](const long long (&off)[2]) {
    if (mask[off[1]]) dst[off[0]] = value;
  });
}

template <class T>
__global__ void mg_masked_fill_contig(T* dst, const bool* mask, long long n, T value) {
  for (long long i = mg::thread_start(); i < n; i += mg::thread_step())
    if (mask[i]) dst[i] = value;
}
