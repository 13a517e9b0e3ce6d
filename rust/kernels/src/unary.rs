//! The transcendental unary ops (exp, log, tanh, sigmoid, silu, gelu) and their backward
//! formulas: one entry point per direction, keyed by [`MathOp`], generic over the float dtype.
//!
//! float32 runs the vectorised functions of [`crate::simd`] (AVX-512 / AVX2 / NEON chosen at
//! run time); a strided operand is gathered into a small buffer, computed as a vector, and
//! scattered back, so every layout gets the same code and the same results. float64 keeps the
//! scalar libm functions (correctly rounded in practice; the vector kernels are float32's).
//!
//! # Safety (shared by the `unsafe fn`s here)
//! Each `Arg` must describe `shape` elements inside its storage, alive for the call. `dst`
//! overlaps no input, except that with `in_place` it is the input itself (same elements).

use super::elementwise::{map, map_inplace, zip};
use super::iter::Plan;
use super::parallel::SendPtr;
use super::simd::{self, math, normal, F32s, LaneFn1, LaneFn2};
use super::Arg;
use crate::element::FloatElement;
use pulp::Simd;

/// An op with a vectorised kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MathOp {
    Exp,
    Log,
    Tanh,
    Sigmoid,
    Silu,
    /// gelu with the exact normal cdf (`approximate="none"`).
    Gelu,
    /// gelu with `approximate="tanh"`.
    GeluTanh,
}

impl MathOp {
    /// What the backward formula reads besides the gradient: the result (tanh, sigmoid, exp)
    /// or the input (the rest), as torch's derivatives.yaml saves them.
    pub fn backward_reads_result(self) -> bool {
        matches!(self, MathOp::Tanh | MathOp::Sigmoid | MathOp::Exp)
    }

    /// Time per element relative to a copy-like op (relu_), measured here on AVX-512 (float32,
    /// in cache: relu_ 0.087 ns, exp 0.35, log 0.43, sigmoid 0.56, silu 0.57, tanh 0.61, gelu
    /// 0.90, gelu tanh 1.25; gelu re-measured 2026-11-27 after its one-check rework, one
    /// thread, `simd::timing_probe`: 0.52 ns, so 6, and 0.47 after its rational first piece,
    /// 5.4, left at 6; silu as x / (1 + e^-x): 0.25 ns, so 3):
    /// costlier ops go parallel at
    /// proportionally smaller sizes (`parallel::elementwise_split`).
    pub fn cost(self) -> usize {
        match self {
            MathOp::Exp => 4,
            MathOp::Log => 5,
            MathOp::Sigmoid => 6,
            MathOp::Silu => 3,
            MathOp::Tanh => 7,
            MathOp::Gelu => 6,
            MathOp::GeluTanh => 14,
        }
    }
}

/// The float dtypes the ops run on.
pub trait MathElement: FloatElement {
    /// `dst = op(src)` (see the module's safety contract).
    ///
    /// # Safety
    /// As the module says.
    unsafe fn math(op: MathOp, shape: &[usize], dst: Arg<Self>, src: Arg<Self>, in_place: bool);
    /// `dst = grad * op'(x)` where `saved` is op's result or input (`MathOp::backward_reads_result`).
    ///
    /// # Safety
    /// As the module says; `dst` overlaps neither input.
    unsafe fn math_backward(op: MathOp, shape: &[usize], dst: Arg<Self>, grad: Arg<Self>, saved: Arg<Self>);
}

/// `dst = op(src)` elementwise (`in_place`: `dst` is `src`).
///
/// # Safety
/// See the module documentation.
pub unsafe fn math<T: MathElement>(op: MathOp, shape: &[usize], dst: Arg<T>, src: Arg<T>, in_place: bool) {
    T::math(op, shape, dst, src, in_place)
}

/// `dst = grad * d op / dx`, from the saved result or input (one pass, no temporaries).
///
/// # Safety
/// See the module documentation; `dst` overlaps neither input.
pub unsafe fn math_backward<T: MathElement>(op: MathOp, shape: &[usize], dst: Arg<T>, grad: Arg<T>, saved: Arg<T>) {
    T::math_backward(op, shape, dst, grad, saved)
}

// ----- float32: the vector functions -----

macro_rules! lane_fn1 {
    ($name:ident, $f:path) => {
        #[derive(Clone, Copy)]
        pub struct $name;
        impl LaneFn1 for $name {
            #[inline(always)]
            fn apply<S: Simd>(self, x: F32s<S>) -> F32s<S> {
                $f(x)
            }
        }
    };
}
lane_fn1!(Exp, math::exp);
lane_fn1!(Log, math::log);
lane_fn1!(Tanh, math::tanh);
lane_fn1!(Sigmoid, math::sigmoid);
lane_fn1!(Silu, math::silu);
lane_fn1!(Gelu, normal::gelu);
lane_fn1!(GeluTanh, normal::gelu_tanh);

