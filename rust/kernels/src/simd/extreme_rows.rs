//! Column max/min of float32 rows (amax/amin over dim 0 of a contiguous matrix: the outer shape
//! of `reduce`), laid out like `sum_rows`: the rows go in groups of `GROUP`, and within a group a
//! strip of columns keeps its running extremes in registers, one load per row and vector.
//!
//! Why: the generic sweep loads, compares (three times, for NaN and order), blends and stores
//! every accumulator for every row; it took about twice a column sum's time (amax over dim 0 of
//! (1000, 1000), one thread: 98 against 57 us).
//!
//! Exactness: a column's result is the one a scan in row order with `beats` gives (the first
//! NaN; the earlier of equal values, so the first of 0.0 and -0.0). Without a NaN, `x > acc ? x
//! : acc` in row order *is* that scan, whatever the strip width. A NaN is caught on the side (the
//! group's sum of the strip's elements is NaN when one of them is, or when +inf meets -inf or a
//! sum overflows into them: then the exact scan runs for nothing), and the strip's group is
//! redone by the exact scalar scan.

use super::F32s;
use pulp::{Simd, WithSimd};

/// Rows per group (the strip's extremes stay in registers for these).
const GROUP: usize = 16;
/// Vectors per strip: four independent compare-and-select chains.
const WIDE: usize = 4;

/// `accs[c] = ` the extreme of `accs[c]` and rows `0..len` of column `c` (max for `MAX`, else
/// min), NaN-propagating, the earlier of equal values kept.
///
/// # Safety
/// For every `t < len`, `first.offset(t * stride)` starts `accs.len()` readable float32s.
pub unsafe fn extreme_rows<const MAX: bool>(accs: &mut [f32], first: *const f32, stride: isize, len: usize) {
    extreme_rows_on::<MAX>(super::arch(), accs, first, stride, len)
}

/// `extreme_rows` compiled for instruction set `arch`.
///
/// # Safety
/// As `extreme_rows`.
pub(crate) unsafe fn extreme_rows_on<const MAX: bool>(arch: pulp::Arch, accs: &mut [f32], first: *const f32, stride: isize, len: usize) {
    arch.dispatch(Rows::<MAX> { accs, first, stride, len })
}

struct Rows<'a, const MAX: bool> {
    accs: &'a mut [f32],
    first: *const f32,
    stride: isize,
    len: usize,
}

impl<const MAX: bool> WithSimd for Rows<'_, MAX> {
    type Output = ();
    #[inline(always)]
    fn with_simd<S: Simd>(self, s: S) {
        let Rows { accs, first, stride, len } = self;
        let (w, lanes) = (accs.len(), S::F32_LANES);
        let mut t = 0;
        while t < len {
            let g = (len - t).min(GROUP);
            // SAFETY: row t of the run (the caller's contract).
            let p = unsafe { first.offset(t as isize * stride) };
            let mut c = 0;
            // SAFETY (both loops): columns c.. of rows t..t + g are inside the input, and the
            // strip's accumulators inside `accs` (c + width <= w).
            while c + WIDE * lanes <= w {
                unsafe { strip::<S, WIDE, MAX>(s, &mut accs[c..c + WIDE * lanes], p.add(c), stride, g) };
                c += WIDE * lanes;
            }
            while c + lanes <= w {
                unsafe { strip::<S, 1, MAX>(s, &mut accs[c..c + lanes], p.add(c), stride, g) };
                c += lanes;
            }
            if c < w && w >= lanes {
                // The last columns in one vector that overlaps columns already done: folding
                // the same rows into a column twice changes nothing (x never beats itself), where
                // a scalar scan of a few columns would be a chain of dependent compares.
                c = w - lanes;
                // SAFETY: columns w - lanes..w of rows t..t + g are inside the input (w <= the
                // row's readable length, the caller's contract), and accs[c..] holds `lanes`.
                unsafe { strip::<S, 1, MAX>(s, &mut accs[c..], p.add(c), stride, g) };
                c = w;
            }
            // SAFETY: as above, for the columns left (none, or all of a block narrower than a
            // vector).
            unsafe { scan::<MAX>(&mut accs[c..], p.add(c), stride, g) };
            t += g;
        }
    }
}

/// Whether `x` replaces `best` in a scan: the first NaN, else a strictly greater (`MAX`) or
/// smaller value (the `reducers::beats` rule, for float32).
#[inline(always)]
fn beats<const MAX: bool>(x: f32, best: f32) -> bool {
    !best.is_nan() & (x.is_nan() | if MAX { x > best } else { x < best })
}

