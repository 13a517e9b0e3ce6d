//! exp, log, tanh and sigmoid of f32 lanes: range reduction plus a short polynomial, in the
//! style of Cephes (log's polynomial is Cephes' single-precision minimax fit; exp's and
//! tanh's are refitted here, over the ranges below). Their measured
//! error against a float64 reference is in `docs/kernels.md` and asserted by `accuracy_tests`.
//!
//! Special values follow torch: NaN in gives NaN out; exp(-inf) = 0, exp(inf) = inf;
//! log(0) = log(-0) = -inf, log(x < 0) = NaN, log(inf) = inf; tanh and sigmoid saturate to
//! +-1 and 0/1 at +-inf, and tanh(-0) = -0.

use super::F32s;
use pulp::Simd;

pub(crate) const LOG2_E: f32 = std::f32::consts::LOG2_E;
/// ln 2 split in two: `n * LN2_HI` is exact for the |n| <= 150 exp needs (9 significant bits).
pub(crate) const LN2_HI: f32 = 0.693_359_4;
pub(crate) const LN2_LO: f32 = -2.121_944_4e-4;
/// 1.5 * 2^23: adding it rounds an f32 of magnitude < 2^22 to an integer, left in the low
/// mantissa bits (their low 9 bits are those of the integer, two's complement).
pub(crate) const ROUND_MAGIC: f32 = 12_582_912.0;

/// `c[0] x^(k-1) + ... + c[k-1]`, by Horner's rule with fused multiply-adds.
#[inline(always)]
pub fn horner<S: Simd>(x: F32s<S>, c: &[f32]) -> F32s<S> {
    let mut p = x.k(c[0]);
    for &ci in &c[1..] {
        p = p.mul_add(x, x.k(ci));
    }
    p
}

/// 2^n for integer-valued `n` in [-126, 127], built in the exponent field.
#[inline(always)]
pub(crate) fn pow2i<S: Simd>(n: F32s<S>) -> F32s<S> {
    // bits(n + MAGIC) = bits(MAGIC) + n, and bits(MAGIC) has nine low zero bits, so after
    // adding the bias and shifting by 23 only (n + 127) is left, in the exponent field.
    (n + ROUND_MAGIC).bits().add(127).shl(23).to_f32s()
}

/// e^x, within 0.57 ulp of the exact value (0.75 for subnormal results): 2^k 2^(j/16) e^r,
/// with 2^(j/16) read from a table held in registers and e^r - 1 a polynomial of degree 3.
#[inline(always)]
pub fn exp<S: Simd>(x: F32s<S>) -> F32s<S> {
    // -0.0 is the additive identity LLVM may fold away (x + 0.0 is not: -0.0 + 0.0 = 0.0).
    exp_hl(x, x.k(-0.0))
}

/// e^(x + x_lo) for a small correction x_lo (|x_lo| <= ulp(x)): for arguments that are
/// themselves sums carried exactly, like -a^2/2 in gelu.
#[inline(always)]
pub fn exp_hl<S: Simd>(x: F32s<S>, x_lo: F32s<S>) -> F32s<S> {
    // Fast path, when every lane's result is a normal number: 2^n goes straight into the
    // exponent field. Otherwise (subnormal, overflow, NaN, infinities) the careful path.
    if x.abs().lt_c(87.0).all() {
        return exp_normal(x, x_lo);
    }
    exp_careful(x, x_lo)
}

/// `exp_hl` for |x| < 87 (every result a normal number), no test.
#[inline(always)]
fn exp_normal<S: Simd>(x: F32s<S>, x_lo: F32s<S>) -> F32s<S> {
    let (z, _, er) = reduce_and_expand(x, x_lo);
    // z holds n = 16k + j in its low mantissa bits: shifted by 19, k lands in the exponent
    // field (j, below it, is masked off), and adding it multiplies by 2^k.
    er.bits().add_bits(z.bits().shl(19).and(0xFF80_0000)).to_f32s()
}

