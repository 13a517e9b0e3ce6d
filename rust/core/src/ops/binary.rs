//! Binary elementwise ops (arithmetic, comparisons, bitwise), `where`, `clamp`, `masked_fill`,
//! and their in-place variants, with torch's type promotion and broadcasting.

use crate::dtype::{check_castable, result_type, DType, Scalar};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::kernels::elementwise::{map_inplace, zip, zip3, zip_inplace};
use crate::kernels::Arg as K;
use crate::ops::copy::{copy_kernel, empty_with_layout, preserved_layout};
use crate::ops::write::{write, Alias};
use crate::ops::{broadcast_strides, Arg};
use crate::shape::{broadcast_all, broadcast_shapes, check_inplace_shape};
use crate::tensor::Tensor;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    DivFloor,
    DivTrunc,
    Remainder,
    Pow,
    Maximum,
    Minimum,
    BitAnd,
    BitOr,
    BitXor,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

pub struct BinaryDef {
    pub name: &'static str,
    pub node: &'static str,
}

impl BinaryOp {
    pub fn def(self) -> BinaryDef {
        use BinaryOp::*;
        let (name, node) = match self {
            Add => ("add", "AddBackward0"),
            Sub => ("sub", "SubBackward0"),
            Mul => ("mul", "MulBackward0"),
            Div => ("div", "DivBackward0"),
            DivFloor => ("div", "DivBackward1"),
            DivTrunc => ("div", "DivBackward1"),
            Remainder => ("remainder", "RemainderBackward0"),
            Pow => ("pow", "PowBackward1"),
            Maximum => ("maximum", "MaximumBackward0"),
            Minimum => ("minimum", "MinimumBackward0"),
            BitAnd => ("bitwise_and", "NotImplemented"),
            BitOr => ("bitwise_or", "NotImplemented"),
            BitXor => ("bitwise_xor", "NotImplemented"),
            Eq => ("eq", "NotImplemented"),
            Ne => ("ne", "NotImplemented"),
            Lt => ("lt", "NotImplemented"),
            Le => ("le", "NotImplemented"),
            Gt => ("gt", "NotImplemented"),
            Ge => ("ge", "NotImplemented"),
        };
        BinaryDef { name, node }
    }

    pub fn is_comparison(self) -> bool {
        matches!(self, BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge)
    }

    /// (dtype the kernel computes in, dtype of the result) for promoted operand type `common`.
    pub fn dtypes(self, common: DType, a: &Arg, b: &Arg) -> Result<(DType, DType)> {
        use BinaryOp::*;
        let both_bool = common == DType::Bool;
        match self {
            Sub if matches!(a.promotion_dtype(), DType::Bool) && matches!(b.promotion_dtype(), DType::Bool) => Err(Error::Runtime(
                "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.".into(),
            )),
            Sub if both_bool => Err(Error::Runtime(
                "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.".into(),
            )),
            Div if !common.is_floating() => Ok((DType::Float32, DType::Float32)),
            BitAnd | BitOr | BitXor if common.is_floating() => Err(Error::NotImplemented(format!(
                "\"{}_cpu\" not implemented for '{}'",
                self.def().name,
                common.scalar_type_name()
            ))),
            Eq | Ne | Lt | Le | Gt | Ge => Ok((common, DType::Bool)),
            _ => Ok((common, common)),
        }
    }
}

impl Arg {
    fn promotion_dtype(&self) -> DType {
        match self {
            Arg::Tensor(t) => t.dtype(),
            Arg::Scalar(s) => s.wrapped_dtype(),
        }
    }
}

const INT_DIV_ZERO: &str = "ZeroDivisionError";

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
                let q = self.wrapping_div(o);
                if (self % o != 0) && ((self < 0) != (o < 0)) { q - 1 } else { q }
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
            _ => unreachable!(),
        }
    }};
}

/// Python's float floor division, as torch computes it (`div_floor`).
fn py_floor_div<T: num_traits::Float>(a: T, b: T) -> T {
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
fn py_fmod<T: num_traits::Float>(a: T, b: T) -> T {
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
            _ => unreachable!(),
        }
    }};
}

/// Integer division/remainder by zero raises, as torch does.
fn check_int_zero_division(op: BinaryOp, compute: DType, b: &Tensor) -> Result<()> {
    if !compute.is_integral(false) || !matches!(op, BinaryOp::DivFloor | BinaryOp::DivTrunc | BinaryOp::Remainder) {
        return Ok(());
    }
    let has_zero = crate::dispatch!(compute, T => b.to_vec::<T>().iter().any(|v| v.to_i64() == 0));
    if has_zero {
        return Err(Error::Runtime(INT_DIV_ZERO.into()));
    }
    Ok(())
}

/// How the destination relates to operand a (the in-place `self`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Fresh,
    /// dst is a; b does not overlap dst.
    InPlace,
    /// dst is a and b is the very same elements.
    InPlaceSelf,
}

