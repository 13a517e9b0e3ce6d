//! Sums of `f(x)` over float32 runs (`f`: the identity, the square for 2-norms, softmax's
//! shifted exponential), added in float32 as torch adds them, in a fixed cascade: element `k`
//! of a run goes to lane `k % LANES`; each lane adds in float32 within a block of `BLOCK`
//! elements (16 elements per lane); each block's lanes are widened and added to f64 lanes; the
//! f64 lanes combine in a pairwise tree (lane k with k + 32, ..., 2, 1). The last partial chunk
//! of a run goes lane by lane too, its missing elements adding zero.
//!
//! The order depends only on `k`, never on the vector width: AVX-512 (4 vectors of 16), AVX2
//! (8 of 8), NEON (16 of 4) and scalar code give the same bits. Adding in float32 halves the
//! work of widening every element (the previous sums) and keeps the accuracy near f64: a lane's
//! float32 partial holds at most 16 elements, so its rounding error is at most ~16 ulps of that
//! partial, and everything above it is added in f64 (torch's own cascade keeps float32 to the
//! end, so its error bound grows with the log of the length; ours does not).

use super::{arch, F32s, LaneFn1};
use pulp::{Simd, WithSimd};

/// Lanes of the sums: 4 AVX-512 registers, enough independent adds to hide their latency.
pub const LANES: usize = 64;
/// Elements per block: each lane adds 16 elements in float32 before its partial is widened.
pub const BLOCK: usize = LANES * 16;

/// The pairwise tree over the f64 lanes: lane k combines with k + w for w = 32, 16, ..., 1.
#[inline(always)]
fn tree(mut lanes: [f64; LANES]) -> f64 {
    let mut w = LANES / 2;
    while w > 0 {
        for k in 0..w {
            lanes[k] += lanes[k + w];
        }
        w /= 2;
    }
    lanes[0]
}

/// `wide[k] += lanes[k] as f64`, the widening as one plain map (LLVM turns it into full-width
/// conversions), then the adds.
#[inline(always)]
fn add_wide(wide: &mut [f64; LANES], lanes: &[f32; LANES]) {
    let mut w = [0f64; LANES];
    for (w, &l) in w.iter_mut().zip(lanes) {
        *w = l as f64;
    }
    for (a, &x) in wide.iter_mut().zip(&w) {
        *a += x;
    }
}

/// A lane function to sum; `ZERO_AT_ZERO` says f(0) = 0, so a partial chunk can be read with
/// zero-filling loads and added without masking.
pub trait SumFn: LaneFn1 {
    const ZERO_AT_ZERO: bool;
}

/// `x` itself: the plain sum.
#[derive(Clone, Copy)]
pub struct Id;
impl LaneFn1 for Id {
    #[inline(always)]
    fn apply<S: Simd>(self, x: F32s<S>) -> F32s<S> {
        x
    }
}
impl SumFn for Id {
    const ZERO_AT_ZERO: bool = true;
}

/// `x * x` rounded to float32 (torch's float32 2-norm squares in float32 too).
#[derive(Clone, Copy)]
pub struct Square;
impl LaneFn1 for Square {
    #[inline(always)]
    fn apply<S: Simd>(self, x: F32s<S>) -> F32s<S> {
        x * x
    }
}
impl SumFn for Square {
    const ZERO_AT_ZERO: bool = true;
}

impl SumFn for super::math::ExpShift {
    const ZERO_AT_ZERO: bool = false;
}

/// `f` on one vector (a function, not a closure: a closure is not reliably inlined into the
/// instruction set's entry point, and its vector ops then run as calls).
#[inline(always)]
fn ap<S: Simd, F: LaneFn1>(s: S, f: F, x: S::f32s) -> S::f32s {
    f.apply(F32s { s, v: x }).v
}

