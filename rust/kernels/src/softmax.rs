//! softmax and log_softmax along one dim of a contiguous tensor viewed as [outer, n, inner].
//!
//! Each slice along the dim is independent: shift by its max (NaN-propagating, so a NaN makes
//! the slice NaN as in torch), exponentiate once in the element type (float32: the vectorised
//! exp, summed in float32 lanes in `simd::sum`'s fixed cascade; float64: summed in f64), then
//! scale. With `inner == 1`
//! slices are contiguous rows; otherwise a block of `inner` positions is processed together,
//! reading memory row by row.

use super::parallel::{for_tasks, SendPtr, GRAIN, PAR_MIN_ELEMS};
use super::reducers::extreme;
use super::simd::{self, fold, math::{ExpDiff, ExpShift}};
use crate::element::{Element, FloatElement};

/// The row and column kernels per dtype: float32's exponentials are the vectorised ones of
/// `simd`, float64's libm's. Both sum in f64, in a fixed lane order.
pub trait SoftmaxElement: FloatElement {
    /// # Safety
    /// As `row`.
    unsafe fn row(src: *const Self, dst: *mut Self, n: usize, log: bool);
    /// # Safety
    /// As `columns`.
    #[allow(clippy::too_many_arguments)]
    unsafe fn columns(src: *const Self, dst: *mut Self, n: usize, inner: usize, base: usize, j0: usize, j1: usize, log: bool);
}

impl SoftmaxElement for f64 {
    unsafe fn row(src: *const f64, dst: *mut f64, n: usize, log: bool) {
        row(src, dst, n, log)
    }
    unsafe fn columns(src: *const f64, dst: *mut f64, n: usize, inner: usize, base: usize, j0: usize, j1: usize, log: bool) {
        columns(src, dst, n, inner, base, j0, j1, log)
    }
}

impl SoftmaxElement for f32 {
    /// Three passes over the (cached) row, each one vector loop: its max; `e^(x - max)` summed
    /// in float32 lanes (`simd::sum`'s cascade) and, for softmax, stored in `dst`; then the
    /// scaling by `1 / sum`, or for log_softmax `(x - max) - log sum` (torch's order: the sign
    /// of a zero result follows it). Fusing the exponential with the sum measured slower when
    /// the sum's lanes were f64 (0.69 against 0.58 ns per element); with float32 lanes it is
    /// the faster one.
    unsafe fn row(src: *const f32, dst: *mut f32, n: usize, log: bool) {
        // SAFETY: the caller's contract (n elements each, no overlap).
        let (xs, ys) = (std::slice::from_raw_parts(src, n), std::slice::from_raw_parts_mut(dst, n));
        let max = fold::extreme::<true>(xs);
        if log {
            let sum = simd::sum::sum_map(ExpShift(max), xs);
            fold::sub_sub(ys, xs, max, sum.ln() as f32);
        } else {
            let sum = simd::sum::map_sum(ExpShift(max), ys, xs);
            fold::scale(ys, (1.0 / sum) as f32);
        }
    }

    unsafe fn columns(src: *const f32, dst: *mut f32, n: usize, inner: usize, base: usize, j0: usize, j1: usize, log: bool) {
        let w = j1 - j0;
        let mut max = [f32::NEG_INFINITY; COLS];
        let mut sum = [0.0f64; COLS];
        // SAFETY (each slice below): row d of this outer index, positions j0..j1, inside the
        // buffers; dst does not overlap src.
        let xs = |d: usize| std::slice::from_raw_parts(src.add(base + d * inner + j0), w);
        let ys = |d: usize| std::slice::from_raw_parts_mut(dst.add(base + d * inner + j0), w);
        simd::run(|| {
            for d in 0..n {
                for (m, &x) in max[..w].iter_mut().zip(xs(d)) {
                    *m = extreme::<f32, true>(&[*m, x]);
                }
            }
        });
        for d in 0..n {
            simd::map2(ExpDiff, ys(d), xs(d), &max[..w]);
            simd::run(|| {
                for (s, &y) in sum[..w].iter_mut().zip(ys(d).iter()) {
                    *s += wide(y);
                }
            });
        }
        simd::run(|| {
            if log {
                for s in sum[..w].iter_mut() {
                    *s = s.ln();
                }
                for d in 0..n {
                    for (((y, &x), &lse), &m) in ys(d).iter_mut().zip(xs(d)).zip(&sum[..w]).zip(&max[..w]) {
                        *y = ((wide(x) - wide(m)) - lse) as f32;
                    }
                }
            } else {
                for s in sum[..w].iter_mut() {
                    *s = 1.0 / *s;
                }
                for d in 0..n {
                    for (y, &inv) in ys(d).iter_mut().zip(&sum[..w]) {
                        *y = (wide(*y) * inv) as f32;
                    }
                }
            }
        })
    }
}

