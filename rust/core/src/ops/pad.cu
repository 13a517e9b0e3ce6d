// Reflection / replication padding of the last two dims as an index map (pad.rs,
// kernels/pad.rs): output pixel (i, j) of each plane copies input pixel (rows[i], cols[j]).
//
// Kernels (instances in cuda_kernels.rs):
//   mg_pad2d<T>(T* out, const T* x, const long long* maps, long long h, long long w, long long oh, long long ow, long long planes)
//   mg_pad2d_backward<T>(T* dx, const T* grad, const long long* inv, long long h, long long w, long long oh, long long ow, long long planes)
// `maps` is rows (oh entries) then cols (ow). The backward is a gather through the inverse
// maps, `inv` = row_start (h + 1 entries), row_list (oh), col_start (w + 1), col_list (ow): the
// output rows that read input row r are row_list[row_start[r] .. row_start[r + 1]], ascending.
// One thread per input element sums its outputs' gradients in output order, as the CPU's
// scatter adds them, so the result is the CPU's bit for bit. Tensors are contiguous.
#include "cuda_common.cuh"

template <class T>
__global__ void mg_pad2d(T* out, const T* x, const long long* maps, long long h, long long w, long long oh, long long ow, long long planes) {
  const long long po = oh * ow;
  const long long total = planes * po;
  for (long long e = mg::thread_start(); e < total; e += mg::thread_step()) {
    const long long j = e % ow, i = (e / ow) % oh, p = e / po;
    out[e] = x[p * h * w + maps[i] * w + maps[oh + j]];
  }
}

template <class T>
__global__ void mg_pad2d_backward(T* dx, const T* grad, const long long* inv, long long h, long long w, long long oh, long long ow,
                                  long long planes) {
  const long long* row_start = inv;
  const long long* row_list = inv + h + 1;
  const long long* col_start = row_list + oh;
  const long long* col_list = col_start + w + 1;
  const long long pi = h * w, po = oh * ow;
  const long long total = planes * pi;
  for (long long e = mg::thread_start(); e < total; e += mg::thread_step()) {
    const long long c = e % w, r = (e / w) % h, p = e / pi;
    T acc = (T)0;
    for (long long a = row_start[r]; a < row_start[r + 1]; ++a)
      for (long long b = col_start[c]; b < col_start[c + 1]; ++b) acc += grad[p * po + row_list[a] * ow + col_list[b]];
    dx[e] = acc;
  }
}
