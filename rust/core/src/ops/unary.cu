// Unary elementwise ops (UnaryOp in unary.rs), the float-parameterised maps (map_float_raw's
// callers: leaky_relu, elu, gelu's cdf) and the backward formulas that are one elementwise map of
// (grad, saved input or result). Each functor computes what the CPU kernel computes for one
// element, in the same type and the same order of operations (the op layer has already chosen
// the dtype: int -> float promotion is not done here).
//
// Kernels (instances in cuda_kernels.rs):
//   mg_unary<O, T, Op>(O* out, MgStrides os, const T* in, MgStrides is, MgShape shape,
//                      long long n, double p0, double p1, double p2)
//   mg_unary_contig<O, T, Op>(O* out, const T* in, long long n, double p0, double p1, double p2)
//   mg_unary_backward<T, Op>(T* gi, MgStrides gis, const T* g, MgStrides gs, const T* s,
//                            MgStrides ss, MgShape shape, long long n, double p0)
//   mg_unary_backward_contig<T, Op>(T* gi, const T* g, const T* s, long long n, double p0)
// `out` may be `in` (in place); p0..p2 are the op's parameters (a slope; elu's alpha, scale and
// input_scale), unused otherwise.
#include "cuda_common.cuh"

namespace mg {

#define MG_UNARY(NAME, ...)                                                           \
  struct NAME {                                                                        \
    template <class O, class T>                                                        \
    static __device__ __forceinline__ O apply(T x, double p0, double p1, double p2) { __VA_ARGS__ } \
  };

// Integer ops wrap (torch: neg/abs of the minimum give the minimum).
MG_UNARY(Neg, if constexpr (traits<T>::is_int) { return wrap_neg(x); } else { return -x; })
MG_UNARY(Abs, if constexpr (traits<T>::is_int) { return x < 0 ? wrap_neg(x) : x; } else { return m_fabs(x); })
// torch: sign(NaN) = 0 and sign(-0.0) = +0.0; bool keeps its value.
MG_UNARY(Sign, if constexpr (same<T, bool>::value) { return x; } else { return (T)((T)0 < x) - (T)(x < (T)0); })
MG_UNARY(Exp, return m_exp(x);)
MG_UNARY(Log, return m_log(x);)
MG_UNARY(Log1p, return m_log1p(x);)
MG_UNARY(Expm1, return m_expm1(x);)
MG_UNARY(Sqrt, return m_sqrt(x);)
MG_UNARY(Rsqrt, return (T)1 / m_sqrt(x);)
MG_UNARY(Sin, return m_sin(x);)
MG_UNARY(Cos, return m_cos(x);)
// In double, rounded once to T (the CPU's `Special` functions: within 0.5 ulp in float32).
MG_UNARY(Tan, return (T)m_tan((double)x);)
MG_UNARY(Asin, return (T)m_asin((double)x);)
MG_UNARY(Acos, return (T)m_acos((double)x);)
MG_UNARY(Atan, return (T)m_atan((double)x);)
MG_UNARY(Sinh, return (T)m_sinh((double)x);)
MG_UNARY(Cosh, return (T)m_cosh((double)x);)
MG_UNARY(Asinh, return (T)m_asinh((double)x);)
MG_UNARY(Acosh, return (T)m_acosh((double)x);)
MG_UNARY(Atanh, return (T)m_atanh((double)x);)
MG_UNARY(Log2, return (T)m_log2((double)x);)
MG_UNARY(Log10, return (T)m_log10((double)x);)
MG_UNARY(Exp2, return (T)m_exp2((double)x);)
MG_UNARY(Erf, return (T)m_erf((double)x);)
MG_UNARY(Erfc, return (T)m_erfc((double)x);)
MG_UNARY(Erfinv, return (T)m_erfinv((double)x);)
// torch's frac: x - trunc(x)
MG_UNARY(Frac, return x - m_trunc(x);)
// The factor rounded to T, as torch's multiply by a wrapped number.
MG_UNARY(Deg2rad, return x * (T)0.017453292519943295;)
MG_UNARY(Rad2deg, return x * (T)57.29577951308232;)
// 1 at 0, else sin(pi x) / (pi x) with pi x rounded to T (torch's sinc)
MG_UNARY(Sinc, if (x == (T)0) { return (T)1; } const T p = (T)3.141592653589793 * x; return m_sin(p) / p;)
MG_UNARY(Tanh, return m_tanh(x);)
MG_UNARY(Sigmoid, return (T)1 / ((T)1 + m_exp(-x));)
// NaN and -0.0 pass through (torch's relu keeps both).
MG_UNARY(Relu, return x < (T)0 ? (T)0 : x;)
MG_UNARY(Silu, return x / ((T)1 + m_exp(-x));)
// The exact and tanh gelu are evaluated in double and rounded once, as the CPU kernel does.
MG_UNARY(Gelu, const double v = (double)x; return (T)(0.5 * v * (1.0 + erf(v * 0.7071067811865476)));)
MG_UNARY(GeluTanh, const double v = (double)x; const double k = sqrt(2.0 / 3.141592653589793);
         return (T)(0.5 * v * (1.0 + tanh(k * (v + 0.044715 * v * v * v))));)
MG_UNARY(Reciprocal, return (T)1 / x;)
// Integer floor/ceil/round/trunc are the identity.
MG_UNARY(Floor, if constexpr (traits<T>::is_float) { return m_floor(x); } else { return x; })
MG_UNARY(Ceil, if constexpr (traits<T>::is_float) { return m_ceil(x); } else { return x; })
// Half to even (torch.round): rint in the default rounding mode; round(-0.5) is -0.0.
MG_UNARY(Round, if constexpr (traits<T>::is_float) { return m_rint(x); } else { return x; })
MG_UNARY(Trunc, if constexpr (traits<T>::is_float) { return m_trunc(x); } else { return x; })
// Any dtype in, bool out.
MG_UNARY(LogicalNot, return !cast<bool>(x);)
MG_UNARY(BitwiseNot, if constexpr (same<T, bool>::value) { return !x; } else { return ~x; })

// map_float_raw's maps: evaluated in double, rounded once to T.
MG_UNARY(LeakyRelu, const double v = (double)x; return (T)((v > 0.0 || v != v) ? v : v * p0);)  // p0 = negative_slope
// torch's elu op (elu, selu, celu): p0 = alpha, p1 = scale, p2 = input_scale (1 and 1 for elu)
// NaN and ±0 take the linear branch (with a negative alpha, elu(+0) is +0 as in torch)
MG_UNARY(Elu, const double v = (double)x; return (T)(v < 0.0 ? (p0 * p1) * expm1(v * p2) : v * p1);)
MG_UNARY(GeluCdf, const double v = (double)x; return (T)(0.5 * (1.0 + erf(v * 0.7071067811865476)));)
#undef MG_UNARY

// ----- backward: gi = f(g, s), s being the saved input x or result r (unary.rs `saves`) -----
// Each is the CPU's chain of tensor ops fused: every intermediate rounds to T as the op would.

#define MG_BACKWARD(NAME, ...)                                                 \
  struct NAME {                                                                 \
    template <class T>                                                          \
    static __device__ __forceinline__ T apply(T g, T s, double p0) { __VA_ARGS__ }     \
  };

MG_BACKWARD(ReluBackward, return s <= (T)0 ? (T)0 : g;)  // threshold_backward(g, r, 0)
MG_BACKWARD(SigmoidBackward, return g * (s * ((T)1 - s));)
MG_BACKWARD(TanhBackward, return g * ((T)1 - s * s);)
MG_BACKWARD(SqrtBackward, return g / (s * (T)2);)
MG_BACKWARD(RsqrtBackward, return g * (m_pow(s, (T)3) * (T)-0.5);)
MG_BACKWARD(ReciprocalBackward, return g * -(s * s);)
MG_BACKWARD(Expm1Backward, return g * (s + (T)1);)
MG_BACKWARD(Log1pBackward, return g / (s + (T)1);)
MG_BACKWARD(AbsBackward, return g * Sign::apply<T, T>(s, 0.0, 0.0, 0.0);)
MG_BACKWARD(SinBackward, return g * m_cos(s);)
MG_BACKWARD(CosBackward, return g * -m_sin(s);)
MG_BACKWARD(SiluBackward, const T sig = (T)1 / ((T)1 + m_exp(-s)); return g * (sig * (s * ((T)1 - sig) + (T)1));)
MG_BACKWARD(GeluBackward,
            const T cdf = GeluCdf::apply<T, T>(s, 0.0, 0.0, 0.0);
            const T pdf = m_exp((s * s) * (T)-0.5) * (T)(1.0 / sqrt(2.0 * 3.141592653589793));
            return g * (cdf + s * pdf);)
MG_BACKWARD(GeluTanhBackward,
            const T k = (T)sqrt(2.0 / 3.141592653589793);
            const T x2 = s * s;
            const T th = m_tanh((s + (x2 * s) * (T)0.044715) * k);
            const T left = (th + (T)1) * (T)0.5;
            const T dinner = (x2 * (T)(3.0 * 0.044715) + (T)1) * k;
            const T right = ((s * ((T)1 - th * th)) * (T)0.5) * dinner;
            return g * (left + right);)
MG_BACKWARD(LeakyReluBackward, return s > (T)0 ? g : g * (T)p0;)           // p0 = negative_slope; s = x or result
// elu: torch's elu_backward takes the negative branch where `s <= 0`, so a NaN passes g through.
MG_BACKWARD(EluBackward, return s <= (T)0 ? g * (m_exp(s) * (T)p0) : g;)    // p0 = alpha; s = x
MG_BACKWARD(EluResultBackward, return s <= (T)0 ? g * (s + (T)p0) : g;)     // p0 = alpha; s = result
#undef MG_BACKWARD

}  // namespace mg

