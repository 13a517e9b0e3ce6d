//! What each binary op computes for one element, per dtype (integer arithmetic with torch's
//! wrapping and Python's signs, float, bool and comparison closures), and `cpu_kernel`, the CPU
//! loop that applies one op out of place or in place (the CPU backend's `binary`).

use crate::dtype::DType;
use crate::element::Element;
use crate::kernels::elementwise::{map_inplace, zip, zip_inplace};
use crate::kernels::Arg as K;
use crate::kernels::TensorArg;
use crate::ops::broadcast_strides;
use crate::tensor::Tensor;
use super::BinaryOp;

/// Integer arithmetic with torch's semantics: wrapping on overflow, floor division/remainder
/// following Python's signs, division by zero reported instead of panicking.
pub trait IntArith: Element + Ord {
    fn wadd(self, o: Self) -> Self;
    fn wsub(self, o: Self) -> Self;
    fn wmul(self, o: Self) -> Self;
    fn floor_div(self, o: Self) -> Self;
    fn trunc_div(self, o: Self) -> Self;
    fn py_rem(self, o: Self) -> Self;
    fn ipow(self, e: Self) -> Self;
    fn band(self, o: Self) -> Self;
    fn bor(self, o: Self) -> Self;
    fn bxor(self, o: Self) -> Self;
    fn is_zero(self) -> bool;
}

macro_rules! int_arith {
    ($t:ty) => {
        impl IntArith for $t {
            fn wadd(self, o: Self) -> Self { self.wrapping_add(o) }
            fn wsub(self, o: Self) -> Self { self.wrapping_sub(o) }
            fn wmul(self, o: Self) -> Self { self.wrapping_mul(o) }
            fn floor_div(self, o: Self) -> Self {
                if o == 0 { return 0; }
                // wrapping: MIN // -1 is MIN and MIN % -1 is 0, as torch computes them (plain
                // `%` panics there)
                let q = self.wrapping_div(o);
                if (self.wrapping_rem(o) != 0) && ((self < 0) != (o < 0)) { q - 1 } else { q }
            }
            fn trunc_div(self, o: Self) -> Self { if o == 0 { 0 } else { self.wrapping_div(o) } }
            fn py_rem(self, o: Self) -> Self {
                if o == 0 { return 0; }
                let r = self.wrapping_rem(o);
                if r != 0 && ((r < 0) != (o < 0)) { r + o } else { r }
            }
            fn ipow(self, e: Self) -> Self {
                if e < 0 { return if self == 1 { 1 } else if self == -1 { if e % 2 == 0 { 1 } else { -1 } } else { 0 }; }
                let mut r: $t = 1; let mut b = self; let mut e = e;
                while e > 0 { if e & 1 == 1 { r = r.wrapping_mul(b); } b = b.wrapping_mul(b); e >>= 1; }
                r
            }
            fn band(self, o: Self) -> Self { self & o }
            fn bor(self, o: Self) -> Self { self | o }
            fn bxor(self, o: Self) -> Self { self ^ o }
            fn is_zero(self) -> bool { self == 0 }
        }
    };
}
int_arith!(i32);
int_arith!(i64);

/// Binds `$f: Fn(T, T) -> T` for float `$T`.
macro_rules! float_fn {
    ($op:expr, $T:ty, $f:ident => $body:expr) => {{
        use num_traits::Float;
        match $op {
            BinaryOp::Add => { let $f = |a: $T, b: $T| a + b; $body }
            BinaryOp::Sub => { let $f = |a: $T, b: $T| a - b; $body }
            BinaryOp::Mul => { let $f = |a: $T, b: $T| a * b; $body }
            BinaryOp::Div => { let $f = |a: $T, b: $T| a / b; $body }
            BinaryOp::DivFloor => { let $f = |a: $T, b: $T| py_floor_div(a, b); $body }
            BinaryOp::DivTrunc => { let $f = |a: $T, b: $T| (a / b).trunc(); $body }
            BinaryOp::Remainder => { let $f = |a: $T, b: $T| py_fmod(a, b); $body }
            BinaryOp::Pow => { let $f = |a: $T, b: $T| a.powf(b); $body }
            // NaN propagates (torch.maximum/minimum).
            BinaryOp::Maximum => { let $f = |a: $T, b: $T| if a.is_nan() || b.is_nan() { <$T>::nan() } else if a > b { a } else { b }; $body }
            BinaryOp::Minimum => { let $f = |a: $T, b: $T| if a.is_nan() || b.is_nan() { <$T>::nan() } else if a < b { a } else { b }; $body }
            BinaryOp::Atan2 => { let $f = |a: $T, b: $T| a.atan2(b); $body }
            BinaryOp::Hypot => { let $f = |a: $T, b: $T| a.hypot(b); $body }
            // C's fmod: the result takes the dividend's sign (remainder's takes the divisor's)
            BinaryOp::Fmod => { let $f = |a: $T, b: $T| a % b; $body }
            BinaryOp::Copysign => { let $f = |a: $T, b: $T| a.copysign(b); $body }
            BinaryOp::Xlogy => { let $f = |a: $T, b: $T| xlogy(a, b); $body }
            BinaryOp::Logaddexp => { let $f = |a: $T, b: $T| logaddexp(a, b, false); $body }
            BinaryOp::Logaddexp2 => { let $f = |a: $T, b: $T| logaddexp(a, b, true); $body }
            _ => unreachable!(),
        }
    }};
}

