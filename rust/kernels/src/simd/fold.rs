//! Folds of f32 slices written with explicit vectors: the NaN-propagating max/min, the sum,
//! and the cheap passes of a softmax row. (LLVM's own vectorisation of the generic 32-lane folds in
//! `reducers` picked 128-bit registers, or none, even inside the AVX-512 entry point.)
//!
//! The order of operations is fixed by the code, not the vector width: element `k` of a slice
//! goes to lane `k % L` (L / W vectors of W lanes), the L lanes combine in a pairwise tree
//! (lane k with k + L/2, ..., 2, 1), and the last `len % L` elements fold in one by one after
//! it. So AVX-512, AVX2, NEON and scalar code give the same bits, on any thread count.
//!
//! Sums keep `reducers::fold_lanes`' order exactly (L = 32, each element widened to f64 and
//! added to its lane), so they give the bits the generic fold gave, about twice as fast.
//! max/min do not need a fixed order: the extreme's value is the same in any grouping, and the
//! two cases where equal values differ (a NaN, or 0.0 against -0.0) are settled by a scan for
//! the first such element, so the result is the one a scan in index order gives.

use super::{arch, F32s};
use pulp::{Simd, WithSimd};

/// Lanes of the sums (as `reducers::LANES`).
pub const LANES: usize = 32;

/// The 32 lanes of `acc` (its first 32 / W vectors) as scalars, in lane order.
#[inline(always)]
fn lanes_of<S: Simd>(acc: &[S::f32s]) -> [f32; LANES] {
    let mut out = [0f32; LANES];
    let (vs, _) = S::as_mut_simd_f32s(&mut out);
    vs.copy_from_slice(&acc[..LANES / S::F32_LANES]);
    out
}

/// `wide[k] += lanes[k] as f64`: the widening as one plain map (which LLVM turns into
/// full-width conversions; written as one loop with the adds it used 128-bit ones), then the
/// adds through f64 vectors.
#[inline(always)]
fn add_wide<S: Simd>(s: S, wide: &mut [f64; LANES], lanes: &[f32; LANES]) {
    let mut w = [0f64; LANES];
    for (w, &l) in w.iter_mut().zip(lanes) {
        *w = l as f64;
    }
    let (acc, _) = S::as_mut_simd_f64s(wide);
    let (add, _) = S::as_simd_f64s(&w);
    for (a, &x) in acc.iter_mut().zip(add) {
        *a = s.add_f64s(*a, x);
    }
}

/// The pairwise tree over 32 lanes: lane k combines with k + w for w = 16, 8, 4, 2, 1.
#[inline(always)]
fn tree(mut lanes: [f64; LANES], op: impl Fn(f64, f64) -> f64) -> f64 {
    let mut w = LANES / 2;
    while w > 0 {
        for k in 0..w {
            lanes[k] = op(lanes[k], lanes[k + w]);
        }
        w /= 2;
    }
    lanes[0]
}