template <class O, class T, class Op>
__global__ void mg_unary(O* out, MgStrides os, const T* in, MgStrides is, MgShape shape, long long n,
                         double p0, double p1, double p2) {
  const MgStrides* const s[2] = {&os, &is};
  mg::for_each_strided<2>(n, shape, s, [&](const long long (&off)[2]) {
    out[off[0]] = Op::template apply<O, T>(in[off[1]], p0, p1, p2);
  });
}

template <class O, class T, class Op>
__global__ void mg_unary_contig(O* out, const T* in, long long n, double p0, double p1, double p2) {
  constexpr int N = 16 / mg::max_size<O, T>::value;
  typedef mg::Vec<T, N> VT;
  typedef mg::Vec<O, N> VO;
  const bool vec_ok = mg::aligned<N>(out) && mg::aligned<N>(in);
  mg::for_each_contig<N>(
      n, vec_ok,
      [&](long long v) {
        const VT a = reinterpret_cast<const VT*>(in)[v];
        VO r;
#pragma unroll
        for (int k = 0; k < N; ++k) r.v[k] = Op::template apply<O, T>(a.v[k], p0, p1, p2);
        reinterpret_cast<VO*>(out)[v] = r;
      },
      [&](long long i) { out[i] = Op::template apply<O, T>(in[i], p0, p1, p2); });
}

