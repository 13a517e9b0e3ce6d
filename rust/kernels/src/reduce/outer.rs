//! The outer loop shape: the innermost dim in memory is kept (sum over dim 0 of a contiguous
//! matrix, or over the middle axis of a 3-D tensor), so a block of outputs accumulates whole
//! rows at a time (memory read in order, the per-row loop vectorised).
//!
//! How it splits (DESIGN invariant 7: results never depend on the thread count):
//! - *Many outputs* (`ROW_SPLIT_BELOW` or more): each output folds all its rows, in row order,
//!   inside one task; threads own disjoint, cache-line-aligned ranges of outputs (columns), one
//!   range each (`parallel::for_split`). Which thread sums a column changes nothing in its sum,
//!   so the split may follow the thread count. This replaced row chunks merged per output (1000
//!   columns, 1000 rows on two threads: 55.3 -> 39.5 us, torch 45.4; the chunks' fork-join, their partial
//!   vectors and the merge cost more than the columns' sums).
//! - *Few outputs* (a tall, thin matrix), or fewer than `MANY_OUTPUTS` over more input than
//!   the caches hold: the reduced range is cut into fixed chunks of rows, sized by the shape
//!   alone; the chunks' partials (every output's) run in parallel and are merged in chunk order.
//!   From memory, a thread reading whole rows in order streams; one reading 2 KB of each 4 KB
//!   row does not (amax over dim 0 of (10000, 1000) on two threads: 0.98 ms in row chunks,
//!   2.76 ms in half-columns; sum 1.39 and 1.19 ms).

use super::geometry::{red_runs, Geometry, Kept};
use super::Reducer;
use super::{PAR_MIN_REDUCE, PAR_MIN_WHOLE_SUM};
use crate::parallel::{for_split, for_tasks, SendPtr, GRAIN};
use crate::simd;

/// `len` input rows (`stride` apart from element offset `run`) folded into a block of
/// accumulators, one per consecutive output along the kept dim (`kstride` apart in the input).
struct Rows<'a, R: Reducer> {
    r: &'a R,
    accs: &'a mut [R::Acc],
    base: SendPtr<R::In>,
    run: isize,
    len: usize,
    stride: isize,
    pos: usize,
    kstride: isize,
}
impl<R: Reducer> simd::Body for Rows<'_, R> {
    type Output = ();
    #[inline(always)]
    fn call(self) {
        let Rows { r, accs, base, run, len, stride, pos, kstride } = self;
        let row = |t: usize| {
            // SAFETY: row run + t * stride lies inside the input (the constructor's contract).
            unsafe { base.get().offset(run + t as isize * stride) as *const R::In }
        };
        let w = accs.len();
        // SAFETY: rows 0..len lie inside the input (as above).
        if kstride == 1 && len > 0 && unsafe { r.fold_rows(accs, row(0), stride, len) } {
            return;
        }
        let mut t = 0;
        if kstride == 1 && R::SWEEP4 {
            // Four rows per sweep over the accumulators: each output still takes its rows one
            // after another (the same result), but loads and stores its accumulator once.
            // (Eight rows, as two `step4`s, gave the same bits but measured slower in place:
            // sum over dim 0 of (100, 1000) 6.6 -> 7.2 us, one thread.)
            while t + 4 <= len {
                // SAFETY: the block's outputs are consecutive input elements of each row.
                let xs = |d: usize| unsafe { std::slice::from_raw_parts(row(t + d), w) };
                let (x0, x1, x2, x3) = (xs(0), xs(1), xs(2), xs(3));
                let i = pos + t;
                for (j, a) in accs.iter_mut().enumerate() {
                    *a = r.step4(*a, [x0[j], x1[j], x2[j], x3[j]], i);
                }
                t += 4;
            }
        }
        for t in t..len {
            let row = row(t);
            let i = pos + t;
            if kstride == 1 {
                // SAFETY: the block's outputs are consecutive input elements of this row.
                let xs = unsafe { std::slice::from_raw_parts(row, w) };
                for (a, &x) in accs.iter_mut().zip(xs) {
                    *a = r.step(*a, x, i);
                }
            } else {
                for (jj, a) in accs.iter_mut().enumerate() {
                    // SAFETY: output jj of the block is an input element of this row.
                    *a = r.step(*a, unsafe { *row.offset(jj as isize * kstride) }, i);
                }
            }
        }
    }
}