/// Runs `op` with inputs already cast to `compute` and `dst` of `compute` (or bool for comparisons).
fn run(op: BinaryOp, dst: &Tensor, a: &Tensor, b: &Tensor, mode: Mode) {
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
    }
}

/// torch's output layout for an elementwise result: the memory order of the first operand of
/// the output's shape that is non-overlapping and dense, else row-major.
fn output_like(shape: &[usize], args: &[&Arg], dtype: DType) -> Tensor {
    for a in args {
        if let Arg::Tensor(t) = a {
            if t.shape() == shape && t.ndim() > 1 {
                return empty_with_layout(&preserved_layout(t), dtype);
            }
        }
    }
    Tensor::empty(shape, dtype)
}

/// Validates alpha for add/sub like torch.
fn check_alpha(alpha: Option<Scalar>, dtype: DType) -> Result<()> {
    match alpha {
        Some(Scalar::Float(_)) if !dtype.is_floating() => {
            Err(Error::Runtime("For integral input tensors, argument alpha must not be a floating point number.".into()))
        }
        Some(Scalar::Bool(_)) if dtype != DType::Bool => {
            Err(Error::Runtime("Boolean alpha only supported for Boolean results.".into()))
        }
        _ => Ok(()),
    }
}

/// Folds `alpha` into b (`a + alpha * b`), leaving b unchanged when alpha is absent or 1.
fn apply_alpha(op: BinaryOp, b: Arg, alpha: Option<Scalar>) -> Result<Arg> {
    let Some(alpha) = alpha else { return Ok(b) };
    if !matches!(op, BinaryOp::Add | BinaryOp::Sub) || alpha.to_f64() == 1.0 {
        return Ok(b);
    }
    Ok(match b {
        Arg::Scalar(s) => Arg::Scalar(match (s, alpha) {
            (Scalar::Int(x), Scalar::Int(y)) => Scalar::Int(x.wrapping_mul(y)),
            (x, y) => Scalar::Float(x.to_f64() * y.to_f64()),
        }),
        Arg::Tensor(t) => Arg::Tensor(binary(BinaryOp::Mul, &Arg::Tensor(t), &Arg::Scalar(alpha), None)?),
    })
}

/// Out-of-place `op(a, b)`, broadcasting, with torch's promotion.
pub fn binary(op: BinaryOp, a: &Arg, b: &Arg, alpha: Option<Scalar>) -> Result<Tensor> {
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    let common = result_type(&[a.promotion(), b.promotion()]);
    let (compute, out_dtype) = op.dtypes(common, a, b)?;
    check_alpha(alpha, common)?;
    let b = apply_alpha(op, b.clone(), alpha)?;
    let (ta, tb) = (a.as_tensor(compute), b.as_tensor(compute));
    check_int_zero_division(op, compute, &tb)?;
    check_int_pow(op, compute, &tb)?;
    let out = output_like(&shape, &[a, &b], out_dtype);
    run(op, &out, &ta, &tb, Mode::Fresh);
    Ok(out)
}

fn check_int_pow(op: BinaryOp, compute: DType, b: &Tensor) -> Result<()> {
    if op == BinaryOp::Pow && compute.is_integral(false) {
        let neg = crate::dispatch!(compute, T => b.to_vec::<T>().iter().any(|v| v.to_i64() < 0));
        if neg {
            return Err(Error::Runtime("Integers to negative integer powers are not allowed.".into()));
        }
    }
    Ok(())
}

/// In-place `a.op_(b)`: the broadcast result must keep a's shape (R44) and its type must be
/// castable to a's dtype (R45). Returns nothing; the caller returns `a` itself.
pub fn binary_(op: BinaryOp, a: &Tensor, b: &Arg, alpha: Option<Scalar>) -> Result<()> {
    let aa = Arg::Tensor(a.clone());
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    check_inplace_shape(a.shape(), &shape)?;
    let common = result_type(&[aa.promotion(), b.promotion()]);
    let (compute, out_dtype) = op.dtypes(common, &aa, b)?;
    check_castable(out_dtype, a.dtype())?;
    check_alpha(alpha, common)?;
    let b = apply_alpha(op, b.clone(), alpha)?;
    let tb = b.as_tensor(compute);
    check_int_zero_division(op, compute, &tb)?;
    check_int_pow(op, compute, &tb)?;
    write(a, &[&tb], |reads| {
        let (b_read, alias) = &reads[0];
        if compute == a.dtype() && out_dtype == a.dtype() {
            let mode = if *alias == Alias::Same { Mode::InPlaceSelf } else { Mode::InPlace };
            run(op, a, a, b_read, mode);
        } else {
            // Mixed dtypes: compute into a temporary of the result type, then cast into a.
            let ta = crate::ops::copy::cast_input(a, compute);
            let tmp = Tensor::empty(a.shape(), out_dtype);
            run(op, &tmp, &ta, b_read, Mode::Fresh);
            copy_kernel(a, &tmp);
        }
        Ok(())
    })
}

