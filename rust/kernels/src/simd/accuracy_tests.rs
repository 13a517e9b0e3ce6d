//! Accuracy of the float32 vector functions against float64 references, in ulps of the exact
//! result (the spacing of float32 values at the reference, 2^-149 below the normal range).
//! The bounds asserted here are the ones `docs/kernels.md` documents; torch's CPU kernels use
//! MKL's VML (exp, log, tanh, in MKL builds) and SLEEF's 1.0 to 3.5 ulp functions (and a
//! 1.5e-7 absolute erf approximation for gelu).

use super::{map1, map2, LaneFn1, LaneFn2};
use crate::unary::*;

/// Float32 inputs spread over [lo, hi]: every `k`-th representable value (so each binade gets
/// its share, subnormals included), about `n` of them.
fn samples(lo: f32, hi: f32, n: usize) -> Vec<f32> {
    let ord = |x: f32| -> i64 {
        let b = x.to_bits() as i64;
        if x.is_sign_negative() { -(b & 0x7fff_ffff) } else { b }
    };
    let unord = |i: i64| -> f32 { if i < 0 { -f32::from_bits((-i) as u32) } else { f32::from_bits(i as u32) } };
    let (a, b) = (ord(lo), ord(hi));
    let step = ((b - a) as usize / n).max(1) as i64;
    let mut v: Vec<f32> = (0..).map(|k| a + k * step).take_while(|&i| i <= b).map(unord).collect();
    // and a uniform grid, where most real inputs are
    v.extend((0..=n / 4).map(|k| lo + (hi - lo) * (k as f32 / (n / 4) as f32)));
    v
}

/// Error of `got` in ulps of the exact `want` (0 when both are the same infinity or NaN).
fn ulps(got: f32, want: f64) -> f64 {
    ulps_floor(got, want, 0.0)
}

/// `ulps`, counted in ulps of `max(|want|, floor)`: for a derivative with a zero, where every
/// formula (torch's too) cancels, the error is bounded in absolute terms near it.
fn ulps_floor(got: f32, want: f64, floor: f64) -> f64 {
    if want.is_nan() || got.is_nan() {
        return if want.is_nan() && got.is_nan() { 0.0 } else { f64::INFINITY };
    }
    if got.is_infinite() || (want as f32).is_infinite() {
        return if got == want as f32 { 0.0 } else { f64::INFINITY };
    }
    let e = want.abs().max(floor).log2().floor().max(-126.0);
    (got as f64 - want).abs() / (e - 23.0).exp2()
}

fn worst1(f: impl LaneFn1, reference: impl Fn(f64) -> f64, xs: &[f32]) -> (f64, f32) {
    let mut out = vec![0f32; xs.len()];
    map1(f, &mut out, xs);
    xs.iter().zip(&out).map(|(&x, &y)| (ulps(y, reference(x as f64)), x)).fold((0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a })
}

/// A backward formula with gradient 1, given the saved value `saved(x)`; the reference is a
/// function of that same saved value (in float64), so only the formula's error is measured.
fn worst2(f: impl LaneFn2, reference: impl Fn(f64) -> f64, saved: impl Fn(f32) -> f32, xs: &[f32]) -> (f64, f32) {
    worst2_floor(f, reference, saved, xs, 0.0)
}

fn worst2_floor(f: impl LaneFn2, reference: impl Fn(f64) -> f64, saved: impl Fn(f32) -> f32, xs: &[f32], floor: f64) -> (f64, f32) {
    let s: Vec<f32> = xs.iter().map(|&x| saved(x)).collect();
    let ones = vec![1f32; xs.len()];
    let mut out = vec![0f32; xs.len()];
    map2(f, &mut out, &ones, &s);
    s.iter().zip(&out).zip(xs).map(|((&s, &y), &x)| (ulps_floor(y, reference(s as f64), floor), x)).fold((0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a })
}

