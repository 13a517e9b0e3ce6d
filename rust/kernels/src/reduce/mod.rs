//! Reductions: one engine that folds a strided input into per-output accumulators, and the
//! reducers it runs (in `reducers`).
//!
//! The engine sees the input as kept dims (one output element per index) and reduced dims.
//! Two loop shapes cover every layout:
//! - *inner*: the innermost dim in memory is reduced (sum over the last dim of a contiguous
//!   tensor): each output folds its own contiguous runs, through slices.
//! - *outer*: the innermost dim in memory is kept (sum over dim 0 of a contiguous matrix): a
//!   block of outputs accumulates whole rows at a time, so memory is read in order and the
//!   per-row loop vectorises, instead of striding through memory once per output element.
//!
//! Determinism (DESIGN invariant 7): how a reduction is split into partial results depends on
//! the shape only — fixed-size chunks of the reduced index (`GRAIN`), combined in index order —
//! never on the number of threads. Parallelism only decides who computes each partial, so
//! results are bit-identical run to run and on any machine. The two hot loops (a reducer's
//! fold of a contiguous run, and a block of outputs accumulating rows) run through
//! `simd::exec`, so the reducers' fixed-lane loops are vectorised with the machine's widest
//! registers; the lanes (and so the order of additions) are fixed by the code, not the width.

/// Input elements from which a reduction splits over threads. 2^16 was tried (a reduction
/// writes next to nothing, and 1e5 float32 elements are 4-5 us of work at one thread), but the
/// quiet two-thread bench of 2026-11-27 read the 1e5 cases at 2.2-5.5x torch split, against
/// 1.2-1.8x serial the night before: the fork-join and a sleeping worker's wake-up cost more
/// than half of 5 us. Back at 2^17, where 1e5 runs on the calling thread.
/// Re-swept 2026-11-27 after `for_tasks` moved to the hand-off's spinning helpers (two threads,
/// under `chrt -f 50` on the loaded 2-core VM, load ~13; rows of 1000, serial / split, us):
/// sum 5e4 3.26/4.70, 8e4 4.30/5.88, 1e5 5.14/5.84, 1.28e5 6.42/6.29, 1.6e5 7.54/6.85;
/// sum_dim-1 1e5 5.79/6.11, 1.28e5 7.13/6.94; sum_dim0 1e5 7.17/7.25, 1.28e5 8.78/7.80: the split
/// still costs ~2.5-3 us here, so sums break even near 1.1e5 and 2^17 stays (2^15 or 2^16
/// would split the 5e4-1e5 sums, 10-45% slower). Rowwise outer reducers: `PAR_MIN_ROWWISE`;
/// sums whose outputs each fold whole on one thread: `PAR_MIN_WHOLE_SUM`.
pub(crate) const PAR_MIN_REDUCE: usize = 1 << 17;

/// Input elements from which a sum, mean or product (the `SumProd` reducer, `Reducer::SWEEP4`)
/// whose every output is folded whole by one thread splits its outputs over threads, one
/// balanced piece each: rows of at most `GRAIN` along the last dim (the inner shape) and whole
/// columns (the outer shape). Such a split cannot change a result. Below `PAR_MIN_REDUCE`,
/// because the split is now a hand-off to the helpers that spin between calls (`for_parts`),
/// not the fork-join the 2^17 above was swept with. Swept 2026-11-27 (two threads, `chrt -f 50`,
/// the 2-core VM with two other builds running, one process each way, alternately; (rows, 1000)
/// float32, us per call from Python, split / serial): sum dim -1 3.3e4 3.20/2.82, 5e4
/// 3.45/3.35, 6.6e4 3.88/4.09, 8e4 4.07/4.63, 1e5 4.53/5.90; dim 0 3.3e4 3.43/3.72, 5e4
/// 3.77/4.37, 6.6e4 4.22/5.14, 1e5 4.96/7.26. In stretches where the second core is busy
/// (torch's own two-thread times go from 6 to 9-10 us then) a split 1e5 sum measured up to
/// 1 us slower than serial; 2^16 keeps the split to the sizes where it gains most.
pub(crate) const PAR_MIN_WHOLE_SUM: usize = 1 << 16;

mod geometry;
mod inner;
mod outer;
#[cfg(test)]
mod tests;

use crate::element::Element;
use crate::parallel::SendPtr;
use crate::simd;
use crate::Arg;
use geometry::{mem_key, Geometry};

