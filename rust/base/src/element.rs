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
                    DType::Float32 | DType::Float64 | DType::Float16 | DType::BFloat16 => ($from_float)(v.to_f64()),
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

// The small integers: a float goes through int32 first (torch's x86 `static_cast`: NaN and
// values outside int32 become INT32_MIN, whose low bits are 0), then wraps like an integer.
numeric_element!(u8, DType::UInt8, Int, |v: u8| Scalar::Int(v as i64), |f: f64| float_to_int!(i32)(f) as u8);
numeric_element!(i8, DType::Int8, Int, |v: i8| Scalar::Int(v as i64), |f: f64| float_to_int!(i32)(f) as i8);
numeric_element!(i16, DType::Int16, Int, |v: i16| Scalar::Int(v as i64), |f: f64| float_to_int!(i32)(f) as i16);

/// float16 and bfloat16 (the `half` crate's formats). Every value reaches them through float32
/// and one round-to-nearest-even, as c10::Half(float) does: a double or an int64 is first
/// converted to float (so a double rounds twice, as in torch).
macro_rules! half_element {
    ($t:ty, $dt:expr) => {
        impl Element for $t {
            const DTYPE: DType = $dt;
            #[inline]
            fn zero() -> Self { <$t>::ZERO }
            #[inline]
            fn one() -> Self { <$t>::ONE }
            #[inline]
            fn from_f64(v: f64) -> Self { <$t>::from_f32(v as f32) }
            #[inline]
            fn from_i64(v: i64) -> Self { <$t>::from_f32(v as f32) }
            #[inline]
            fn from_bool(v: bool) -> Self { if v { <$t>::ONE } else { <$t>::ZERO } }
            #[inline]
            fn to_f64(self) -> f64 { self.to_f64() }
            #[inline]
            fn to_i64(self) -> i64 { float_to_int!(i64)(self.to_f64()) }
            #[inline]
            fn to_bool(self) -> bool { self.to_f32() != 0.0 }
            #[inline]
            fn to_scalar(self) -> Scalar { Scalar::Float(self.to_f64()) }
            #[inline]
            fn cast_from<S: Element>(v: S) -> Self {
                match S::DTYPE {
                    DType::Bool => Self::from_bool(v.to_bool()),
                    // `<Self as Element>`: half's inherent `from_f64` (which `Self::from_f64` would
                    // name) rounds from the f64's top 32 bits only, so a float just past a
                    // rounding midpoint came out rounded to even (torch goes through float)
                    d if d.is_floating() => <Self as Element>::from_f64(v.to_f64()),
                    _ => <Self as Element>::from_i64(v.to_i64()),
                }
            }
        }
    };
}

half_element!(half::f16, DType::Float16);
half_element!(half::bf16, DType::BFloat16);

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

    #[test]
    fn casts_to_half_types_round_once_from_float() {
        // torch: tensor([-112896.015625]).bfloat16() == -113152 (just past the midpoint: away
        // from even); rounding from the top 32 bits of the double would give -112640
        let v = -112896.015625f32;
        assert_eq!(half::bf16::cast_from(v).to_f64(), -113152.0);
        assert_eq!(half::bf16::cast_from(v as f64).to_f64(), -113152.0);
        assert_eq!(<half::bf16 as Element>::from_scalar(Scalar::Float(v as f64)).to_f64(), -113152.0);
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

/// Runs `$body` with `$T` bound to the element type of `$dtype`, for the dtypes kernels compute
/// in. A narrow dtype never reaches a compute kernel (the device seam widens it first); one
/// that does is a bug, reported as a panic the bindings turn into a RuntimeError.
#[macro_export]
macro_rules! dispatch {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::Float32 => { type $T = f32; $body }
            $crate::dtype::DType::Float64 => { type $T = f64; $body }
            $crate::dtype::DType::Int64 => { type $T = i64; $body }
            $crate::dtype::DType::Int32 => { type $T = i32; $body }
            $crate::dtype::DType::Bool => { type $T = bool; $body }
            d => $crate::element::narrow_in_compute_kernel(d),
        }
    };
}

/// Like `dispatch!` over every dtype, narrow ones included: for bodies that only move, cast or
/// convert elements (copies, fills, gathers, item/tolist, NumPy).
#[macro_export]
macro_rules! dispatch_all {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::Float32 => { type $T = f32; $body }
            $crate::dtype::DType::Float64 => { type $T = f64; $body }
            $crate::dtype::DType::Int64 => { type $T = i64; $body }
            $crate::dtype::DType::Int32 => { type $T = i32; $body }
            $crate::dtype::DType::Bool => { type $T = bool; $body }
            $crate::dtype::DType::Float16 => { type $T = $crate::element::f16; $body }
            $crate::dtype::DType::BFloat16 => { type $T = $crate::element::bf16; $body }
            $crate::dtype::DType::UInt8 => { type $T = u8; $body }
            $crate::dtype::DType::Int8 => { type $T = i8; $body }
            $crate::dtype::DType::Int16 => { type $T = i16; $body }
        }
    };
}

pub use half::{bf16, f16};

/// `v` stored as a `dtype` element and read back as f64 (a number rounded to the dtype).
pub fn round_through(dtype: DType, v: f64) -> f64 {
    crate::dispatch_all!(dtype, T => T::from_f64(v).to_f64())
}

/// `dispatch!`'s arm for a narrow dtype (see there).
#[cold]
pub fn narrow_in_compute_kernel(d: DType) -> ! {
    panic!("internal error: a {} tensor reached a compute kernel without being widened", d.name())
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
