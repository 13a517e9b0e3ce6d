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

/// e^x, within 0.55 ulp of the exact value (0.75 for subnormal results).
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
        let (n, er) = reduce_and_expand(x, x_lo);
        // bits(n + MAGIC) hold n in the low bits: shifted by 23 they add n to the exponent.
        return er.bits().add_bits((n + ROUND_MAGIC).bits().shl(23)).to_f32s();
    }
    exp_careful(x, x_lo)
}

/// n and e^r with x + x_lo = n ln2 + r (+ r_lo): the exponent and the mantissa of e^x.
#[inline(always)]
fn reduce_and_expand<S: Simd>(x: F32s<S>, x_lo: F32s<S>) -> (F32s<S>, F32s<S>) {
    // x = n ln2 + r + r_lo with |r| <= ln2 / 2: the first step is exact, the second rounds,
    // and r_lo is what it rounded away (Cody and Waite, the error recovered by FMA).
    let n = x.mul_add_c(LOG2_E, ROUND_MAGIC) - ROUND_MAGIC;
    let r_hi = n.mul_add(x.k(-LN2_HI), x);
    let r = n.mul_add(x.k(-LN2_LO), r_hi);
    let r_lo = n.mul_add(x.k(-LN2_LO), r_hi - r) + x_lo;
    // e^r = 1 + r + r^2 P(r), P fitted here (relative error 3e-10 on |r| <= ln2 / 2), and
    // e^(r + r_lo) = e^r (1 + r_lo) = (1 + r) + q: 1 + r = s + s_lo exactly, so only the
    // last addition rounds noticeably.
    let p = horner(r, &[1.985_788_5e-4, 1.393_359_7e-3, 8.333_360_8e-3, 4.166_646_7e-2, 1.666_666_7e-1, 0.5]);
    let pr2 = p * (r * r);
    let q = r_lo.mul_add(r + pr2, r_lo) + pr2;
    let s = r + 1.0;
    let s_lo = (x.k(1.0) - s) + r;
    (n, s + (s_lo + q))
}

/// The general path of `exp_hl`: clamped so the exponent tricks stay in range, and 2^n
/// applied in two halves so that n down to -150 (subnormal results) and up to 128 (overflow
/// to inf) stay exact until the last multiply, which rounds once.
#[inline(always)]
fn exp_careful<S: Simd>(x: F32s<S>, x_lo: F32s<S>) -> F32s<S> {
    // Clamp with selects, not min/max, so NaN passes through; outside [-104, 89] the result
    // is 0 or inf anyway.
    let x = F32s::select(x.gt_c(89.0), x.k(89.0), x);
    let x = F32s::select(x.lt_c(-104.0), x.k(-104.0), x);
    let (n, er) = reduce_and_expand(x, x_lo);
    let n1 = (n * 0.5 + ROUND_MAGIC) - ROUND_MAGIC;
    let n2 = n - n1;
    er * pow2i(n1) * pow2i(n2)
}

/// ln x, at most 1 ulp from the exact value (subnormal inputs included).
#[inline(always)]
pub fn log<S: Simd>(x: F32s<S>) -> F32s<S> {
    // Subnormal inputs are scaled into the normal range first.
    let tiny = x.lt_c(f32::MIN_POSITIVE);
    let xs = F32s::select(tiny, x * 8_388_608.0, x);
    let bits = xs.bits();
    // x = 2^e m with m in [0.5, 1): the exponent field, read as an integer through the
    // mantissa of 2^23, and the mantissa with the exponent of 0.5.
    let e = bits.shr(23).or(0x4B00_0000).to_f32s() - 8_388_734.0; // 2^23 + 126
    let e = e - F32s::select(tiny, x.k(23.0), x.k(0.0));
    let m = bits.and(0x007F_FFFF).or(0x3F00_0000).to_f32s();
    // Keep m in [sqrt(1/2), sqrt(2)) around 1, and take f = m - 1 (both steps exact).
    let low = m.lt_c(std::f32::consts::FRAC_1_SQRT_2);
    let e = F32s::select(low, e - 1.0, e);
    let f = F32s::select(low, (m + m) - 1.0, m - 1.0);
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
    let r = e.mul_add(x.k(LN2_HI), f + y);
    // The special values, last (the arithmetic above gives garbage for them).
    let r = F32s::select(x.eq(x.k(f32::INFINITY)), x, r);
    let r = F32s::select(x.eq(x.k(0.0)), x.k(f32::NEG_INFINITY), r);
    let r = F32s::select(x.lt_c(0.0), x.k(f32::NAN), r);
    F32s::select(x.is_nan(), x, r)
}

/// tanh x: an odd polynomial below |x| = 0.8 (fitted here, relative error 4e-9), and
/// 1 - 2 / (e^{2|x|} + 1) above; the sign is put back last, so tanh(-0) = -0.
#[inline(always)]
pub fn tanh<S: Simd>(x: F32s<S>) -> F32s<S> {
    let a = x.abs();
    let z = a * a;
    let p = horner(
        z,
        &[-6.346_843_4e-4, 2.987_320_5e-3, -8.621_263e-3, 2.181_782_8e-2, -5.396_289_4e-2, 1.333_331_2e-1, -3.333_333_4e-1],
    );
    let small = (p * z).mul_add(a, a);
    // e^{2a} overflows to inf for large a, and 2 / inf = 0 leaves exactly 1.
    let big = x.k(1.0) - x.k(2.0) / (exp(a + a) + 1.0);
    F32s::select(a.lt_c(0.8), small, big).with_sign_of(x)
}

/// e^x within 1 ulp, for the composites (sigmoid, silu, gelu) whose own roundings follow:
/// `exp` without its error-free correction terms (about 15 vector operations against 27),
/// so `1 + r + ...` rounds once more. A vector with a lane whose result is not a normal
/// number takes `exp_hl`'s careful path.
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
