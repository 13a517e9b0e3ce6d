// What every minigrad CUDA kernel source shares: the launch ABI (MgShape, MgStrides), element
// types, grid-stride loops, strided offsets, 16-byte vector access, torch's casts and the math
// overloads. NVRTC compiles it with no standard headers, so nothing here includes one; the host
// tests compile the same text with g++ through tests/cuda_host/shim.h.
//
// ABI (docs/gpu.md): element strides and offsets (never bytes) as `long long`; shapes and
// strides travel BY VALUE in the structs below; tensor dims are listed outermost first in
// entries [0, ndim), the entries at and after ndim are ignored. bool is one byte, int64 is
// `long long`, int32 is `int`.
#pragma once

#define MG_MAX_DIMS 25

struct MgShape {
  int ndim;
  long long sizes[MG_MAX_DIMS];
};

struct MgStrides {
  long long offset;
  long long strides[MG_MAX_DIMS];
};

// The launcher packs these byte for byte: pin the layout so a change cannot go unnoticed.
static_assert(sizeof(MgShape) == 208, "MgShape: int ndim, 4 bytes padding, 25 x long long");
static_assert(alignof(MgShape) == 8, "MgShape is 8-byte aligned (sizes start at byte 8)");
static_assert(sizeof(MgStrides) == 208, "MgStrides: long long offset, 25 x long long");
static_assert(alignof(MgStrides) == 8, "MgStrides is 8-byte aligned");
static_assert(sizeof(bool) == 1, "bool tensors hold one byte per element");
static_assert(sizeof(int) == 4 && sizeof(long long) == 8, "int32 is int, int64 is long long");

// The storage-only dtypes: float16 and bfloat16 are 16-bit words (no cuda_fp16.h: NVRTC runs with
// no include path, and the host build compiles this text with g++), uint8/int8/int16 are
// `unsigned char`, `signed char` and `short`. Kernels only move, cast and (in scatters) add them;
// arithmetic widens them first (device/widen.rs).
struct mg_half {
  unsigned short bits;
};
struct mg_bf16 {
  unsigned short bits;
};
static_assert(sizeof(mg_half) == 2 && sizeof(mg_bf16) == 2, "half formats are one 16-bit word");
static_assert(sizeof(short) == 2, "int16 is short");