#[derive(Clone, Copy)]
struct ExpLite;
impl LaneFn1 for ExpLite {
    fn apply<S: pulp::Simd>(self, x: super::F32s<S>) -> super::F32s<S> {
        super::math::exp_lite(x)
    }
}

fn sigmoid(x: f64) -> f64 {
    if x < 0.0 { x.exp() / (1.0 + x.exp()) } else { 1.0 / (1.0 + (-x).exp()) }
}
fn phi(x: f64) -> f64 {
    0.5 * libm::erfc(-x / std::f64::consts::SQRT_2)
}
fn gelu_tanh_s(x: f64) -> f64 {
    sigmoid(2.0 * (2.0 / std::f64::consts::PI).sqrt() * (x + 0.044715 * x * x * x))
}

const N: usize = 1 << 20;

/// Checks every function, then fails listing those over their bound.
fn check_all(results: &[(&str, (f64, f32), f64)]) {
    let mut bad = vec![];
    for &(name, (err, at), bound) in results {
        println!("{name}: max {err:.3} ulp at x = {at:e} (bound {bound})");
        if err > bound {
            bad.push(name);
        }
    }
    assert!(bad.is_empty(), "over their bounds: {bad:?}");
}

#[test]
fn forward_functions_within_documented_ulps() {
    check_all(&[
        ("exp", worst1(Exp, f64::exp, &samples(-104.0, 89.0, N)), 0.75),
        // where the result is a normal number
        ("exp (normal)", worst1(Exp, f64::exp, &samples(-87.3, 88.7, N)), 0.57),
        // the cheaper exp inside sigmoid, silu and gelu (not an op of its own)
        ("exp_lite", worst1(ExpLite, f64::exp, &samples(-104.0, 89.0, N)), 1.0),
        ("log", worst1(Log, f64::ln, &samples(0.0, f32::MAX, N)), 0.76),
        ("tanh", worst1(Tanh, f64::tanh, &samples(-10.0, 10.0, N)), 1.0),
        ("sigmoid", worst1(Sigmoid, sigmoid, &samples(-104.0, 20.0, N)), 1.8),
        // (silu and gelu: down to where the result leaves the normal range)
        ("silu", worst1(Silu, |x| x * sigmoid(x), &samples(-87.0, 20.0, N)), 2.1),
        ("gelu", worst1(Gelu, |x| x * phi(x), &samples(-13.0, 14.0, N)), 4.3),
        ("gelu_tanh", worst1(GeluTanh, |x| x * gelu_tanh_s(x), &samples(-10.0, 10.0, N)), 2.2),
    ]);
}

