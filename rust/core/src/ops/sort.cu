// Sorting and selection along the last dim of contiguous rows (sort.rs: sort, argsort, topk,
// kthvalue, median; the op layer moves the dim last). NaN ranks above every number.
//
// Rows of up to MG_BITONIC_MAX elements: values AND indices are the CPU's, bit for bit, ties
// included (kernels/src/sort/):
//   - which of equal values comes first is decided by the algorithm on the CPU (torch leaves it
//     to libstdc++'s std::sort / nth_element / heaps for sort(stable=False) and topk, to ATen's
//     quickselect for kthvalue). So the kernels below run the same algorithms, step for step,
//     one thread per row (a port of kernels/src/sort/libstdcxx.rs and `quickselect`).
//   - where the answer is the stable order (sort(stable=True), median's ties by index), any
//     correct sort of (value, index) keys gives it: a block sorts the row in shared memory
//     (bitonic network).
// Longer rows (any number of them) are sorted in the stable order by many blocks (mg_sort_runs,
// then mg_sort_merge passes, at the end of this file), WHATEVER `stable` says, and topk,
// kthvalue and median pick from that order: values are the CPU's (up to the sign of a zero
// that ties with another zero), and equal values come in index order (ties are unspecified in
// torch; docs/gpu.md, "Sorting and scans").
//
// Kernels (instances in cuda_kernels.rs); src is [rows, n] (n >= 1), outputs [rows, width]:
//   mg_sort<T>(T* values, long long* indices, const T* src, long long rows, long long n,
//              int descending, int stable)                      one thread per row, any n
//   mg_sort_bitonic<T>(values, indices, src, rows, n, int descending)
//                                 one block of MG_SORT_THREADS per row, n <= MG_BITONIC_MAX,
//                                 the stable order
//   mg_topk<T>(values, indices, src, T* sv, long long* si, rows, n, long long k, int largest,
//              int sorted)                                     sv/si: [rows, n] scratch
//   mg_kthvalue<T>(values, indices, src, sv, si, rows, n, long long k)   k 1-based
//   mg_median<T>(values, indices, src, sv, si, rows, n, int all)   the first NaN of a row
//                                 that has one, else the lower median: ties by index (median
//                                 along a dim), or nth_element's pick by value (`all`: median())
#include "cuda_common.cuh"

#define MG_SORT_THREADS 256
#define MG_BITONIC_MAX 2048

