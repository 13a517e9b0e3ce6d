//! The standard normal cdf Phi and density (the two halves of gelu and its derivative), and
//! the tanh-approximated gelu, for f32 lanes.
//!
//! Phi(-a) for a >= 0 is computed as e^{-a^2/2} R(a), never as 1 + erf(-a/sqrt 2): that sum
//! cancels for negative x and loses every digit in the tail (torch's gelu returns 0 below
//! x ~ -5.5 and inaccurate values above; the reference float64 gelu does not). R(a) =
//! Phi(-a) e^{a^2/2} is smooth and slowly varying, fitted here in three pieces (relative
//! error <= 2.1e-8, fitted to a float64 reference in a minimax sense): a rational function of
//! degrees 3 / 4 on [0, 3.25), where 99.9% of standard normal samples fall, and polynomials of
//! degree 11 in a - centre above.
//! e^{-a^2/2} takes its argument exactly: with m = -a/2 (exact), the reduced argument
//! -a^2/2 - n ln2 is one FMA, a m - n ln2_hi, rounded once.
//!
//! A vector whose lanes all have |x| < 3.25 (so e^{-x^2/2} is a normal number and R is the
//! first polynomial) takes a short path with no clamp and no per-lane choice; the general
//! path does the same operations on those lanes (the same bits), so a lane's result does not
//! depend on its neighbours or on the vector width.

use super::math::{exp_hl, exp_lite_reduced, horner, pow2i, quotient_1p, LN2_HI, LN2_LO, LOG2_E, ROUND_MAGIC};
use super::F32s;
use pulp::Simd;

/// R's pieces: a < 3.25, 3.25 <= a < 5.5, a >= 5.5.
const SPLIT: [f32; 2] = [3.25, 5.5];
/// The first piece, R(a) = P(a) / Q(a) with P of degree 3 and Q of degree 4 (relative error
/// 2.1e-8 with these float32 coefficients, fitted here): 7 FMAs and a division, where the
/// degree-12 polynomial it replaced took 12 FMAs and a subtraction on the FMA pipes that bound
/// gelu's time (the divider is a unit of its own). Highest power first.
const R_P: [f32; 4] = [0.011_191_95, 0.092_798_85, 0.311_312_6, 0.5];
const R_Q: [f32; 5] = [0.028_105_877, 0.231_535_54, 0.819_005_85, 1.420_509_3, 1.0];
/// The outer pieces, degree 11 polynomials in a - centre.
const CENTRE: [f32; 2] = [3.875, 10.0];
const R_COEF: [[f32; 12]; 2] = [
    [
        -1.847_490_2e-9, 1.112_253_6e-8, -4.996_115_9e-8, 2.787_585_6e-7, -1.566_356_6e-6, 8.361_363e-6, -4.331_950_2e-5,
        2.179_682_9e-4, -1.061_249_8e-3, 4.984_241_9e-3, -2.249_768e-2, 9.714_699_5e-2,
    ],
    [
        -3.700_635_7e-13, 3.613_071_4e-12, -1.912_880_1e-11, 2.313_661_5e-10, -2.934_910_8e-9, 3.113_668_3e-8,
        -3.275_091_8e-7, 3.462_346e-6, -3.628_046_8e-5, 3.766_528_7e-4, -3.875_338_7e-3, 3.950_669_2e-2,
    ],
];
/// Beyond this |x| e^{-x^2/2} is 0 in f32 (and R's fit ends at 14.25).
const A_MAX: f32 = 15.0;
const FRAC_1_SQRT_2PI: f32 = 0.398_942_3;

/// R(a) = Phi(-a) e^{a^2/2} on the first piece, a < 3.25.
#[inline(always)]
fn mills_first<S: Simd>(a: F32s<S>) -> F32s<S> {
    horner(a, &R_P) / horner(a, &R_Q)
}