/// One lane function per op, each its own type: `with_op!(op, F => body)` binds `F` to the
/// zero-sized forward function so `body` is monomorphised per op.
macro_rules! with_op {
    ($op:expr, $F:ident => $body:expr) => {
        match $op {
            MathOp::Exp => { let $F = Exp; $body }
            MathOp::Log => { let $F = Log; $body }
            MathOp::Tanh => { let $F = Tanh; $body }
            MathOp::Sigmoid => { let $F = Sigmoid; $body }
            MathOp::Silu => { let $F = Silu; $body }
            MathOp::Gelu => { let $F = Gelu; $body }
            MathOp::GeluTanh => { let $F = GeluTanh; $body }
        }
    };
}

/// The backward formulas as lane functions of (grad, saved).
macro_rules! lane_fn2 {
    ($name:ident, |$g:ident, $s:ident| $e:expr) => {
        #[derive(Clone, Copy)]
        pub struct $name;
        impl LaneFn2 for $name {
            #[inline(always)]
            fn apply<S: Simd>(self, $g: F32s<S>, $s: F32s<S>) -> F32s<S> {
                $e
            }
        }
    };
}
// exp: grad * result; log: grad / x (kept as torch's: one rounding each).
lane_fn2!(ExpGrad, |g, y| g * y);
lane_fn2!(LogGrad, |g, x| g / x);
// tanh: grad * (1 - y^2), with the square fused into the subtraction.
lane_fn2!(TanhGrad, |g, y| g * (-y).mul_add(y, y.k(1.0)));
// sigmoid: grad * (1 - y) * y.
lane_fn2!(SigmoidGrad, |g, y| g * ((y.k(1.0) - y) * y));
// silu: grad * s (1 + x (1 - s)), s = sigmoid(x).
lane_fn2!(SiluGrad, |g, x| {
    let (s, one_minus_s) = math::sigmoid_pair(x);
    g * (s * x.mul_add(one_minus_s, x.k(1.0)))
});
lane_fn2!(GeluGrad, |g, x| g * normal::gelu_grad(x));
lane_fn2!(GeluTanhGrad, |g, x| g * normal::gelu_tanh_grad(x));

macro_rules! with_grad {
    ($op:expr, $F:ident => $body:expr) => {
        match $op {
            MathOp::Exp => { let $F = ExpGrad; $body }
            MathOp::Log => { let $F = LogGrad; $body }
            MathOp::Tanh => { let $F = TanhGrad; $body }
            MathOp::Sigmoid => { let $F = SigmoidGrad; $body }
            MathOp::Silu => { let $F = SiluGrad; $body }
            MathOp::Gelu => { let $F = GeluGrad; $body }
            MathOp::GeluTanh => { let $F = GeluTanhGrad; $body }
        }
    };
}

/// Elements gathered per step from a strided run (on the stack).
const BLOCK: usize = 256;

/// `f` over runs of the plan: slices for contiguous runs, gathered blocks for strided ones.
unsafe fn map1_f32<F: LaneFn1>(f: F, cost: usize, shape: &[usize], dst: Arg<f32>, src: Arg<f32>, in_place: bool) {
    let (d, s) = (SendPtr(dst.base), SendPtr(src.base));
    let run = |o: [isize; 2], len: usize, st: [isize; 2]| {
        let (d, s) = (d.get().offset(o[0]), s.get().offset(o[1]) as *const f32);
        if st == [1, 1] {
            if in_place {
                // SAFETY: a contiguous run of dst that only this task touches (src is dst).
                simd::map1_inplace(f, std::slice::from_raw_parts_mut(d, len));
            } else {
                // SAFETY: contiguous runs inside their storages; dst does not overlap src.
                simd::map1(f, std::slice::from_raw_parts_mut(d, len), std::slice::from_raw_parts(s, len));
            }
            return;
        }
        let mut buf = [0f32; BLOCK];
        let mut out = [0f32; BLOCK];
        for b0 in (0..len).step_by(BLOCK) {
            let n = BLOCK.min(len - b0);
            for (k, v) in buf[..n].iter_mut().enumerate() {
                // SAFETY: element b0 + k of a run inside the source storage.
                *v = *s.offset((b0 + k) as isize * st[1]);
            }
            simd::map1(f, &mut out[..n], &buf[..n]);
            for (k, &v) in out[..n].iter().enumerate() {
                // SAFETY: element b0 + k of a run of dst (read above before, if in place).
                *d.offset((b0 + k) as isize * st[0]) = v;
            }
        }
    };
    if in_place {
        Plan::new(shape, [dst.strides, dst.strides], [dst.offset, dst.offset]).for_each_run_cost(cost, run)
    } else {
        Plan::new(shape, [dst.strides, src.strides], [dst.offset, src.offset]).for_each_run_cost(cost, run)
    }
}