namespace mg {

template <class T> struct Pair {
  T v;
  long long i;
};

// A row as two arrays moved together, as the CPU moves (value, index) pairs.
template <class T> struct Row {
  T* v;
  long long* ix;
  __device__ __forceinline__ Pair<T> get(long long k) const { return Pair<T>{v[k], ix[k]}; }
  __device__ __forceinline__ void set(long long k, const Pair<T>& p) const {
    v[k] = p.v;
    ix[k] = p.i;
  }
  __device__ __forceinline__ void swap(long long a, long long b) const {
    const Pair<T> t = get(a);
    set(a, get(b));
    set(b, t);
  }
};

// torch's orders: ascending with NaN last, descending with NaN first; `tie` breaks equal values
// by index (the stable order), else equal values are unordered (libstdc++ decides).
struct Order {
  bool desc, tie;
  template <class T> __device__ __forceinline__ bool value_before(T a, T b) const {
    return desc ? ((is_nan(a) && !is_nan(b)) || a > b) : ((!is_nan(a) && is_nan(b)) || a < b);
  }
  template <class T> __device__ __forceinline__ bool operator()(const Pair<T>& a, const Pair<T>& b) const {
    if (value_before(a.v, b.v)) return true;
    if (!tie || value_before(b.v, a.v)) return false;
    return a.i < b.i;
  }
};

// ----- libstdc++'s algorithms (kernels/src/sort/libstdcxx.rs, which cites each routine) -----

// std::__lg: floor(log2(n)) for n > 0.
__device__ __forceinline__ long long lg(long long n) {
  long long r = 0;
  while (n >>= 1) ++r;
  return r;
}

#define MG_THRESHOLD 16

template <class T, class L>
__device__ void move_median_to_first(const Row<T>& v, long long result, long long a, long long b, long long c, const L& less) {
  long long pick;
  if (less(v.get(a), v.get(b))) {
    if (less(v.get(b), v.get(c))) pick = b;
    else if (less(v.get(a), v.get(c))) pick = c;
    else pick = a;
  } else if (less(v.get(a), v.get(c))) {
    pick = a;
  } else if (less(v.get(b), v.get(c))) {
    pick = c;
  } else {
    pick = b;
  }
  v.swap(result, pick);
}

template <class T, class L>
__device__ long long unguarded_partition(const Row<T>& v, long long first, long long last, long long pivot, const L& less) {
  for (;;) {
    while (less(v.get(first), v.get(pivot))) ++first;
    --last;
    while (less(v.get(pivot), v.get(last))) --last;
    if (first >= last) return first;
    v.swap(first, last);
    ++first;
  }
}

template <class T, class L>
__device__ long long unguarded_partition_pivot(const Row<T>& v, long long first, long long last, const L& less) {
  const long long mid = first + (last - first) / 2;
  move_median_to_first(v, first, first + 1, mid, last - 1, less);
  return unguarded_partition(v, first + 1, last, first, less);
}

template <class T, class L>
__device__ void unguarded_linear_insert(const Row<T>& v, long long last, const L& less) {
  const Pair<T> val = v.get(last);
  long long next = last - 1;
  while (less(val, v.get(next))) {
    v.set(last, v.get(next));
    last = next;
    --next;
  }
  v.set(last, val);
}

template <class T, class L>
__device__ void insertion_sort(const Row<T>& v, long long first, long long last, const L& less) {
  if (first == last) return;
  for (long long i = first + 1; i < last; ++i) {
    if (less(v.get(i), v.get(first))) {
      const Pair<T> val = v.get(i);
      for (long long j = i; j > first; --j) v.set(j, v.get(j - 1));  // copy_within(first..i, first + 1)
      v.set(first, val);
    } else {
      unguarded_linear_insert(v, i, less);
    }
  }
}

template <class T, class L>
__device__ void final_insertion_sort(const Row<T>& v, long long first, long long last, const L& less) {
  if (last - first > MG_THRESHOLD) {
    insertion_sort(v, first, first + MG_THRESHOLD, less);
    for (long long i = first + MG_THRESHOLD; i < last; ++i) unguarded_linear_insert(v, i, less);
  } else {
    insertion_sort(v, first, last, less);
  }
}

// ----- heaps (a max-heap under `less`, rooted at `first`) -----

template <class T, class L>
__device__ void push_heap_hole(const Row<T>& v, long long first, long long hole, long long top, const Pair<T>& value, const L& less) {
  long long parent = (hole - 1) / 2;
  while (hole > top && less(v.get(first + parent), value)) {
    v.set(first + hole, v.get(first + parent));
    hole = parent;
    parent = (hole - 1) / 2;
  }
  v.set(first + hole, value);
}

template <class T, class L>
__device__ void adjust_heap(const Row<T>& v, long long first, long long hole, long long len, const Pair<T>& value, const L& less) {
  const long long top = hole;
  long long child = hole;
  while (len >= 1 && child < (len - 1) / 2) {
    child = 2 * (child + 1);
    if (less(v.get(first + child), v.get(first + child - 1))) --child;
    v.set(first + hole, v.get(first + child));
    hole = child;
  }
  if ((len & 1) == 0 && len >= 2 && child == (len - 2) / 2) {
    child = 2 * (child + 1);
    v.set(first + hole, v.get(first + child - 1));
    hole = child - 1;
  }
  push_heap_hole(v, first, hole, top, value, less);
}

template <class T, class L>
__device__ void make_heap(const Row<T>& v, long long first, long long last, const L& less) {
  const long long len = last - first;
  if (len < 2) return;
  for (long long parent = (len - 2) / 2;; --parent) {
    adjust_heap(v, first, parent, len, v.get(first + parent), less);
    if (parent == 0) return;
  }
}

template <class T, class L>
__device__ void pop_heap_into(const Row<T>& v, long long first, long long last, long long result, const L& less) {
  const Pair<T> value = v.get(result);
  v.set(result, v.get(first));
  adjust_heap(v, first, 0, last - first, value, less);
}

template <class T, class L>
__device__ void sort_heap(const Row<T>& v, long long first, long long last, const L& less) {
  while (last - first > 1) {
    --last;
    pop_heap_into(v, first, last, last, less);
  }
}

template <class T, class L>
__device__ void heap_select(const Row<T>& v, long long first, long long middle, long long last, const L& less) {
  make_heap(v, first, middle, less);
  for (long long i = middle; i < last; ++i) {
    if (less(v.get(i), v.get(first))) pop_heap_into(v, first, middle, i, less);
  }
}

// std::sort. libstdc++'s __introsort_loop recurses on the right part and loops on the left;
// the parts are disjoint, so an explicit stack (depth <= 2 lg n < 128) gives the same result.
template <class T, class L>
__device__ void introsort(const Row<T>& v, long long n, const L& less) {
  if (n <= 1) return;
  long long stack[128][3];
  int top = 0;
  stack[top][0] = 0, stack[top][1] = n, stack[top][2] = 2 * lg(n), ++top;
  while (top > 0) {
    --top;
    const long long first = stack[top][0];
    long long last = stack[top][1], depth = stack[top][2];
    while (last - first > MG_THRESHOLD) {
      if (depth == 0) {
        heap_select(v, first, last, last, less);
        sort_heap(v, first, last, less);
        break;
      }
      --depth;
      const long long cut = unguarded_partition_pivot(v, first, last, less);
      stack[top][0] = cut, stack[top][1] = last, stack[top][2] = depth, ++top;
      last = cut;
    }
  }
  final_insertion_sort(v, 0, n, less);
}

template <class T, class L>
__device__ void partial_sort(const Row<T>& v, long long n, long long middle, const L& less) {
  heap_select(v, 0, middle, n, less);
  sort_heap(v, 0, middle, less);
}

template <class T, class L>
__device__ void nth_element(const Row<T>& v, long long n, long long nth, const L& less) {
  if (n == 0 || nth == n) return;
  long long first = 0, last = n, depth = 2 * lg(n);
  while (last - first > 3) {
    if (depth == 0) {
      heap_select(v, first, nth + 1, last, less);
      v.swap(first, nth);
      return;
    }
    --depth;
    const long long cut = unguarded_partition_pivot(v, first, last, less);
    if (cut <= nth) first = cut;
    else last = cut;
  }
  insertion_sort(v, first, last, less);
}

// ATen's quick_select_template with the comparator "greater, or NaN" (kernels/src/sort).
template <class T>
__device__ void quickselect(const Row<T>& v, long long n, long long k) {
  auto gt = [](T a, T b) { return (is_nan(a) && !is_nan(b)) || a > b; };
  long long l = 0, r = n - 1;
  for (;;) {
    if (r <= l) return;
    if (r == l + 1) {
      if (gt(v.v[l], v.v[r])) v.swap(l, r);
      return;
    }
    const long long p = (l + r) >> 1;
    v.swap(p, l + 1);
    if (gt(v.v[l + 1], v.v[r])) v.swap(l + 1, r);
    if (gt(v.v[l], v.v[r])) v.swap(l, r);
    if (gt(v.v[l + 1], v.v[l])) v.swap(l + 1, l);
    long long i = l + 1, j = r;
    const T piv = v.v[l];
    for (;;) {
      do ++i; while (gt(piv, v.v[i]));
      do --j; while (gt(v.v[j], piv));
      if (j < i) break;
      v.swap(i, j);
    }
    v.swap(l, j);
    if (j <= k) l = i;
    if (j >= k) r = j - 1;
  }
}

// Copies row r of src into (v, ix) with indices 0..n.
template <class T>
__device__ __forceinline__ void load_row(const Row<T>& row, const T* src, long long n) {
  for (long long j = 0; j < n; ++j) row.set(j, Pair<T>{src[j], j});
}

}  // namespace mg

