// 2-d pooling (pool.rs), one thread per output (forward) or per input element (backward), each
// summing in the CPU kernel's order (kernels/pool.rs), so results are the CPU's bit for bit.
//
// Kernels (instances in cuda_kernels.rs):
//   mg_max_pool2d<T>(T* out, long long* idx, const T* x, MgPool g, long long planes)
//   mg_max_pool2d_backward<T>(T* dx, const T* grad, const long long* idx, MgPool g, long long planes)
//   mg_avg_pool2d<T>(T* out, const T* x, const long long* spans, long long h, long long w,
//                    long long oh, long long ow, long long planes, int divisor, double value)
//   mg_avg_pool2d_backward<T>(T* dx, const T* grad, <the same>)
// Every tensor is contiguous (planes, H, W) / (planes, OH, OW). Max pooling records torch's
// index (flat position in the plane): the first maximum wins ties, a NaN is always taken. Its
// backward gathers, for each input element, the gradients of the windows that cover it and
// chose it (as torch.cuda's kernel does; a window that covers no input element has output -inf
// and its gradient goes nowhere). Average pooling reads its windows from `spans`: (start, end,
// padded) per output row, then per output column (kernels::pool::Span), and divides by
// `value` (divisor 0: divisor_override), the padded window (1) or the covered one (2).
#include "cuda_common.cuh"

// kernels::pool::MaxGeometry, every field a long long.
struct MgPool {
  long long h, w, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
};
static_assert(sizeof(MgPool) == 96, "MgPool is 12 long longs");

namespace mg {
// The taps of max window `o` along one dim (kernels::pool::max_taps): positions
// origin + t·dilation for t < count; `origin` is also torch's index origin.
struct PoolTaps {
  long long origin, count;
};
__device__ __forceinline__ PoolTaps pool_taps(long long o, long long size, long long k, long long s, long long pad, long long d) {
  const long long start = o * s - pad;
  const long long skip = start < 0 ? (-start + d - 1) / d : 0;
  const long long origin = start + skip * d;
  long long count = 0;
  if (skip < k && origin < size) {
    const long long left = (size - origin + d - 1) / d;
    count = k - skip < left ? k - skip : left;
  }
  return PoolTaps{origin, count};
}

// The windows (spans[3·o], spans[3·o + 1]) that cover position `at`: the first whose end is
// past it, then every one after it that starts at or before it (starts and ends never decrease).
__device__ __forceinline__ long long first_covering(const long long* spans, long long n, long long at) {
  long long lo = 0, hi = n;
  while (lo < hi) {
    const long long mid = (lo + hi) / 2;
    if (spans[3 * mid + 1] > at) hi = mid; else lo = mid + 1;
  }
  return lo;
}

__device__ __forceinline__ double avg_divisor(const long long* r, const long long* c, int divisor, double value) {
  if (divisor == 0) return value;
  if (divisor == 1) return (double)(r[2] * c[2]);
  return (double)((r[1] - r[0]) * (c[1] - c[0]));
}
}  // namespace mg

template <class T>
__global__ void mg_max_pool2d(T* out, long long* idx, const T* x, MgPool g, long long planes) {
  const long long po = g.oh * g.ow;
  const long long total = planes * po;
  for (long long e = mg::thread_start(); e < total; e += mg::thread_step()) {
    const long long ox = e % g.ow, oy = (e / g.ow) % g.oh, p = e / po;
    const mg::PoolTaps r = mg::pool_taps(oy, g.h, g.kh, g.sh, g.ph, g.dh);
    const mg::PoolTaps c = mg::pool_taps(ox, g.w, g.kw, g.sw, g.pw, g.dw);
    const T* plane = x + p * g.h * g.w;
    T best = (T)(-mg::inf());
    long long at = r.origin * g.w + c.origin;
    for (long long ty = 0; ty < r.count; ++ty) {
      const long long row = (r.origin + ty * g.dh) * g.w;
      for (long long tx = 0; tx < c.count; ++tx) {
        const long long pos = row + c.origin + tx * g.dw;
        const T v = plane[pos];
        if (v > best || mg::is_nan(v)) {
          best = v;
          at = pos;
        }
      }
    }
    out[e] = best;
    idx[e] = at;
  }
}

template <class T>
__global__ void mg_max_pool2d_backward(T* dx, const T* grad, const long long* idx, MgPool g, long long planes) {
  const long long pi = g.h * g.w, po = g.oh * g.ow;
  const long long total = planes * pi;
  for (long long e = mg::thread_start(); e < total; e += mg::thread_step()) {
    const long long pos = e % pi, p = e / pi;
    const long long iy = pos / g.w, ix = pos % g.w;
    // Windows whose taps can reach (iy, ix): oy·sh ∈ [iy + ph - (kh-1)·dh, iy + ph].
    const long long ylo = iy + g.ph - (g.kh - 1) * g.dh, xlo = ix + g.pw - (g.kw - 1) * g.dw;
    const long long oy0 = ylo <= 0 ? 0 : (ylo + g.sh - 1) / g.sh, ox0 = xlo <= 0 ? 0 : (xlo + g.sw - 1) / g.sw;
    long long oy1 = (iy + g.ph) / g.sh, ox1 = (ix + g.pw) / g.sw;
    if (oy1 > g.oh - 1) oy1 = g.oh - 1;
    if (ox1 > g.ow - 1) ox1 = g.ow - 1;
    T acc = (T)0;
    for (long long oy = oy0; oy <= oy1; ++oy) {
      for (long long ox = ox0; ox <= ox1; ++ox) {
        const long long o = p * po + oy * g.ow + ox;
        if (idx[o] == pos) acc += grad[o];
      }
    }
    dx[e] = acc;
  }
}

template <class T>
__global__ void mg_avg_pool2d(T* out, const T* x, const long long* spans, long long h, long long w, long long oh, long long ow,
                              long long planes, int divisor, double value) {
  const long long po = oh * ow;
  const long long total = planes * po;
  for (long long e = mg::thread_start(); e < total; e += mg::thread_step()) {
    const long long ox = e % ow, oy = (e / ow) % oh, p = e / po;
    const long long* r = spans + 3 * oy;
    const long long* c = spans + 3 * (oh + ox);
    const T* plane = x + p * h * w;
    T acc = (T)0;
    for (long long iy = r[0]; iy < r[1]; ++iy)
      for (long long ix = c[0]; ix < c[1]; ++ix) acc += plane[iy * w + ix];
    out[e] = acc / (T)mg::avg_divisor(r, c, divisor, value);
  }
}

template <class T>
__global__ void mg_avg_pool2d_backward(T* dx, const T* grad, const long long* spans, long long h, long long w, long long oh,
                                       long long ow, long long planes, int divisor, double value) {
  const long long pi = h * w, po = oh * ow;
  const long long total = planes * pi;
  const long long* cols = spans + 3 * oh;
  for (long long e = mg::thread_start(); e < total; e += mg::thread_step()) {
    const long long ix = e % w, iy = (e / w) % h, p = e / pi;
    T acc = (T)0;
    for (long long oy = mg::first_covering(spans, oh, iy); oy < oh && spans[3 * oy] <= iy; ++oy) {
      for (long long ox = mg::first_covering(cols, ow, ix); ox < ow && cols[3 * ox] <= ix; ++ox) {
        const long long* r = spans + 3 * oy;
        const long long* c = cols + 3 * ox;
        acc += grad[p * po + oy * ow + ox] / (T)mg::avg_divisor(r, c, divisor, value);
      }
    }
    dx[e] = acc;
  }
}
