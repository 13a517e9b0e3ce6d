// Advanced indexing (advanced/: `x[indices]` and `index_put_`, with accumulate=True for
// IndexBackward0), and the kernels behind them as the op layer hands them over: a walk of outer
// dims, a table of index positions and inner dims (kernels::index::Walk). The op layer reads
// the index values on the host (to check them, torch's messages) and turns them into the
// table: `pos[2p]` is the offset of position p in the written tensor `a`, `pos[2p + 1]` in the
// read tensor `b`, both relative to the strided offsets.
//
// Kernels (instances in cuda_kernels.rs):
//   mg_index_gather<T>(T* a, MgStrides as, const T* b, MgStrides bs, MgStrides ps, MgShape shape,
//                      long long n, const long long* pos)
//     `shape` is (outer dims, positions, inner dims); `as` and `bs` have stride 0 on the
//     positions dim; `ps` (offset 0) has stride 1 there and 0 elsewhere, so its offset is p.
//     One thread per element: a[as + pos[2p]] = b[bs + pos[2p + 1]].
//   mg_index_scatter<T, ACC>(T* a, MgStrides as, const T* b, MgStrides bs, MgShape shape,
//                            long long n, const long long* pos, long long npos)
//     `shape` is (outer dims, inner dims); each thread owns one element of it and applies the
//     `npos` positions in order: a[as + pos[2p]] = b[bs + pos[2p + 1]] (`+=` when ACC; integers
//     wrap, bool is `or`).
//
//   mg_index_table_rows(long long* table, MgStrides ts, MgStrides rs, MgShape shape, long long n)
//   mg_index_table_add(long long* table, MgStrides ts, const long long* idx, MgStrides is,
//                      MgShape shape, long long n, long long size, long long stride, int first)
//     The position table made on the device (Backend::index_*_table), one thread per position
//     p of `shape` (the index tensors' broadcast shape): `ts` walks the table's column (offset 0
//     or 1, strides twice the row-major ones). rows writes the row-major side's offset, which is
//     p's offset under `rs` (no memory is read through rs); add adds one index's term,
//     wrap(idx[is(p)]) * stride (a negative value counts from `size`), to the other column,
//     overwriting it when `first`. The op layer has checked every value, so nothing here can be
//     out of range. Summing the terms in index order gives the host table's offsets exactly.
//
// Determinism: positions may repeat (x[[0, 0]] += ...), and one thread applies every update of
// the elements it owns in position order, so the last write wins and sums add in order, as on
// the CPU: no atomics, the same bits every run. The cost: a scatter with no outer or inner dims
// (a 1-D index_put_) runs on one thread.
#include "cuda_common.cuh"

template <class T>
__global__ void mg_index_gather(T* a, MgStrides as, const T* b, MgStrides bs, MgStrides ps, MgShape shape, long long n,
                                const long long* pos) {
  const MgStrides* const s[3] = {&as, &bs, &ps};
  mg::for_each_strided<3>(n, shape, s, [&](const long long (&off)[3]) {
    const long long p = off[2];
    a[off[0] + pos[2 * p]] = b[off[1] + pos[2 * p + 1]];
  });
}

template <class T, bool ACC>
__global__ void mg_index_scatter(T* a, MgStrides as, const T* b, MgStrides bs, MgShape shape, long long n,
                                 const long long* pos, long long npos) {
  const MgStrides* const s[2] = {&as, &bs};
  mg::for_each_strided<2>(n, shape, s, [&](const long long (&off)[2]) {
    for (long long p = 0; p < npos; ++p) {
      T* d = a + off[0] + pos[2 * p];
      const T v = b[off[1] + pos[2 * p + 1]];
      if constexpr (ACC) {
        *d = mg::scatter_acc(*d, v);
      } else {
        *d = v;
      }
    }
  });
}

__global__ void mg_index_table_rows(long long* table, MgStrides ts, MgStrides rs, MgShape shape, long long n) {
  const MgStrides* const s[2] = {&ts, &rs};
  mg::for_each_strided<2>(n, shape, s, [&](const long long (&off)[2]) { table[off[0]] = off[1]; });
}

__global__ void mg_index_table_add(long long* table, MgStrides ts, const long long* idx, MgStrides is, MgShape shape,
                                   long long n, long long size, long long stride, int first) {
  const MgStrides* const s[2] = {&ts, &is};
  mg::for_each_strided<2>(n, shape, s, [&](const long long (&off)[2]) {
    long long v = idx[off[1]];
    if (v < 0) v += size;
    table[off[0]] = (first ? 0 : table[off[0]]) + v * stride;
  });
}