template <class T>
__global__ void mg_sort(T* values, long long* indices, const T* src, long long rows, long long n, int descending,
                        int stable) {
  for (long long r = mg::thread_start(); r < rows; r += mg::thread_step()) {
    const mg::Row<T> row{values + r * n, indices + r * n};
    mg::load_row(row, src + r * n, n);
    mg::introsort(row, n, mg::Order{descending != 0, stable != 0});
  }
}

// The stable order of a row of n <= MG_BITONIC_MAX by a bitonic network over the next power of
// two (padding slots rank after every element). Keys (value, index) are distinct, so the
// network's result is the one sorted order whatever its comparisons. blockDim.x must be
// MG_SORT_THREADS; blocks stride over rows.
namespace mg {

// Sorts sv[0, len) (len <= MG_BITONIC_MAX) with its local indices si under the stable `order`,
// by a bitonic network over the next power of two (padding slots, index >= len, rank after
// every element). Keys (value, index) are distinct, so the network's result is the one sorted
// order whatever its comparisons. The whole block calls it; ends with a barrier.
template <class T>
__device__ void bitonic_shared(T* sv, long long* si, const T* src, long long len, const Order& order) {
  long long m = 1;
  while (m < len) m <<= 1;
  for (long long j = threadIdx.x; j < m; j += blockDim.x) {
    if (j < len) sv[j] = src[j];
    si[j] = j;  // j >= len: padding, recognised by its index
  }
  __syncthreads();
  for (long long size = 2; size <= m; size <<= 1) {
    for (long long stride = size >> 1; stride > 0; stride >>= 1) {
      for (long long j = threadIdx.x; j < m; j += blockDim.x) {
        const long long p = j ^ stride;
        if (p > j) {
          const bool up = (j & size) == 0;
          const bool jpad = si[j] >= len, ppad = si[p] >= len;
          bool p_first;  // does the element at p belong before the one at j?
          if (jpad || ppad) {
            p_first = jpad && (!ppad || si[p] < si[j]);
          } else {
            p_first = order(Pair<T>{sv[p], si[p]}, Pair<T>{sv[j], si[j]});
          }
          if (p_first == up) {
            const T tv = sv[j];
            const long long ti = si[j];
            sv[j] = sv[p], si[j] = si[p];
            sv[p] = tv, si[p] = ti;
          }
        }
      }
      __syncthreads();
    }
  }
}

}  // namespace mg