#[test]
fn backward_formulas_within_documented_ulps() {
    let tanh32 = |x: f32| x.tanh();
    let sig32 = |x: f32| sigmoid(x as f64) as f32;
    let id = |x: f32| x;
    let dgelu_tanh = |x: f64| {
        let s = gelu_tanh_s(x);
        let du = (2.0 / std::f64::consts::PI).sqrt() * (1.0 + 3.0 * 0.044715 * x * x);
        s + 2.0 * x * s * (1.0 - s) * du
    };
    let dgelu = |x: f64| phi(x) + x * (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
    check_all(&[
        // formulas of a saved result
        ("tanh backward", worst2(TanhGrad, |y| 1.0 - y * y, tanh32, &samples(-10.0, 10.0, N)), 0.5),
        ("sigmoid backward", worst2(SigmoidGrad, |s| (1.0 - s) * s, sig32, &samples(-80.0, 20.0, N)), 1.5),
        // formulas of the input
        // formulas of the input, with a zero (silu' at x = -1.28, gelu' at -0.75): counted in ulps of max(|d|, 1/4)
        ("silu backward", worst2_floor(SiluGrad, |x| { let s = sigmoid(x); s * (1.0 + x * (1.0 - s)) }, id, &samples(-80.0, 20.0, N), 0.25), 2.85),
        ("gelu backward", worst2_floor(GeluGrad, dgelu, id, &samples(-13.0, 14.0, N), 0.25), 3.4),
        ("gelu_tanh backward", worst2_floor(GeluTanhGrad, dgelu_tanh, id, &samples(-10.0, 10.0, N), 0.25), 2.5),
    ]);
}

#[test]
fn special_values_follow_torch() {
    let xs = [f32::NEG_INFINITY, -0.0, 0.0, f32::INFINITY, f32::NAN, 1e-45, -1e-45];
    let run = |f: &dyn Fn(&mut [f32], &[f32])| {
        let mut out = [0f32; 7];
        f(&mut out, &xs);
        out
    };
    let same = |a: [f32; 7], b: [f32; 7]| {
        let ok = a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()));
        if !ok {
            println!("got {a:?}, want {b:?}");
        }
        ok
    };
    let nan = f32::NAN;
    let inf = f32::INFINITY;
    assert!(same(run(&|o, x| map1(Exp, o, x)), [0.0, 1.0, 1.0, inf, nan, 1.0, 1.0]));
    assert!(same(run(&|o, x| map1(Log, o, x)), [nan, -inf, -inf, inf, nan, -103.278_93, nan]));
    assert!(same(run(&|o, x| map1(Tanh, o, x)), [-1.0, -0.0, 0.0, 1.0, nan, 1e-45, -1e-45]));
    assert!(same(run(&|o, x| map1(Sigmoid, o, x)), [0.0, 0.5, 0.5, 1.0, nan, 0.5, 0.5]));
    // silu(-inf) = -inf * 0 is NaN in torch too; gelu(-inf) likewise.
    assert!(same(run(&|o, x| map1(Silu, o, x)), [nan, -0.0, 0.0, inf, nan, 0.0, -0.0]));
    assert!(same(run(&|o, x| map1(Gelu, o, x)), [nan, -0.0, 0.0, inf, nan, 0.0, -0.0]));
    assert!(same(run(&|o, x| map1(GeluTanh, o, x)), [nan, -0.0, 0.0, inf, nan, 0.0, -0.0]));
}

#[test]
fn every_instruction_set_gives_the_same_bits() {
    // Results depend only on IEEE operations and FMA, so a machine without AVX-512 (or
    // without SIMD) computes exactly the same values: runs are reproducible across machines.
    let xs = samples(-20.0, 20.0, 1 << 14);
    let run = |arch: pulp::Arch| {
        let n = xs.len();
        let mut out = vec![0f32; 9 * n];
        super::map1_on(arch, Exp, &mut out[..n], &xs);
        super::map1_on(arch, Log, &mut out[n..2 * n], &xs);
        super::map1_on(arch, Tanh, &mut out[2 * n..3 * n], &xs);
        super::map1_on(arch, Gelu, &mut out[3 * n..4 * n], &xs);
        super::map1_on(arch, GeluTanh, &mut out[4 * n..5 * n], &xs);
        super::map2_on(arch, SiluGrad, &mut out[5 * n..6 * n], &xs, &xs);
        super::map1_on(arch, Sigmoid, &mut out[6 * n..7 * n], &xs);
        super::map1_on(arch, Silu, &mut out[7 * n..8 * n], &xs);
        super::map2_on(arch, GeluGrad, &mut out[8 * n..], &xs, &xs);
        out.into_iter().map(f32::to_bits).collect::<Vec<u32>>()
    };
    let best = run(super::arch());
    assert!(best == run(pulp::Arch::Scalar));
    #[cfg(target_arch = "x86_64")]
    if let Some(v3) = pulp::x86::V3::try_new() {
        assert!(best == run(pulp::Arch::V3(v3)));
    }
}