/// torch's xlogy: `x * log(y)`, except NaN where y is NaN and 0 where x is 0 (even for y <= 0).
pub(super) fn xlogy<T: num_traits::Float>(x: T, y: T) -> T {
    if y.is_nan() {
        y
    } else if x == T::zero() {
        T::zero()
    } else {
        x * y.ln()
    }
}

/// torch's logaddexp (`log(exp(a) + exp(b))`) and logaddexp2 (`log2(2^a + 2^b)`), written as
/// torch writes them so nothing overflows: the larger operand plus `log1p` of the smaller
/// one's share; two equal infinities give themselves (their difference would be NaN).
pub(super) fn logaddexp<T: num_traits::Float>(a: T, b: T, base2: bool) -> T {
    if a.is_infinite() && a == b {
        return a;
    }
    // std::max(a, b): `a < b ? b : a` (a NaN operand makes the difference NaN below)
    let m = if a < b { b } else { a };
    let d = -(a - b).abs();
    if base2 {
        m + d.exp2().ln_1p() * T::from(std::f64::consts::LOG2_E).unwrap()
    } else {
        m + d.exp().ln_1p()
    }
}

/// Python's float floor division, as torch computes it (`div_floor`).
pub(super) fn py_floor_div<T: num_traits::Float>(a: T, b: T) -> T {
    if b == T::zero() {
        return a / b;
    }
    let m = a % b;
    let mut div = (a - m) / b;
    if m != T::zero() && ((b < T::zero()) != (m < T::zero())) {
        div = div - T::one();
    }
    if div != T::zero() {
        let f = div.floor();
        if div - f > T::from(0.5).unwrap() { f + T::one() } else { f }
    } else {
        T::zero().copysign(a / b)
    }
}

/// Python's remainder: the result takes the divisor's sign.
pub(super) fn py_fmod<T: num_traits::Float>(a: T, b: T) -> T {
    let m = a % b;
    if m != T::zero() && ((m < T::zero()) != (b < T::zero())) { m + b } else { m }
}

macro_rules! int_fn {
    ($op:expr, $T:ty, $f:ident => $body:expr) => {{
        match $op {
            BinaryOp::Add => { let $f = |a: $T, b: $T| a.wadd(b); $body }
            BinaryOp::Sub => { let $f = |a: $T, b: $T| a.wsub(b); $body }
            BinaryOp::Mul => { let $f = |a: $T, b: $T| a.wmul(b); $body }
            BinaryOp::DivFloor => { let $f = |a: $T, b: $T| a.floor_div(b); $body }
            BinaryOp::DivTrunc => { let $f = |a: $T, b: $T| a.trunc_div(b); $body }
            BinaryOp::Remainder => { let $f = |a: $T, b: $T| a.py_rem(b); $body }
            BinaryOp::Pow => { let $f = |a: $T, b: $T| a.ipow(b); $body }
            BinaryOp::Maximum => { let $f = |a: $T, b: $T| a.max(b); $body }
            BinaryOp::Minimum => { let $f = |a: $T, b: $T| a.min(b); $body }
            // C's `%`: the dividend's sign (division by zero is refused before the kernel)
            BinaryOp::Fmod => { let $f = |a: $T, b: $T| if b == 0 { 0 } else { a.wrapping_rem(b) }; $body }
            BinaryOp::BitAnd => { let $f = |a: $T, b: $T| a.band(b); $body }
            BinaryOp::BitOr => { let $f = |a: $T, b: $T| a.bor(b); $body }
            BinaryOp::BitXor => { let $f = |a: $T, b: $T| a.bxor(b); $body }
            _ => unreachable!(),
        }
    }};
}

macro_rules! bool_fn {
    ($op:expr, $f:ident => $body:expr) => {{
        match $op {
            BinaryOp::Add | BinaryOp::Maximum | BinaryOp::BitOr => { let $f = |a: bool, b: bool| a | b; $body }
            BinaryOp::Mul | BinaryOp::Minimum | BinaryOp::BitAnd => { let $f = |a: bool, b: bool| a & b; $body }
            BinaryOp::BitXor => { let $f = |a: bool, b: bool| a ^ b; $body }
            BinaryOp::Pow => { let $f = |a: bool, b: bool| a | !b; $body }
            BinaryOp::DivFloor | BinaryOp::DivTrunc | BinaryOp::Remainder => { let $f = |a: bool, _b: bool| a; $body }
            _ => unreachable!(),
        }
    }};
}