// The stable order of a row of n <= MG_BITONIC_MAX (mg::bitonic_shared). blockDim.x must be
// MG_SORT_THREADS; blocks stride over rows.
template <class T>
__global__ void mg_sort_bitonic(T* values, long long* indices, const T* src, long long rows, long long n,
                                int descending) {
  __shared__ T sv[MG_BITONIC_MAX];
  __shared__ long long si[MG_BITONIC_MAX];
  const mg::Order order{descending != 0, true};
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    mg::bitonic_shared(sv, si, src + r * n, n, order);
    for (long long j = threadIdx.x; j < n; j += blockDim.x) {
      values[r * n + j] = sv[j];
      indices[r * n + j] = si[j];
    }
    __syncthreads();  // the shared arrays are free for the next row
  }
}

// torch's CPU topk: partial_sort when k * 64 <= n, else nth_element then a sort of the first
// k - 1 when `sorted` (kernels/src/sort/mod.rs, topk_rows).
template <class T>
__global__ void mg_topk(T* values, long long* indices, const T* src, T* sv, long long* si, long long rows,
                        long long n, long long k, int largest, int sorted) {
  const mg::Order order{largest != 0, false};
  for (long long r = mg::thread_start(); r < rows; r += mg::thread_step()) {
    const mg::Row<T> row{sv + r * n, si + r * n};
    mg::load_row(row, src + r * n, n);
    if (k * 64 <= n) {
      mg::partial_sort(row, n, k, order);
    } else {
      mg::nth_element(row, n, k - 1, order);
      if (sorted) mg::introsort(row, k - 1, order);
    }
    for (long long j = 0; j < k; ++j) {
      values[r * k + j] = row.v[j];
      indices[r * k + j] = row.ix[j];
    }
  }
}

template <class T>
__global__ void mg_kthvalue(T* values, long long* indices, const T* src, T* sv, long long* si, long long rows,
                            long long n, long long k) {
  for (long long r = mg::thread_start(); r < rows; r += mg::thread_step()) {
    const mg::Row<T> row{sv + r * n, si + r * n};
    mg::load_row(row, src + r * n, n);
    mg::quickselect(row, n, k - 1);
    values[r] = row.v[k - 1];
    indices[r] = row.ix[k - 1];
  }
}

template <class T>
__global__ void mg_median(T* values, long long* indices, const T* src, T* sv, long long* si, long long rows,
                          long long n, int all) {
  for (long long r = mg::thread_start(); r < rows; r += mg::thread_step()) {
    const T* x = src + r * n;
    long long at = -1;
    for (long long j = 0; j < n && at < 0; ++j) {
      if (mg::is_nan(x[j])) at = j;
    }
    if (at < 0) {
      // median(dim): the element of rank (n - 1) / 2 under (value, index), one answer;
      // median(): libstdc++'s nth_element by value, whose pick among equal values (-0.0 or
      // 0.0) is torch's answer
      const mg::Row<T> row{sv + r * n, si + r * n};
      mg::load_row(row, x, n);
      mg::nth_element(row, n, (n - 1) / 2, mg::Order{false, all == 0});
      at = row.ix[(n - 1) / 2];
    }
    values[r] = x[at];
    indices[r] = at;
  }
}

