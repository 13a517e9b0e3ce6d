//! Folds of f32 slices written with explicit vectors: the NaN-propagating max/min and the cheap
//! passes of a softmax row. (LLVM's own vectorisation of the generic 32-lane folds in `reducers`
//! picked 128-bit registers, or none, even inside the AVX-512 entry point.) The sums are in
//! `simd::sum`.
//!
//! max/min do not need a fixed order: the extreme's value is the same in any grouping, and the
//! two cases where equal values differ (a NaN, or 0.0 against -0.0) are settled by a scan for
//! the first such element, so the result is the one a scan in index order gives, whatever the
//! vector width.

use super::{arch, F32s};
use pulp::{Simd, WithSimd};

struct Extreme<'a, const MAX: bool>(&'a [f32]);
impl<const MAX: bool> WithSimd for Extreme<'_, MAX> {
    type Output = f32;
    #[inline(always)]
    fn with_simd<S: Simd>(self, s: S) -> f32 {
        let xs = self.0;
        let id = if MAX { f32::NEG_INFINITY } else { f32::INFINITY };
        let ext = |a, b| if MAX { s.max_f32s(a, b) } else { s.min_f32s(a, b) };
        let (head, tail) = S::as_simd_f32s(xs);
        // Four accumulators hide the latency of the chain; NaNs are tracked on the side, one
        // test per four vectors: the sum of the four is NaN when one of them is (or, rarely,
        // when +inf meets -inf: the scan below then finds no NaN and the lanes' value stands).
        let mut acc = [s.splat_f32s(id); 4];
        let mut nan = F32s { s, v: acc[0] }.is_nan();
        let mut quads = head.chunks_exact(4);
        for q in &mut quads {
            for j in 0..4 {
                acc[j] = ext(acc[j], q[j]);
            }
            let sum = s.add_f32s(s.add_f32s(q[0], q[1]), s.add_f32s(q[2], q[3]));
            nan = nan.or(F32s { s, v: sum }.is_nan());
        }
        for &x in quads.remainder() {
            acc[0] = ext(acc[0], x);
            nan = nan.or(F32s { s, v: x }.is_nan());
        }
        let v = ext(ext(acc[0], acc[1]), ext(acc[2], acc[3]));
        let mut m = if MAX { s.reduce_max_f32s(v) } else { s.reduce_min_f32s(v) };
        let mut tail_nan = false;
        for &x in tail {
            m = if MAX { m.max(x) } else { m.min(x) };
            tail_nan |= x.is_nan();
        }
        if nan.any() || tail_nan {
            if let Some(x) = xs.iter().copied().find(|x| x.is_nan()) {
                return x;
            }
        }
        if m == 0.0 {
            // 0.0 or -0.0: the first one, as a scan in index order keeps it.
            return xs.iter().copied().find(|&x| x == 0.0).unwrap_or(m);
        }
        m
    }
}

/// The maximum (`MAX`) or minimum of `xs`, NaN if any element is (the identity when empty):
/// the element a scan in index order would keep (the first NaN; the first of 0.0 and -0.0),
/// whatever the vector width or grouping.
#[inline]
pub fn extreme<const MAX: bool>(xs: &[f32]) -> f32 {
    arch().dispatch(Extreme::<MAX>(xs))
}

/// The index of the first element of `xs` equal to `m` (0.0 and -0.0 equal), or the first NaN
/// when `m` is NaN; `xs.len()` when there is none. One compare per vector: argmax's second
/// pass, after `extreme` found the value.
#[inline]
pub fn position(xs: &[f32], m: f32) -> usize {
    struct Op<'a>(&'a [f32], f32);
    impl WithSimd for Op<'_> {
        type Output = usize;
        #[inline(always)]
        fn with_simd<S: Simd>(self, s: S) -> usize {
            let Op(xs, m) = self;
            let (head, _) = S::as_simd_f32s(xs);
            let k = F32s::splat(s, m);
            let is = |x: f32| if m.is_nan() { x.is_nan() } else { x == m };
            // The first vector with a match, then its lanes one by one (pulp 0.22's
            // `first_true_m32s` counts AVX-512 mask bits from the wrong end).
            let j = head.iter().position(|&v| {
                let x = F32s { s, v };
                (if m.is_nan() { x.is_nan() } else { x.eq(k) }).any()
            });
            let from = j.unwrap_or(head.len()) * S::F32_LANES;
            xs[from..].iter().position(|&x| is(x)).map_or(xs.len(), |k| from + k)
        }
    }
    arch().dispatch(Op(xs, m))
}

/// `ys[i] = ys[i] * k`.
#[inline]
pub fn scale(ys: &mut [f32], k: f32) {
    struct Op<'a>(&'a mut [f32], f32);
    impl WithSimd for Op<'_> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: Simd>(self, s: S) {
            let (h, t) = S::as_mut_simd_f32s(self.0);
            for v in h.iter_mut() {
                *v = (F32s { s, v: *v } * self.1).v;
            }
            for v in t.iter_mut() {
                *v *= self.1;
            }
        }
    }
    arch().dispatch(Op(ys, k))
}