/// Edge inputs: NaN, the infinities, signed zeros, subnormals, the limits of the fast paths
/// and large |x|. Every forward function and backward formula stays within its documented
/// bound of the float64 reference there too (NaN exactly where the reference is NaN, as in
/// torch: silu(-inf) = -inf * 0), except that a result below the normal range may be off by
/// 2^-140 absolutely (the docs' note on subnormal results).
#[test]
fn edge_inputs_within_documented_ulps() {
    let mut xs = vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0, f32::MAX, f32::MIN];
    // NaNs with payloads (a quiet one, a negative one, a signalling one): the exponent tricks
    // must not turn them into numbers.
    xs.extend([0x7FC0_01FF, 0xFFC0_0123, 0x7F80_0001].map(f32::from_bits));
    for m in [1e-45, 3e-39, f32::MIN_POSITIVE, 1e-30, 1e-7, 0.5, 1.5, 2.25, 5.5, 13.0, 15.0, 30.0, 86.9, 87.0, 87.5, 88.7, 89.0, 95.0, 103.9, 104.0, 200.0, 1e10, 1e30] {
        xs.extend([m, -m]);
    }
    let ok = |got: f32, want: f64, bound: f64, floor: f64| {
        ulps_floor(got, want, floor) <= bound || (want.abs() < f32::MIN_POSITIVE as f64 && (got as f64 - want).abs() <= 2f64.powi(-140))
    };
    let bad = std::cell::RefCell::new(vec![]);
    let fwd = |name: &str, f: &dyn Fn(&mut [f32], &[f32]), reference: &dyn Fn(f64) -> f64, bound: f64| {
        let mut out = vec![0f32; xs.len()];
        f(&mut out, &xs);
        for (&x, &y) in xs.iter().zip(&out) {
            if !ok(y, reference(x as f64), bound, 0.0) {
                bad.borrow_mut().push(format!("{name}({x:e}) = {y:e}, want {:e}", reference(x as f64)));
            }
        }
    };
    fwd("exp", &|o, x| map1(Exp, o, x), &f64::exp, 0.75);
    fwd("tanh", &|o, x| map1(Tanh, o, x), &f64::tanh, 1.0);
    fwd("sigmoid", &|o, x| map1(Sigmoid, o, x), &sigmoid, 1.8);
    fwd("silu", &|o, x| map1(Silu, o, x), &|x| x * sigmoid(x), 2.1);
    fwd("gelu", &|o, x| map1(Gelu, o, x), &|x| x * phi(x), 4.0);
    fwd("gelu_tanh", &|o, x| map1(GeluTanh, o, x), &|x| x * gelu_tanh_s(x), 2.2);
    // backward formulas with gradient 1, of the saved float32 result or the input
    let bwd = |name: &str, f: &dyn Fn(&mut [f32], &[f32], &[f32]), saved: &dyn Fn(f32) -> f32, reference: &dyn Fn(f64) -> f64, bound: f64| {
        let s: Vec<f32> = xs.iter().map(|&x| saved(x)).collect();
        let mut out = vec![0f32; xs.len()];
        f(&mut out, &vec![1f32; xs.len()], &s);
        for ((&x, &s), &y) in xs.iter().zip(&s).zip(&out) {
            if !ok(y, reference(s as f64), bound, 0.25) {
                bad.borrow_mut().push(format!("{name}'({x:e}) = {y:e}, want {:e}", reference(s as f64)));
            }
        }
    };
    let phi_d = |x: f64| phi(x) + x * (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
    bwd("tanh", &|o, g, s| map2(TanhGrad, o, g, s), &|x| x.tanh(), &|y| 1.0 - y * y, 0.5);
    bwd("sigmoid", &|o, g, s| map2(SigmoidGrad, o, g, s), &|x| sigmoid(x as f64) as f32, &|s| (1.0 - s) * s, 1.5);
    bwd("silu", &|o, g, s| map2(SiluGrad, o, g, s), &|x| x, &|x| { let s = sigmoid(x); s * (1.0 + x * (1.0 - s)) }, 2.85);
    bwd("gelu", &|o, g, s| map2(GeluGrad, o, g, s), &|x| x, &phi_d, 3.1);
    let bad = bad.into_inner();
    assert!(bad.is_empty(), "{bad:#?}");
}