// ----- rows longer than MG_BITONIC_MAX: sorted runs, then merge passes -----
// The stable order of any row, by many blocks at once. mg_sort_runs sorts each run of
// MG_BITONIC_MAX consecutive elements of a row in shared memory (indices are the row's); each
// mg_sort_merge pass then merges pairs of sorted runs of `width` into runs of 2 * width, every
// element placed by its rank: its place in its own run plus the number of elements of the other
// run that come before it (a binary search under the same order). (value, index) keys are
// distinct, so each pass is a permutation and the result is the one stable order, whatever the
// grid. Both sort descending rows too (`order`); src, v/ix and ov/oi are [rows, n].
//   mg_sort_runs<T>(T* v, long long* ix, const T* src, long long rows, long long n, int descending)
//                       blockDim.x = MG_SORT_THREADS, blocks stride over the runs
//   mg_sort_merge<T>(T* ov, long long* oi, const T* v, const long long* ix, long long rows,
//                    long long n, long long width, int descending)       any grid and block
//   mg_sort_pick<T>(T* values, long long* indices, const T* sv, const long long* si,
//                   long long rows, long long n, long long k, int what)
//                       from sorted rows: what 0: the first k (topk); 1: element k - 1
//                       (kthvalue); 2: the median (the first NaN of a row that has one, else
//                       element (n - 1) / 2)

template <class T>
__global__ void mg_sort_runs(T* v, long long* ix, const T* src, long long rows, long long n, int descending) {
  __shared__ T sv[MG_BITONIC_MAX];
  __shared__ long long si[MG_BITONIC_MAX];
  const mg::Order order{descending != 0, true};
  const long long runs = (n + MG_BITONIC_MAX - 1) / MG_BITONIC_MAX;
  for (long long b = blockIdx.x; b < rows * runs; b += gridDim.x) {
    const long long r = b / runs, start = (b % runs) * MG_BITONIC_MAX;
    const long long len = n - start < MG_BITONIC_MAX ? n - start : MG_BITONIC_MAX;
    mg::bitonic_shared(sv, si, src + r * n + start, len, order);
    for (long long j = threadIdx.x; j < len; j += blockDim.x) {
      v[r * n + start + j] = sv[j];
      ix[r * n + start + j] = start + si[j];
    }
    __syncthreads();
  }
}

template <class T>
__global__ void mg_sort_merge(T* ov, long long* oi, const T* v, const long long* ix, long long rows, long long n,
                              long long width, int descending) {
  const mg::Order order{descending != 0, true};
  for (long long e = mg::thread_start(); e < rows * n; e += mg::thread_step()) {
    const long long r = e / n, j = e % n;
    const long long lo = j / (2 * width) * (2 * width);
    const long long mid = lo + width < n ? lo + width : n;
    const long long hi = lo + 2 * width < n ? lo + 2 * width : n;
    const mg::Pair<T> key{v[e], ix[e]};
    // the other run, and where this element stands in its own
    const bool in_a = j < mid;
    long long first = in_a ? mid : lo, last = in_a ? hi : mid;
    const long long own = in_a ? j - lo : j - mid;
    const T* row_v = v + r * n;
    const long long* row_i = ix + r * n;
    while (first < last) {  // the first element of the other run not before `key`
      const long long m = first + (last - first) / 2;
      if (order(mg::Pair<T>{row_v[m], row_i[m]}, key)) first = m + 1;
      else last = m;
    }
    const long long place = lo + own + (first - (in_a ? mid : lo));
    ov[r * n + place] = key.v;
    oi[r * n + place] = key.i;
  }
}

template <class T>
__global__ void mg_sort_pick(T* values, long long* indices, const T* sv, const long long* si, long long rows, long long n,
                             long long k, int what) {
  const long long width = what == 0 ? k : 1;
  for (long long e = mg::thread_start(); e < rows * width; e += mg::thread_step()) {
    const long long r = e / width, j = e % width;
    const T* v = sv + r * n;
    long long at = what == 0 ? j : k - 1;
    if (what == 2) {
      at = (n - 1) / 2;
      if (mg::is_nan(v[n - 1])) {  // NaN sorts last: find the first of them (the row's first NaN)
        long long first = 0, last = n - 1;
        while (first < last) {
          const long long m = first + (last - first) / 2;
          if (mg::is_nan(v[m])) last = m;
          else first = m + 1;
        }
        at = first;
      }
    }
    values[e] = v[at];
    indices[e] = si[r * n + at];
  }
}