/// `torch.where(cond, a, b)`.
pub fn where_(cond: &Tensor, a: &Arg, b: &Arg) -> Result<Tensor> {
    if cond.dtype() != DType::Bool {
        return Err(Error::Runtime(format!(
            "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
            cond.dtype().scalar_type_name()
        )));
    }
    let shape = broadcast_all(&[cond.shape(), a.shape(), b.shape()])?;
    let dtype = result_type(&[a.promotion(), b.promotion()]);
    let (ta, tb) = (a.as_tensor(dtype), b.as_tensor(dtype));
    let out = Tensor::empty(&shape, dtype);
    let (sc, sa, sb) = (broadcast_strides(cond, &shape), broadcast_strides(&ta, &shape), broadcast_strides(&tb, &shape));
    crate::dispatch!(dtype, T => {
        // SAFETY: out is fresh; inputs are read only.
        unsafe {
            zip3::<bool, T, T, T>(&shape, K::of(&out), K::broadcast(cond, &sc), K::broadcast(&ta, &sa), K::broadcast(&tb, &sb),
                |c, x, y| if c { x } else { y })
        }
    });
    Ok(out)
}

/// `clamp(min, max)` with tensor or number bounds (either may be absent, not both).
pub fn clamp(x: &Tensor, min: Option<&Arg>, max: Option<&Arg>, in_place: bool) -> Result<Tensor> {
    if min.is_none() && max.is_none() {
        return Err(Error::Runtime("torch.clamp: At least one of 'min' or 'max' must not be None".into()));
    }
    // clamp(x, lo, hi) = minimum(maximum(x, lo), hi), with torch's promotion over all three.
    let mut ops = vec![Arg::Tensor(x.clone()).promotion()];
    for b in [min, max].into_iter().flatten() {
        ops.push(b.promotion());
    }
    let dtype = result_type(&ops);
    if x.dtype() == DType::Bool && dtype == DType::Bool {
        return Err(Error::NotImplemented("\"clamp_cpu\" not implemented for 'Bool'".into()));
    }
    let mut cur = Arg::Tensor(crate::ops::copy::cast_input(x, dtype));
    let mut fresh = cur.clone();
    if let Some(lo) = min {
        fresh = Arg::Tensor(binary(BinaryOp::Maximum, &cur, lo, None)?);
        cur = fresh.clone();
    }
    if let Some(hi) = max {
        fresh = Arg::Tensor(binary(BinaryOp::Minimum, &cur, hi, None)?);
    }
    let Arg::Tensor(result) = fresh else { unreachable!() };
    // min > max: torch sets everything to max, which minimum(maximum(..)) already does.
    if in_place {
        check_castable(dtype, x.dtype())?;
        check_inplace_shape(x.shape(), result.shape())?;
        write(x, &[&result], |reads| {
            copy_kernel(x, &reads[0].0);
            Ok(())
        })?;
        return Ok(x.clone());
    }
    Ok(result)
}

/// `masked_fill(mask, value)`; in place writes through the write path.
pub fn masked_fill(x: &Tensor, mask: &Tensor, value: &Arg, in_place: bool) -> Result<Tensor> {
    if mask.dtype() != DType::Bool {
        return Err(Error::Runtime(format!(
            "masked_fill_ only supports boolean masks, but got mask with dtype {}",
            mask.dtype().name()
        )));
    }
    let v = match value {
        Arg::Scalar(s) => *s,
        Arg::Tensor(t) => {
            if t.ndim() != 0 {
                return Err(Error::Runtime(format!(
                    "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                    t.ndim()
                )));
            }
            t.item()?
        }
    };
    if !x.dtype().is_floating() && v.is_floating() {
        // torch casts silently for 0-d tensors but follows the scalar rule for numbers.
    }
    let target = if in_place {
        let shape = broadcast_shapes(x.shape(), mask.shape())?;
        check_inplace_shape(x.shape(), &shape)?;
        x.clone()
    } else {
        let shape = broadcast_shapes(x.shape(), mask.shape())?;
        let out = Tensor::empty(&shape, x.dtype());
        copy_kernel(&out, x);
        out
    };
    let body = |dst: &Tensor, m: &Tensor| {
        let sm = broadcast_strides(m, dst.shape());
        crate::dispatch!(dst.dtype(), T => {
            let fill = T::from_scalar(v);
            // SAFETY: dst has no internal overlap (checked by write or fresh); mask only read.
            unsafe { zip_inplace::<T, bool>(dst.shape(), K::of(dst), K::broadcast(m, &sm), move |x, c| if c { fill } else { x }) }
        })
    };
    if in_place {
        write(&target, &[mask], |reads| {
            body(&target, &reads[0].0);
            Ok(())
        })?;
    } else {
        body(&target, mask);
    }
    Ok(target)
}