/// One reduction: accumulator type, how elements fold in, how partials combine, and where
/// results go. Implementations are small `Copy` structs, monomorphised per dtype.
pub trait Reducer: Copy + Send + Sync {
    type In: Element;
    type Acc: Copy + Send + Sync;
    /// Fresh accumulator for output element `o` (its row-major index in the output).
    fn init(&self, o: usize) -> Self::Acc;
    /// Folds `x`, the element at reduced index `i` (the position along the reduced dims).
    fn step(&self, acc: Self::Acc, x: Self::In, i: usize) -> Self::Acc;
    /// Folds `xs`, the elements at reduced indices `i..i + 4`, in order (the outer shape's
    /// four-row sweep; sums override it to add the four first).
    #[inline(always)]
    fn step4(&self, acc: Self::Acc, xs: [Self::In; 4], i: usize) -> Self::Acc {
        self.step(self.step(self.step(self.step(acc, xs[0], i), xs[1], i + 1), xs[2], i + 2), xs[3], i + 3)
    }
    /// Combines partials of two consecutive ranges; `a` covers the earlier one.
    fn merge(&self, a: Self::Acc, b: Self::Acc) -> Self::Acc;
    /// Stores the result of output element `o`.
    ///
    /// # Safety
    /// `o` is less than the output count the reducer's buffers were made for, and each `o` is
    /// written once, by one thread.
    unsafe fn write(&self, o: usize, acc: Self::Acc);
    /// Stores the results of the consecutive outputs `o0..o0 + accs.len()`, the same values
    /// as `write` on each (sums and products override it with a loop the compiler vectorises:
    /// 1000 scalar stores were 0.3-0.5 us of a float32 column sum).
    ///
    /// # Safety
    /// As `write`, for each of those outputs.
    #[inline(always)]
    unsafe fn write_run(&self, o0: usize, accs: &[Self::Acc]) {
        for (k, &acc) in accs.iter().enumerate() {
            // SAFETY: the caller's contract, for output o0 + k.
            self.write(o0 + k, acc);
        }
    }
    /// Folds rows `0..len` of an outer block (row t starts at `first.offset(t * stride)`; its
    /// `accs.len()` consecutive elements are the block's outputs) into `accs` in the reducer's
    /// own fixed grouping, returning true; false (the default) leaves them to the generic
    /// sweeps. The float32 sums (`simd::sum_rows`) and max/min (`simd::extreme_rows`) override it.
    ///
    /// # Safety
    /// Every such row lies inside the input.
    #[inline(always)]
    unsafe fn fold_rows(&self, _accs: &mut [Self::Acc], _first: *const Self::In, _stride: isize, _len: usize) -> bool {
        false
    }
    /// Folds and writes outputs `o0..o1` whose reduced elements are `n` consecutive elements
    /// each, one output after another from `first` (a contiguous tensor reduced along its last
    /// dim), with the same bits as the inner shape's per-output `fold_wide`/`fold_slice` from
    /// `init`, returning true; false (the default) leaves them to that loop. The float32 sums
    /// override it to dispatch once for all rows (`simd::sum::sum_rows`).
    ///
    /// # Safety
    /// The rows lie inside the input; outputs `o0..o1` are this call's to write.
    unsafe fn fold_packed(&self, _first: *const Self::In, _n: usize, _o0: usize, _o1: usize) -> bool {
        false
    }
    /// Whether the outer shape sweeps its accumulators four rows at a time (it measured faster
    /// for sums, whose accumulator load and store then dominate; slower for max/min).
    const SWEEP4: bool = false;
    /// Folds a contiguous run starting at reduced index `i0` (reducers override it to vectorise).
    #[inline(always)]
    fn fold_slice(&self, mut acc: Self::Acc, xs: &[Self::In], i0: usize) -> Self::Acc {
        for (k, &x) in xs.iter().enumerate() {
            acc = self.step(acc, x, i0 + k);
        }
        acc
    }
    /// `fold_slice` of a long run with the machine's widest vectors: by default the fold under
    /// `simd::exec`; reducers whose run kernel dispatches by itself (the float32 sums, max/min
    /// and 2-norm of `simd`) call it directly, saving a dispatch per run (rows of a few hundred
    /// elements feel it). Either way the same bits as `fold_slice`.
    #[inline(always)]
    fn fold_wide(&self, acc: Self::Acc, xs: &[Self::In], i0: usize) -> Self::Acc {
        simd::exec(FoldSlice { r: self, acc, xs, i0 })
    }
}

/// `r.fold_slice` as a `simd::exec` body.
pub(crate) struct FoldSlice<'a, R: Reducer> {
    pub(crate) r: &'a R,
    pub(crate) acc: R::Acc,
    pub(crate) xs: &'a [R::In],
    pub(crate) i0: usize,
}
impl<R: Reducer> simd::Body for FoldSlice<'_, R> {
    type Output = R::Acc;
    #[inline(always)]
    fn call(self) -> R::Acc {
        self.r.fold_slice(self.acc, self.xs, self.i0)
    }
}

/// Runs reducer `r` over `src` (laid out as `shape`/`src.strides`), reducing the dims marked
/// in `reduce`. Output element `o` (row-major over the kept dims) is stored by `r.write(o, _)`.
///
/// # Safety
/// `src` must describe `shape` elements inside its storage, which must stay alive for the
/// call; the reducer's outputs must hold `Geometry::out_numel` elements and must not overlap
/// `src`.
pub unsafe fn reduce<R: Reducer>(r: R, shape: &[usize], src: Arg<R::In>, reduce: &[bool]) {
    let g = Geometry::new(shape, src.strides, src.offset, reduce);
    if g.out_numel == 0 {
        return;
    }
    if g.red_numel == 0 {
        for o in 0..g.out_numel {
            // SAFETY: o < out_numel, each written once.
            r.write(o, r.init(o));
        }
        return;
    }
    let base = SendPtr(src.base);
    let inner_red = g.red.last().map_or(usize::MAX, |&(_, s)| mem_key(s));
    let inner_keep = g.keep.iter().enumerate().min_by_key(|(_, k)| mem_key(k.stride));
    match inner_keep {
        Some((k, kept)) if mem_key(kept.stride) < inner_red => outer::reduce_outer(r, &g, base, k),
        _ => inner::reduce_inner(r, &g, base),
    }
}
