// Cast-copy between any two dtypes (copy_kernel in copy.rs: `contiguous`, `clone`, `to(dtype)`,
// `copy_`, broadcasting sources) with torch's cast rules (mg::cast in cuda_common.cuh), and fill.
//
// Kernels (instances in cuda_kernels.rs):
//   mg_copy<O, T>(O* out, MgStrides os, const T* in, MgStrides is, MgShape shape, long long n)
//   mg_copy_contig<O, T>(O* out, const T* in, long long n)
//   mg_fill<T>(T* out, MgStrides os, MgShape shape, long long n, T value)
//   mg_fill_contig<T>(T* out, long long n, T value)
// A broadcast source has stride 0 on its expanded dims. `out` must not overlap `in` (the op
// layer copies through a temporary otherwise). An expanded destination of fill is given with
// its stride-0 dims dropped (copy.rs fill_inplace_raw), so no element is written twice.
#include "cuda_common.cuh"

template <class O, class T>
__global__ void mg_copy(O* out, MgStrides os, const T* in, MgStrides is, MgShape shape, long long n) {
  const MgStrides* const s[2] = {&os, &is};
  mg::for_each_strided<2>(n, shape, s, [&](const long long (&off)[2]) {
    out[off[0]] = mg::cast<O>(in[off[1]]);
  });
}

template <class O, class T>
__global__ void mg_copy_contig(O* out, const T* in, long long n) {
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
        for (int k = 0; k < N; ++k) r.v[k] = mg::cast<O>(a.v[k]);
        reinterpret_cast<VO*>(out)[v] = r;
      },
      [&](long long i) { out[i] = mg::cast<O>(in[i]); });
}

template <class T>
__global__ void mg_fill(T* out, MgStrides os, MgShape shape, long long n, T value) {
  const MgStrides* const s[1] = {&os};
  mg::for_each_strided<1>(n, shape, s, [&](const long long (&off)[1]) { out[off[0]] = value; });
}

template <class T>
__global__ void mg_fill_contig(T* out, long long n, T value) {
  constexpr int N = 16 / (int)sizeof(T);
  typedef mg::Vec<T, N> V;
  V r;
#pragma unroll
  for (int k = 0; k < N; ++k) r.v[k] = value;
  mg::for_each_contig<N>(
      n, mg::aligned<N>(out), [&](long long v) { reinterpret_cast<V*>(out)[v] = r; },
      [&](long long i) { out[i] = value; });
}