/// `ys[i] = (xs[i] - a) - b` (log_softmax's last pass, in torch's order: the sign of a zero
/// result follows it).
#[inline]
pub fn sub_sub(ys: &mut [f32], xs: &[f32], a: f32, b: f32) {
    struct Op<'a>(&'a mut [f32], &'a [f32], f32, f32);
    impl WithSimd for Op<'_> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: Simd>(self, s: S) {
            let Op(ys, xs, a, b) = self;
            let (yh, yt) = S::as_mut_simd_f32s(ys);
            let (xh, xt) = S::as_simd_f32s(xs);
            for (y, &x) in yh.iter_mut().zip(xh) {
                *y = ((F32s { s, v: x } - a) - b).v;
            }
            for (y, &x) in yt.iter_mut().zip(xt) {
                *y = (x - a) - b;
            }
        }
    }
    debug_assert_eq!(xs.len(), ys.len());
    arch().dispatch(Op(ys, xs, a, b))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic values in [-4, 4) with a few specials mixed in.
    fn data(n: usize, seed: u64) -> Vec<f32> {
        crate::test_data::pseudo_random(n, seed, -4.0, 8.0)
    }

    /// True when `x` should replace `best` in a max (`MAX`) or min scanned in index order: NaN
    /// wins and then stays; ties keep the earlier value (as `reducers::beats`).
    fn beats<const MAX: bool>(x: f32, best: f32) -> bool {
        let better = if MAX { x > best } else { x < best };
        !best.is_nan() & (x.is_nan() | better)
    }

    /// max/min as a scan in index order: what the vectors must give.
    fn extreme_ref<const MAX: bool>(xs: &[f32]) -> f32 {
        let id = if MAX { f32::NEG_INFINITY } else { f32::INFINITY };
        xs.iter().fold(id, |b, &x| if beats::<MAX>(x, b) { x } else { b })
    }

    #[test]
    fn every_instruction_set_gives_the_reference_bits() {
        let archs = [arch(), pulp::Arch::Scalar];
        for n in [0, 1, 15, 16, 17, 31, 32, 33, 63, 64, 65, 255, 256, 257, 1000, 4099] {
            let xs = data(n, n as u64 + 7);
            if n > 100 {
                // NaNs of different signs: the first one is kept
                let mut with_nan = xs.clone();
                with_nan[77] = -f32::NAN;
                with_nan[90] = f32::NAN;
                for a in archs {
                    assert_eq!(a.dispatch(Extreme::<true>(&with_nan)).to_bits(), (-f32::NAN).to_bits());
                    assert_eq!(a.dispatch(Extreme::<false>(&with_nan)).to_bits(), (-f32::NAN).to_bits());
                }
            }
            // only zeros of both signs: which one is kept follows the lane order
            let zeros: Vec<f32> = (0..n).map(|k| if k % 3 == 1 { 0.0 } else { -0.0 }).collect();
            for a in archs {
                for z in [&zeros] {
                    assert_eq!(a.dispatch(Extreme::<true>(z)).to_bits(), extreme_ref::<true>(z).to_bits(), "max zeros n={n}");
                    assert_eq!(a.dispatch(Extreme::<false>(z)).to_bits(), extreme_ref::<false>(z).to_bits(), "min zeros n={n}");
                }
                assert_eq!(a.dispatch(Extreme::<true>(&xs)).to_bits(), extreme_ref::<true>(&xs).to_bits(), "max n={n}");
                assert_eq!(a.dispatch(Extreme::<false>(&xs)).to_bits(), extreme_ref::<false>(&xs).to_bits(), "min n={n}");
            }
        }
    }

    #[test]
    fn position_finds_the_first_match_on_every_instruction_set() {
        let mut xs = data(1000, 5);
        xs[700] = 9.0;
        xs[900] = 9.0;
        xs[950] = f32::NAN;
        xs[990] = -f32::NAN;
        xs[3] = -0.0;
        for a in [arch(), pulp::Arch::Scalar] {
            let pos = |xs: &[f32], m: f32| a.dispatch(Op(xs, m));
            struct Op<'a>(&'a [f32], f32);
            impl WithSimd for Op<'_> {
                type Output = usize;
                fn with_simd<S: Simd>(self, _: S) -> usize {
                    position(self.0, self.1)
                }
            }
            assert_eq!(pos(&xs, 9.0), 700);
            assert_eq!(pos(&xs, f32::NAN), 950);
            assert_eq!(pos(&xs, 0.0), 3);
            assert_eq!(pos(&xs, 12.0), 1000);
            for n in [0, 1, 15, 17, 33] {
                let ys: Vec<f32> = (0..n).map(|k| k as f32).collect();
                for k in 0..n {
                    assert_eq!(pos(&ys, k as f32), k, "n={n}");
                }
                assert_eq!(pos(&ys, -1.0), n);
            }
        }
    }

    #[test]
    fn infinities_of_both_signs_are_no_nan() {
        // +inf and -inf in one group of four vectors sum to NaN: the scan finds no NaN.
        let mut xs = data(1000, 4);
        xs[1] = f32::INFINITY;
        xs[20] = f32::NEG_INFINITY;
        for a in [arch(), pulp::Arch::Scalar] {
            assert_eq!(a.dispatch(Extreme::<true>(&xs)), f32::INFINITY);
            assert_eq!(a.dispatch(Extreme::<false>(&xs)), f32::NEG_INFINITY);
        }
        xs[1] = 3e38;
        xs[17] = 3e38;
        xs[33] = -3e38;
        xs[49] = -3e38;
        for a in [arch(), pulp::Arch::Scalar] {
            assert_eq!(a.dispatch(Extreme::<true>(&xs)), 3e38);
            assert_eq!(a.dispatch(Extreme::<false>(&xs)), f32::NEG_INFINITY);
        }
    }

    #[test]
    fn nan_propagates() {
        let mut xs = data(1000, 3);
        xs[500] = f32::NAN;
        assert!(extreme::<true>(&xs).is_nan() && extreme::<false>(&xs).is_nan());
        xs[500] = f32::INFINITY;
        assert_eq!(extreme::<true>(&xs), f32::INFINITY);
        assert_eq!(extreme::<true>(&[]), f32::NEG_INFINITY);
    }
}