/// Outputs whose accumulators one sweep keeps (in L1: 8 KiB of f64).
const BLOCK: usize = 1024;
/// Below this many outputs a large reduction cuts its rows into chunks (so two or more threads
/// have work); from it, threads split the outputs. 256 outputs are four 64-column ranges.
const ROW_SPLIT_BELOW: usize = 256;
/// Input elements from which a reduction with fewer than `MANY_OUTPUTS` outputs cuts its rows
/// too (16 MiB of float32: past this machine's L2s and half its L3, where whole rows stream
/// better than column ranges; 1e6 elements (4 MiB) measured faster in column ranges: sum over
/// dim 0 of (1000, 1000) on two threads 55.7 -> 39.3 us, torch 44).
const FROM_MEMORY: usize = 1 << 22;
/// With this many outputs the column ranges are long (8 KiB of float32 per row and thread at two
/// threads) and the rows are never cut: the partials would be as large as the output.
const MANY_OUTPUTS: usize = 4096;
/// Input elements from which a reducer that folds its rows one at a time here (every reducer
/// but sum and prod, `Reducer::SWEEP4` false: norms, all/any, max/min but of float32, about 1.5x
/// a sum's time per element) splits over threads; sums use `PAR_MIN_WHOLE_SUM`. Swept 2026-11-27 (two threads,
/// `chrt -f 50`, loaded 2-core VM; amax over dim 0 of (rows, 1000), serial / split, us): 5e4
/// 6.06/7.13, 6.4e4 6.92/7.60, 8e4 9.73/8.40, 1e5 10.76/9.20, 1.28e5 13.40/10.34. Which rows
/// are cut (`row_chunk`) still follows `PAR_MIN_REDUCE`: the split never changes a result here.
const PAR_MIN_ROWWISE: usize = 1 << 16;
/// Most row chunks of one reduction (their partials are kept until the ordered merge).
const MAX_ROW_CHUNKS: usize = 256;

/// Rows per chunk of a reduction of `out` outputs over `n` rows (`n` when it is not cut): a
/// function of the shape only, so every pool adds the same partials in the same order.
pub(super) fn row_chunk(out: usize, n: usize) -> usize {
    let total = out.saturating_mul(n);
    let cut = total >= PAR_MIN_REDUCE && (out < ROW_SPLIT_BELOW || (out < MANY_OUTPUTS && total >= FROM_MEMORY));
    if cut {
        (GRAIN / out).max(1).max(n.div_ceil(MAX_ROW_CHUNKS))
    } else {
        n
    }
}

