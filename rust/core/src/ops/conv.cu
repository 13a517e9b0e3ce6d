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

// The index arithmetic runs in 32 bits whenever every index of the launch fits (`narrow`): a
// 64-bit division is a software routine on the GPU (tens of instructions), and these kernels do
// several per element (im2col: five; col2im: four, plus four per tap). At 32x64x56x56 3x3 the
// 64-bit im2col took about 0.65 ms of the 0.83 ms conv on an H100 (2026-11-27); the same
// decomposition in `long long` remains for launches too large for 32 bits.
namespace mg_conv {

// Whether the largest index each kernel forms fits in an int: x/dx of images first..first+nb,
// the column buffer's extent, and the element count.
__device__ __forceinline__ bool narrow(const MgConv& g, long long first, long long nb, long long rs, long long is) {
  const long long lim = 0x7fffffffLL;
  const long long rows = g.c_in * g.kh * g.kw, p = g.oh * g.ow;
  const long long cols_extent = (rows - 1) * rs + (nb - 1) * is + p;
  return (first + nb) * g.c_in * g.h * g.w <= lim && cols_extent <= lim && rows * nb * p <= lim;
}

template <class I, class T>
__device__ __forceinline__ void im2col(T* cols, const T* x, const MgConv& g, long long first, long long nb, long long rs,
                                       long long is) {
  const I P = (I)(g.oh * g.ow), K = (I)(g.kh * g.kw), NB = (I)nb, OW = (I)g.ow, KW = (I)g.kw;
  const I H = (I)g.h, W = (I)g.w, CIN = (I)g.c_in, FIRST = (I)first, RS = (I)rs, IS = (I)is;
  const long long total = g.c_in * g.kh * g.kw * nb * (g.oh * g.ow);
  for (long long e = mg::thread_start(); e < total; e += mg::thread_step()) {
    const I flat = (I)e, q = flat / P, p = flat - q * P;
    const I r = q / NB, i = q - r * NB;
    const I c = r / K, tap = r - c * K;
    const I ky = tap / KW, kx = tap - ky * KW;
    const I oy = p / OW, ox = p - oy * OW;
    const I iy = oy * (I)g.sh - (I)g.ph + ky * (I)g.dh;
    const I ix = ox * (I)g.sw - (I)g.pw + kx * (I)g.dw;
    T v = (T)0;
    if (iy >= 0 && iy < H && ix >= 0 && ix < W) v = x[(((FIRST + i) * CIN + c) * H + iy) * W + ix];
    cols[r * RS + i * IS + p] = v;
  }
}

template <class I, class T>
__device__ __forceinline__ void col2im(T* dx, const T* cols, const MgConv& g, long long first, long long nb, long long rs,
                                       long long is) {
  const I H = (I)g.h, W = (I)g.w, HW = (I)(g.h * g.w), CIN = (I)g.c_in, FIRST = (I)first, RS = (I)rs, IS = (I)is;
  const I KH = (I)g.kh, KW = (I)g.kw, OH = (I)g.oh, OW = (I)g.ow, SH = (I)g.sh, SW = (I)g.sw;
  const I PH = (I)g.ph, PW = (I)g.pw, DH = (I)g.dh, DW = (I)g.dw;
  const long long total = nb * g.c_in * g.h * g.w;
  for (long long e = mg::thread_start(); e < total; e += mg::thread_step()) {
    const I flat = (I)e, q = flat / W, ix = flat - q * W;
    const I q2 = q / H, iy = q - q2 * H;
    const I i = q2 / CIN, c = q2 - i * CIN;
    T acc = (T)0;
    for (I ky = 0; ky < KH; ++ky) {
      const I ty = iy + PH - ky * DH;  // = oy·sh when this tap reads row iy
      if (ty < 0) continue;
      const I oy = ty / SH;
      if (oy * SH != ty || oy >= OH) continue;
      for (I kx = 0; kx < KW; ++kx) {
        const I tx = ix + PW - kx * DW;
        if (tx < 0) continue;
        const I ox = tx / SW;
        if (ox * SW != tx || ox >= OW) continue;
        const I r = (c * KH + ky) * KW + kx;
        acc += cols[r * RS + i * IS + oy * OW + ox];
      }
    }
    dx[(FIRST + i) * CIN * HW + c * HW + iy * W + ix] = acc;
  }
}

}  // namespace mg_conv

template <class T>
__global__ void mg_im2col(T* cols, const T* x, MgConv g, long long first, long long nb, long long rs, long long is) {
  if (mg_conv::narrow(g, first, nb, rs, is)) mg_conv::im2col<int>(cols, x, g, first, nb, rs, is);
  else mg_conv::im2col<long long>(cols, x, g, first, nb, rs, is);
}

template <class T>
__global__ void mg_col2im(T* dx, const T* cols, MgConv g, long long first, long long nb, long long rs, long long is) {
  if (mg_conv::narrow(g, first, nb, rs, is)) mg_conv::col2im<int>(dx, cols, g, first, nb, rs, is);
  else mg_conv::col2im<long long>(dx, cols, g, first, nb, rs, is);
}
