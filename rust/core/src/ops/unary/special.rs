//! The float functions of the unary table beyond the basic ones (trigonometric and hyperbolic,
//! their inverses, log2/log10/exp2, the error function family), one name for f32 and f64 so
//! `with_float_fn!` can bind them (called as `Special::erf(x)`: the standard library's unstable
//! inherent `f64::erf` would shadow a method call).
//!
//! float64 is the C library's (torch's scalar loops call the same functions: glibc here,
//! within 1 ulp). The standard library wraps most of them; asinh, acosh and atanh it computes by
//! closed formulas that lose up to ~100 ulp (atanh near ±1, acosh near 1, against mpmath at 200
//! bits), and erf/erfc it lacks, so those five are called from the C library directly. The
//! inverse error function has no C library twin: see [`erfinv`].
//!
//! float32 is computed in float64 and rounded once: within 0.5 ulp but for rare double
//! roundings, where the C library's float32 functions (and torch's SLEEF ones) reach 1-3 ulp.

/// The functions of a float element this module provides.
pub(crate) trait Special: Copy {
    fn tan(self) -> Self;
    fn asin(self) -> Self;
    fn acos(self) -> Self;
    fn atan(self) -> Self;
    fn sinh(self) -> Self;
    fn cosh(self) -> Self;
    fn asinh(self) -> Self;
    fn acosh(self) -> Self;
    fn atanh(self) -> Self;
    fn log2(self) -> Self;
    fn log10(self) -> Self;
    fn exp2(self) -> Self;
    fn erf(self) -> Self;
    fn erfc(self) -> Self;
    fn erfinv(self) -> Self;
}

mod c {
    extern "C" {
        pub fn asinh(x: f64) -> f64;
        pub fn acosh(x: f64) -> f64;
        pub fn atanh(x: f64) -> f64;
        pub fn erf(x: f64) -> f64;
        pub fn erfc(x: f64) -> f64;
    }
}

/// Calls a C library function of one double.
fn c_math(f: unsafe extern "C" fn(f64) -> f64, x: f64) -> f64 {
    // SAFETY: `f` is one of the C99 <math.h> functions declared in `c` with their exact
    // signature (double in, double out, by value): no pointers, nothing to keep valid; they
    // touch no state but errno, which nothing here reads.
    unsafe { f(x) }
}

/// Methods of `Special` that are the standard library's own (which calls the C library).
macro_rules! from_std {
    ($($name:ident),*) => {
        $(fn $name(self) -> f64 {
            f64::$name(self)
        })*
    };
}

/// Methods of `Special` called from the C library directly.
macro_rules! from_c {
    ($($name:ident),*) => {
        $(fn $name(self) -> f64 {
            c_math(c::$name, self)
        })*
    };
}

impl Special for f64 {
    from_std!(tan, asin, acos, atan, sinh, cosh, log2, log10, exp2);
    from_c!(asinh, acosh, atanh, erf, erfc);
    fn erfinv(self) -> f64 {
        erfinv(self)
    }
}

/// float32 through float64, rounded once.
macro_rules! via_f64 {
    ($($name:ident),*) => {
        impl Special for f32 {
            $(fn $name(self) -> f32 {
                <f64 as Special>::$name(f64::from(self)) as f32
            })*
        }
    };
}
via_f64!(tan, asin, acos, atan, sinh, cosh, asinh, acosh, atanh, log2, log10, exp2, erf, erfc, erfinv);

/// 2 / √π, the slope of erf at 0.
const TWO_OVER_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;

/// The inverse error function: erfinv(±1) = ±inf, NaN outside [-1, 1] and for NaN, the sign of
/// a zero kept. A starting point good to about 2e-3 (a series near 0, Winitzki's closed form
/// elsewhere; worse in the far tail: 12 ulp were left after two steps at 1 - 2^-53), then three
/// Halley steps on `erf(x) - y`, which converge cubically. Where |y| > 0.5 the residual is taken as `(1 - |y|) - erfc(|x|)`: `1 - |y|` is exact
/// there (Sterbenz) and erfc keeps its relative accuracy in the tail, so results near ±1 keep
/// full precision (erf(x) - y would cancel).
pub(crate) fn erfinv(y: f64) -> f64 {
    let a = y.abs();
    if a.is_nan() || a > 1.0 {
        return f64::NAN;
    }
    if a == 1.0 {
        return f64::INFINITY.copysign(y);
    }
    if a == 0.0 {
        return y;
    }
    let mut x = start(a);
    for _ in 0..3 {
        // residual r = erf(x) - a, computed where it does not cancel
        let r = if a <= 0.5 { Special::erf(x) - a } else { (1.0 - a) - Special::erfc(x) };
        let u = r / (TWO_OVER_SQRT_PI * (-x * x).exp());
        // Halley: erf'' / erf' = -2x
        x -= u / (1.0 + x * u);
    }
    x.copysign(y)
}

/// A first guess for erfinv(a), 0 < a < 1, within about 2e-3 relative (less close as a -> 1).
fn start(a: f64) -> f64 {
    use std::f64::consts::PI;
    if a < 0.3 {
        // erfinv's Maclaurin series to the y^5 term (the next term is < 2e-5 relative here)
        let a2 = a * a;
        return (PI.sqrt() / 2.0) * a * (1.0 + a2 * (PI / 12.0 + a2 * (7.0 * PI * PI / 480.0)));
    }
    // Winitzki's approximation; (1 - a)(1 + a) keeps 1 - a² accurate near 1
    const K: f64 = 0.147;
    let l = ((1.0 - a) * (1.0 + a)).ln();
    let b = 2.0 / (PI * K) + l / 2.0;
    ((b * b - l / K).sqrt() - b).sqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// erf(erfinv(y)) returns y to within the rounding of erf itself, across the range.
    #[test]
    fn erfinv_inverts_erf() {
        for i in 1..2000 {
            let y = i as f64 / 2000.0;
            let x = erfinv(y);
            assert!((Special::erf(x) - y).abs() <= 4.0 * f64::EPSILON * y.max(0.1), "{y}: {x}");
            assert_eq!(erfinv(-y), -x);
        }
    }

    /// Near 1, where erf(x) - y would cancel, the inverse still matches erfc to full precision.
    #[test]
    fn erfinv_keeps_precision_near_one() {
        for k in [1e-3, 1e-6, 1e-10, 1e-14, f64::EPSILON / 2.0] {
            let y = 1.0 - k;
            let k = 1.0 - y; // exact (Sterbenz): the distance to 1 of the y actually passed
            let x = erfinv(y);
            let back = Special::erfc(x);
            assert!(((back - k) / k).abs() < 1e-13, "1 - {k}: erfc(x) = {back}");
        }
    }

    /// Tiny inputs: erfinv(y) ≈ y √π / 2, subnormals included.
    #[test]
    fn erfinv_tiny_and_special_values() {
        for y in [1e-300, 1e-20, 5e-324] {
            let x = erfinv(y);
            assert!((x / (y * std::f64::consts::PI.sqrt() / 2.0) - 1.0).abs() < 1e-15 || y < 1e-307, "{y}: {x}");
            assert!(x > 0.0);
        }
        assert!(erfinv(-0.0).is_sign_negative() && erfinv(-0.0) == 0.0);
        assert_eq!(erfinv(1.0), f64::INFINITY);
        assert_eq!(erfinv(-1.0), f64::NEG_INFINITY);
        assert!(erfinv(1.5).is_nan() && erfinv(f64::NAN).is_nan());
    }
}
