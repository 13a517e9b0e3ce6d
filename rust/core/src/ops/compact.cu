// Stream compaction on the device for the ops whose output size depends on the data (mask.rs:
// nonzero, masked_select, and through nonzero the bool masks of advanced indexing). Three
// passes over a contiguous source of n elements cut into chunks of MG_COMPACT_CHUNK:
//
//   1. mg_compact_count<T>   counts[c] = the number of kept elements of chunk c (nonzero, or
//                            mask true for masked_select: then T is bool and src the mask)
//   2. mg_compact_scan       counts becomes its exclusive prefix sum, counts[nchunks] the total
//                            (one block, a fixed order: integers, so exact anyway)
//   3. mg_nonzero_write<T> / mg_masked_select_write<T>
//                            each block walks its chunk in tiles of blockDim.x elements, a
//                            block-wide prefix sum of the tile's flags giving each kept element
//                            its place: the output is in row-major order, as the CPU's.
//
// The host reads counts[nchunks] (8 bytes, the only copy back) to size the output between 2
// and 3. Kernels (instances in cuda_kernels.rs); blockDim.x must be MG_COMPACT_THREADS, any grid:
//   mg_compact_count<T>(long long* counts, const T* src, long long n)
//   mg_compact_scan(long long* counts, long long nchunks)            grid 1
//   mg_nonzero_write<T>(long long* out, const long long* counts, const T* src, long long n,
//                       MgShape shape)    out: (ndim, total) row-major, coordinate d of the
//                                         p-th kept element at out[d * total + p]
//   mg_masked_select_write<T>(T* out, const long long* counts, const T* src, const bool* mask,
//                             long long n)
//
// Writes and reads through one bool mask (advanced/mask_index.rs: `x[mask] = v`, index_put_
// with accumulate, `x[:, mask]`, the backward of masked_select and of `x[mask]`): pass 3 is
// mg_compact_rank, which gives every true element its rank (its place among the true elements
// in row-major order) and every false one -1; then one thread per element of the indexed
// tensor's shape reads its rank (ranks broadcast over the dims the mask does not cover):
//   mg_compact_rank(long long* rank, const long long* counts, const bool* mask, long long n)
//   mg_masked_put<T, ACC>(T* dst, MgStrides ds, const T* src, MgStrides ss, const long long* rank,
//                         MgStrides rs, MgShape shape, long long n, long long rank_stride)
//     where rank r >= 0: dst[ds] = src[ss + r * rank_stride] (`+=` when ACC; integers wrap,
//     bool is `or`, half types add in float and round). `shape` is dst's; `ss` has stride 0 on
//     the mask's dims (the values' rank dim is rank_stride).
//   mg_masked_take<T>(T* dst, MgStrides ds, const T* src, MgStrides ss, const long long* rank,
//                     MgStrides rs, MgShape shape, long long n, long long rank_stride)
//     the read: `shape` is src's, `ds` has stride 0 on the mask's dims; where r >= 0:
//     dst[ds + r * rank_stride] = src[ss].
// True elements are distinct, so every destination element is written at most once: no
// atomics, no order to fix, the same bits on every grid.
#include "cuda_common.cuh"

#define MG_COMPACT_THREADS 256
#define MG_COMPACT_CHUNK 4096

namespace mg {

__device__ __forceinline__ long long compact_chunks(long long n) {
  return (n + MG_COMPACT_CHUNK - 1) / MG_COMPACT_CHUNK;
}

// Walks the chunks of this block; `keep(j)` says whether element j is kept, `emit(j, p)` writes
// kept element j at output place p. Places follow j's order within and across chunks.
// With ALL, `emit(j, -1)` is called for the elements that are not kept, too.
template <bool ALL = false, class Keep, class Emit>
__device__ void compact_write(const long long* counts, long long n, const Keep& keep, const Emit& emit) {
  __shared__ long long pos[MG_COMPACT_THREADS];
  if (blockDim.x != MG_COMPACT_THREADS) __trap();
  const int t = threadIdx.x;
  const long long nchunks = compact_chunks(n);
  for (long long c = blockIdx.x; c < nchunks; c += gridDim.x) {
    const long long lo = c * MG_COMPACT_CHUNK;
    const long long hi = lo + MG_COMPACT_CHUNK < n ? lo + MG_COMPACT_CHUNK : n;
    long long base = counts[c];
    for (long long tile = lo; tile < hi; tile += MG_COMPACT_THREADS) {
      const long long j = tile + t;
      const bool f = j < hi && keep(j);
      pos[t] = f ? 1 : 0;
      __syncthreads();
      // inclusive prefix sum of the tile's flags (Hillis-Steele)
      for (int d = 1; d < MG_COMPACT_THREADS; d <<= 1) {
        const long long v = t >= d ? pos[t - d] : 0;
        __syncthreads();
        pos[t] += v;
        __syncthreads();
      }
      if (f) {
        emit(j, base + pos[t] - 1);
      } else if (ALL && j < hi) {
        emit(j, -1LL);
      }
      const long long tile_total = pos[MG_COMPACT_THREADS - 1];
      __syncthreads();  // pos is rewritten by the next tile
      base += tile_total;
    }
  }
}

}  // namespace mg

