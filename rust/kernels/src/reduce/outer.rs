//! The outer loop shape: the innermost dim in memory is kept, so a block of outputs
//! accumulates whole rows at a time (memory read in order, the per-row loop vectorised).

use super::geometry::{red_runs, Geometry, Kept};
use super::Reducer;
use super::PAR_MIN_REDUCE;
use crate::parallel::{SendPtr, GRAIN};
use crate::simd;
use rayon::prelude::*;

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
        let mut t = 0;
        if kstride == 1 && R::SWEEP4 {
            // Four rows per sweep over the accumulators: each output still takes its rows one
            // after another (the same result), but loads and stores its accumulator once.
            while t + 4 <= len {
                // SAFETY: the block's outputs are consecutive input elements of each row.
                let xs = |d: usize| unsafe { std::slice::from_raw_parts(row(t + d), accs.len()) };
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
                let xs = unsafe { std::slice::from_raw_parts(row, accs.len()) };
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

/// Outputs per parallel task of the outer shape, and rows of the reduced range per task when
/// the outputs alone give too little parallel work.
const BLOCK: usize = 1024;
const MAX_ROW_CHUNKS: usize = 256;
/// With at least this many outputs, the outer shape never splits the reduced range.
const MANY_OUTPUTS: usize = 4096;

/// The outer shape: outputs along kept dim `k` (innermost in memory) accumulate row by row.
pub(super) unsafe fn reduce_outer<R: Reducer>(r: R, g: &Geometry, base: SendPtr<R::In>, k: usize) {
    let kd = g.keep[k];
    let rest: Vec<Kept> = g.keep.iter().enumerate().filter(|&(i, _)| i != k).map(|(_, &d)| d).collect();
    let m = kd.size;
    let n = g.red_numel;
    let n_rest = g.out_numel / m;
    let jb = m.min(BLOCK);
    let n_jb = m.div_ceil(jb);
    let total = g.out_numel.saturating_mul(n);
    // Split the reduced range only when outputs are few: fixed by the shape, not the machine.
    let rows = if g.out_numel >= MANY_OUTPUTS || total < PAR_MIN_REDUCE {
        n
    } else {
        (GRAIN / jb).max(1).max(n.div_ceil(MAX_ROW_CHUNKS))
    };
    let n_rc = n.div_ceil(rows);

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
    // Accumulators of outputs j0..j1 (along k) of rest index q over reduced rows [s, e).
    let block = |q: usize, b: usize, s: usize, e: usize| -> (usize, Vec<R::Acc>) {
        let (ioff, ooff) = rest_offsets(q);
        let j0 = b * jb;
        let j1 = (j0 + jb).min(m);
        let mut accs: Vec<R::Acc> = (j0..j1).map(|j| r.init(ooff + j * kd.ostride)).collect();
        red_runs(&g.red, ioff + j0 as isize * kd.stride, s, e, |run, len, stride, pos| {
            let rows = Rows { r: &r, accs: &mut accs, base, run, len, stride, pos, kstride: kd.stride };
            // SAFETY: rows run + t * stride (t < len), columns j0..j1, lie inside the input.
            simd::exec(rows)
        });
        (ooff + j0 * kd.ostride, accs)
    };
    let store = |o0: usize, accs: Vec<R::Acc>| {
        for (jj, acc) in accs.into_iter().enumerate() {
            // SAFETY: distinct (q, j) give distinct outputs below out_numel.
            r.write(o0 + jj * kd.ostride, acc);
        }
    };
    let tasks = n_rest * n_jb;
    let parallel = total >= PAR_MIN_REDUCE && rayon::current_num_threads() > 1;
    if n_rc == 1 {
        let task = |t: usize| {
            let (o0, accs) = block(t / n_jb, t % n_jb, 0, n);
            store(o0, accs);
        };
        if parallel {
            (0..tasks).into_par_iter().for_each(task);
        } else {
            (0..tasks).for_each(task);
        }
        return;
    }
    // Row chunks: partials per (task, chunk), merged in chunk order.
    let part = |t: usize, c: usize| block(t / n_jb, t % n_jb, c * rows, ((c + 1) * rows).min(n));
    for t in 0..tasks {
        let parts: Vec<(usize, Vec<R::Acc>)> = if parallel {
            (0..n_rc).into_par_iter().map(|c| part(t, c)).collect()
        } else {
            (0..n_rc).map(|c| part(t, c)).collect()
        };
        let mut it = parts.into_iter();
        let Some((o0, mut accs)) = it.next() else { continue };
        for (_, p) in it {
            for (a, b) in accs.iter_mut().zip(p) {
                *a = r.merge(*a, b);
            }
        }
        store(o0, accs);
    }
}
