//! The inner loop shape: the innermost dim in memory is reduced, so each output folds its own
//! contiguous runs.

use super::geometry::{red_runs, Geometry, Walker};
use super::Reducer;
use super::{PAR_MIN_REDUCE, PAR_MIN_WHOLE_SUM};
use crate::parallel::{for_parts, for_tasks, map_tasks, SendPtr, GRAIN};

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
    let rows = g.red.len() == 1 && g.red[0].1 == 1 && chunks == 1;
    // Rows that follow each other in memory (a contiguous tensor reduced along its last dim):
    // output o's run starts at offset + o * n, with no walk over the kept dims.
    let packed = rows && g.keep.iter().all(|k| k.stride == (k.ostride * n) as isize);
    let outputs = |o0: usize, o1: usize| {
        if packed {
            // The same folds as below (so the same bits), without the Walker: its out-of-line
            // step cost about 5 ns a row, an eighth of a 1000-element row sum (`reduce_timing`).
            let p = base.get().offset(g.offset) as *const R::In;
            // SAFETY: rows o0..o1 (o * n from the offset) lie inside the input; the outputs
            // o0..o1 are this call's.
            if r.fold_packed(p.add(o0 * n), n, o0, o1) {
                return;
            }
            for o in o0..o1 {
                // SAFETY: as below; row o starts o * n elements after the offset.
                let xs = std::slice::from_raw_parts(p.add(o * n), n);
                let acc = if n >= WIDE_RUN { r.fold_wide(r.init(o), xs, 0) } else { r.fold_slice(r.init(o), xs, 0) };
                r.write(o, acc);
            }
            return;
        }
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
    if chunks == 1 && R::SWEEP4 && threads > 1 && g.out_numel > 1 && (PAR_MIN_WHOLE_SUM..PAR_MIN_REDUCE).contains(&total) {
        // Mid-size sums of whole rows: one balanced piece of outputs per thread (16 outputs are
        // a cache line of float32 results, so no two threads write one line).
        for_parts(g.out_numel, 16, outputs);
    } else if total < PAR_MIN_REDUCE || threads <= 1 {
        outputs(0, g.out_numel);
    } else if chunks == 1 {
        // Short reduced blocks (rows of at most GRAIN): tasks of whole outputs, about GRAIN
        // input elements each, and at least eight tasks (so two or four threads share them
        // evenly). Each output is folded whole by one task, so the split changes no result.
        let per = (GRAIN / n).min(g.out_numel / 8).max(1);
        for_tasks(g.out_numel.div_ceil(per), true, |t| outputs(t * per, ((t + 1) * per).min(g.out_numel)));
    } else {
        // Long reduced blocks (the full reductions): one task per (output, chunk), each chunk's
        // partial in its own slot, merged per output in chunk order afterwards — the fold and
        // merges `whole` does on one thread, so the same bits.
        let parts = map_tasks(g.out_numel * chunks, true, r.init(0), |t| {
            let (o, c) = (t / chunks, t % chunks);
            let (s, e) = chunk(c);
            fold_range(&r, g, base, g.keep_offset(o), o, s, e)
        });
        for (o, p) in parts.chunks_exact(chunks).enumerate() {
            let acc = p[1..].iter().fold(p[0], |a, &b| r.merge(a, b));
            // SAFETY: o < out_numel, written once here.
            r.write(o, acc);
        }
    }
}

#[cfg(test)]
mod tests {
    //! The parallel paths of the inner shape (`for_tasks` / `map_tasks`): the same bits on
    //! 1, 2, 3 and 4 threads, for the layouts and values that take each branch.
    use super::super::reduce;
    use super::{GRAIN, PAR_MIN_REDUCE};
    use crate::parallel::SendPtr;
    use crate::reducers::{ArgExtreme, Extreme, SumProd};
    use crate::Arg;

