//! Scans along one dim: cumsum, cumprod, logcumsumexp.
//!
//! The op layer hands over rows: a row-major `[rows, n]` buffer whose last dim is the scanned
//! one, and an output buffer of the same shape and dtype (torch casts the input to the result
//! dtype before scanning). Each row is scanned left to right in torch's CPU accumulator type:
//! f64 for float32 and float64, i64 (wrapping) for the integer dtypes; each partial result is
//! rounded back to the element type on the way out. That is the order and precision of torch's
//! `cpu_cum_base_kernel`, so results agree bit for bit. Rows are independent: many rows are
//! split over rayon in fixed chunks, which changes who computes a row, never its value.

use super::parallel::PAR_MIN_ELEMS;
use crate::element::Element;
use rayon::prelude::*;

/// Which running reduction a scan computes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan {
    Sum,
    Prod,
    /// `log(exp(a) + exp(b))` running from `-inf` (floating dtypes only).
    LogSumExp,
}

/// torch's `_log_add_exp_helper`: NaN in the running value wins, then a NaN input; two equal
/// infinities give that infinity (`-inf + -inf` stays `-inf` instead of becoming NaN).
#[inline]
fn log_add_exp<F: num_traits::Float>(x: F, acc: F) -> F {
    let (lo, hi) = if acc.is_nan() {
        (acc, acc)
    } else if x.is_nan() {
        (x, x)
    } else {
        (x.min(acc), x.max(acc))
    };
    if lo != hi || lo.is_finite() {
        (lo - hi).exp().ln_1p() + hi
    } else {
        x
    }
}

fn row_float<T: Element>(op: Scan, xs: &[T], ys: &mut [T]) {
    let mut acc = match op {
        Scan::Sum => 0.0,
        Scan::Prod => 1.0,
        Scan::LogSumExp => f64::NEG_INFINITY,
    };
    for (y, &x) in ys.iter_mut().zip(xs) {
        let x = x.to_f64();
        acc = match op {
            Scan::Sum => acc + x,
            Scan::Prod => acc * x,
            Scan::LogSumExp => log_add_exp(x, acc),
        };
        *y = T::from_f64(acc);
    }
}

fn row_int<T: Element>(op: Scan, xs: &[T], ys: &mut [T]) {
    let mut acc: i64 = if op == Scan::Prod { 1 } else { 0 };
    for (y, &x) in ys.iter_mut().zip(xs) {
        acc = match op {
            Scan::Prod => acc.wrapping_mul(x.to_i64()),
            _ => acc.wrapping_add(x.to_i64()),
        };
        *y = T::from_i64(acc);
    }
}

/// Scans every row of length `n` of `xs` into `ys` (same length, a multiple of `n`).
/// Bool rows are not scanned (torch refuses them before any kernel runs); `LogSumExp` on an
/// integer dtype is refused by the op layer too.
pub fn scan_rows<T: Element>(op: Scan, xs: &[T], ys: &mut [T], n: usize) {
    assert_eq!(xs.len(), ys.len(), "scan: input and output differ in length");
    if n == 0 || xs.is_empty() {
        return;
    }
    let floating = T::DTYPE.is_floating();
    let row = move |(y, x): (&mut [T], &[T])| {
        if floating {
            row_float(op, x, y)
        } else {
            row_int(op, x, y)
        }
    };
    if xs.len() >= PAR_MIN_ELEMS && xs.len() / n > 1 {
        ys.par_chunks_mut(n).zip(xs.par_chunks(n)).for_each(row);
    } else {
        ys.chunks_mut(n).zip(xs.chunks(n)).for_each(row);
    }
}

/// `scan_rows` for float32 rows that hold float16/bfloat16 values, accumulated in float32:
/// torch's CPU scans of the half types run in `acc_type<Half>` = float (not double), so the
/// widened rows must not accumulate in f64, or a long cumsum rounds differently.
pub fn scan_rows_f32_acc(op: Scan, xs: &[f32], ys: &mut [f32], n: usize) {
    assert_eq!(xs.len(), ys.len(), "scan: input and output differ in length");
    if n == 0 || xs.is_empty() {
        return;
    }
    let row = move |(y, x): (&mut [f32], &[f32])| {
        let mut acc = match op {
            Scan::Sum => 0.0f32,
            Scan::Prod => 1.0,
            Scan::LogSumExp => f32::NEG_INFINITY,
        };
        for (y, &x) in y.iter_mut().zip(x) {
            acc = match op {
                Scan::Sum => acc + x,
                Scan::Prod => acc * x,
                Scan::LogSumExp => log_add_exp(x, acc),
            };
            *y = acc;
        }
    };
    if xs.len() >= PAR_MIN_ELEMS && xs.len() / n > 1 {
        ys.par_chunks_mut(n).zip(xs.par_chunks(n)).for_each(row);
    } else {
        ys.chunks_mut(n).zip(xs.chunks(n)).for_each(row);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sums_accumulate_in_f64_and_round_each_step() {
        // 1e8 + 1 + 1 ... in f32 steps would stay at 1e8; torch accumulates in double.
        let xs = [1e8f32, 1.0, 1.0, 1.0, 1.0];
        let mut ys = [0f32; 5];
        scan_rows(Scan::Sum, &xs, &mut ys, 5);
        assert_eq!(ys, [1e8, 1e8, 1e8, 1e8 + 4.0, 1e8 + 4.0]);
    }

    #[test]
    fn half_rows_accumulate_in_f32() {
        // 2^24 + 1 + 1: f32 steps stay at 2^24 (round to even), f64 steps reach 2^24 + 2
        let xs = [16777216f32, 1.0, 1.0];
        let mut ys = [0f32; 3];
        scan_rows_f32_acc(Scan::Sum, &xs, &mut ys, 3);
        assert_eq!(ys, [16777216.0, 16777216.0, 16777216.0]);
        scan_rows(Scan::Sum, &xs, &mut ys, 3);
        assert_eq!(ys[2], 16777218.0);
    }

    #[test]
    fn integer_scans_wrap_like_int64() {
        let xs = [i32::MAX, 1, 1];
        let mut ys = [0i32; 3];
        scan_rows(Scan::Sum, &xs, &mut ys, 3);
        // the running value is an i64; only the stored copy wraps to i32
        assert_eq!(ys, [i32::MAX, i32::MIN, i32::MIN + 1]);
        let xs = [2i64, 3, 4, 5, 6, 7];
        let mut ys = [0i64; 6];
        scan_rows(Scan::Prod, &xs, &mut ys, 3);
        assert_eq!(ys, [2, 6, 24, 5, 30, 210]);
    }

    #[test]
    fn logcumsumexp_handles_infinities_and_nan() {
        let (inf, nan) = (f64::INFINITY, f64::NAN);
        let xs = [-inf, -inf, 1.0, inf, inf, nan, 2.0];
        let mut ys = [0f64; 7];
        scan_rows(Scan::LogSumExp, &xs, &mut ys, 7);
        assert_eq!(&ys[..5], &[-inf, -inf, 1.0, inf, inf]);
        assert!(ys[5].is_nan() && ys[6].is_nan());
        let xs = [0.0f64, 0.0];
        scan_rows(Scan::LogSumExp, &xs, &mut ys[..2], 2);
        assert_eq!(ys[1], std::f64::consts::LN_2);
    }
}
