//! The inner loop shape: the innermost dim in memory is reduced, so each output folds its own
//! contiguous runs.

use super::geometry::{red_runs, Geometry, Walker};
use super::Reducer;
use super::PAR_MIN_REDUCE;
use crate::parallel::{SendPtr, GRAIN};
use rayon::prelude::*;

/// Contiguous runs at least this long are folded under `simd::exec` (shorter ones do not pay
/// for the dispatch).
const WIDE_RUN: usize = 64;

/// Folds reduced indices `[s, e)` of the output whose reduced block starts at `off`.
#[inline(always)]
unsafe fn fold_range<R: Reducer>(r: &R, g: &Geometry, base: SendPtr<R::In>, off: isize, o: usize, s: usize, e: usize) -> R::Acc {
    let mut acc = r.init(o);
    red_runs(&g.red, off, s, e, |run, len, stride, pos| {
        let p = base.get().offset(run) as *const R::In;
        if stride == 1 {
            // SAFETY: a run of `len` consecutive elements inside the input (caller's contract).
            let xs = std::slice::from_raw_parts(p, len);
            acc = if len >= WIDE_RUN { r.fold_wide(acc, xs, pos) } else { r.fold_slice(acc, xs, pos) };
        } else {
            for k in 0..len {
                // SAFETY: the k-th element of a run inside the input (caller's contract).
                acc = r.step(acc, *p.offset(k as isize * stride), pos + k);
            }
        }
    });
    acc
}

/// The inner shape: each output folds its reduced block in `GRAIN`-sized chunks, in order.
pub(super) unsafe fn reduce_inner<R: Reducer>(r: R, g: &Geometry, base: SendPtr<R::In>) {
    let n = g.red_numel;
    let chunks = n.div_ceil(GRAIN);
    let chunk = |c: usize| (c * GRAIN, ((c + 1) * GRAIN).min(n));
    // One output, whole: the same partials whatever the schedule.
    let whole = |off: isize, o: usize| {
        let (s, e) = chunk(0);
        let mut acc = fold_range(&r, g, base, off, o, s, e);
        for c in 1..chunks {
            let (s, e) = chunk(c);
            acc = r.merge(acc, fold_range(&r, g, base, off, o, s, e));
        }
        acc
    };
    let rows = g.red.len() == 1 && g.red[0].1 == 1 && n <= GRAIN;
    let outputs = |o0: usize, o1: usize| {
        if rows {
            // One contiguous run per output: the calls `fold_range` makes for it (one fold from
            // `init`, so the same bits), without its per-output bookkeeping.
            let n = g.red_numel;
            let mut w = Walker::new(g, o0);
            for o in o0..o1 {
                // SAFETY: output o's run of n consecutive elements lies inside the input (the
                // caller's contract); o < out_numel, written once here.
                let xs = std::slice::from_raw_parts(base.get().offset(w.off) as *const R::In, n);
                let acc = if n >= WIDE_RUN { r.fold_wide(r.init(o), xs, 0) } else { r.fold_slice(r.init(o), xs, 0) };
                r.write(o, acc);
                w.advance();
            }
            return;
        }
        let mut w = Walker::new(g, o0);
        for o in o0..o1 {
            // SAFETY: o < out_numel, written once here.
            r.write(o, whole(w.off, o));
            w.advance();
        }
    };
    let total = g.out_numel.saturating_mul(n);
    let threads = rayon::current_num_threads();
    if total < PAR_MIN_REDUCE || threads <= 1 {
        outputs(0, g.out_numel);
    } else if g.out_numel >= 4 * threads {
        // Many outputs: tasks of whole outputs, about GRAIN input elements each, and at least
        // eight tasks (so two or four threads share them evenly). Each output is folded whole
        // by one task, so the split changes no result.
        let per = (GRAIN / n).min(g.out_numel / 8).max(1);
        (0..g.out_numel.div_ceil(per)).into_par_iter().for_each(|t| outputs(t * per, ((t + 1) * per).min(g.out_numel)));
    } else {
        // Few outputs: their chunks in parallel, merged in order.
        for o in 0..g.out_numel {
            let off = g.keep_offset(o);
            let parts: Vec<R::Acc> = (0..chunks)
                .into_par_iter()
                .map(|c| {
                    let (s, e) = chunk(c);
                    fold_range(&r, g, base, off, o, s, e)
                })
                .collect();
            let acc = parts.into_iter().reduce(|a, b| r.merge(a, b)).unwrap_or_else(|| r.init(o));
            // SAFETY: o < out_numel, written once here.
            r.write(o, acc);
        }
    }
}