/// 2^(j/16) for j = 0..16, as the nearest float32 `EXP_T_HI[j]` and the rest, `EXP_T_LO[j]`
/// (|lo| < 2^-24 hi): the pair is within 2^-48 of the exact power (relative). Computed with
/// mpmath (the power to 100 bits, rounded to float32, the remainder rounded to float32);
/// `exp_table_is_two_to_the_j_sixteenths` checks them against float64.
const EXP_T_HI: [f32; 16] = [
    1.0, 1.044_273_7, 1.090_507_7, 1.138_788_6, 1.189_207_1, 1.241_857_8, 1.296_839_6, 1.354_255_6, 1.414_213_5, 1.476_826_2,
    1.542_210_8, 1.610_490_3, 1.681_792_9, 1.756_252_2, 1.834_008_1, 1.915_206_6,
];
const EXP_T_LO: [f32; 16] = [
    0.0, 4.833_470_2e-8, -1.307_754e-8, 5.386_222_3e-8, 3.797_635_3e-8, 4.496_838e-8, -4.018_999_5e-8, -1.012_334_9e-8,
    2.420_323_5e-8, -4.500_899e-8, 8.070_905e-9, 9.836_217e-9, -2.475_532_7e-8, -9.235_770_4e-9, -1.123_927_8e-8,
    9.845_328e-9,
];
/// ln2 / 16 in two pieces (LN2_HI, LN2_LO scaled exactly): `n * LN2_16_HI` is exact for the
/// |n| <= 2400 exp needs.
const LN2_16_HI: f32 = LN2_HI / 16.0;
const LN2_16_LO: f32 = LN2_LO / 16.0;

/// (z, n, e^(x - k ln2)) with x + x_lo = n ln2/16 + r, n = 16k + j, 0 <= j < 16: z is
/// n + ROUND_MAGIC (n in its low mantissa bits), and the third is 2^(j/16) e^r, near [1, 2).
#[inline(always)]
fn reduce_and_expand<S: Simd>(x: F32s<S>, x_lo: F32s<S>) -> (F32s<S>, F32s<S>, F32s<S>) {
    // |r| <= ln2 / 32: n ln2_hi / 16 and its subtraction from x are exact, the second step
    // rounds r (by 2^-30 of the result at most; Cody and Waite).
    let z = x.mul_add_c(16.0 * LOG2_E, ROUND_MAGIC);
    let n = z - ROUND_MAGIC;
    let r = n.mul_add(x.k(-LN2_16_HI), x);
    let r = n.mul_add(x.k(-LN2_16_LO), r) + x_lo;
    // e^r - 1 = r + r^2 (c2 + c3 r), fitted here (error 1.7e-9 on |r| <= 1.01 ln2/32).
    let p = r.mul_add_c(1.666_703_2e-1, 5.000_165e-1).mul_add(r * r, r);
    // The low 4 bits of n (two's complement) pick 2^(j/16) from the table held in registers.
    // 2^(j/16) e^r = t_hi + (t_hi p + t_lo): the last addition is the only rounding of note
    // (0.5 ulp); the inner one is 2^-5 of an ulp smaller.
    let j = z.bits();
    let t_hi = j.lookup16(&EXP_T_HI);
    let t_lo = j.lookup16(&EXP_T_LO);
    (z, n, t_hi + t_hi.mul_add(p, t_lo))
}

/// The general path of `exp_hl`: clamped so the exponent tricks stay in range, and 2^k
/// applied in two halves so that k down to -150 (subnormal results) and up to 128 (overflow
/// to inf) stay exact until the last multiply, which rounds once.
#[inline(always)]
fn exp_careful<S: Simd>(x: F32s<S>, x_lo: F32s<S>) -> F32s<S> {
    // Clamp with selects, not min/max, so NaN passes through; outside [-104, 89] the result
    // is 0 or inf anyway.
    let x = F32s::select(x.gt_c(89.0), x.k(89.0), x);
    let x = F32s::select(x.lt_c(-104.0), x.k(-104.0), x);
    let (_, n, er) = reduce_and_expand(x, x_lo);
    // k = floor(n / 16): n / 16 - 15/32 lies within 15/32 of k (exact: a multiple of 1/32).
    let k = (n.mul_add_c(0.0625, -0.468_75) + ROUND_MAGIC) - ROUND_MAGIC;
    let k1 = (k * 0.5 + ROUND_MAGIC) - ROUND_MAGIC;
    er * pow2i(k1) * pow2i(k - k1)
}