/// About how many copies' work one softmax element costs (0.5 ns per element against a
/// copy's 0.087): where the parallel threshold and task size are divided by it.
const SOFTMAX_COST: usize = 6;

/// Positions along `inner` handled together (their maxima and sums live on the stack).
const COLS: usize = 256;

#[inline(always)]
fn wide<T: FloatElement>(x: T) -> f64 {
    Element::to_f64(x)
}

/// NaN-propagating max (a NaN anywhere in a slice makes the whole slice NaN, as in torch).
#[inline(always)]
fn max_nan<T: FloatElement>(a: T, b: T) -> T {
    if a.is_nan() || b.is_nan() {
        T::nan()
    } else if b > a {
        b
    } else {
        a
    }
}

/// One contiguous slice of length `n`: exp(x - max) is computed once, stored, then scaled.
///
/// # Safety
/// `src` and `dst` each point to `n` elements; they do not overlap.
unsafe fn row<T: FloatElement>(src: *const T, dst: *mut T, n: usize, log: bool) {
    // SAFETY: the caller's contract.
    let (xs, ys) = (std::slice::from_raw_parts(src, n), std::slice::from_raw_parts_mut(dst, n));
    let max = xs.iter().fold(T::neg_infinity(), |m, &x| max_nan(m, x));
    if log {
        let sum: f64 = xs.iter().map(|&x| wide((x - max).exp())).sum();
        let (m, lse) = (wide(max), sum.ln());
        for (y, &x) in ys.iter_mut().zip(xs) {
            *y = <T as Element>::from_f64((wide(x) - m) - lse);
        }
    } else {
        let mut sum = 0.0f64;
        for (y, &x) in ys.iter_mut().zip(xs) {
            *y = (x - max).exp();
            sum += wide(*y);
        }
        let inv = 1.0 / sum;
        for y in ys.iter_mut() {
            *y = <T as Element>::from_f64(wide(*y) * inv);
        }
    }
}

/// Positions `j0..j1` of the inner dim of one outer index (`base` = its first element).
///
/// # Safety
/// `src`/`dst` + `base` start `n * inner` elements each; they do not overlap; `j1 - j0 <= COLS`.
#[allow(clippy::too_many_arguments)]
unsafe fn columns<T: FloatElement>(src: *const T, dst: *mut T, n: usize, inner: usize, base: usize, j0: usize, j1: usize, log: bool) {
    let w = j1 - j0;
    let mut max = [T::neg_infinity(); COLS];
    let mut sum = [0.0f64; COLS];
    // SAFETY (each slice below): row d of this outer index, positions j0..j1, inside the
    // buffers; dst does not overlap src.
    let xs = |d: usize| std::slice::from_raw_parts(src.add(base + d * inner + j0), w);
    let ys = |d: usize| std::slice::from_raw_parts_mut(dst.add(base + d * inner + j0), w);
    for d in 0..n {
        for (m, &x) in max[..w].iter_mut().zip(xs(d)) {
            *m = max_nan(*m, x);
        }
    }
    for d in 0..n {
        if log {
            for ((s, &m), &x) in sum[..w].iter_mut().zip(&max[..w]).zip(xs(d)) {
                *s += wide((x - m).exp());
            }
        } else {
            for (((s, &m), &x), y) in sum[..w].iter_mut().zip(&max[..w]).zip(xs(d)).zip(ys(d)) {
                *y = (x - m).exp();
                *s += wide(*y);
            }
        }
    }
    if log {
        for s in sum[..w].iter_mut() {
            *s = s.ln();
        }
        for d in 0..n {
            for (((y, &x), &lse), &m) in ys(d).iter_mut().zip(xs(d)).zip(&sum[..w]).zip(&max[..w]) {
                *y = <T as Element>::from_f64((wide(x) - wide(m)) - lse);
            }
        }
    } else {
        for s in sum[..w].iter_mut() {
            *s = 1.0 / *s;
        }
        for d in 0..n {
            for (y, &inv) in ys(d).iter_mut().zip(&sum[..w]) {
                *y = <T as Element>::from_f64(wide(*y) * inv);
            }
        }
    }
}