/// The exact scan of `g` rows from `p` into `accs`, column by column.
///
/// # Safety
/// Rows `p + d * stride` (d < g) start `accs.len()` readable float32s.
#[inline(always)]
unsafe fn scan<const MAX: bool>(accs: &mut [f32], p: *const f32, stride: isize, g: usize) {
    for (c, a) in accs.iter_mut().enumerate() {
        for d in 0..g {
            // SAFETY: column c of row d (the caller's contract).
            let x = *p.offset(d as isize * stride).add(c);
            if beats::<MAX>(x, *a) {
                *a = x;
            }
        }
    }
}

/// One strip of `V` vectors of columns over `g` rows (1 <= g <= GROUP) from `p`.
///
/// # Safety
/// Rows `p + d * stride` (d < g) start `accs.len()` = `V * S::F32_LANES` readable float32s.
#[inline(always)]
unsafe fn strip<S: Simd, const V: usize, const MAX: bool>(s: S, accs: &mut [f32], p: *const f32, stride: isize, g: usize) {
    let lanes = S::F32_LANES;
    // SAFETY: `lanes` readable float32s at q (the caller's contract); unaligned reads of a
    // plain-data vector type.
    let load = |q: *const f32| F32s { s, v: unsafe { (q as *const S::f32s).read_unaligned() } };
    let mut acc: [F32s<S>; V] = std::array::from_fn(|v| load(accs.as_ptr().wrapping_add(v * lanes)));
    // Running sums of each vector's rows: NaN at the end when one of the rows was (checked once
    // per group, not per row).
    let mut sums = [F32s::splat(s, 0.0); V];
    for d in 0..g {
        let row = p.offset(d as isize * stride);
        for v in 0..V {
            let x = load(row.wrapping_add(v * lanes));
            // x replaces acc only when strictly beyond it: the earlier of equal values stays.
            let beyond = if MAX { x.gt(acc[v]) } else { x.lt(acc[v]) };
            acc[v] = F32s::select(beyond, x, acc[v]);
            sums[v] = sums[v] + x;
        }
    }
    let sum = sums.iter().skip(1).fold(sums[0], |a, &x| a + x);
    if sum.is_nan().any() {
        // A NaN (or +inf beside -inf) in the group: the exact scan from the group's start.
        scan::<MAX>(accs, p, stride, g);
        return;
    }
    for (v, a) in acc.iter().enumerate() {
        // SAFETY: lanes v * lanes.. of the strip's accumulators (accs.len() = V * lanes).
        (accs.as_mut_ptr().add(v * lanes) as *mut S::f32s).write_unaligned(a.v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference: each column scanned in row order with `beats`.
    fn reference<const MAX: bool>(accs: &mut [f32], x: &[f32], stride: usize, len: usize) {
        for (c, a) in accs.iter_mut().enumerate() {
            for t in 0..len {
                if beats::<MAX>(x[t * stride + c], *a) {
                    *a = x[t * stride + c];
                }
            }
        }
    }

    fn check<const MAX: bool>(x: &[f32], stride: usize) {
        for (w, len) in [(1, 1), (15, 16), (16, 17), (63, 33), (64, 5), (65, 16), (200, 100), (stride, 37), (130, 1)] {
            let init = if MAX { f32::NEG_INFINITY } else { f32::INFINITY };
            let mut want = vec![init; w];
            reference::<MAX>(&mut want, x, stride, len);
            for a in [crate::simd::arch(), crate::simd::arch_256(), pulp::Arch::Scalar] {
                let mut got = vec![init; w];
                // SAFETY: len rows of `stride` elements inside x, w <= stride.
                unsafe { extreme_rows_on::<MAX>(a, &mut got, x.as_ptr(), stride as isize, len) };
                let same = got.iter().zip(&want).all(|(p, q)| p.to_bits() == q.to_bits());
                assert!(same, "MAX={MAX} w={w} len={len}: {got:?} != {want:?}");
            }
        }
    }

    #[test]
    fn every_width_gives_the_scan_in_row_order() {
        let stride = 211;
        let mut x = crate::test_data::pseudo_random(100 * stride, 5, -3.0, 6.0);
        check::<true>(&x, stride);
        check::<false>(&x, stride);
        // Ties between 0.0 and -0.0 (the earlier kept), NaNs with payloads (the first kept),
        // infinities of both signs in one row (the NaN detector's false alarm).
        for (i, v) in x.iter_mut().enumerate() {
            *v = match i % 13 {
                0 => 0.0,
                1 => -0.0,
                2 if i % 7 == 0 => f32::from_bits(0x7fc0_0000 | i as u32),
                3 => f32::INFINITY,
                4 => f32::NEG_INFINITY,
                _ => -(*v).abs(),
            };
        }
        check::<true>(&x, stride);
        check::<false>(&x, stride);
    }
}
