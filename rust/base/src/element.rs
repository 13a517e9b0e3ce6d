//! The Rust types behind the dtypes, and `dispatch!`, which runs one generic body per dtype.

use crate::dtype::{DType, Scalar};

/// A tensor element type. Conversions follow C casts, as torch's `static_cast` does.
pub trait Element: Copy + Send + Sync + PartialOrd + PartialEq + std::fmt::Debug + 'static {
    const DTYPE: DType;
    fn zero() -> Self;
    fn one() -> Self;
    fn from_f64(v: f64) -> Self;
    fn from_i64(v: i64) -> Self;
    fn from_bool(v: bool) -> Self;
    fn to_f64(self) -> f64;
    fn to_i64(self) -> i64;
    fn to_bool(self) -> bool;
    #[inline]
    fn from_scalar(s: Scalar) -> Self {
        match s {
            Scalar::Bool(b) => Self::from_bool(b),
            Scalar::Int(i) => Self::from_i64(i),
            Scalar::Float(f) => Self::from_f64(f),
        }
    }
    fn to_scalar(self) -> Scalar;
    /// Converts from any element type with C-cast semantics.
    fn cast_from<S: Element>(v: S) -> Self;
}

/// A float-to-integer cast as torch's x86 build performs it (`cvttsd2si`): truncation for values
/// in range, the type's minimum for NaN and out-of-range values (Rust's `as` would saturate).
macro_rules! float_to_int {
    ($t:ty) => {
        |f: f64| -> $t {
            if f.is_nan() || f < <$t>::MIN as f64 || f >= -(<$t>::MIN as f64) { <$t>::MIN } else { f as $t }
        }
    };
}

macro_rules! numeric_element {
    ($t:ty, $dt:expr, $scalar:ident, $to_scalar:expr, $from_float:expr) => {
        impl Element for $t {
            const DTYPE: DType = $dt;
            #[inline]
            fn zero() -> Self { 0 as $t }
            #[inline]
            fn one() -> Self { 1 as $t }
            #[inline]
            fn from_f64(v: f64) -> Self { v as $t }
            #[inline]
            fn from_i64(v: i64) -> Self { v as $t }
            #[inline]
            fn from_bool(v: bool) -> Self { v as u8 as $t }
            #[inline]
            fn to_f64(self) -> f64 { self as f64 }
            #[inline]
            fn to_i64(self) -> i64 { self as i64 }
            #[inline]
            fn to_bool(self) -> bool { self != (0 as $t) }
            #[inline]
            fn to_scalar(self) -> Scalar { $to_scalar(self) }
            #[inline]
            fn cast_from<S: Element>(v: S) -> Self {
                match S::DTYPE {
                    DType::Float32 | DType::Float64 => ($from_float)(v.to_f64()),
                    DType::Bool => v.to_bool() as u8 as $t,
                    _ => v.to_i64() as $t,
                }
            }
        }
    };
}

numeric_element!(f32, DType::Float32, Float, |v: f32| Scalar::Float(v as f64), |f: f64| f as f32);
numeric_element!(f64, DType::Float64, Float, |v: f64| Scalar::Float(v), |f: f64| f);
numeric_element!(i32, DType::Int32, Int, |v: i32| Scalar::Int(v as i64), float_to_int!(i32));
numeric_element!(i64, DType::Int64, Int, |v: i64| Scalar::Int(v), float_to_int!(i64));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_to_int_casts_follow_torch_on_x86() {
        // torch: tensor([1e30, nan, 3e9, -2.7]).to(int32) == [MIN, MIN, MIN, -2]
        assert_eq!(i32::cast_from(1e30f32), i32::MIN);
        assert_eq!(i32::cast_from(f32::NAN), i32::MIN);
        assert_eq!(i32::cast_from(3e9f64), i32::MIN);
        assert_eq!(i32::cast_from(-2.7f64), -2);
        assert_eq!(i64::cast_from(3e9f32), 3_000_000_000);
        assert_eq!(i64::cast_from(-1e30f64), i64::MIN);
        assert_eq!(i64::cast_from(f64::INFINITY), i64::MIN);
    }
}

impl Element for bool {
    const DTYPE: DType = DType::Bool;
    fn zero() -> Self { false }
    fn one() -> Self { true }
    fn from_f64(v: f64) -> Self { v != 0.0 }
    fn from_i64(v: i64) -> Self { v != 0 }
    fn from_bool(v: bool) -> Self { v }
    fn to_f64(self) -> f64 { self as u8 as f64 }
    fn to_i64(self) -> i64 { self as i64 }
    fn to_bool(self) -> bool { self }
    fn to_scalar(self) -> Scalar { Scalar::Bool(self) }
    fn cast_from<S: Element>(v: S) -> Self { v.to_bool() }
}

/// Float math shared by f32 and f64 kernels.
pub trait FloatElement: Element + num_traits::Float {}
impl FloatElement for f32 {}
impl FloatElement for f64 {}

/// Runs `$body` with `$T` bound to the element type of `$dtype`.
#[macro_export]
macro_rules! dispatch {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::Float32 => { type $T = f32; $body }
            $crate::dtype::DType::Float64 => { type $T = f64; $body }
            $crate::dtype::DType::Int64 => { type $T = i64; $body }
            $crate::dtype::DType::Int32 => { type $T = i32; $body }
            $crate::dtype::DType::Bool => { type $T = bool; $body }
        }
    };
}

/// Like `dispatch!` for float dtypes only; `$other` runs for the rest.
#[macro_export]
macro_rules! dispatch_float {
    ($dtype:expr, $T:ident => $body:expr, _ => $other:expr) => {
        match $dtype {
            $crate::dtype::DType::Float32 => { type $T = f32; $body }
            $crate::dtype::DType::Float64 => { type $T = f64; $body }
            _ => $other,
        }
    };
}

/// Like `dispatch!` for numeric (non-bool) dtypes; `$other` runs for bool.
#[macro_export]
macro_rules! dispatch_numeric {
    ($dtype:expr, $T:ident => $body:expr, _ => $other:expr) => {
        match $dtype {
            $crate::dtype::DType::Float32 => { type $T = f32; $body }
            $crate::dtype::DType::Float64 => { type $T = f64; $body }
            $crate::dtype::DType::Int64 => { type $T = i64; $body }
            $crate::dtype::DType::Int32 => { type $T = i32; $body }
            _ => $other,
        }
    };
}