namespace mg {

// ----- type traits (no <type_traits> under NVRTC) -----

template <class A, class B> struct same { static constexpr bool value = false; };
template <class A> struct same<A, A> { static constexpr bool value = true; };

template <class T> struct traits;
template <> struct traits<float> {
  static constexpr bool is_float = true, is_int = false;
  typedef double acc;  // float sums accumulate in double, as the CPU kernels do
};
template <> struct traits<double> {
  static constexpr bool is_float = true, is_int = false;
  typedef double acc;
};
template <> struct traits<int> {
  static constexpr bool is_float = false, is_int = true;
  typedef long long acc;  // integer sums wrap in int64, as torch's do
  typedef unsigned int uns;
  static constexpr int lowest = -2147483647 - 1;
  static constexpr int highest = 2147483647;
};
template <> struct traits<long long> {
  static constexpr bool is_float = false, is_int = true;
  typedef long long acc;
  typedef unsigned long long uns;
  static constexpr long long lowest = -9223372036854775807LL - 1;
  static constexpr long long highest = 9223372036854775807LL;
};
template <> struct traits<bool> {
  static constexpr bool is_float = false, is_int = false;
  typedef long long acc;
};

// The narrow dtypes. Small integers wrap through unsigned int (no promotion to a signed int can
// overflow); a float reaches them through int32 (torch's x86 static_cast: NaN and values outside
// int32 give INT32_MIN, whose low bits are 0), then wraps.
template <class T> struct small_int { static constexpr bool value = false; };
template <> struct small_int<unsigned char> { static constexpr bool value = true; };
template <> struct small_int<signed char> { static constexpr bool value = true; };
template <> struct small_int<short> { static constexpr bool value = true; };
template <> struct traits<unsigned char> {
  static constexpr bool is_float = false, is_int = true;
  typedef long long acc;
  typedef unsigned int uns;
};
template <> struct traits<signed char> {
  static constexpr bool is_float = false, is_int = true;
  typedef long long acc;
  typedef unsigned int uns;
};
template <> struct traits<short> {
  static constexpr bool is_float = false, is_int = true;
  typedef long long acc;
  typedef unsigned int uns;
};
template <class T> struct is_half { static constexpr bool value = false; };
template <> struct is_half<mg_half> { static constexpr bool value = true; };
template <> struct is_half<mg_bf16> { static constexpr bool value = true; };
template <> struct traits<mg_half> {
  static constexpr bool is_float = true, is_int = false;
  typedef float acc;
};
template <> struct traits<mg_bf16> {
  static constexpr bool is_float = true, is_int = false;
  typedef float acc;
};

// half <-> float, bit for bit as the CPU's `half` crate converts: float -> half/bf16 rounds to
// nearest even (overflow gives inf, subnormals are exact or rounded, NaN stays a quiet NaN with
// its sign and top payload bits); half/bf16 -> float is exact (a NaN comes back quiet).
__device__ __forceinline__ float to_float(mg_half h) {
  const unsigned int sign = ((unsigned int)h.bits & 0x8000u) << 16;
  const unsigned int exp = ((unsigned int)h.bits >> 10) & 0x1fu, man = (unsigned int)h.bits & 0x3ffu;
  if (exp == 0x1fu) return __uint_as_float(sign | 0x7f800000u | (man ? 0x400000u | (man << 13) : 0u));
  if (exp == 0) {
    const float m = (float)man * 5.9604644775390625e-8f;  // man * 2^-24: exact
    return sign ? -m : m;
  }
  return __uint_as_float(sign | ((exp + 112u) << 23) | (man << 13));
}
__device__ __forceinline__ float to_float(mg_bf16 h) {
  unsigned int x = (unsigned int)h.bits;
  if ((x & 0x7fffu) > 0x7f80u) x |= 0x40u;
  return __uint_as_float(x << 16);
}
__device__ __forceinline__ mg_half half_from_float(float f) {
  const unsigned int x = __float_as_uint(f);
  const unsigned int sign = (x >> 16) & 0x8000u, exp = (x >> 23) & 0xffu;
  unsigned int man = x & 0x7fffffu;
  mg_half r;
  if (exp == 0xffu) {  // inf, NaN
    r.bits = (unsigned short)(sign | 0x7c00u | (man ? 0x200u | (man >> 13) : 0u));
    return r;
  }
  const int e = (int)exp - 112;  // the half exponent field, if normal
  if (e >= 0x1f) {
    r.bits = (unsigned short)(sign | 0x7c00u);
  } else if (e <= 0) {  // a half subnormal (or zero): man * 2^(e - 14) in units of 2^-24
    if (e < -10) {
      r.bits = (unsigned short)sign;
      return r;
    }
    man |= 0x800000u;
    const int shift = 14 - e;
    unsigned int m = man >> shift;
    const unsigned int rem = man & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (m & 1u))) ++m;  // may carry into the smallest normal
    r.bits = (unsigned short)(sign | m);
  } else {
    unsigned int h = sign | ((unsigned int)e << 10) | (man >> 13);
    const unsigned int rem = man & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // may carry up to inf
    r.bits = (unsigned short)h;
  }
  return r;
}
__device__ __forceinline__ mg_bf16 bf16_from_float(float f) {
  const unsigned int x = __float_as_uint(f);
  mg_bf16 r;
  if ((x & 0x7fffffffu) > 0x7f800000u) {
    r.bits = (unsigned short)((x >> 16) | 0x40u);
  } else {
    r.bits = (unsigned short)((x >> 16) + (((x & 0x8000u) && (x & 0x17fffu)) ? 1u : 0u));
  }
  return r;
}
template <class O> __device__ __forceinline__ O from_float(float f) {
  if constexpr (same<O, mg_half>::value) {
    return half_from_float(f);
  } else {
    return bf16_from_float(f);
  }
}