/// R(a) for a >= 3.25 (or NaN), each lane picking its outer piece's coefficients (selects).
#[inline(always)]
fn mills_outer<S: Simd>(a: F32s<S>) -> F32s<S> {
    let second = a.lt_c(SPLIT[1]);
    let pick = |c: [f32; 2]| F32s::select(second, a.k(c[0]), a.k(c[1]));
    let v = a - pick(CENTRE);
    let mut p = pick([R_COEF[0][0], R_COEF[1][0]]);
    for k in 1..12 {
        p = p.mul_add(v, pick([R_COEF[0][k], R_COEF[1][k]]));
    }
    p
}

/// (z, n, e^r) with -a^2/2 = n ln2 + r, |r| <= ln2 / 2 about; z holds n in its low mantissa
/// bits. a m - n ln2_hi is exact before its one rounding (a m = -a^2/2 inside the FMA, and
/// n ln2_hi is exact: n has 8 bits, ln2_hi 9).
#[inline(always)]
fn half_square_exp<S: Simd>(a: F32s<S>) -> (F32s<S>, F32s<S>, F32s<S>) {
    let m = a * -0.5;
    let z = (a * m).mul_add_c(LOG2_E, ROUND_MAGIC);
    let n = z - ROUND_MAGIC;
    let r = a.mul_add(m, n * -LN2_HI);
    let r = n.mul_add(a.k(-LN2_LO), r);
    (z, n, exp_lite_reduced(r))
}

/// (e^{-x^2/2}, R(|x|)): Phi(-|x|) is their product, the density e^{-x^2/2} / sqrt(2 pi).
#[inline(always)]
fn gauss_and_mills<S: Simd>(x: F32s<S>) -> (F32s<S>, F32s<S>) {
    let a = x.abs();
    if a.lt_c(SPLIT[0]).all() {
        // e^{-a^2/2} >= e^{-5.3}: 2^n goes straight into the exponent field.
        let (z, _, er) = half_square_exp(a);
        return (er.bits().add_bits(z.bits().shl(23)).to_f32s(), mills_first(a));
    }
    // Clamped with a select so NaN stays NaN; past A_MAX both factors are 0 anyway. 2^n in two
    // halves, so a subnormal result rounds once (for a normal one, the same bits as above).
    let a = F32s::select(a.gt_c(A_MAX), a.k(A_MAX), a);
    let (_, n, er) = half_square_exp(a);
    let n1 = (n * 0.5 + ROUND_MAGIC) - ROUND_MAGIC;
    (er * pow2i(n1) * pow2i(n - n1), F32s::select(a.lt_c(SPLIT[0]), mills_first(a), mills_outer(a)))
}

/// gelu(x) = x Phi(x), Phi(x) = g R below 0 and 1 - g R above (g R <= 1/2, so no cancellation).
#[inline(always)]
pub fn gelu<S: Simd>(x: F32s<S>) -> F32s<S> {
    let (gauss, r) = gauss_and_mills(x);
    let q = gauss * r;
    x * F32s::select(x.lt_c(0.0), q, x.k(1.0) - q)
}

/// d gelu / dx = Phi(x) + x phi(x).
#[inline(always)]
pub fn gelu_grad<S: Simd>(x: F32s<S>) -> F32s<S> {
    let (gauss, r) = gauss_and_mills(x);
    let q = gauss * r;
    let cdf = F32s::select(x.lt_c(0.0), q, x.k(1.0) - q);
    let d = (x * gauss).mul_add(x.k(FRAC_1_SQRT_2PI), cdf);
    // torch: x * phi(x) is inf * 0, NaN, at both infinities (`gauss` is clamped above 0 here)
    F32s::select(x.abs().gt_c(f32::MAX), x.k(f32::NAN), d)
}