/// One block (at most `BLOCK` elements) of `f(x)` into `NV` vectors of float32 lanes, returned
/// in lane order; with `STORE`, each `f(x)` is also written to `ys` (softmax's exponentials).
#[inline(always)]
fn block<S: Simd, F: SumFn, const NV: usize, const STORE: bool>(s: S, f: F, xs: &[f32], ys: &mut [f32]) -> [f32; LANES] {
    debug_assert!(NV * S::F32_LANES == LANES && xs.len() <= BLOCK && (!STORE || ys.len() == xs.len()));
    let mut acc = [s.splat_f32s(0.0); NV];
    let full = xs.len() / LANES * LANES;
    let (vs, _) = S::as_simd_f32s(&xs[..full]);
    if STORE {
        let (out, _) = S::as_mut_simd_f32s(&mut ys[..full]);
        for (c, o) in vs.chunks_exact(NV).zip(out.chunks_exact_mut(NV)) {
            for j in 0..NV {
                let v = ap(s, f, c[j]);
                o[j] = v;
                acc[j] = s.add_f32s(acc[j], v);
            }
        }
    } else {
        for c in vs.chunks_exact(NV) {
            for j in 0..NV {
                acc[j] = s.add_f32s(acc[j], ap(s, f, c[j]));
            }
        }
    }
    let tail = &xs[full..];
    let t = tail.len();
    if t > 0 && F::ZERO_AT_ZERO && !STORE {
        // The partial chunk through zero-filling loads: the lanes past the run add f(0) = 0.
        let w = S::F32_LANES;
        for j in 0..NV {
            let lo = (j * w).min(t);
            acc[j] = s.add_f32s(acc[j], ap(s, f, s.partial_load_f32s(&tail[lo..(lo + w).min(t)])));
        }
    } else if t > 0 {
        // The partial chunk: f over a padded copy, the lanes past the run set to zero.
        let mut pad = [0f32; LANES];
        pad[..t].copy_from_slice(tail);
        for v in S::as_mut_simd_f32s(&mut pad).0.iter_mut() {
            *v = ap(s, f, *v);
        }
        pad[t..].fill(0.0);
        if STORE {
            ys[full..].copy_from_slice(&pad[..t]);
        }
        let (c, _) = S::as_simd_f32s(&pad);
        for j in 0..NV {
            acc[j] = s.add_f32s(acc[j], c[j]);
        }
    }
    let mut lanes = [0f32; LANES];
    let (out, _) = S::as_mut_simd_f32s(&mut lanes);
    out[..NV].copy_from_slice(&acc);
    lanes
}

#[inline(always)]
fn run<S: Simd, F: SumFn, const NV: usize, const STORE: bool>(s: S, f: F, xs: &[f32], ys: &mut [f32]) -> f64 {
    if xs.len() <= BLOCK {
        // One block (a row of a few hundred elements): its lanes go to the tree directly (the
        // same bits as adding them to zeroed f64 lanes: a lane is never -0.0).
        let lanes = block::<S, F, NV, STORE>(s, f, xs, ys);
        let mut wide = [0f64; LANES];
        for (w, &l) in wide.iter_mut().zip(&lanes) {
            *w = l as f64;
        }
        return tree(wide);
    }
    let mut wide = [0f64; LANES];
    for (k, b) in xs.chunks(BLOCK).enumerate() {
        let y: &mut [f32] = if STORE { &mut ys[k * BLOCK..k * BLOCK + b.len()] } else { &mut [] };
        add_wide(&mut wide, &block::<S, F, NV, STORE>(s, f, b, y));
    }
    tree(wide)
}

struct Sum<'a, F, const STORE: bool>(F, &'a [f32], &'a mut [f32]);
impl<F: SumFn, const STORE: bool> WithSimd for Sum<'_, F, STORE> {
    type Output = f64;
    #[inline(always)]
    fn with_simd<S: Simd>(self, s: S) -> f64 {
        let Sum(f, xs, ys) = self;
        // The vectors per 64 lanes are a constant of each instruction set.
        match LANES / S::F32_LANES {
            4 => run::<S, F, 4, STORE>(s, f, xs, ys),
            8 => run::<S, F, 8, STORE>(s, f, xs, ys),
            16 => run::<S, F, 16, STORE>(s, f, xs, ys),
            32 => run::<S, F, 32, STORE>(s, f, xs, ys),
            _ => run::<S, F, 64, STORE>(s, f, xs, ys),
        }
    }
}

/// The sum of `f(x)` over `xs`, in the fixed cascade above (0.0 when empty).
#[inline]
pub fn sum_map<F: SumFn>(f: F, xs: &[f32]) -> f64 {
    arch().dispatch(Sum::<F, false>(f, xs, &mut []))
}

/// `ys[i] = f(xs[i])`, returning their sum (the same bits as `sum_map`).
#[inline]
pub fn map_sum<F: SumFn>(f: F, ys: &mut [f32], xs: &[f32]) -> f64 {
    assert_eq!(xs.len(), ys.len());
    arch().dispatch(Sum::<F, true>(f, xs, ys))
}

/// The sum of `xs`.
#[inline]
pub fn sum(xs: &[f32]) -> f64 {
    sum_map(Id, xs)
}

/// Sums of consecutive rows of `n` elements (row k = `xs[k * n..(k + 1) * n]`, `n` > 0), each the
/// same bits as `sum(row)`, passed to `out(k, sum)`: one dispatch for all rows, so rows of a few
/// hundred elements do not pay one each (a contiguous tensor summed along its last dim).
#[inline]
pub fn sum_rows(xs: &[f32], n: usize, out: &mut dyn FnMut(usize, f64)) {
    struct Rows<'a>(&'a [f32], usize, &'a mut dyn FnMut(usize, f64));
    impl WithSimd for Rows<'_> {
        type Output = ();
        #[inline(always)]
        fn with_simd<S: Simd>(self, s: S) {
            let Rows(xs, n, out) = self;
            #[inline(always)]
            fn each<S: Simd, const NV: usize>(s: S, xs: &[f32], n: usize, out: &mut dyn FnMut(usize, f64)) {
                for (k, row) in xs.chunks_exact(n).enumerate() {
                    out(k, run::<S, Id, NV, false>(s, Id, row, &mut []));
                }
            }
            match LANES / S::F32_LANES {
                4 => each::<S, 4>(s, xs, n, out),
                8 => each::<S, 8>(s, xs, n, out),
                16 => each::<S, 16>(s, xs, n, out),
                32 => each::<S, 32>(s, xs, n, out),
                _ => each::<S, 64>(s, xs, n, out),
            }
        }
    }
    assert!(n > 0 && xs.len() % n == 0);
    arch().dispatch(Rows(xs, n, out))
}