macro_rules! cmp_fn {
    ($op:expr, $T:ty, $f:ident => $body:expr) => {{
        match $op {
            BinaryOp::Eq => { let $f = |a: $T, b: $T| a == b; $body }
            BinaryOp::Ne => { let $f = |a: $T, b: $T| a != b; $body }
            BinaryOp::Lt => { let $f = |a: $T, b: $T| a < b; $body }
            BinaryOp::Le => { let $f = |a: $T, b: $T| a <= b; $body }
            BinaryOp::Gt => { let $f = |a: $T, b: $T| a > b; $body }
            BinaryOp::Ge => { let $f = |a: $T, b: $T| a >= b; $body }
            BinaryOp::LogicalAnd => { let $f = |a: $T, b: $T| a.to_bool() && b.to_bool(); $body }
            BinaryOp::LogicalOr => { let $f = |a: $T, b: $T| a.to_bool() || b.to_bool(); $body }
            BinaryOp::LogicalXor => { let $f = |a: $T, b: $T| a.to_bool() != b.to_bool(); $body }
            _ => unreachable!(),
        }
    }};
}

/// How the destination relates to operand a (the in-place `self`).
pub(crate) use crate::device::BinaryMode as Mode;

/// `a * b + c` rounded once, like `fmaf`, without an FMA instruction or a libm call (which
/// would not vectorise): in f64 the product of two f32 is exact, the sum is rounded to odd
/// (its error, from TwoSum, decides the last bit), and rounding a round-to-odd f64 to f32
/// (53 >= 24 + 2 bits) is the correctly rounded result.
#[inline]
pub(crate) fn fma_f32(a: f32, b: f32, c: f32) -> f32 {
    let p = a as f64 * b as f64;
    let c = c as f64;
    let s = c + p;
    let bb = s - c;
    let err = (c - (s - bb)) + (p - bb);
    let bits = s.to_bits();
    // Inexact with an even last bit: step one ulp toward the exact sum (away from zero when
    // the error has the sum's sign). Infinite or NaN sums are exact or meaningless as they are.
    let odd = if s.is_finite() && err != 0.0 && bits & 1 == 0 {
        f64::from_bits(if (err > 0.0) == (s > 0.0) { bits + 1 } else { bits - 1 })
    } else {
        s
    };
    odd as f32
}

/// Runs `op` with inputs already cast to `compute` and `dst` of `compute` (or bool for comparisons).
pub(crate) fn cpu_kernel(op: BinaryOp, dst: &Tensor, a: &Tensor, b: &Tensor, mode: Mode, alpha: Option<f64>) {
    let shape = dst.shape().to_vec();
    let sa = broadcast_strides(a, &shape);
    let sb = broadcast_strides(b, &shape);
    let compute = a.dtype();
    macro_rules! go {
        ($T:ty, $D:ty, $f:ident) => {
            // SAFETY: operands lie in their storages; Fresh dst is new memory; in place, dst is a
            // (same elements) and b either does not overlap it or is the same elements (write path).
            unsafe {
                match mode {
                    Mode::Fresh => zip::<$T, $T, $D>(&shape, K::of(dst), K::broadcast(a, &sa), K::broadcast(b, &sb), $f),
                    Mode::InPlace => {
                        let g = move |x: $D, y: $T| {
                            // dst and a share a dtype in place; this is the identity conversion.
                            $f(<$T>::cast_from(x), y)
                        };
                        zip_inplace::<$D, $T>(&shape, K::of(dst), K::broadcast(b, &sb), g)
                    }
                    Mode::InPlaceSelf => {
                        let g = move |x: $D| { let v = <$T>::cast_from(x); $f(v, v) };
                        map_inplace::<$D>(&shape, K::of(dst), g)
                    }
                }
            }
        };
    }
    if let Some(alpha) = alpha {
        // Float add/sub with alpha: one fused multiply-add, `a + alpha * b` rounded once, as
        // torch's kernels (vec::fmadd) compute it.
        let alpha = if op == BinaryOp::Sub { -alpha } else { alpha };
        match compute {
            DType::Float32 => {
                let al = alpha as f32;
                let f = move |x: f32, y: f32| fma_f32(y, al, x);
                go!(f32, f32, f)
            }
            _ => {
                let f = move |x: f64, y: f64| y.mul_add(alpha, x);
                go!(f64, f64, f)
            }
        }
        return;
    }
    if op.is_comparison() {
        crate::dispatch!(compute, T => cmp_fn!(op, T, f => {
            debug_assert!(mode == Mode::Fresh || dst.dtype() == DType::Bool);
            // Comparisons write bool; in place (x.eq_(y)) goes through a temporary in the caller.
            go!(T, bool, f)
        }));
        return;
    }
    match compute {
        DType::Float32 => float_fn!(op, f32, f => go!(f32, f32, f)),
        DType::Float64 => float_fn!(op, f64, f => go!(f64, f64, f)),
        DType::Int64 => int_fn!(op, i64, f => go!(i64, i64, f)),
        DType::Int32 => int_fn!(op, i32, f => go!(i32, i32, f)),
        DType::Bool => bool_fn!(op, f => go!(bool, bool, f)),
        d => crate::element::narrow_in_compute_kernel(d),
    }
}
