// conv2d's column kernels (conv.rs; the CUDA backend runs im2col + cuBLAS per chunk of images).
//
// Kernels (instances in cuda_kernels.rs):
//   mg_im2col<T>(T* cols, const T* x, MgConv g, long long first, long long nb, long long rs, long long is)
//   mg_col2im<T>(T* dx, const T* cols, MgConv g, long long first, long long nb, long long rs, long long is)
// `x` and `dx` are contiguous NCHW (the whole batch); the chunk is images first..first+nb.
// Column element (r, i, p) — row r = (c·KH + ky)·KW + kx, image i of the chunk, output pixel
// p = oy·OW + ox — sits at cols[r·rs + i·is + p], so one kernel writes both layouts the backend
// uses: [nb, C·KH·KW, P] (rs = P, is = C·KH·KW·P) and [C·KH·KW, nb, P] (rs = nb·P, is = P).
// im2col writes zeros where a tap falls in the padding. col2im is its adjoint, written as a
// gather: one thread per input element sums the column entries of every tap that reads it, in
// a fixed order (ky, then kx), and overwrites dx — no atomics, results do not depend on timing.
#include "cuda_common.cuh"

// The geometry of one convolution (kernels::conv::Geometry), every field a long long.
struct MgConv {
  long long n, c_in, h, w, c_out, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw, groups;
};
static_assert(sizeof(MgConv) == 128, "MgConv is 16 long longs");

template <class T>
__global__ void mg_im2col(T* cols, const T* x, MgConv g, long long first, long long nb, long long rs, long long is) {
  const long long p_count = g.oh * g.ow;
  const long long k = g.kh * g.kw;
  const long long total = g.c_in * k * nb * p_count;
  for (long long e = mg::thread_start(); e < total; e += mg::thread_step()) {
    const long long p = e % p_count;
    const long long i = (e / p_count) % nb;
    const long long r = e / (p_count * nb);
    const long long c = r / k, kx = r % g.kw, ky = (r / g.kw) % g.kh;
    const long long oy = p / g.ow, ox = p % g.ow;
    const long long iy = oy * g.sh - g.ph + ky * g.dh;
    const long long ix = ox * g.sw - g.pw + kx * g.dw;
    T v = (T)0;
    if (iy >= 0 && iy < g.h && ix >= 0 && ix < g.w) v = x[(((first + i) * g.c_in + c) * g.h + iy) * g.w + ix];
    cols[r * rs + i * is + p] = v;
  }
}

template <class T>
__global__ void mg_col2im(T* dx, const T* cols, MgConv g, long long first, long long nb, long long rs, long long is) {
  const long long hw = g.h * g.w;
  const long long total = nb * g.c_in * hw;
  for (long long e = mg::thread_start(); e < total; e += mg::thread_step()) {
    const long long ix = e % g.w, iy = (e / g.w) % g.h;
    const long long c = (e / hw) % g.c_in, i = e / (hw * g.c_in);
    T acc = (T)0;
    for (long long ky = 0; ky < g.kh; ++ky) {
      const long long ty = iy + g.ph - ky * g.dh;  // = oy·sh when this tap reads row iy
      if (ty < 0 || ty % g.sh != 0 || ty / g.sh >= g.oh) continue;
      const long long oy = ty / g.sh;
      for (long long kx = 0; kx < g.kw; ++kx) {
        const long long tx = ix + g.pw - kx * g.dw;
        if (tx < 0 || tx % g.sw != 0 || tx / g.sw >= g.ow) continue;
        const long long ox = tx / g.sw;
        const long long r = (c * g.kh + ky) * g.kw + kx;
        acc += cols[r * rs + i * is + oy * g.ow + ox];
      }
    }
    dx[(first + i) * g.c_in * hw + c * hw + iy * g.w + ix] = acc;
  }
}
