// Batch normalisation on the GPU (norm.rs: batch_norm and NativeBatchNormBackward0's first-order
// kernel), in the CPU kernel's arithmetic (norm_bn_cpu.rs): statistics and sums in double, each
// output computed in double and rounded once. x and g are contiguous (n, c, s): channel ch's
// elements are the rows (img * c + ch) * s .. + s, img < n.
//
// The statistics take one block of MG_BN_THREADS threads per channel: each thread sums its
// elements in index order (i = tid, tid + MG_BN_THREADS, ...), then the block adds the partials
// in a fixed tree, so a result depends on neither timing nor grid (the CPU's order differs: the
// two agree to rounding, not bit for bit). The outputs are elementwise, grid-stride.
//
// Kernels (instances in cuda_kernels.rs):
//   mg_bn_stats<T>(double* stat, T* save_mean, T* save_invstd, T* running_mean, long long rm_stride,
//                  T* running_var, long long rv_stride, const T* x, long long n, long long c, long long s,
//                  double momentum, double eps, int training)
//       stat[2 ch .. 2 ch + 2] = mean, invstd: the batch's (training: also save_mean/save_invstd,
//       and the running statistics updated in place when given) or the running ones (evaluation)
//   mg_bn_apply<T>(T* out, const T* x, const double* stat, const T* w, const T* b, long long c,
//                  long long s, long long total)
//       out = (x - mean) * (invstd * w) + b; w and b may be null (1 and 0)
//   mg_bn_backward_stats<T>(double* stat, T* grad_weight, T* grad_bias, const T* x, const T* g,
//                           long long n, long long c, long long s, double eps)
//       stat[4 ch .. 4 ch + 4] = mean, invstd, sum g, sum g (x - mean) invstd (the statistics
//       recomputed from x); grad_weight = the last, grad_bias = sum g
//   mg_bn_backward_apply<T>(T* gi, const T* x, const T* g, const double* stat, const T* w, long long c,
//                           long long s, long long total)
//       gi = invstd w (g - sum g / m - xhat sum(g xhat) / m), m = n s
#include "cuda_common.cuh"

#define MG_BN_THREADS 256

namespace mg {

// The block's sum of one double per thread, in a fixed tree. Every thread of the block calls it.
__device__ __noinline__ double bn_block_sum(double v) {
  __shared__ double part[MG_BN_THREADS];
  const int tid = threadIdx.x;
  part[tid] = v;
  __syncthreads();
  for (int k = MG_BN_THREADS / 2; k > 0; k >>= 1) {
    if (tid < k) part[tid] += part[tid + k];
    __syncthreads();
  }
  const double total = part[0];
  __syncthreads();  // `part` is written again by the next call
  return total;
}

// Offset of channel ch's element i (i < n s).
__device__ __forceinline__ long long bn_index(long long ch, long long c, long long s, long long i) {
  const long long img = i / s;
  return (img * c + ch) * s + (i - img * s);
}

// (mean, sum of squared deviations) of channel ch: two passes, as the CPU's.
template <class T>
__device__ __forceinline__ void bn_channel(const T* x, long long n, long long c, long long s, long long ch, double& mean,
                                           double& sq) {
  const long long m = n * s;
  double a = 0.0;
  for (long long i = threadIdx.x; i < m; i += MG_BN_THREADS) a += (double)x[bn_index(ch, c, s, i)];
  mean = bn_block_sum(a) / (double)m;
  double q = 0.0;
  for (long long i = threadIdx.x; i < m; i += MG_BN_THREADS) {
    const double d = (double)x[bn_index(ch, c, s, i)] - mean;
    q += d * d;
  }
  sq = bn_block_sum(q);
}

}  // namespace mg

template <class T>
__global__ void mg_bn_stats(double* stat, T* save_mean, T* save_invstd, T* running_mean, long long rm_stride, T* running_var,
                            long long rv_stride, const T* x, long long n, long long c, long long s, double momentum, double eps,
                            int training) {
  if (blockDim.x != MG_BN_THREADS) __trap();
  const long long m = n * s;
  for (long long ch = blockIdx.x; ch < c; ch += gridDim.x) {
    double mean, invstd;
    if (training) {
      double sq;
      mg::bn_channel(x, n, c, s, ch, mean, sq);
      invstd = 1.0 / sqrt(sq / (double)m + eps);
      if (threadIdx.x == 0) {
        save_mean[ch] = (T)mean;
        save_invstd[ch] = (T)invstd;
        if (running_mean) {
          T* r = running_mean + ch * rm_stride;
          *r = (T)((1.0 - momentum) * (double)*r + momentum * mean);
        }
        if (running_var) {
          T* r = running_var + ch * rv_stride;
          *r = (T)((1.0 - momentum) * (double)*r + momentum * (sq / ((double)m - 1.0)));
        }
      }
    } else {
      mean = (double)running_mean[ch * rm_stride];
      invstd = 1.0 / sqrt((double)running_var[ch * rv_stride] + eps);
    }
    if (threadIdx.x == 0) {
      stat[2 * ch] = mean;
      stat[2 * ch + 1] = invstd;
    }
  }
}

template <class T>
__global__ void mg_bn_apply(T* out, const T* x, const double* stat, const T* w, const T* b, long long c, long long s,
                            long long total) {
  for (long long i = mg::thread_start(); i < total; i += mg::thread_step()) {
    const long long ch = (i / s) % c;
    const double k = stat[2 * ch + 1] * (w ? (double)w[ch] : 1.0);
    const double shift = b ? (double)b[ch] : 0.0;
    out[i] = (T)(((double)x[i] - stat[2 * ch]) * k + shift);
  }
}

template <class T>
__global__ void mg_bn_backward_stats(double* stat, T* grad_weight, T* grad_bias, const T* x, const T* g, long long n, long long c,
                                     long long s, double eps) {
  if (blockDim.x != MG_BN_THREADS) __trap();
  const long long m = n * s;
  for (long long ch = blockIdx.x; ch < c; ch += gridDim.x) {
    double mean, sq;
    mg::bn_channel(x, n, c, s, ch, mean, sq);
    const double invstd = 1.0 / sqrt(sq / (double)m + eps);
    double a = 0.0, b = 0.0;
    for (long long i = threadIdx.x; i < m; i += MG_BN_THREADS) {
      const long long at = mg::bn_index(ch, c, s, i);
      const double gv = (double)g[at];
      a += gv;
      b += gv * ((double)x[at] - mean) * invstd;
    }
    const double sg = mg::bn_block_sum(a);
    const double sgx = mg::bn_block_sum(b);
    if (threadIdx.x == 0) {
      stat[4 * ch] = mean;
      stat[4 * ch + 1] = invstd;
      stat[4 * ch + 2] = sg;
      stat[4 * ch + 3] = sgx;
      grad_weight[ch] = (T)sgx;
      grad_bias[ch] = (T)sg;
    }
  }
}

template <class T>
__global__ void mg_bn_backward_apply(T* gi, const T* x, const T* g, const double* stat, const T* w, long long c, long long s,
                                     long long total) {
  const double m = (double)(total / c);
  for (long long i = mg::thread_start(); i < total; i += mg::thread_step()) {
    const long long ch = (i / s) % c;
    const double* st = stat + 4 * ch;
    const double k = st[1] * (w ? (double)w[ch] : 1.0);
    const double xhat = ((double)x[i] - st[0]) * st[1];
    gi[i] = (T)(k * ((double)g[i] - st[2] / m - xhat * (st[3] / m)));
  }
}