/// softmax (or log_softmax) of contiguous `src` into contiguous `dst`, both `outer * n * inner`.
///
/// # Safety
/// `src` and `dst` point to `outer * n * inner` elements each, and do not overlap.
pub unsafe fn softmax<T: SoftmaxElement>(src: *const T, dst: *mut T, outer: usize, n: usize, inner: usize, log: bool) {
    let total = outer * n * inner;
    if total == 0 {
        return;
    }
    let (s, d) = (SendPtr(src as *mut T), SendPtr(dst));
    // An element costs several copies' work (the exponential): parallel from smaller sizes,
    // in smaller tasks. Rows are independent, so the split does not change any result.
    let parallel = total >= PAR_MIN_ELEMS / SOFTMAX_COST && rayon::current_num_threads() > 1;
    if inner == 1 {
        let per = (GRAIN / SOFTMAX_COST / n).max(1);
        let task = |t: usize| {
            for o in t * per..((t + 1) * per).min(outer) {
                // SAFETY: row o of the caller's buffers; tasks own disjoint rows of dst.
                T::row(s.get().add(o * n) as *const T, d.get().add(o * n), n, log);
            }
        };
        for_tasks(outer.div_ceil(per), parallel, task);
        return;
    }
    let blocks = inner.div_ceil(COLS);
    let task = |t: usize| {
        let (o, b) = (t / blocks, t % blocks);
        let j0 = b * COLS;
        // SAFETY: outer index o, columns j0..j0+COLS clamped to inner; tasks own disjoint
        // (o, column block) parts of dst.
        T::columns(s.get() as *const T, d.get(), n, inner, o * n * inner, j0, (j0 + COLS).min(inner), log);
    };
    for_tasks(outer * blocks, parallel, task);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(x: &[f64]) -> Vec<f64> {
        let m = x.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = x.iter().map(|v| (v - m).exp()).sum();
        x.iter().map(|v| (v - m).exp() / s).collect()
    }

    #[test]
    fn rows_and_columns_agree_with_a_naive_softmax() {
        // [2, 3, 4] along dim 1: inner = 4 (column path); transposed copy gives the row path.
        let x: Vec<f64> = (0..24).map(|i| ((i * 7) % 11) as f64 * 0.3 - 1.0).collect();
        let mut y = vec![0.0; 24];
        // SAFETY: x and y hold 2*3*4 elements each.
        unsafe { softmax(x.as_ptr(), y.as_mut_ptr(), 2, 3, 4, false) };
        for o in 0..2 {
            for j in 0..4 {
                let col: Vec<f64> = (0..3).map(|d| x[o * 12 + d * 4 + j]).collect();
                let want = naive(&col);
                for d in 0..3 {
                    assert!((y[o * 12 + d * 4 + j] - want[d]).abs() < 1e-15);
                }
            }
        }
        let mut r = vec![0.0; 3];
        // SAFETY: 3 elements each.
        unsafe { softmax(x[..3].as_ptr(), r.as_mut_ptr(), 1, 3, 1, true) };
        let want = naive(&x[..3]);
        for d in 0..3 {
            assert!((r[d] - want[d].ln()).abs() < 1e-14);
        }
    }

    #[test]
    fn same_bits_on_any_pool() {
        // Rows ([500, 100], inner 1) and column blocks ([4, 50, 300]), both past the parallel
        // threshold, float32 and float64, softmax and log_softmax.
        let x32 = crate::test_data::pseudo_random(60_000, 77, -8.0, 16.0);
        let x64: Vec<f64> = x32.iter().map(|&v| v as f64 * 1.5).collect();
        for (outer, n, inner) in [(500, 100, 1), (4, 50, 300)] {
            for log in [false, true] {
                let run = |threads: usize| {
                    let (mut y32, mut y64) = (vec![0f32; 60_000], vec![0f64; 60_000]);
                    let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
                    // SAFETY: outer * n * inner = 50_000 or 60_000 elements, inside each buffer.
                    pool.install(|| unsafe {
                        softmax(x32.as_ptr(), y32.as_mut_ptr(), outer, n, inner, log);
                        softmax(x64.as_ptr(), y64.as_mut_ptr(), outer, n, inner, log);
                    });
                    (y32.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), y64.iter().map(|v| v.to_bits()).collect::<Vec<_>>())
                };
                let one = run(1);
                for threads in [2, 3, 4] {
                    assert!(run(threads) == one, "threads {threads} ({outer}, {n}, {inner}) log {log}");
                }
            }
        }
    }

    #[test]
    fn nan_poisons_its_slice_only() {
        let x = [1.0f32, f32::NAN, 2.0, 3.0];
        let mut y = [0.0f32; 4];
        // SAFETY: 4 elements each.
        unsafe { softmax(x.as_ptr(), y.as_mut_ptr(), 2, 2, 1, false) };
        assert!(y[0].is_nan() && y[1].is_nan());
        assert!((y[2] + y[3] - 1.0).abs() < 1e-6);
    }
}