struct Extreme<'a, const MAX: bool>(&'a [f32]);
impl<const MAX: bool> WithSimd for Extreme<'_, MAX> {
    type Output = f32;
    #[inline(always)]
    fn with_simd<S: Simd>(self, s: S) -> f32 {
        let xs = self.0;
        let id = if MAX { f32::NEG_INFINITY } else { f32::INFINITY };
        let ext = |a, b| if MAX { s.max_f32s(a, b) } else { s.min_f32s(a, b) };
        let (head, tail) = S::as_simd_f32s(xs);
        // Four accumulators hide the latency of the chain; NaNs are tracked on the side.
        let mut acc = [s.splat_f32s(id); 4];
        let mut nan = F32s { s, v: acc[0] }.is_nan();
        let mut quads = head.chunks_exact(4);
        for q in &mut quads {
            for j in 0..4 {
                acc[j] = ext(acc[j], q[j]);
                nan = nan.or(F32s { s, v: q[j] }.is_nan());
            }
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
            return xs.iter().copied().find(|x| x.is_nan()).unwrap_or(f32::NAN);
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

/// Sum accumulators: 32 f64 lanes.
struct SumLanes {
    wide: [f64; LANES],
}

impl SumLanes {
    #[inline(always)]
    fn new() -> Self {
        SumLanes { wide: [0.0; LANES] }
    }
    /// Adds one chunk of 32 elements (32 / W vectors), each widened to f64.
    #[inline(always)]
    fn add<S: Simd>(&mut self, s: S, c: &[S::f32s]) {
        add_wide(s, &mut self.wide, &lanes_of::<S>(c));
    }
    /// The f64 sum: the tree, then `tail` one by one.
    #[inline(always)]
    fn finish(self, tail: &[f32]) -> f64 {
        let t = tree(self.wide, |a, b| a + b);
        tail.iter().fold(t, |t, &x| t + x as f64)
    }
}

struct Sum<'a>(&'a [f32]);
impl WithSimd for Sum<'_> {
    type Output = f64;
    #[inline(always)]
    fn with_simd<S: Simd>(self, s: S) -> f64 {
        let xs = self.0;
        let nv = LANES / S::F32_LANES;
        let (body, tail) = xs.split_at(xs.len() / LANES * LANES);
        let (vs, _) = S::as_simd_f32s(body);
        let mut sum = SumLanes::new();
        for c in vs.chunks_exact(nv) {
            sum.add(s, c);
        }
        sum.finish(tail)
    }
}

/// The sum of `xs` as f64, in the fixed order above.
#[inline]
pub fn sum(xs: &[f32]) -> f64 {
    arch().dispatch(Sum(xs))
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
        let mut s = seed | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 40) as f32 / (1u64 << 21) as f32 - 4.0
            })
            .collect()
    }

    /// True when `x` should replace `best` in a max (`MAX`) or min scanned in index order: NaN
    /// wins and then stays; ties keep the earlier value (as `reducers::beats`).
    fn beats<const MAX: bool>(x: f32, best: f32) -> bool {
        let better = if MAX { x > best } else { x < best };
        !best.is_nan() & (x.is_nan() | better)
    }

    /// max/min as a scan in index order, the sum lane by lane: what the vectors must give.
    fn extreme_ref<const MAX: bool>(xs: &[f32]) -> f32 {
        let id = if MAX { f32::NEG_INFINITY } else { f32::INFINITY };
        xs.iter().fold(id, |b, &x| if beats::<MAX>(x, b) { x } else { b })
    }

    /// `reducers::fold_lanes`' order for a sum: lane k % 32 in f64, the tree, the tail.
    fn sum_ref(xs: &[f32]) -> f64 {
        let full = xs.len() / LANES * LANES;
        let mut wide = [0f64; LANES];
        for (k, &x) in xs[..full].iter().enumerate() {
            wide[k % LANES] += x as f64;
        }
        let t = tree(wide, |a, b| a + b);
        xs[full..].iter().fold(t, |t, &x| t + x as f64)
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
                assert_eq!(a.dispatch(Sum(&xs)).to_bits(), sum_ref(&xs).to_bits(), "sum n={n}");
            }
        }
    }

    #[test]
    fn nan_propagates_and_sums_stay_accurate() {
        let mut xs = data(1000, 3);
        let exact: f64 = xs.iter().map(|&x| x as f64).sum();
        assert!((sum(&xs) - exact).abs() < 1e-4, "{} vs {}", sum(&xs), exact);
        xs[500] = f32::NAN;
        assert!(extreme::<true>(&xs).is_nan() && extreme::<false>(&xs).is_nan() && sum(&xs).is_nan());
        // Infinities: max finds +inf, the sum is +inf; both signs give NaN.
        xs[500] = f32::INFINITY;
        assert_eq!(extreme::<true>(&xs), f32::INFINITY);
        assert_eq!(sum(&xs), f64::INFINITY);
        xs[3] = f32::NEG_INFINITY;
        assert!(sum(&xs).is_nan());
        assert_eq!(extreme::<true>(&[]), f32::NEG_INFINITY);
        assert_eq!(sum(&[]), 0.0);
    }
}