    /// A layout of `x`: shape, strides, offset, reduced dims.
    type Layout<'a> = (&'a [usize], &'a [isize], usize, &'a [bool]);

    fn out_numel(l: Layout) -> usize {
        l.0.iter().zip(l.3).filter(|(_, &m)| !m).map(|(&s, _)| s).product()
    }

    /// (sum, amax, argmax index) of every output on a pool of `threads`, as bits.
    fn reduce_with(threads: usize, x: &[f32], l: Layout) -> Vec<(u32, u32, i64)> {
        let n = out_numel(l);
        let (mut sum, mut max, mut idx) = (vec![0f32; n], vec![0f32; n], vec![0i64; n]);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        let rs = SumProd::<f32, f32, false>::new(sum.as_mut_ptr(), None);
        let rm = Extreme::<f32, true> { out: SendPtr(max.as_mut_ptr()) };
        let ri = ArgExtreme::<f32, true> { values: None, indices: SendPtr(idx.as_mut_ptr()) };
        pool.install(|| {
            let src = Arg { base: x.as_ptr() as *mut f32, strides: l.1, offset: l.2 };
            // SAFETY: the tests' layouts stay inside `x`; each output buffer holds out_numel
            // elements and does not overlap `x`.
            unsafe {
                reduce(rs, l.0, src, l.3);
                reduce(rm, l.0, src, l.3);
                reduce(ri, l.0, src, l.3);
            }
        });
        sum.iter().zip(&max).zip(&idx).map(|((s, m), &i)| (s.to_bits(), m.to_bits(), i)).collect()
    }

    fn same_on_every_pool(x: &[f32], l: Layout) -> Vec<(u32, u32, i64)> {
        assert!(out_numel(l) * l.0.iter().zip(l.3).filter(|(_, &m)| m).map(|(&s, _)| s).product::<usize>() >= PAR_MIN_REDUCE);
        let one = reduce_with(1, x, l);
        for threads in [2, 3, 4] {
            assert_eq!(reduce_with(threads, x, l), one, "threads {threads}, shape {:?}", l.0);
        }
        one
    }

    fn data(n: usize) -> Vec<f32> {
        crate::test_data::pseudo_random(n, 0x9E3779B97F4A7C15, -1.0, 2.0)
    }

    #[test]
    fn full_and_few_output_reductions_are_the_same_on_any_pool() {
        let n = 5 * GRAIN + 123;
        let x = data(3 * n + 7);
        // one output: every element, contiguous
        let all = same_on_every_pool(&x, (&[n], &[1], 0, &[true]));
        let exact: f64 = x[..n].iter().map(|&v| v as f64).sum();
        assert!((f32::from_bits(all[0].0) as f64 - exact).abs() < 1e-3);
        // three long rows (an (output, chunk) task each), and the same through a stride and offset
        same_on_every_pool(&x, (&[3, n], &[n as isize, 1], 0, &[false, true]));
        same_on_every_pool(&x, (&[3, n / 3], &[1, 3], 5, &[false, true]));
        // non-contiguous, both dims reduced: runs of 233 at stride 3 inside rows of 700
        same_on_every_pool(&x, (&[600, 233], &[700, 3], 1, &[true, true]));
    }

    #[test]
    fn row_reductions_are_the_same_on_any_pool() {
        let x = data(2000 * 300 + 1);
        same_on_every_pool(&x, (&[2000, 300], &[300, 1], 0, &[false, true]));
        // rows read across a transposed layout (stride 2000) and rows with an offset
        same_on_every_pool(&x, (&[300, 2000], &[1, 300], 0, &[true, false]));
        same_on_every_pool(&x, (&[1999, 300], &[300, 1], 1, &[false, true]));
    }

    /// (sum, mean) bits of every output on a pool of `threads`: the mid-size range, where sums
    /// split whole rows over threads (`PAR_MIN_WHOLE_SUM`) and other reducers do not.
    fn sums_with(threads: usize, x: &[f32], l: Layout) -> Vec<(u32, u32)> {
        let n = out_numel(l);
        let (mut sum, mut mean) = (vec![0f32; n], vec![0f32; n]);
        let count = l.0.iter().zip(l.3).filter(|(_, &m)| m).map(|(&s, _)| s).product::<usize>() as f64;
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let src = Arg { base: x.as_ptr() as *mut f32, strides: l.1, offset: l.2 };
            // SAFETY: as in `reduce_with`.
            unsafe {
                reduce(SumProd::<f32, f32, false>::new(sum.as_mut_ptr(), None), l.0, src, l.3);
                reduce(SumProd::<f32, f32, false>::new(mean.as_mut_ptr(), Some(count)), l.0, src, l.3);
            }
        });
        sum.iter().zip(&mean).map(|(s, m)| (s.to_bits(), m.to_bits())).collect()
    }

    #[test]
    fn mid_size_row_sums_are_the_same_on_any_pool() {
        use super::PAR_MIN_WHOLE_SUM;
        for (rows, cols) in [(100, 1000), (66, 1000), (300, 300), (17, 4000)] {
            assert!((PAR_MIN_WHOLE_SUM..PAR_MIN_REDUCE).contains(&(rows * cols)));
            let x = data(rows * (cols + 1));
            // packed rows, and rows one element apart (the walk over outputs, not packed)
            let packed: Layout = (&[rows, cols], &[cols as isize, 1], 0, &[false, true]);
            let apart: Layout = (&[rows, cols], &[cols as isize + 1, 1], 1, &[false, true]);
            for (l, pitch, at) in [(packed, cols, 0), (apart, cols + 1, 1)] {
                let one = sums_with(1, &x, l);
                for threads in [2, 3, 4] {
                    assert_eq!(sums_with(threads, &x, l), one, "threads {threads}, shape {:?}", l.0);
                }
                for (o, &(s, _)) in one.iter().enumerate() {
                    let row = &x[at + o * pitch..at + o * pitch + cols];
                    let exact: f64 = row.iter().map(|&v| v as f64).sum();
                    assert!((f32::from_bits(s) as f64 - exact).abs() < 1e-3, "row {o}");
                }
            }
        }
        // From the calling thread of no pool (Python's): the hand-off's helpers, the same bits.
        let x = data(100 * 1000);
        let l: Layout = (&[100, 1000], &[1000, 1], 0, &[false, true]);
        let want = sums_with(1, &x, l);
        let mut sum = vec![0f32; 100];
        for _ in 0..50 {
            // SAFETY: as in `reduce_with`.
            unsafe { reduce(SumProd::<f32, f32, false>::new(sum.as_mut_ptr(), None), l.0, Arg { base: x.as_ptr() as *mut f32, strides: l.1, offset: 0 }, l.3) };
            assert!(sum.iter().zip(&want).all(|(s, w)| s.to_bits() == w.0));
        }
    }

    #[test]
    fn nan_wins_wherever_it_falls() {
        let n = 5 * GRAIN;
        let mut x = data(n);
        x[3 * GRAIN + 2] = f32::NAN;
        x[3 * GRAIN + 40] = f32::NAN;
        let r = same_on_every_pool(&x, (&[n], &[1], 0, &[true]));
        assert!(f32::from_bits(r[0].0).is_nan() && f32::from_bits(r[0].1).is_nan());
        assert_eq!(r[0].2, (3 * GRAIN + 2) as i64);
        // in rows: only the row holding the NaN is NaN
        let rows = same_on_every_pool(&x, (&[1000, 160], &[160, 1], 0, &[false, true]));
        for (o, &(s, m, _)) in rows.iter().enumerate() {
            let row = o * 160..(o + 1) * 160;
            let has = row.contains(&(3 * GRAIN + 2)) || row.contains(&(3 * GRAIN + 40));
            assert_eq!(f32::from_bits(s).is_nan(), has, "row {o}");
            assert_eq!(f32::from_bits(m).is_nan(), has, "row {o}");
        }
    }

    #[test]
    fn empty_reductions_write_the_identity_on_any_pool() {
        let x: Vec<f32> = vec![];
        for threads in [1, 2, 4] {
            // many outputs of zero elements each, and zero outputs of many elements
            let r = reduce_with(threads, &x, (&[200_000, 0], &[0, 1], 0, &[false, true]));
            assert!(r.iter().all(|&(s, m, i)| s == 0f32.to_bits() && m == f32::NEG_INFINITY.to_bits() && i == 0));
            assert!(reduce_with(threads, &x, (&[0, 200_000], &[200_000, 1], 0, &[false, true])).is_empty());
        }
    }
}