/// The sum of `x * x` over `xs` (the squares rounded to float32, as torch's norm computes them).
#[inline]
pub fn sum_sq(xs: &[f32]) -> f64 {
    sum_map(Square, xs)
}

/// The reference order, one element at a time (what every instruction set must give).
#[cfg(test)]
pub(crate) fn sum_ref(xs: &[f32]) -> f64 {
    let mut wide = [0f64; LANES];
    for b in xs.chunks(BLOCK) {
        let mut lanes = [0f32; LANES];
        for (k, &x) in b.iter().enumerate() {
            lanes[k % LANES] += x;
        }
        for k in 0..LANES {
            wide[k] += lanes[k] as f64;
        }
    }
    tree(wide)
}

/// The sum of `xs` in f64, element by element, and the sum of its magnitudes (error scale).
#[cfg(test)]
fn exact(xs: &[f32]) -> (f64, f64) {
    xs.iter().fold((0.0, 0.0), |(s, a), &x| (s + x as f64, a + (x as f64).abs()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize, seed: u64) -> Vec<f32> {
        crate::test_data::pseudo_random(n, seed, -4.0, 8.0)
    }

    #[test]
    fn every_instruction_set_gives_the_reference_bits() {
        use crate::simd::math::ExpShift;
        fn check<F: SumFn>(f: F, xs: &[f32], name: &str) {
            for a in [arch(), pulp::Arch::Scalar] {
                // f lane by lane (the same bits on every instruction set), then the sum's order.
                let mut fx = vec![0f32; xs.len()];
                crate::simd::map1_on(a, f, &mut fx, xs);
                let want = sum_ref(&fx).to_bits();
                assert_eq!(a.dispatch(Sum::<F, false>(f, xs, &mut [])).to_bits(), want, "{name} n={}", xs.len());
                let mut ys = vec![0f32; xs.len()];
                assert_eq!(a.dispatch(Sum::<F, true>(f, xs, &mut ys)).to_bits(), want, "{name} stored n={}", xs.len());
                assert!(ys.iter().zip(&fx).all(|(a, b)| a.to_bits() == b.to_bits()), "{name} stored values");
            }
        }
        for n in [0, 1, 15, 63, 64, 65, 127, 1000, 1023, 1024, 1025, 2048 + 64 + 3, 5000] {
            let xs = data(n, n as u64 + 11);
            check(Id, &xs, "sum");
            if n > 0 {
                let rows = data(3 * n, 5);
                let mut got = vec![];
                sum_rows(&rows, n, &mut |k, s| got.push((k, s.to_bits())));
                let want: Vec<(usize, u64)> = rows.chunks(n).map(|r| sum_ref(r).to_bits()).enumerate().collect();
                assert_eq!(got, want, "rows of {n}");
            }
            check(Square, &xs, "sum_sq");
            check(ExpShift(0.5), &xs, "exp_sum");
        }
    }

    #[test]
    fn close_to_the_exact_sum_and_specials_propagate() {
        // 1e6 values in [-4, 4) and in [0, 1): the error stays within a few f32 ulps of the
        // magnitudes' sum divided by the lane count (far inside torch's own cascade error).
        for shift in [0.0f32, 4.0] {
            let xs: Vec<f32> = data(1_000_000, 5).iter().map(|&x| (x + shift) / 8.0).collect();
            let (e, mag) = exact(&xs);
            assert!((sum(&xs) - e).abs() <= 1e-7 * mag, "{} vs {e}", sum(&xs));
            let sq: f64 = xs.iter().map(|&x| (x * x) as f64).sum();
            assert!((sum_sq(&xs) - sq).abs() <= 1e-7 * sq);
        }
        let mut xs = data(3000, 9);
        xs[2500] = f32::NAN;
        assert!(sum(&xs).is_nan() && sum_sq(&xs).is_nan());
        xs[2500] = f32::INFINITY;
        assert_eq!(sum(&xs), f64::INFINITY);
        assert_eq!(sum_sq(&xs), f64::INFINITY);
        xs[7] = f32::NEG_INFINITY;
        assert!(sum(&xs).is_nan());
        assert_eq!(sum_sq(&xs), f64::INFINITY);
        // -0.0 sums to +0.0 (torch's too); empty is 0.
        assert_eq!(sum(&[-0.0; 100]).to_bits(), 0f64.to_bits());
        assert_eq!(sum(&[]), 0.0);
        // Squares that overflow float32 are +inf, as in torch's float32 norm.
        assert_eq!(sum_sq(&[3e20]), f64::INFINITY);
    }
}