/// ln x, at most 1 ulp from the exact value (subnormal inputs included).
#[inline(always)]
pub fn log<S: Simd>(x: F32s<S>) -> F32s<S> {
    // A vector of positive normal numbers (the usual case) skips the subnormal scaling and the
    // special-value selects: a third of the operations. Either path gives a lane the same bits.
    if x.gt_c(f32::from_bits(0x007F_FFFF)).and(x.lt_c(f32::INFINITY)).all() {
        return log_normal(x, x.bits(), x.k(0.0));
    }
    // Subnormal inputs are scaled into the normal range first.
    let tiny = x.lt_c(f32::MIN_POSITIVE);
    let xs = F32s::select(tiny, x * 8_388_608.0, x);
    let r = log_normal(x, xs.bits(), F32s::select(tiny, x.k(23.0), x.k(0.0)));
    // The special values, last (the arithmetic above gives garbage for them).
    let r = F32s::select(x.eq(x.k(f32::INFINITY)), x, r);
    let r = F32s::select(x.eq(x.k(0.0)), x.k(f32::NEG_INFINITY), r);
    let r = F32s::select(x.lt_c(0.0), x.k(f32::NAN), r);
    F32s::select(x.is_nan(), x, r)
}

/// The bits of sqrt(1/2) rounded down to float32.
const SQRT_HALF_BITS: u32 = 0x3F35_04F3;

/// ln of the positive normal number whose bits are `bits`, minus `shift` ln2 (the scaling of a
/// subnormal input); `x` only lends its instruction-set token.
#[inline(always)]
fn log_normal<S: Simd>(x: F32s<S>, bits: super::U32s<S>, shift: F32s<S>) -> F32s<S> {
    // x = 2^e m with m in [sqrt(1/2), sqrt(2)): moving the bits down by those of sqrt(1/2)
    // makes the exponent field carry exactly when m >= sqrt(2) would have (no compare), the
    // field read as an integer through the mantissa of 2^23; m gets its bits back after.
    let b = bits.add(0x3F80_0000 - SQRT_HALF_BITS);
    let e = b.shr(23).or(0x4B00_0000).to_f32s() - 8_388_735.0; // 2^23 + 127
    let e = e - shift;
    let m = b.and(0x007F_FFFF).add(SQRT_HALF_BITS).to_f32s();
    let f = m - 1.0; // exact: m is within a factor of two of 1
    // ln(1 + f) = f - f^2/2 + f^3 P(f)
    let z = f * f;
    let p = horner(
        f,
        &[
            7.037_683_6e-2,
            -1.151_461e-1,
            1.167_699_9e-1,
            -1.242_014_1e-1,
            1.424_932_3e-1,
            -1.666_805_8e-1,
            2.000_071_4e-1,
            -2.499_999_4e-1,
            3.333_333_1e-1,
        ],
    );
    let y = p * f * z;
    let y = e.mul_add(x.k(LN2_LO), y);
    let y = z.mul_add(x.k(-0.5), y);
    e.mul_add(x.k(LN2_HI), f + y)
}

/// tanh's polynomial piece ends here; above it 1 - 2 / (e^{2a} + 1) loses little to e^{2a}'s
/// rounding (its relative error is damped by 2 e^{2a} / (e^{2a} + 1)^2 / tanh a <= 0.25).
const TANH_SPLIT: f32 = 1.0;
/// tanh a = a + a z P(z), z = a^2, on [0, 1): P of degree 7 in z, highest power first (fitted
/// here by reweighted least squares in float64, relative error 1e-8 with these float32
/// coefficients).
const TANH_P: [f32; 8] = [
    1.214_701e-4, -8.411_347_5e-4, 3.078_590_4e-3, -8.595_112e-3, 2.178_473e-2, -5.395_309_6e-2, 1.333_32e-1, -3.333_332_8e-1,
];

/// tanh x: the odd polynomial below |x| = 1 and 1 - 2 / (e^{2|x|} + 1) above, with `exp_lite`
/// (a 1-ulp e^{2a} costs tanh less than 0.1 ulp there: 0.98 ulp at most over every float32 in
/// [0.25, 10.5], against 0.99 with the 0.55-ulp exp and a piece ending at 0.8); the sign is
/// put back last, so tanh(-0) = -0.
#[inline(always)]
pub fn tanh<S: Simd>(x: F32s<S>) -> F32s<S> {
    let a = x.abs();
    let z = a * a;
    let p = horner(z, &TANH_P);
    let small = (p * z).mul_add(a, a);
    // tanh rounds to 1 from |x| = 9.01: clamped at 10, e^{2a} is a normal number and needs no
    // range test. A NaN lane's `big` may be any number (its payload lands in the exponent),
    // so the test below sends NaN to `small`, which is NaN.
    let c = F32s::select(a.gt_c(10.0), x.k(10.0), a);
    let big = x.k(1.0) - x.k(2.0) / (exp_lite_unchecked(c + c, x.k(-0.0)) + 1.0);
    let at_least_split = a.gt_c(f32::from_bits(TANH_SPLIT.to_bits() - 1));
    F32s::select(at_least_split, big, small).with_sign_of(x)
}