// +infinity (no INFINITY macro under NVRTC; these are CUDA's bit-cast intrinsics).
__device__ __forceinline__ double inf() { return __longlong_as_double(0x7ff0000000000000LL); }
__device__ __forceinline__ float inff() { return __int_as_float(0x7f800000); }

// NaN test that is simply false for integers and bool (no isnan overload set needed).
template <class T> __device__ __forceinline__ bool is_nan(T x) { return x != x; }

// ----- integer arithmetic that wraps like torch's (signed overflow is UB in C++) -----

template <class T> __device__ __forceinline__ T wrap_add(T a, T b) {
  typedef typename traits<T>::uns U;
  return (T)((U)a + (U)b);
}
template <class T> __device__ __forceinline__ T wrap_sub(T a, T b) {
  typedef typename traits<T>::uns U;
  return (T)((U)a - (U)b);
}
template <class T> __device__ __forceinline__ T wrap_mul(T a, T b) {
  typedef typename traits<T>::uns U;
  return (T)((U)a * (U)b);
}

// torch's accumulating writes (scatter_add, index_put_ with accumulate, masked puts): integers
// wrap, bool add is `or`, floats add.
template <class T> __device__ __forceinline__ T scatter_acc(T a, T b) {
  if constexpr (traits<T>::is_int) {
    return wrap_add(a, b);
  } else if constexpr (same<T, bool>::value) {
    return a | b;
  } else {
    return a + b;
  }
}
template <class T> __device__ __forceinline__ T wrap_neg(T a) {
  typedef typename traits<T>::uns U;
  return (T)((U)0 - (U)a);
}

// ----- torch's casts (the CPU's Element::cast_from) -----
// float -> int truncates; NaN and out-of-range values give the type's minimum (x86's cvtt, which
// torch's CPU build and minigrad's CPU kernels both follow); anything -> bool is `!= 0` (NaN is
// true); int -> int wraps; int -> float rounds to nearest.

template <class O, class I> struct Cast {
  static __device__ __forceinline__ O go(I x) {
    if constexpr (same<O, I>::value && is_half<I>::value) {
      return x;  // bit for bit (a NaN's payload too)
    } else if constexpr (is_half<I>::value) {
      return Cast<O, float>::go(to_float(x));  // exact, then as from float32
    } else if constexpr (is_half<O>::value) {
      // through float32 and one rounding, as c10::Half(float): a double rounds twice
      if constexpr (same<I, bool>::value) {
        return from_float<O>(x ? 1.0f : 0.0f);
      } else if constexpr (traits<I>::is_float) {
        return from_float<O>((float)x);
      } else {
        return from_float<O>((float)(long long)x);
      }
    } else if constexpr (small_int<O>::value && traits<I>::is_float) {
      return (O)(unsigned int)Cast<int, I>::go(x);
    } else if constexpr (same<O, bool>::value) {
      return x != (I)0;
    } else if constexpr (same<I, bool>::value) {
      return x ? (O)1 : (O)0;
    } else if constexpr (traits<O>::is_float) {
      if constexpr (traits<I>::is_float) {
        return (O)x;
      } else {
        return (O)(long long)x;
      }
    } else if constexpr (traits<I>::is_float) {
      double f = (double)x;
      const double lo = (double)traits<O>::lowest;  // -2^31 or -2^63, exact in double
      if (f != f || f < lo || f >= -lo) return traits<O>::lowest;
      return (O)f;
    } else {
      typedef typename traits<O>::uns U;
      return (O)(U)(unsigned long long)x;
    }
  }
};

template <class O, class I> __device__ __forceinline__ O cast(I x) { return Cast<O, I>::go(x); }

}  // namespace mg

// float16/bfloat16 arithmetic where kernels do it on the storage type (scatter_add, index_put_
// with accumulate): in float32, rounded once, as the CPU's `half` operators.
__device__ __forceinline__ mg_half operator+(mg_half a, mg_half b) { return mg::half_from_float(mg::to_float(a) + mg::to_float(b)); }
__device__ __forceinline__ mg_half operator*(mg_half a, mg_half b) { return mg::half_from_float(mg::to_float(a) * mg::to_float(b)); }
__device__ __forceinline__ mg_bf16 operator+(mg_bf16 a, mg_bf16 b) { return mg::bf16_from_float(mg::to_float(a) + mg::to_float(b)); }
__device__ __forceinline__ mg_bf16 operator*(mg_bf16 a, mg_bf16 b) { return mg::bf16_from_float(mg::to_float(a) * mg::to_float(b)); }