/// The outer shape: outputs along kept dim `k` (innermost in memory) accumulate row by row.
pub(super) unsafe fn reduce_outer<R: Reducer>(r: R, g: &Geometry, base: SendPtr<R::In>, k: usize) {
    let kd = g.keep[k];
    let rest: Vec<Kept> = g.keep.iter().enumerate().filter(|&(i, _)| i != k).map(|(_, &d)| d).collect();
    let m = kd.size;
    let n = g.red_numel;
    let total = g.out_numel.saturating_mul(n);
    let min = if R::SWEEP4 { PAR_MIN_WHOLE_SUM } else { PAR_MIN_ROWWISE };
    let parallel = total >= min && rayon::current_num_threads() > 1;

    // Offsets of the rest dims for rest index q: (input, output).
    let rest_offsets = |mut q: usize| {
        let (mut ioff, mut ooff) = (g.offset, 0usize);
        for d in rest.iter().rev() {
            let i = q % d.size;
            q /= d.size;
            ioff += i as isize * d.stride;
            ooff += i * d.ostride;
        }
        (ioff, ooff)
    };
    // Folds reduced rows [s, e) into `accs`, the accumulators of outputs j0.. (along k) of
    // rest index q (input offset `ioff`).
    let fold = |accs: &mut [R::Acc], ioff: isize, j0: usize, s: usize, e: usize| {
        red_runs(&g.red, ioff + j0 as isize * kd.stride, s, e, |run, len, stride, pos| {
            let rows = Rows { r: &r, accs: &mut *accs, base, run, len, stride, pos, kstride: kd.stride };
            // SAFETY: rows run + t * stride (t < len), the block's columns, lie inside the input.
            simd::exec(rows)
        });
    };
    // Calls f(input offset, output offset, j0, j1) for the blocks (at most BLOCK along k) that
    // cover flat output units [u0, u1), where unit u = q * m + j is output j along k of rest q.
    let blocks = |u0: usize, u1: usize, f: &mut dyn FnMut(isize, usize, usize, usize)| {
        let mut u = u0;
        while u < u1 {
            let (q, j0) = (u / m, u % m);
            let j1 = (j0 + BLOCK).min(m).min(j0 + (u1 - u));
            let (ioff, ooff) = rest_offsets(q);
            f(ioff, ooff, j0, j1);
            u += j1 - j0;
        }
    };

    let rows = row_chunk(g.out_numel, n);
    if rows >= n {
        // Whole columns: each output folds all its rows in one task.
        let outputs = |u0: usize, u1: usize| {
            blocks(u0, u1, &mut |ioff, ooff, j0, j1| {
                let mut accs: Vec<R::Acc> = (j0..j1).map(|j| r.init(ooff + j * kd.ostride)).collect();
                fold(&mut accs, ioff, j0, 0, n);
                if kd.ostride == 1 {
                    // SAFETY: outputs ooff + j0..ooff + j1 (kd.ostride 1): this block's, distinct
                    // from every other block's, below out_numel.
                    r.write_run(ooff + j0, &accs);
                    return;
                }
                for (jj, acc) in accs.into_iter().enumerate() {
                    // SAFETY: distinct (q, j) give distinct outputs below out_numel.
                    r.write(ooff + (j0 + jj) * kd.ostride, acc);
                }
            });
        };
        if parallel {
            for_split(g.out_numel, 0, outputs);
        } else {
            outputs(0, g.out_numel);
        }
        return;
    }
    // Few outputs: chunk c of rows gives every output's partial (in flat unit order); the
    // chunks merge in order.
    let n_rc = n.div_ceil(rows);
    let part = |c: usize| -> Vec<R::Acc> {
        let (s, e) = (c * rows, ((c + 1) * rows).min(n));
        let mut accs: Vec<R::Acc> = Vec::with_capacity(g.out_numel);
        blocks(0, g.out_numel, &mut |ioff, ooff, j0, j1| {
            let at = accs.len();
            accs.extend((j0..j1).map(|j| r.init(ooff + j * kd.ostride)));
            fold(&mut accs[at..], ioff, j0, s, e);
        });
        accs
    };
    // Each chunk's partials in its own slot (`for_tasks`: from the Python thread, the spinning
    // helpers rather than a rayon job the caller sleeps on).
    let slots: Vec<std::sync::OnceLock<Vec<R::Acc>>> = (0..n_rc).map(|_| std::sync::OnceLock::new()).collect();
    for_tasks(n_rc, parallel, |c| {
        let _ = slots[c].set(part(c));
    });
    let parts = slots.into_iter().map(|s| s.into_inner().unwrap_or_default());
    let mut it = parts;
    let Some(mut accs) = it.next() else { return };
    for p in it {
        for (a, b) in accs.iter_mut().zip(p) {
            *a = r.merge(*a, b);
        }
    }
    let mut at = 0;
    blocks(0, g.out_numel, &mut |_, ooff, j0, j1| {
        for j in j0..j1 {
            // SAFETY: distinct (q, j) give distinct outputs below out_numel.
            r.write(ooff + j * kd.ostride, accs[at]);
            at += 1;
        }
    });
}

#[cfg(test)]
#[path = "outer_tests.rs"]
mod tests;