/// e^x within 1 ulp, for the composites (sigmoid, silu, gelu) whose own roundings follow: no
/// table, a degree-6 polynomial on |r| <= ln2/2 and no correction terms (about 15 vector
/// operations, as many as the table `exp`; the composites keep it because their error bounds
/// were fitted with it: with the table exp silu measured 2.15 ulp against its 2.1). A vector
/// with a lane whose result is not a normal number takes `exp_lite_careful`.
#[inline(always)]
pub fn exp_lite<S: Simd>(x: F32s<S>) -> F32s<S> {
    // -0.0 is the additive identity LLVM may fold away (see `exp`).
    exp_lite_hl(x, x.k(-0.0))
}

/// e^(x + x_lo) within 1 ulp, for a small correction x_lo (see `exp_hl`).
#[inline(always)]
pub fn exp_lite_hl<S: Simd>(x: F32s<S>, x_lo: F32s<S>) -> F32s<S> {
    if !x.abs().lt_c(87.0).all() {
        return exp_lite_careful(x, x_lo);
    }
    exp_lite_unchecked(x, x_lo)
}

/// `exp_lite_hl` for |x| < 87 (every result a normal number), no test.
#[inline(always)]
pub(crate) fn exp_lite_unchecked<S: Simd>(x: F32s<S>, x_lo: F32s<S>) -> F32s<S> {
    // x = n ln2 + r, |r| <= ln2 / 2; z holds n in its low mantissa bits.
    let z = x.mul_add_c(LOG2_E, ROUND_MAGIC);
    let n = z - ROUND_MAGIC;
    let r = n.mul_add(x.k(-LN2_HI), x);
    let r = n.mul_add(x.k(-LN2_LO), r) + x_lo;
    exp_lite_reduced(r).bits().add_bits(z.bits().shl(23)).to_f32s()
}

/// `exp_lite_hl` for any x: clamped (NaN passes), and 2^n applied in two halves so a
/// subnormal result rounds once and an overflow gives inf; a normal result has the same bits
/// as `exp_lite_unchecked`'s (the same reduction and polynomial, exact scalings), so a lane's
/// value does not depend on the other lanes of its vector.
#[inline(always)]
pub(crate) fn exp_lite_careful<S: Simd>(x: F32s<S>, x_lo: F32s<S>) -> F32s<S> {
    let x = F32s::select(x.gt_c(89.0), x.k(89.0), x);
    let x = F32s::select(x.lt_c(-104.0), x.k(-104.0), x);
    let n = x.mul_add_c(LOG2_E, ROUND_MAGIC) - ROUND_MAGIC;
    let r = n.mul_add(x.k(-LN2_HI), x);
    let r = n.mul_add(x.k(-LN2_LO), r) + x_lo;
    let n1 = (n * 0.5 + ROUND_MAGIC) - ROUND_MAGIC;
    exp_lite_reduced(r) * pow2i(n1) * pow2i(n - n1)
}

/// e^r for |r| <= ln2 / 2 (a little beyond is fine), the polynomial of `exp_lite`:
/// 1 + r + r^2 P(r), P fitted here (relative error 3.8e-9).
#[inline(always)]
pub(crate) fn exp_lite_reduced<S: Simd>(r: F32s<S>) -> F32s<S> {
    let p = horner(r, &[1.381_461_2e-3, 8.368_710_1e-3, 4.166_838_9e-2, 1.666_652_1e-1, 4.999_999_4e-1]);
    p.mul_add(r * r, r) + 1.0
}