unsafe fn map2_f32<F: LaneFn2>(f: F, cost: usize, shape: &[usize], dst: Arg<f32>, a: Arg<f32>, b: Arg<f32>) {
    let plan = Plan::new(shape, [dst.strides, a.strides, b.strides], [dst.offset, a.offset, b.offset]);
    let (d, pa, pb) = (SendPtr(dst.base), SendPtr(a.base), SendPtr(b.base));
    plan.for_each_run_cost(cost, |o, len, st| {
        let d = d.get().offset(o[0]);
        let a = pa.get().offset(o[1]) as *const f32;
        let b = pb.get().offset(o[2]) as *const f32;
        if st == [1, 1, 1] {
            // SAFETY: contiguous runs; dst overlaps neither input (contract).
            let dv = std::slice::from_raw_parts_mut(d, len);
            simd::map2(f, dv, std::slice::from_raw_parts(a, len), std::slice::from_raw_parts(b, len));
            return;
        }
        let (mut ab, mut bb, mut out) = ([0f32; BLOCK], [0f32; BLOCK], [0f32; BLOCK]);
        for b0 in (0..len).step_by(BLOCK) {
            let n = BLOCK.min(len - b0);
            for k in 0..n {
                let i = (b0 + k) as isize;
                // SAFETY: element i of runs inside the input storages.
                ab[k] = *a.offset(i * st[1]);
                bb[k] = *b.offset(i * st[2]);
            }
            simd::map2(f, &mut out[..n], &ab[..n], &bb[..n]);
            for (k, &v) in out[..n].iter().enumerate() {
                // SAFETY: element b0 + k of a run of dst.
                *d.offset((b0 + k) as isize * st[0]) = v;
            }
        }
    });
}

impl MathElement for f32 {
    unsafe fn math(op: MathOp, shape: &[usize], dst: Arg<f32>, src: Arg<f32>, in_place: bool) {
        with_op!(op, f => map1_f32(f, op.cost(), shape, dst, src, in_place))
    }
    unsafe fn math_backward(op: MathOp, shape: &[usize], dst: Arg<f32>, grad: Arg<f32>, saved: Arg<f32>) {
        with_grad!(op, f => map2_f32(f, op.cost(), shape, dst, grad, saved))
    }
}

// ----- float64: scalar libm -----

/// gelu's normal cdf in float64 through erfc, which does not cancel for negative x.
fn normal_cdf(x: f64) -> f64 {
    0.5 * libm::erfc(-x * std::f64::consts::FRAC_1_SQRT_2)
}

fn sigmoid64(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

const SQRT_2_OVER_PI: f64 = 0.797_884_560_802_865_4;
const KAPPA: f64 = 0.044_715;

fn forward64(op: MathOp) -> impl Fn(f64) -> f64 + Copy + Send + Sync {
    move |x: f64| match op {
        MathOp::Exp => x.exp(),
        MathOp::Log => x.ln(),
        MathOp::Tanh => x.tanh(),
        MathOp::Sigmoid => sigmoid64(x),
        MathOp::Silu => x * sigmoid64(x),
        MathOp::Gelu => x * normal_cdf(x),
        MathOp::GeluTanh => 0.5 * x * (1.0 + (SQRT_2_OVER_PI * (x + KAPPA * x * x * x)).tanh()),
    }
}

fn derivative64(op: MathOp) -> impl Fn(f64, f64) -> f64 + Copy + Send + Sync {
    move |g: f64, s: f64| match op {
        MathOp::Exp => g * s,
        MathOp::Log => g / s,
        MathOp::Tanh => g * (1.0 - s * s),
        MathOp::Sigmoid => g * ((1.0 - s) * s),
        MathOp::Silu => {
            let sg = sigmoid64(s);
            g * (sg * (1.0 + s * (1.0 - sg)))
        }
        MathOp::Gelu => g * (normal_cdf(s) + s * (-0.5 * s * s).exp() * 0.398_942_280_401_432_7),
        MathOp::GeluTanh => {
            let inner = SQRT_2_OVER_PI * (s + KAPPA * s * s * s);
            let t = inner.tanh();
            let right = 0.5 * s * (1.0 - t * t) * SQRT_2_OVER_PI * (1.0 + 3.0 * KAPPA * s * s);
            g * (0.5 * (1.0 + t) + right)
        }
    }
}

impl MathElement for f64 {
    unsafe fn math(op: MathOp, shape: &[usize], dst: Arg<f64>, src: Arg<f64>, in_place: bool) {
        let f = forward64(op);
        if in_place {
            map_inplace::<f64>(shape, dst, f)
        } else {
            map::<f64, f64>(shape, dst, src, f)
        }
    }
    unsafe fn math_backward(op: MathOp, shape: &[usize], dst: Arg<f64>, grad: Arg<f64>, saved: Arg<f64>) {
        zip::<f64, f64, f64>(shape, dst, grad, saved, derivative64(op))
    }
}