namespace mg {

// ----- math, one name for float and double -----

#define MG_MATH1(name, f32, f64)                                         \
  __device__ __forceinline__ float name(float x) { return f32(x); }     \
  __device__ __forceinline__ double name(double x) { return f64(x); }
MG_MATH1(m_exp, expf, exp)
MG_MATH1(m_log, logf, log)
MG_MATH1(m_log1p, log1pf, log1p)
MG_MATH1(m_expm1, expm1f, expm1)
MG_MATH1(m_sqrt, sqrtf, sqrt)
MG_MATH1(m_sin, sinf, sin)
MG_MATH1(m_cos, cosf, cos)
MG_MATH1(m_tanh, tanhf, tanh)
MG_MATH1(m_floor, floorf, floor)
MG_MATH1(m_ceil, ceilf, ceil)
MG_MATH1(m_rint, rintf, rint)
MG_MATH1(m_trunc, truncf, trunc)
MG_MATH1(m_fabs, fabsf, fabs)
MG_MATH1(m_exp2, exp2f, exp2)
MG_MATH1(m_tan, tanf, tan)
MG_MATH1(m_asin, asinf, asin)
MG_MATH1(m_acos, acosf, acos)
MG_MATH1(m_atan, atanf, atan)
MG_MATH1(m_sinh, sinhf, sinh)
MG_MATH1(m_cosh, coshf, cosh)
MG_MATH1(m_asinh, asinhf, asinh)
MG_MATH1(m_acosh, acoshf, acosh)
MG_MATH1(m_atanh, atanhf, atanh)
MG_MATH1(m_log2, log2f, log2)
MG_MATH1(m_log10, log10f, log10)
MG_MATH1(m_erf, erff, erf)
MG_MATH1(m_erfc, erfcf, erfc)
MG_MATH1(m_erfinv, erfinvf, erfinv)
#undef MG_MATH1
__device__ __forceinline__ float m_fmod(float a, float b) { return fmodf(a, b); }
__device__ __forceinline__ double m_fmod(double a, double b) { return fmod(a, b); }
__device__ __forceinline__ float m_pow(float a, float b) { return powf(a, b); }
__device__ __forceinline__ double m_pow(double a, double b) { return pow(a, b); }
__device__ __forceinline__ float m_copysign(float a, float b) { return copysignf(a, b); }
__device__ __forceinline__ double m_copysign(double a, double b) { return copysign(a, b); }
__device__ __forceinline__ float m_atan2(float a, float b) { return atan2f(a, b); }
__device__ __forceinline__ double m_atan2(double a, double b) { return atan2(a, b); }
__device__ __forceinline__ float m_hypot(float a, float b) { return hypotf(a, b); }
__device__ __forceinline__ double m_hypot(double a, double b) { return hypot(a, b); }

// ----- grid-stride loops -----
// Every kernel is correct for any grid and block size (the launcher picks them); reductions,
// whose summation order depends on the block shape, require MG_REDUCE_THREADS (below).

__device__ __forceinline__ long long thread_start() {
  return (long long)blockIdx.x * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ long long thread_step() { return (long long)blockDim.x * gridDim.x; }

// ----- strided offsets -----
// Linear index i (row-major over `shape`) -> the element offset of each operand, innermost dim
// first. The structs are read where the kernel received them (param space, indexed by register:
// no local-memory copy; the PTX shows no .local). I is the index type: 32-bit when the element
// count allows, as 64-bit division is slow. Launchers should coalesce dims: each costs a division.

template <class I, int K>
__device__ __forceinline__ void offsets(I i, const MgShape& shape, const MgStrides* const (&s)[K],
                                        long long (&off)[K]) {
#pragma unroll
  for (int k = 0; k < K; ++k) off[k] = s[k]->offset;
#pragma unroll 1
  for (int d = shape.ndim - 1; d >= 0; --d) {
    const I size = (I)shape.sizes[d];
    const I q = i / size;
    const long long r = (long long)(i - q * size);
    i = q;
#pragma unroll
    for (int k = 0; k < K; ++k) off[k] += r * s[k]->strides[d];
  }
}

// Calls f(off) for every element this thread owns, off[k] being operand k's element offset.
template <int K, class F>
__device__ __forceinline__ void for_each_strided(long long n, const MgShape& shape,
                                                 const MgStrides* const (&s)[K], F f) {
  long long off[K];
  if (n <= 2147483647LL) {
    for (long long i = thread_start(); i < n; i += thread_step()) {
      offsets<unsigned int, K>((unsigned int)i, shape, s, off);
      f(off);
    }
  } else {
    for (long long i = thread_start(); i < n; i += thread_step()) {
      offsets<unsigned long long, K>((unsigned long long)i, shape, s, off);
      f(off);
    }
  }
}

// ----- contiguous operands: 16-byte vector loads and stores -----
// A thread moves one 16-byte vector of the widest operand per step (float4, double2, int4,
// longlong2 or 16 bools; the narrower operands move N elements of their own size). Used only when
// every pointer is aligned to its vector; otherwise, and for the tail, element by element.

template <class T, int N> struct alignas(sizeof(T) * N) Vec {
  T v[N];
};

template <class A, class B> struct max_size {
  static constexpr int value = sizeof(A) > sizeof(B) ? (int)sizeof(A) : (int)sizeof(B);
};

template <int N, class T> __device__ __forceinline__ bool aligned(const T* p) {
  return ((unsigned long long)p % (sizeof(T) * N)) == 0;
}

// out[i] = f(i) for the contiguous range [0, n): `step(v)` handles vector v (elements
// [v*N, v*N+N)) and `one(i)` a single element; `vec_ok` says whether every operand is aligned.
template <int N, class VecStep, class OneStep>
__device__ __forceinline__ void for_each_contig(long long n, bool vec_ok, VecStep step, OneStep one) {
  long long done = 0;
  if (vec_ok && N > 1) {
    const long long nv = n / N;
    for (long long v = thread_start(); v < nv; v += thread_step()) step(v);
    done = nv * N;
  }
  for (long long i = done + thread_start(); i < n; i += thread_step()) one(i);
}

// ----- block-level combination (reductions, softmax) -----
// Kernels that combine across threads require blockDim.x == MG_REDUCE_THREADS and combine in a
// fixed tree, so their results do not depend on the grid size or on timing.

#define MG_REDUCE_THREADS 256

__device__ __forceinline__ double shfl_down(double v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
__device__ __forceinline__ float shfl_down(float v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
__device__ __forceinline__ long long shfl_down(long long v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
__device__ __forceinline__ int shfl_down(int v, int d) { return __shfl_down_sync(0xffffffffu, v, d); }
__device__ __forceinline__ bool shfl_down(bool v, int d) { return __shfl_down_sync(0xffffffffu, (int)v, d) != 0; }

// Lane 0 of each warp ends with its lanes' values combined (lane l takes lane l + d, d = from,
// from/2, ..., 1).
template <class Op, class A> __device__ __forceinline__ A warp_reduce(A a, int from) {
#pragma unroll
  for (int d = from; d > 0; d >>= 1) a = Op::merge(a, shfl_down(a, d));
  return a;
}

// Thread 0 ends with the block's MG_REDUCE_THREADS values combined: each warp, then the warps'
// results. Every thread of the block must call it (it synchronises).
template <class Op, class A> __device__ __forceinline__ A block_reduce(A a) {
  __shared__ A warps[MG_REDUCE_THREADS / 32];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  a = warp_reduce<Op>(a, 16);
  if (lane == 0) warps[warp] = a;
  __syncthreads();
  if (warp == 0) {
    a = lane < MG_REDUCE_THREADS / 32 ? warps[lane] : Op::init();
    a = warp_reduce<Op>(a, MG_REDUCE_THREADS / 64);
  }
  __syncthreads();  // warps[] is free for the next call
  return a;
}

}  // namespace mg