/// (sigmoid(x), 1 - sigmoid(x)) from t = e^{-|x|} and r = 1 / (1 + t): sigmoid(x) is r for
/// x >= 0 and t r below, so tiny results keep their accuracy (and subnormal ones exist)
/// instead of rounding to 0, and 1 - sigmoid(x) = sigmoid(-x) is the other one, never a
/// difference (which cancels where s is near 1, as in the derivative of silu). One division
/// serves both.
#[inline(always)]
pub fn sigmoid_pair<S: Simd>(x: F32s<S>) -> (F32s<S>, F32s<S>) {
    let t = exp_lite(-x.abs());
    let r = x.k(1.0) / (t + 1.0);
    let tr = t * r;
    let neg = x.lt_c(0.0);
    (F32s::select(neg, tr, r), F32s::select(neg, r, tr))
}

/// num / (1 + t) for 0 <= t <= 1, correctly rounded but for ~0.1 ulp: 1 + t is kept as an
/// exact sum d + d_lo, and the quotient num / d gets one Newton correction from its exact
/// residual (one division, for the reciprocal).
#[inline(always)]
pub fn quotient_1p<S: Simd>(num: F32s<S>, t: F32s<S>) -> F32s<S> {
    let d = t + 1.0;
    let d_lo = (t.k(1.0) - d) + t;
    let rd = t.k(1.0) / d;
    let q = num * rd;
    let residual = (-q).mul_add(d, num) - q * d_lo;
    residual.mul_add(rd, q)
}

/// sigmoid(x) = 1 / (1 + e^-x), as e^x / (1 + e^x) for negative x (see `sigmoid_pair`).
/// 1 + t rounds, so q = num / (1 + t) is corrected by its first-order term: num / (d + d_lo)
/// = q - q d_lo / d, with 1 / d read off q itself (q for x >= 0, 1 - q below), so no second
/// division; what is left is the roundings of t and of the quotient.
#[inline(always)]
pub fn sigmoid<S: Simd>(x: F32s<S>) -> F32s<S> {
    let t = exp_lite(-x.abs());
    let neg = x.lt_c(0.0);
    let d = t + 1.0;
    let d_lo = (x.k(1.0) - d) + t;
    let q = F32s::select(neg, t, x.k(1.0)) / d;
    let rd = F32s::select(neg, x.k(1.0) - q, q);
    (-(q * rd)).mul_add(d_lo, q)
}

/// silu(x) = x sigmoid(x) = x / (1 + e^{-x}): one exp, one addition, one division (torch's
/// formula; its error is e^{-x}'s, damped by e^{-x} / (1 + e^{-x}), plus two roundings).
/// The sign of a zero result is x's (-0 / 2 = -0), and silu(-inf) = -inf / inf is NaN, as in
/// torch. Below x = -87 e^{-x} overflows: there silu(x) = x e^x (1 + e^x rounds to 1), taken
/// on the rare vector with such a lane, lane by lane.
#[inline(always)]
pub fn silu<S: Simd>(x: F32s<S>) -> F32s<S> {
    let zero = x.k(-0.0);
    if x.abs().lt_c(87.0).all() {
        return x / (exp_lite_unchecked(-x, zero) + 1.0);
    }
    let q = x / (exp_lite_careful(-x, zero) + 1.0);
    F32s::select(x.lt_c(-87.0), x * exp_lite_careful(x, zero), q)
}

/// e^(x - shift) for one shift (a softmax row's max): a lane function.
#[derive(Clone, Copy)]
pub struct ExpShift(pub f32);
impl super::LaneFn1 for ExpShift {
    #[inline(always)]
    fn apply<S: Simd>(self, x: F32s<S>) -> F32s<S> {
        exp(x - self.0)
    }
}

/// e^(x - m) lane by lane (softmax over an outer dim: one max per column).
#[derive(Clone, Copy)]
pub struct ExpDiff;
impl super::LaneFn2 for ExpDiff {
    #[inline(always)]
    fn apply<S: Simd>(self, x: F32s<S>, m: F32s<S>) -> F32s<S> {
        exp(x - m)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn exp_table_is_two_to_the_j_sixteenths() {
        for j in 0..16 {
            let exact = (j as f64 / 16.0).exp2();
            let (hi, lo) = (super::EXP_T_HI[j] as f64, super::EXP_T_LO[j] as f64);
            assert_eq!(super::EXP_T_HI[j], exact as f32, "2^({j}/16) rounded to float32");
            // lo rounds by 2^-49 at most, float64's exp2 by 2^-52.
            assert!(((hi + lo) - exact).abs() <= 2f64.powi(-48) * exact, "2^({j}/16): {hi} + {lo}");
        }
    }
}