template <class T, class Op>
__global__ void mg_unary_backward(T* gi, MgStrides gis, const T* g, MgStrides gs, const T* s, MgStrides ss,
                                  MgShape shape, long long n, double p0) {
  const MgStrides* const st[3] = {&gis, &gs, &ss};
  mg::for_each_strided<3>(n, shape, st, [&](const long long (&off)[3]) {
    gi[off[0]] = Op::template apply<T>(g[off[1]], s[off[2]], p0);
  });
}

template <class T, class Op>
__global__ void mg_unary_backward_contig(T* gi, const T* g, const T* s, long long n, double p0) {
  constexpr int N = 16 / (int)sizeof(T);
  typedef mg::Vec<T, N> V;
  const bool vec_ok = mg::aligned<N>(gi) && mg::aligned<N>(g) && mg::aligned<N>(s);
  mg::for_each_contig<N>(
      n, vec_ok,
      [&](long long v) {
        const V a = reinterpret_cast<const V*>(g)[v];
        const V b = reinterpret_cast<const V*>(s)[v];
        V r;
#pragma unroll
        for (int k = 0; k < N; ++k) r.v[k] = Op::template apply<T>(a.v[k], b.v[k], p0);
        reinterpret_cast<V*>(gi)[v] = r;
      },
      [&](long long i) { gi[i] = Op::template apply<T>(g[i], s[i], p0); });
}