template <class T>
__global__ void mg_compact_count(long long* counts, const T* src, long long n) {
  __shared__ long long part[MG_COMPACT_THREADS];
  if (blockDim.x != MG_COMPACT_THREADS) __trap();
  const int t = threadIdx.x;
  const long long nchunks = mg::compact_chunks(n);
  for (long long c = blockIdx.x; c < nchunks; c += gridDim.x) {
    const long long lo = c * MG_COMPACT_CHUNK;
    const long long hi = lo + MG_COMPACT_CHUNK < n ? lo + MG_COMPACT_CHUNK : n;
    long long k = 0;
    for (long long j = lo + t; j < hi; j += MG_COMPACT_THREADS) k += mg::cast<bool>(src[j]) ? 1 : 0;
    part[t] = k;
    __syncthreads();
    for (int s = MG_COMPACT_THREADS / 2; s > 0; s >>= 1) {
      if (t < s) part[t] += part[t + s];
      __syncthreads();
    }
    if (t == 0) counts[c] = part[0];
    __syncthreads();
  }
}

// One block: thread t owns a contiguous segment of the counts, sums it, the segment sums are
// scanned by thread 0 in order, then each thread rewrites its segment as exclusive prefixes.
__global__ void mg_compact_scan(long long* counts, long long nchunks) {
  __shared__ long long part[MG_COMPACT_THREADS];
  if (blockDim.x != MG_COMPACT_THREADS) __trap();
  const int t = threadIdx.x;
  const long long seg = (nchunks + MG_COMPACT_THREADS - 1) / MG_COMPACT_THREADS;
  const long long lo = t * seg < nchunks ? t * seg : nchunks;
  const long long hi = lo + seg < nchunks ? lo + seg : nchunks;
  long long s = 0;
  for (long long c = lo; c < hi; ++c) s += counts[c];
  part[t] = s;
  __syncthreads();
  if (t == 0) {
    long long run = 0;
    for (int i = 0; i < MG_COMPACT_THREADS; ++i) {
      const long long v = part[i];
      part[i] = run;
      run += v;
    }
    counts[nchunks] = run;
  }
  __syncthreads();
  long long run = part[t];
  for (long long c = lo; c < hi; ++c) {
    const long long v = counts[c];
    counts[c] = run;
    run += v;
  }
}

template <class T>
__global__ void mg_nonzero_write(long long* out, const long long* counts, const T* src, long long n, MgShape shape) {
  const long long total = counts[mg::compact_chunks(n)];
  mg::compact_write(
      counts, n, [&](long long j) { return mg::cast<bool>(src[j]); },
      [&](long long j, long long p) {
        long long rem = j;
        for (int d = shape.ndim - 1; d >= 0; --d) {
          const long long size = shape.sizes[d];
          out[d * total + p] = rem % size;
          rem /= size;
        }
      });
}

template <class T>
__global__ void mg_masked_select_write(T* out, const long long* counts, const T* src, const bool* mask, long long n) {
  mg::compact_write(
      counts, n, [&](long long j) { return mask[j]; }, [&](long long j, long long p) { out[p] = src[j]; });
}

__global__ void mg_compact_rank(long long* rank, const long long* counts, const bool* mask, long long n) {
  mg::compact_write<true>(
      counts, n, [&](long long j) { return mask[j]; }, [&](long long j, long long p) { rank[j] = p; });
}

template <class T, bool ACC>
__global__ void mg_masked_put(T* dst, MgStrides ds, const T* src, MgStrides ss, const long long* rank, MgStrides rs,
                              MgShape shape, long long n, long long rank_stride) {
  const MgStrides* const s[3] = {&ds, &ss, &rs};
  mg::for_each_strided<3>(n, shape, s, [&](const long long (&off)[3]) {
    const long long r = rank[off[2]];
    if (r < 0) return;
    const T v = src[off[1] + r * rank_stride];
    if constexpr (ACC) {
      dst[off[0]] = mg::scatter_acc(dst[off[0]], v);
    } else {
      dst[off[0]] = v;
    }
  });
}

template <class T>
__global__ void mg_masked_take(T* dst, MgStrides ds, const T* src, MgStrides ss, const long long* rank, MgStrides rs,
                               MgShape shape, long long n, long long rank_stride) {
  const MgStrides* const s[3] = {&ds, &ss, &rs};
  mg::for_each_strided<3>(n, shape, s, [&](const long long (&off)[3]) {
    const long long r = rank[off[2]];
    if (r >= 0) dst[off[0] + r * rank_stride] = src[off[1]];
  });
}
