// Gather and scatter along one dim (gather/mod.rs: gather, index_select, scatter, scatter_add,
// index_add, and so the backward of each; embedding and nll_loss reach them too).
//
// Kernels (instances in cuda_kernels.rs):
//   mg_gather<T>(T* out, MgStrides os, const T* src, MgStrides ss, const long long* idx,
//                MgStrides is, MgShape shape, long long n, long long src_dim_stride)
//     For every position of `shape` (out's): out = src[ss-offset + idx * src_dim_stride]. `ss`
//     has stride 0 on the gathered dim (its real stride is `src_dim_stride`); `is` may have
//     stride 0 anywhere (index_select's 1-D index). One thread per output element.
//   mg_scatter<T, Op>(T* dst, MgStrides ds, const long long* idx, MgStrides is, const T* src,
//                     MgStrides ss, MgShape shape, long long n, long long len,
//                     long long dst_dim_stride, long long ix_step, long long src_step, T alpha)
//     `shape` is the index's shape with the scattered dim dropped (n positions); each thread
//     owns one position and walks the `len` elements of the scattered dim in order:
//     dst[ds-offset + idx[j] * dst_dim_stride] = Op(that, src[j], alpha). `ds` has stride 0 on
//     the scattered dim.
//
// Determinism: two positions that differ outside the scattered dim write different elements of
// dst (it has no internal overlap), and one thread applies every update of its elements in
// index order, so duplicates resolve as on the CPU (the last write wins, sums add in order):
// no atomics, the same bits on every run and every grid. The cost: a scatter with few
// positions outside its dim (a 1-D index_add) runs on few threads.
// Indices were checked by the op layer; a kernel never raises.
#include "cuda_common.cuh"

namespace mg {

// torch's scatter multiply: integers wrap, bool multiply is `and` (adding is cuda_common.cuh's scatter_acc).
template <class T> __device__ __forceinline__ T scatter_mul(T a, T b) {
  if constexpr (traits<T>::is_int) {
    return wrap_mul(a, b);
  } else if constexpr (same<T, bool>::value) {
    return a & b;
  } else {
    return a * b;
  }
}

struct ScatterAssign {
  template <class T> static __device__ __forceinline__ T apply(T, T s, T) { return s; }
};
struct ScatterAdd {
  template <class T> static __device__ __forceinline__ T apply(T o, T s, T) { return scatter_acc(o, s); }
};
struct ScatterMul {
  template <class T> static __device__ __forceinline__ T apply(T o, T s, T) { return scatter_mul(o, s); }
};
// index_add's `o + alpha * s`, two roundings as the CPU kernel (NVRTC runs with --fmad=false).
struct ScatterAddScaled {
  template <class T> static __device__ __forceinline__ T apply(T o, T s, T a) {
    return scatter_acc(o, scatter_mul(s, a));
  }
};

}  // namespace mg

template <class T>
__global__ void mg_gather(T* out, MgStrides os, const T* src, MgStrides ss, const long long* idx, MgStrides is,
                          MgShape shape, long long n, long long src_dim_stride) {
  const MgStrides* const s[3] = {&os, &ss, &is};
  mg::for_each_strided<3>(n, shape, s, [&](const long long (&off)[3]) {
    out[off[0]] = src[off[1] + idx[off[2]] * src_dim_stride];
  });
}

template <class T, class Op>
__global__ void mg_scatter(T* dst, MgStrides ds, const long long* idx, MgStrides is, const T* src, MgStrides ss,
                           MgShape shape, long long n, long long len, long long dst_dim_stride, long long ix_step,
                           long long src_step, T alpha) {
  const MgStrides* const s[3] = {&ds, &is, &ss};
  mg::for_each_strided<3>(n, shape, s, [&](const long long (&off)[3]) {
    for (long long j = 0; j < len; ++j) {
      T* p = dst + off[0] + idx[off[1] + j * ix_step] * dst_dim_stride;
      *p = Op::apply(*p, src[off[2] + j * src_step], alpha);
    }
  });
}
