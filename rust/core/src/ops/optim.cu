// Fused optimizer steps (optim.rs, kernels/optim.rs): one launch updates every tensor of a
// parameter group. The group arrives as a table with one row per tensor:
//   ptrs[t * 6 + 0..6] = param, grad, state0, state1, state2 (addresses, 0 when absent), numel
//   scal[t * 2 + 0..2] = step_size (Adam: lr / (1 - beta1^t)), bc2_sqrt ((1 - beta2^t) ** 0.5)
//   first[t]           = SGD: the momentum buffer is new (set it to the gradient)
// Every thread walks every tensor grid-stride, so tensors of any sizes share one launch. The
// arithmetic is the CPU kernel's, operation for operation (explicit fma where torch's CPU kernels
// fuse, none elsewhere: NVRTC runs with --fmad=false), so results equal the CPU's bit for bit.
//
// Kernels (instances in cuda_kernels.rs):
//   mg_sgd_step<T>(const long long* ptrs, const unsigned char* first, long long ntensors, double lr,
//                  double momentum, double dampening, double weight_decay, int nesterov, int maximize)
//   mg_adam_step<T>(const long long* ptrs, const double* scal, long long ntensors, double lr, double beta1,
//                   double beta2, double eps, double weight_decay, int decoupled, int amsgrad, int maximize)
#include "cuda_common.cuh"

namespace mg {
__device__ __forceinline__ float opt_fma(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double opt_fma(double a, double b, double c) { return fma(a, b, c); }
}  // namespace mg

template <class T>
__global__ void mg_sgd_step(const long long* ptrs, const unsigned char* first, long long ntensors, double lr, double momentum,
                            double dampening, double weight_decay, int nesterov, int maximize) {
  const T wd = (T)weight_decay, mom = (T)momentum, damp1 = (T)(1.0 - dampening), neg_lr = (T)(-lr);
  for (long long t = 0; t < ntensors; ++t) {
    const long long* row = ptrs + t * 6;
    T* p = (T*)row[0];
    const T* g = (const T*)row[1];
    T* buf = (T*)row[2];
    const long long n = row[5];
    const bool fresh = first[t] != 0;
    for (long long i = mg::thread_start(); i < n; i += mg::thread_step()) {
      const T pi = p[i];
      T d = g[i];
      if (maximize) d = -d;
      if (weight_decay != 0.0) d = mg::opt_fma(pi, wd, d);
      if (buf) {
        const T bv = fresh ? d : mg::opt_fma(d, damp1, buf[i] * mom);
        buf[i] = bv;
        d = nesterov ? mg::opt_fma(bv, mom, d) : bv;
      }
      p[i] = mg::opt_fma(d, neg_lr, pi);
    }
  }
}

template <class T>
__global__ void mg_adam_step(const long long* ptrs, const double* scal, long long ntensors, double lr, double beta1, double beta2,
                             double eps, double weight_decay, int decoupled, int amsgrad, int maximize) {
  const T wd = (T)weight_decay, shrink = (T)(1.0 - lr * weight_decay);
  const double w1 = 1.0 - beta1;
  const bool small = fabs(w1) < 0.5;
  const T w = (T)w1, w_minus_1 = (T)w1 - (T)1;
  const T b2 = (T)beta2, one_minus_b2 = (T)(1.0 - beta2), epsilon = (T)eps;
  for (long long t = 0; t < ntensors; ++t) {
    const long long* row = ptrs + t * 6;
    T* p = (T*)row[0];
    const T* g = (const T*)row[1];
    T* m = (T*)row[2];
    T* v = (T*)row[3];
    T* vmax = (T*)row[4];
    const long long n = row[5];
    const T neg_step = (T)(-scal[t * 2]), bc2 = (T)scal[t * 2 + 1];
    for (long long i = mg::thread_start(); i < n; i += mg::thread_step()) {
      T pi = p[i];
      T d = g[i];
      if (maximize) d = -d;
      if (weight_decay != 0.0) {
        if (decoupled) pi = pi * shrink;
        else d = mg::opt_fma(pi, wd, d);
      }
      const T mi = small ? mg::opt_fma(w, d - m[i], m[i]) : mg::opt_fma(w_minus_1, d - m[i], d);
      m[i] = mi;
      const T vi = mg::opt_fma(one_minus_b2 * d, d, v[i] * b2);
      v[i] = vi;
      T top = vi;
      if (amsgrad) {
        const T old = vmax[i];
        top = mg::is_nan(old) ? old : (mg::is_nan(vi) || vi > old) ? vi : old;  // torch.maximum: NaN wins
        vmax[i] = top;
      }
      const T denom = mg::m_sqrt(top) / bc2 + epsilon;
      p[i] = pi + (neg_step * mi) / denom;
    }
  }
}
