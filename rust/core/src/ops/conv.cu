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
// Both loop over planes grid-stride (any grid works); the launcher gives a block as many threads
// as a plane has pixels, up to 256 (conv.rs `plane_launch`).
#include "cuda_common.cuh"

// The geometry of one convolution (kernels::conv::Geometry), every field a long long.
struct MgConv {
  long long n, c_in, h, w, c_out, kh, kw, oh, ow, sh, sw, ph, pw, dh, dw, groups;
};
static_assert(sizeof(MgConv) == 128, "MgConv is 16 long longs");

// The index arithmetic runs in 32 bits whenever every index of the launch fits (`narrow`): a
// 64-bit division is a software routine on the GPU (tens of instructions); the same code in
// `long long` remains for launches too large for 32 bits. Even a 32-bit division by a value
// known only at run time is a dozen instructions, so neither kernel divides per element: a
// block owns whole planes (a column row, an input channel of an image), whose coordinates it
// decodes once, and each thread walks its pixels of the plane `blockDim.x` apart, carrying
// (row, column) forward instead of dividing the flat index. With a division per coordinate
// per element, im2col took ~0.4 ms of the 0.55 ms conv at 32x64x56x56 3x3 on an H100.
namespace mg_conv {

// Whether the largest index each kernel forms fits in an int: x/dx of images first..first+nb,
// the column buffer's extent, and the element count.
__device__ __forceinline__ bool narrow(const MgConv& g, long long first, long long nb, long long rs, long long is) {
  const long long lim = 0x7fffffffLL;
  const long long rows = g.c_in * g.kh * g.kw, p = g.oh * g.ow;
  const long long cols_extent = (rows - 1) * rs + (nb - 1) * is + p;
  return (first + nb) * g.c_in * g.h * g.w <= lim && cols_extent <= lim && rows * nb * p <= lim;
}

// A thread's walk over the pixels t, t + blockDim.x, ... of a plane `width` wide: (y, x) of the
// current pixel, advanced by the step's whole rows and remaining columns with one carry.
template <class I> struct PlaneWalk {
  I y, x, dy, dx, width;
  __device__ __forceinline__ PlaneWalk(I width_) : width(width_) {
    y = (I)threadIdx.x / width;
    x = (I)threadIdx.x - y * width;
    dy = (I)blockDim.x / width;
    dx = (I)blockDim.x - dy * width;
  }
  __device__ __forceinline__ void next() {
    x += dx;
    y += dy;
    if (x >= width) {
      x -= width;
      ++y;
    }
  }
};

// q = a·s exactly for some a in [0, n): a, else -1. A stride of 1 (the common case) skips the
// division.
template <class I> __device__ __forceinline__ I exact_quotient(I q, I s, I n) {
  if (q < 0) return -1;
  const I a = s == 1 ? q : q / s;
  return (a * s == q && a < n) ? a : -1;
}

// One block per column row (r, i) — r = (c·KH + ky)·KW + kx, image i — at a time, its threads
// over the row's P output pixels.
template <class I, class T>
__device__ __forceinline__ void im2col(T* cols, const T* x, const MgConv& g, long long first, long long nb, long long rs,
                                       long long is) {
  const I P = (I)(g.oh * g.ow), K = (I)(g.kh * g.kw), NB = (I)nb, OW = (I)g.ow, KW = (I)g.kw;
  const I H = (I)g.h, W = (I)g.w, CIN = (I)g.c_in, FIRST = (I)first, RS = (I)rs, IS = (I)is;
  const I SH = (I)g.sh, SW = (I)g.sw, PH = (I)g.ph, PW = (I)g.pw, DH = (I)g.dh, DW = (I)g.dw;
  const long long rows = g.c_in * g.kh * g.kw * nb;
  for (long long q = blockIdx.x; q < rows; q += gridDim.x) {
    const I r = (I)q / NB, i = (I)q - r * NB;
    const I c = r / K, tap = r - c * K;
    const I ky = tap / KW, kx = tap - ky * KW;
    const T* plane = x + ((FIRST + i) * CIN + c) * H * W;
    T* dst = cols + r * RS + i * IS;
    PlaneWalk<I> at(OW);
    for (I p = (I)threadIdx.x; p < P; p += (I)blockDim.x, at.next()) {
      const I iy = at.y * SH - PH + ky * DH;
      const I ix = at.x * SW - PW + kx * DW;
      dst[p] = (iy >= 0 && iy < H && ix >= 0 && ix < W) ? plane[iy * W + ix] : (T)0;
    }
  }
}

// One block per input plane (image i, channel c) at a time, its threads over the plane's pixels;
// each sums the column entries of the taps that read its pixel, in the order (ky, then kx).
template <class I, class T>
__device__ __forceinline__ void col2im(T* dx, const T* cols, const MgConv& g, long long first, long long nb, long long rs,
                                       long long is) {
  const I H = (I)g.h, W = (I)g.w, HW = (I)(g.h * g.w), CIN = (I)g.c_in, FIRST = (I)first, RS = (I)rs, IS = (I)is;
  const I KH = (I)g.kh, KW = (I)g.kw, OH = (I)g.oh, OW = (I)g.ow, SH = (I)g.sh, SW = (I)g.sw;
  const I PH = (I)g.ph, PW = (I)g.pw, DH = (I)g.dh, DW = (I)g.dw;
  const long long planes = nb * g.c_in;
  for (long long q = blockIdx.x; q < planes; q += gridDim.x) {
    const I i = (I)q / CIN, c = (I)q - i * CIN;
    T* plane = dx + (FIRST + i) * CIN * HW + c * HW;
    const T* src = cols + i * IS;
    PlaneWalk<I> at(W);
    for (I e = (I)threadIdx.x; e < HW; e += (I)blockDim.x, at.next()) {
      T acc = (T)0;
      for (I ky = 0; ky < KH; ++ky) {
        const I oy = exact_quotient(at.y + PH - ky * DH, SH, OH);  // the output row whose tap ky reads row y
        if (oy < 0) continue;
        for (I kx = 0; kx < KW; ++kx) {
          const I ox = exact_quotient(at.x + PW - kx * DW, SW, OW);
          if (ox < 0) continue;
          const I r = (c * KH + ky) * KW + kx;
          acc += src[r * RS + oy * OW + ox];
        }
      }
      plane[e] = acc;
    }
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