// gelu(x, approximate="tanh") = x (1 + tanh u) / 2 with u = sqrt(2/pi) (x + 0.044715 x^3).
// (1 + tanh u) / 2 = sigmoid(2u), which does not cancel for negative u as 1 + tanh u does.
// sigmoid(2u) magnifies the relative error of 2u by |2u| (up to ~15 before the result
// vanishes), so 2u is carried as an unevaluated sum hi + lo (products and sums with their
// exact rounding errors, by FMA), constants included.
const TWO_SQRT_2_OVER_PI: (f32, f32) = (1.595_769_2, -4.534_068e-8);
const KAPPA: (f32, f32) = (0.044_715, 1.546_144_4e-9);
const SQRT_2_OVER_PI: f32 = 0.797_884_6;

/// a * b = p + e exactly.
#[inline(always)]
fn two_prod<S: Simd>(a: F32s<S>, b: F32s<S>) -> (F32s<S>, F32s<S>) {
    let p = a * b;
    (p, a.mul_add(b, -p))
}

/// a + b = s + e exactly (Knuth's branch-free two-sum).
#[inline(always)]
fn two_sum<S: Simd>(a: F32s<S>, b: F32s<S>) -> (F32s<S>, F32s<S>) {
    let s = a + b;
    let bb = s - a;
    (s, (a - (s - bb)) + (b - bb))
}

/// Past this |x| sigmoid(2u) is 0 or 1 in f32; clamping keeps x^3 finite (inf - inf is NaN).
const X_MAX_TANH: f32 = 12.0;

/// (e, t): sigmoid(2u) = e / (1 + e) where 2u < 0 (`t` negative), 1 / (1 + e) elsewhere.
#[inline(always)]
pub(crate) fn tanh_half_parts<S: Simd>(x: F32s<S>) -> (F32s<S>, F32s<S>) {
    let x = F32s::select(x.gt_c(X_MAX_TANH), x.k(X_MAX_TANH), x);
    let x = F32s::select(x.lt_c(-X_MAX_TANH), x.k(-X_MAX_TANH), x);
    let (x2, x2l) = two_prod(x, x);
    let (p, pl) = two_prod(x.k(KAPPA.0), x2);
    let pl = x2.mul_add(x.k(KAPPA.1), x2l.mul_add(x.k(KAPPA.0), pl));
    let (w, wl) = two_sum(x.k(1.0), p); // 1 + kappa x^2
    let (v, vl) = two_prod(x, w);
    let vl = x.mul_add(wl + pl, vl); // x (1 + kappa x^2)
    let (t, tl) = two_prod(x.k(TWO_SQRT_2_OVER_PI.0), v);
    let tl = v.mul_add(x.k(TWO_SQRT_2_OVER_PI.1), vl.mul_add(x.k(TWO_SQRT_2_OVER_PI.0), tl)); // 2u = t + tl
    // e^{-|2u|} = e^{-|t| - sign(t) tl}
    (exp_hl(-t.abs(), F32s::select(t.lt_c(0.0), tl, -tl)), t)
}

/// gelu(x, approximate="tanh") = x sigmoid(2u).
#[inline(always)]
pub fn gelu_tanh<S: Simd>(x: F32s<S>) -> F32s<S> {
    let (e, t) = tanh_half_parts(x);
    x * quotient_1p(F32s::select(t.lt_c(0.0), e, x.k(1.0)), e)
}

/// Its derivative: (1 + tanh u) / 2 + x/2 (1 - tanh^2 u) u'(x), with 1 + tanh u = 2s and
/// 1 - tanh^2 u = 4 s (1 - s) = 4 e / (1 + e)^2 for s = sigmoid(2u) (no cancellation).
#[inline(always)]
pub fn gelu_tanh_grad<S: Simd>(x: F32s<S>) -> F32s<S> {
    let (e, t) = tanh_half_parts(x);
    let r = x.k(1.0) / (e + 1.0);
    let s = F32s::select(t.lt_c(0.0), e * r, r);
    let xc = x.abs();
    let xc = F32s::select(xc.gt_c(X_MAX_TANH), x.k(X_MAX_TANH), xc);
    let du = (xc * xc).mul_add_c(3.0 * KAPPA.0, 1.0) * SQRT_2_OVER_PI;
    ((x * 2.0) * (e * r * r)).mul_add(du, s)
}
