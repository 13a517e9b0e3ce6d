// Random fills on the device (`uniform_`, `normal_`, and so `rand`, `randn`, dropout masks) from a
// counter-based generator: Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as
// 1, 2, 3", SC 2011), the generator torch's CUDA backend uses too. A counter-based generator
// needs no state per thread: element i of a fill draws from counter (offset + i) under the key
// `seed`, so its value depends on the seed, the fill's offset and i alone, never on the grid,
// the block size or the tensor's strides (i is the row-major index over the shape).
// The backend (rust/py/src/cuda/random.rs) advances `offset` by the element count of each fill,
// so successive fills never reuse a counter.
//
// Kernels (instances in cuda_kernels.rs), D = mg::Uniform (p0 = from, p1 = to) or mg::Normal
// (p0 = mean, p1 = std):
//   mg_random<T, D>(T* out, MgStrides os, MgShape shape, long long n,
//                   unsigned long long seed, unsigned long long offset, double p0, double p1)
//   mg_random_contig<T, D>(T* out, long long n, unsigned long long seed,
//                          unsigned long long offset, double p0, double p1)
// The numbers differ from torch.cuda's for the same seed (torch spreads one counter over four
// elements and uses other conversions); the distributions do not.
#include "cuda_common.cuh"

namespace mg {

// The 64-bit product of two 32-bit words, split into its halves (no __umulhi: the same text
// compiles for the host tests).
__device__ __forceinline__ void mul_hilo(unsigned int a, unsigned int b, unsigned int& hi, unsigned int& lo) {
  const unsigned long long p = (unsigned long long)a * b;
  hi = (unsigned int)(p >> 32);
  lo = (unsigned int)p;
}

// Philox4x32 with 10 rounds: four 32-bit words of output `w` for the 128-bit counter `c` and
// the 64-bit key (k0, k1). Checked against Random123's known-answer vectors
// (tests/test_cuda_random.py).
__device__ __forceinline__ void philox(const unsigned int (&c)[4], unsigned int k0, unsigned int k1, unsigned int (&w)[4]) {
  unsigned int c0 = c[0], c1 = c[1], c2 = c[2], c3 = c[3];
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    unsigned int hi0, lo0, hi1, lo1;
    mul_hilo(0xD2511F53u, c0, hi0, lo0);
    mul_hilo(0xCD9E8D57u, c2, hi1, lo1);
    const unsigned int n0 = hi1 ^ c1 ^ k0, n2 = hi0 ^ c3 ^ k1;
    c0 = n0;
    c1 = lo1;
    c2 = n2;
    c3 = lo0;
    k0 += 0x9E3779B9u;  // the golden ratio and sqrt(3) - 1, as 32-bit fractions (the Weyl key schedule)
    k1 += 0xBB67AE85u;
  }
  w[0] = c0;
  w[1] = c1;
  w[2] = c2;
  w[3] = c3;
}

// The four words of element `i` of a fill: counter (offset + i) in the low two words, key `seed`.
__device__ __forceinline__ void draw_words(unsigned long long seed, unsigned long long offset, long long i, unsigned int (&w)[4]) {
  const unsigned long long n = offset + (unsigned long long)i;
  const unsigned int c[4] = {(unsigned int)n, (unsigned int)(n >> 32), 0u, 0u};
  philox(c, (unsigned int)seed, (unsigned int)(seed >> 32), w);
}

__device__ __forceinline__ float m_nextafter(float x, float toward) { return nextafterf(x, toward); }
__device__ __forceinline__ double m_nextafter(double x, double toward) { return nextafter(x, toward); }

// 53 random bits as a double in [0, 1).
__device__ __forceinline__ double unit53(unsigned int hi, unsigned int lo) {
  const unsigned long long bits = (((unsigned long long)hi << 32) | lo) >> 11;
  return (double)bits * (1.0 / 9007199254740992.0);  // 2^-53
}

// U[from, to): float takes 24 random bits, double 53; a value that rounds up to `to` is moved to
// the largest value below it, so `to` is never drawn (torch's half-open range).
struct Uniform {
  template <class T>
  static __device__ __forceinline__ T draw(const unsigned int (&w)[4], double from, double to) {
    double u;
    if constexpr (same<T, float>::value) {
      u = (double)(w[0] >> 8) * (1.0 / 16777216.0);  // 2^-24
    } else {
      u = unit53(w[0], w[1]);
    }
    T r = (T)(from + (to - from) * u);
    if (r >= (T)to && to > from) r = m_nextafter((T)to, (T)from);
    return r;
  }
};

// N(mean, std) by Box-Muller on two 53-bit uniforms, computed in double and rounded once.
struct Normal {
  template <class T>
  static __device__ __forceinline__ T draw(const unsigned int (&w)[4], double mean, double std) {
    const double u1 = 1.0 - unit53(w[0], w[1]);  // (0, 1]: log(u1) is finite
    const double u2 = unit53(w[2], w[3]);
    const double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
    return (T)(mean + std * z);
  }
};

}  // namespace mg

template <class T, class D>
__global__ void mg_random(T* out, MgStrides os, MgShape shape, long long n, unsigned long long seed,
                          unsigned long long offset, double p0, double p1) {
  const MgStrides* const s[1] = {&os};
  long long off[1];
  for (long long i = mg::thread_start(); i < n; i += mg::thread_step()) {
    mg::offsets<unsigned long long, 1>((unsigned long long)i, shape, s, off);
    unsigned int w[4];
    mg::draw_words(seed, offset, i, w);
    out[off[0]] = D::template draw<T>(w, p0, p1);
  }
}

template <class T, class D>
__global__ void mg_random_contig(T* out, long long n, unsigned long long seed, unsigned long long offset,
                                 double p0, double p1) {
  for (long long i = mg::thread_start(); i < n; i += mg::thread_step()) {
    unsigned int w[4];
    mg::draw_words(seed, offset, i, w);
    out[i] = D::template draw<T>(w, p0, p1);
  }
}
