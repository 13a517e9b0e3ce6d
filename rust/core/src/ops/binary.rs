//! Binary elementwise ops (arithmetic, comparisons, bitwise), `where`, `clamp`, `masked_fill`,
//! and their in-place variants, with torch's type promotion and broadcasting.

use crate::kernels::TensorArg;
use crate::dtype::{check_castable, result_type, DType, Scalar};
use crate::element::Element;
use crate::bail;
use crate::error::{Error, Result};
use crate::kernels::elementwise::{map, map_inplace, zip, zip3, zip_inplace};
use crate::kernels::Arg as K;
use crate::layout::Layout;
use crate::ops::copy::{cast_input, cast_layout, check_no_partial_overlap, copy_kernel, empty_with_layout, iterator_layout};
use crate::ops::write::{check_no_internal_overlap, write, Alias};
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
    LogicalAnd,
    LogicalOr,
    LogicalXor,
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
            LogicalAnd => ("logical_and", "NotImplemented"),
            LogicalOr => ("logical_or", "NotImplemented"),
            LogicalXor => ("logical_xor", "NotImplemented"),
        };
        BinaryDef { name, node }
    }

    /// Ops whose result is bool whatever they compute in (comparisons and the logical ops).
    pub fn is_comparison(self) -> bool {
        use BinaryOp::*;
        matches!(self, Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor)
    }

    /// Checks torch makes before anything else (sub refuses any bool operand).
    pub fn pre_check(self, a: &Arg, b: &Arg) -> Result<()> {
        if self == BinaryOp::Sub {
            let (ba, bb) = (a.promotion_dtype() == DType::Bool, b.promotion_dtype() == DType::Bool);
            if ba && bb {
                bail!(Runtime, "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or `logical_xor()` operator instead.");
            }
            if ba || bb {
                bail!(Runtime, "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
            }
        }
        Ok(())
    }

    /// (dtype the kernel computes in, dtype of the result) for promoted operand type `common`.
    pub fn dtypes(self, common: DType) -> (DType, DType) {
        use BinaryOp::*;
        match self {
            Div if !common.is_floating() => (DType::Float32, DType::Float32),
            Eq | Ne | Lt | Le | Gt | Ge | LogicalAnd | LogicalOr | LogicalXor => (common, DType::Bool),
            _ => (common, common),
        }
    }

    /// torch's "not implemented for <dtype>" kernels, raised once shapes and casts are known.
    pub fn kernel_check(self, compute: DType, b: &Arg) -> Result<()> {
        use BinaryOp::*;
        let kernel = match (self, compute) {
            (BitAnd | BitOr | BitXor, d) if d.is_floating() => format!("{}_cpu", self.def().name),
            (DivFloor, DType::Bool) => "div_floor_cpu".into(),
            (DivTrunc, DType::Bool) => "div_trunc_cpu".into(),
            (Remainder, DType::Bool) => "remainder_cpu".into(),
            // `b ** True` / `b ** False` are a copy / a fill of ones in torch.
            (Pow, DType::Bool) if matches!(b, Arg::Tensor(_)) => "pow".into(),
            _ => return Ok(()),
        };
        bail!(NotImplemented, "\"{}\" not implemented for '{}'", kernel, compute.scalar_type_name())
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
            BinaryOp::LogicalAnd => { let $f = |a: $T, b: $T| a.to_bool() && b.to_bool(); $body }
            BinaryOp::LogicalOr => { let $f = |a: $T, b: $T| a.to_bool() || b.to_bool(); $body }
            BinaryOp::LogicalXor => { let $f = |a: $T, b: $T| a.to_bool() != b.to_bool(); $body }
            _ => unreachable!(),
        }
    }};
}

/// Integer division/remainder by zero raises, as torch does.
/// (Only when the op computes anything: an empty result divides nothing.)
fn check_int_zero_division(op: BinaryOp, compute: DType, b: &Tensor, out_numel: usize) -> Result<()> {
    if out_numel == 0 || !compute.is_integral(false) || !matches!(op, BinaryOp::DivFloor | BinaryOp::DivTrunc | BinaryOp::Remainder) {
        return Ok(());
    }
    let has_zero = crate::dispatch!(compute, T => b.to_vec::<T>()?.iter().any(|v| v.to_i64() == 0));
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
fn run(op: BinaryOp, dst: &Tensor, a: &Tensor, b: &Tensor, mode: Mode, alpha: Option<f64>) {
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
                // In f64 the f32 product is exact and the sum rounds once more: torch's single
                // rounding except in (vanishingly rare) double-rounding ties, and it vectorises,
                // where `f32::mul_add` without compiled-in FMA is a libm call per element (15x).
                let al = alpha as f32 as f64;
                let f = move |x: f32, y: f32| (y as f64 * al + x as f64) as f32;
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
    }
}

/// The result of an elementwise op over `args` (cast to `compute`), laid out as torch's
/// TensorIterator lays it out. `where`'s condition (`cond`) takes part but is never cast.
fn output_like(op: Option<BinaryOp>, shape: &[usize], cond: Option<&Tensor>, args: &[&Arg], compute: DType, dtype: DType) -> crate::error::Result<Tensor> {
    if let (Some(BinaryOp::Pow), [a, b]) = (op, args) {
        match (a, b) {
            // pow(number, tensor) allocates a plain contiguous result of the exponent's shape;
            // pow(tensor, number) is a unary op over the (cast) base.
            (Arg::Scalar(_), Arg::Tensor(_)) => return Tensor::empty(shape, dtype),
            (Arg::Tensor(t), Arg::Scalar(_)) => {
                return empty_with_layout(&iterator_layout(shape, &[&cast_layout(t, compute)]), dtype)
            }
            _ => {}
        }
    }
    let scalar = Layout::contiguous(&[]);
    let mut layouts: Vec<Layout> = cond.map(|c| c.layout.clone()).into_iter().collect();
    layouts.extend(args.iter().map(|a| match a {
        Arg::Tensor(t) => cast_layout(t, compute),
        Arg::Scalar(_) => scalar.clone(),
    }));
    let refs: Vec<&Layout> = layouts.iter().collect();
    empty_with_layout(&iterator_layout(shape, &refs), dtype)
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

/// The alpha of a float add/sub that is not 1: the kernel fuses it (`fused_alpha`).
fn fused_alpha(op: BinaryOp, alpha: Option<Scalar>, compute: DType) -> Option<f64> {
    let alpha = alpha?.to_f64();
    (matches!(op, BinaryOp::Add | BinaryOp::Sub) && compute.is_floating() && alpha != 1.0).then_some(alpha)
}

/// Folds an integer `alpha` into b (`a + alpha * b`, wrapping as torch's integer kernels),
/// leaving b unchanged when alpha is absent or 1; float alphas are fused by the kernel instead.
fn apply_alpha(op: BinaryOp, b: Arg, alpha: Option<Scalar>, compute: DType) -> Result<Arg> {
    let Some(alpha) = alpha else { return Ok(b) };
    if !matches!(op, BinaryOp::Add | BinaryOp::Sub) || alpha.to_f64() == 1.0 || compute.is_floating() {
        return Ok(b);
    }
    Ok(match b {
        Arg::Scalar(s) => Arg::Scalar(match (s, alpha) {
            (Scalar::Int(x), Scalar::Int(y)) => Scalar::Int(x.wrapping_mul(y)),
            (x, y) => Scalar::Float(x.to_f64() * y.to_f64()),
        }),
        Arg::Tensor(t) => Arg::Tensor(binary_raw(BinaryOp::Mul, &Arg::Tensor(cast_input(&t, compute)?), &Arg::Scalar(alpha), None)?),
    })
}

/// Out-of-place `op(a, b)`, broadcasting, with torch's promotion.
pub fn binary_raw(op: BinaryOp, a: &Arg, b: &Arg, alpha: Option<Scalar>) -> Result<Tensor> {
    op.pre_check(a, b)?;
    check_int_pow(op, a, b)?;
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    let common = result_type(&[a.promotion(), b.promotion()]);
    let (compute, out_dtype) = op.dtypes(common);
    check_alpha(alpha, common)?;
    op.kernel_check(compute, b)?;
    let out = output_like(Some(op), &shape, None, &[a, b], compute, out_dtype)?;
    let b = apply_alpha(op, b.clone(), alpha, compute)?;
    let fused = fused_alpha(op, alpha, compute);
    let (ta, tb) = (a.as_tensor(compute)?, b.as_tensor(compute)?);
    check_int_zero_division(op, compute, &tb, out.numel())?;
    run(op, &out, &ta, &tb, Mode::Fresh, fused);
    Ok(out)
}

/// torch refuses an integral base with a negative integral Python-number exponent (a tensor
/// exponent instead gives 0, or ±1 for a base of ±1).
fn check_int_pow(op: BinaryOp, a: &Arg, b: &Arg) -> Result<()> {
    if let (BinaryOp::Pow, Arg::Scalar(s)) = (op, b) {
        if a.promotion_dtype().is_integral(true) && !s.is_floating() && s.to_i64() < 0 {
            return Err(Error::Runtime("Integers to negative integer powers are not allowed.".into()));
        }
    }
    Ok(())
}

/// In-place `a.op_(b)`: the broadcast result must keep a's shape (R44) and its type must be
/// castable to a's dtype (R45). Returns nothing; the caller returns `a` itself.
pub fn binary_inplace_raw(op: BinaryOp, a: &Tensor, b: &Arg, alpha: Option<Scalar>) -> Result<()> {
    let aa = Arg::Tensor(a.clone());
    op.pre_check(&aa, b)?;
    check_int_pow(op, &aa, b)?;
    // torch's order: overlap, broadcast, result shape (R44), cast (R45), then the kernel.
    check_no_internal_overlap(a)?;
    if let Arg::Tensor(bt) = b {
        check_no_partial_overlap(a, bt)?;
    }
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    check_inplace_shape(a.shape(), &shape)?;
    let common = result_type(&[aa.promotion(), b.promotion()]);
    let (compute, out_dtype) = op.dtypes(common);
    check_castable(out_dtype, a.dtype())?;
    check_alpha(alpha, common)?;
    op.kernel_check(compute, b)?;
    let b = apply_alpha(op, b.clone(), alpha, compute)?;
    let fused = fused_alpha(op, alpha, compute);
    let tb = b.as_tensor(compute)?;
    check_int_zero_division(op, compute, &tb, a.numel())?;
    write(a, &[&tb], |reads| {
        let (b_read, alias) = &reads[0];
        if compute == a.dtype() && out_dtype == a.dtype() {
            let mode = if *alias == Alias::Same { Mode::InPlaceSelf } else { Mode::InPlace };
            run(op, a, a, b_read, mode, fused);
        } else {
            // Mixed dtypes: compute into a temporary of the result type, then cast into a.
            let ta = crate::ops::copy::cast_input(a, compute)?;
            let tmp = Tensor::empty(a.shape(), out_dtype)?;
            run(op, &tmp, &ta, b_read, Mode::Fresh, fused);
            copy_kernel(a, &tmp);
        }
        Ok(())
    })
}

/// `torch.where(cond, a, b)`.
pub fn where_raw(cond: &Tensor, a: &Arg, b: &Arg) -> Result<Tensor> {
    if cond.dtype() != DType::Bool {
        return Err(Error::Runtime(format!(
            "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
            cond.dtype().scalar_type_name()
        )));
    }
    let shape = broadcast_all(&[cond.shape(), a.shape(), b.shape()])?;
    let dtype = result_type(&[a.promotion(), b.promotion()]);
    let out = output_like(None, &shape, Some(cond), &[a, b], dtype, dtype)?;
    let (ta, tb) = (a.as_tensor(dtype)?, b.as_tensor(dtype)?);
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

/// torch's clamp: NaN in the input or a bound gives NaN; otherwise the value is raised to `lo`,
/// then lowered to `hi` (so `lo > hi` gives `hi`). `x != x` is false for integers and bools.
#[allow(clippy::eq_op)]
fn clamp3<T: Element>(x: T, lo: Option<T>, hi: Option<T>) -> T {
    if x != x {
        return x;
    }
    let mut v = x;
    if let Some(lo) = lo {
        if lo != lo {
            return lo;
        }
        if v < lo {
            v = lo;
        }
    }
    if let Some(hi) = hi {
        if hi != hi {
            return hi;
        }
        if v > hi {
            v = hi;
        }
    }
    v
}

/// `clamp`/`clamp_min`/`clamp_max` with Python-number bounds (torch's `clamp.Scalar`, where a 0-d
/// tensor bound also counts as a number): computed in `x`'s dtype promoted by the bounds (floats
/// stay), laid out as a unary op. In place, the promoted type must be `x`'s own.
pub fn clamp_scalar_raw(x: &Tensor, min: Option<Scalar>, max: Option<Scalar>, in_place: bool) -> Result<Tensor> {
    if min.is_none() && max.is_none() {
        bail!(Runtime, "torch.clamp: At least one of 'min' or 'max' must not be None");
    }
    let dtype = if x.dtype().is_floating() {
        x.dtype()
    } else {
        let mut ops = vec![Arg::Tensor(x.clone()).promotion()];
        ops.extend([min, max].into_iter().flatten().map(|s| Arg::Scalar(s).promotion()));
        result_type(&ops)
    };
    if in_place && dtype != x.dtype() {
        bail!(Runtime, "result type {} can't be cast to the desired output type {}", dtype.scalar_type_name(), x.dtype().type_meta_name());
    }
    if in_place {
        check_no_internal_overlap(x)?;
    }
    if dtype == DType::Bool {
        let kernel = match (min, max) {
            (Some(_), Some(_)) => "clamp_scalar_cpu",
            (Some(_), None) => "clamp_min_scalar_cpu",
            _ => "clamp_max_scalar_cpu",
        };
        bail!(NotImplemented, "\"{}\" not implemented for 'Bool'", kernel);
    }
    // Both bounds given and either is NaN: torch fills the result with NaN.
    let nan_fill = matches!((min, max), (Some(a), Some(b)) if a.to_f64().is_nan() || b.to_f64().is_nan());
    let body = |dst: &Tensor, src: &Tensor, inplace: bool| {
        crate::dispatch!(dtype, T => {
            let (lo, hi) = (min.map(T::from_scalar), max.map(T::from_scalar));
            let nan = T::from_f64(f64::NAN);
            let f = move |v: T| if nan_fill { nan } else { clamp3(v, lo, hi) };
            // SAFETY: dst is fresh, or is src itself with no zero-stride aliasing (checked above).
            unsafe {
                if inplace { map_inplace::<T>(dst.shape(), K::of(dst), f) } else { map::<T, T>(dst.shape(), K::of(dst), K::of(src), f) }
            }
        })
    };
    if in_place {
        write(x, &[x], |_| {
            body(x, x, true);
            Ok(())
        })?;
        return Ok(x.clone());
    }
    let out = empty_with_layout(&iterator_layout(x.shape(), &[&cast_layout(x, dtype)]), dtype)?;
    body(&out, &cast_input(x, dtype)?, false);
    Ok(out)
}

/// `clamp`/`clamp_min`/`clamp_max` with tensor bounds (torch's `clamp.Tensor`): an elementwise op
/// over `x` and the bounds with full type promotion and broadcasting.
pub fn clamp_tensor_raw(x: &Tensor, min: Option<&Tensor>, max: Option<&Tensor>, in_place: bool) -> Result<Tensor> {
    if min.is_none() && max.is_none() {
        bail!(Runtime, "torch.clamp: At least one of 'min' or 'max' must not be None");
    }
    let bounds: Vec<&Tensor> = [min, max].into_iter().flatten().collect();
    if in_place {
        check_no_internal_overlap(x)?;
        for b in &bounds {
            check_no_partial_overlap(x, b)?;
        }
    }
    let mut shapes = vec![x.shape()];
    shapes.extend(bounds.iter().map(|b| b.shape()));
    let shape = broadcast_all(&shapes)?;
    let mut ops = vec![Arg::Tensor(x.clone()).promotion()];
    ops.extend(bounds.iter().map(|b| Arg::Tensor((*b).clone()).promotion()));
    let dtype = result_type(&ops);
    if in_place {
        check_inplace_shape(x.shape(), &shape)?;
        check_castable(dtype, x.dtype())?;
    }
    // (one tensor bound is maximum/minimum in torch, which bools support; two are not)
    if dtype == DType::Bool && bounds.len() == 2 {
        bail!(NotImplemented, "\"clamp_cpu\" not implemented for 'Bool'");
    }
    let out = if in_place {
        Tensor::empty(&shape, dtype)?
    } else {
        let mut layouts = vec![cast_layout(x, dtype)];
        layouts.extend(bounds.iter().map(|b| cast_layout(b, dtype)));
        let refs: Vec<&Layout> = layouts.iter().collect();
        empty_with_layout(&iterator_layout(&shape, &refs), dtype)?
    };
    let tx = cast_input(x, dtype)?;
    let sx = broadcast_strides(&tx, &shape);
    let cast: Vec<Tensor> = bounds.iter().map(|b| cast_input(b, dtype)).collect::<Result<_>>()?;
    let strides: Vec<Vec<isize>> = cast.iter().map(|b| broadcast_strides(b, &shape)).collect();
    crate::dispatch!(dtype, T => {
        // SAFETY: out is fresh; every input is only read.
        unsafe {
            match (min.is_some(), max.is_some()) {
                (true, true) => zip3::<T, T, T, T>(&shape, K::of(&out), K::broadcast(&tx, &sx), K::broadcast(&cast[0], &strides[0]),
                    K::broadcast(&cast[1], &strides[1]), |v, lo, hi| clamp3(v, Some(lo), Some(hi))),
                (true, false) => zip::<T, T, T>(&shape, K::of(&out), K::broadcast(&tx, &sx), K::broadcast(&cast[0], &strides[0]),
                    |v, lo| clamp3(v, Some(lo), None)),
                _ => zip::<T, T, T>(&shape, K::of(&out), K::broadcast(&tx, &sx), K::broadcast(&cast[0], &strides[0]),
                    |v, hi| clamp3(v, None, Some(hi))),
            }
        }
    });
    if in_place {
        write(x, &[&out], |reads| {
            copy_kernel(x, &reads[0].0);
            Ok(())
        })?;
        return Ok(x.clone());
    }
    Ok(out)
}

/// `masked_fill(mask, value)`; in place writes through the write path.
pub fn masked_fill_raw(x: &Tensor, mask: &Tensor, value: &Arg, in_place: bool) -> Result<Tensor> {
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
    if mask.dtype() != DType::Bool {
        bail!(Runtime, "masked_fill_ only supports boolean masks, but got mask with dtype {}", mask.dtype().type_meta_name());
    }
    let target = if in_place {
        check_no_partial_overlap(x, mask)?;
        let shape = broadcast_shapes(x.shape(), mask.shape())?;
        check_inplace_shape(x.shape(), &shape)?;
        x.clone()
    } else {
        let shape = broadcast_shapes(x.shape(), mask.shape())?;
        let out = Tensor::empty(&shape, x.dtype())?;
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
        // torch fills an expanded tensor too (deprecated, with a warning); the kernel's plan
        // writes self-overlapping destinations serially.
        if target.layout.has_internal_overlap() {
            crate::autograd::mode::push_warning("Use of masked_fill_ on expanded tensors is deprecated. Please clone() the tensor before performing this operation. This also applies to advanced indexing e.g. tensor[mask] = scalar".into());
        }
        crate::ops::write::write_overlapping(&target, &[mask], |reads| {
            body(&target, &reads[0].0);
            Ok(())
        })?;
    } else {
        body(&target, mask);
    }
    Ok(target)
}

// ----- autograd: saves and backward formulas (derivatives.yaml), out of place and in place -----

/// Which operands are Python numbers decides torch's node (`1 - x` is RsubBackward1,
/// `x ** 2` PowBackward0, `2 ** x` PowBackward2).
fn node_name(op: BinaryOp, a_number: bool, b_number: bool) -> &'static str {
    use BinaryOp::*;
    match op {
        Sub if a_number => "RsubBackward1",
        Pow if b_number => "PowBackward0",
        Pow if a_number => "PowBackward2",
        Pow => "PowBackward1",
        Remainder if b_number => "RemainderBackward0",
        Remainder => "RemainderBackward1",
        DivFloor | DivTrunc => "DivBackward2",
        _ => op.def().node,
    }
}

fn is_differentiable(op: BinaryOp) -> bool {
    use BinaryOp::*;
    matches!(op, Add | Sub | Mul | Div | DivFloor | DivTrunc | Remainder | Pow | Maximum | Minimum)
}

/// The number operand as the 0-d tensor torch saves for it (`mul(t, 2)` saves `tensor(2)`).
/// A Python number as torch saves it for backward: a 0-d double (or int64 / bool) tensor, so
/// a float64 gradient sees the number at full precision; 0-d, it never widens a float32 one.
fn wrapped(a: &Arg) -> crate::error::Result<Tensor> {
    match a {
        Arg::Tensor(t) => Ok(t.clone()),
        Arg::Scalar(s @ Scalar::Float(_)) => Tensor::scalar(*s, DType::Float64),
        Arg::Scalar(s) => Tensor::scalar(*s, s.wrapped_dtype()),
    }
}

/// What a binary node keeps besides its saved tensors.
#[derive(Clone)]
struct BinaryInfo {
    op: BinaryOp,
    alpha: f64,
    a_shape: Vec<usize>,
    b_shape: Vec<usize>,
    a_number: bool,
    b_number: bool,
}

/// Saves what `op`'s formula needs for the gradients that are wanted (R11, R13). `a_old` is
/// `self` as the formula must see it (a clone of the old value for in-place ops, R14).
fn save_binary(rec: &mut crate::autograd::Recorder, info: &BinaryInfo, a_old: &Tensor, b: &Tensor) -> Result<()> {
    use BinaryOp::*;
    let (na, nb) = (rec.needs(0), rec.needs(1));
    match info.op {
        Mul => {
            if na {
                rec.save("other", b)?;
            }
            if nb {
                rec.save("self", a_old)?;
            }
        }
        Div => {
            // used by both inputs' formulas, so torch's codegen saves it unconditionally (even
            // when no input needs a gradient, e.g. a view made under no_grad)
            rec.save("other", b)?;
            if nb {
                rec.save("self", a_old)?;
            }
        }
        Pow if info.b_number => rec.save("self", a_old)?,
        Pow if info.a_number => rec.save("exponent", b)?,
        Pow => {
            rec.save("self", a_old)?;
            rec.save("exponent", b)?;
        }
        Maximum | Minimum | DivFloor | DivTrunc => {
            rec.save("self", a_old)?;
            rec.save("other", b)?;
        }
        Remainder if !info.b_number => {
            rec.save("self", a_old)?;
            rec.save("other", b)?;
        }
        _ => {}
    }
    Ok(())
}

/// Pow's result is saved too when the exponent is a tensor (PowBackward1/2).
fn saves_result(info: &BinaryInfo) -> bool {
    info.op == BinaryOp::Pow && !info.b_number
}

/// Named access to the saved tensors in `save_binary`'s order.
fn binary_backward(info: &BinaryInfo, ctx: &crate::autograd::node::Ctx) -> Result<Vec<Option<Tensor>>> {
    use crate::autograd::formulas::*;
    use BinaryOp::*;
    let g = ctx.grad();
    let (na, nb) = (ctx.needs(0), ctx.needs(1));
    let mut saved = ctx.saved.iter();
    let mut next = || saved.next().cloned().expect("saved by the forward");
    let (ga, gb): (Option<Tensor>, Option<Tensor>) = match info.op {
        Add => (na.then(|| g.clone()), if nb { Some(mul_s(g, info.alpha)).transpose()? } else { None }),
        Sub => (na.then(|| g.clone()), if nb { Some(mul_s(g, -info.alpha)).transpose()? } else { None }),
        Mul => {
            let other = if na { Some(next()) } else { None };
            let this = if nb { Some(next()) } else { None };
            (other.map(|o| mul(g, &o)).transpose()?, this.map(|s| mul(g, &s)).transpose()?)
        }
        Div => {
            let other = next();
            let ga = if na { Some(div(g, &other)?) } else { None };
            let gb = if nb {
                let a = next();
                // torch's div_tensor_other_backward, in its order (float32 rounding follows it)
                Some(mul(&neg(g)?, &div(&div(&a, &other)?, &other)?)?)
            } else {
                None
            };
            (ga, gb)
        }
        Pow if info.b_number => {
            let a = next();
            let e = info.alpha; // the exponent travels in `alpha` for tensor ** number
            let ga = if e == 0.0 { zeros_like(&a)? } else { mul(g, &mul_s(&pow_s(&a, e - 1.0)?, e)?)? };
            (Some(ga), None)
        }
        Pow if info.a_number => {
            let e = next();
            let result = next();
            let base = info.alpha;
            let gb = if base == 0.0 {
                // torch: the gradient is 0 where the exponent is >= 0
                zero_where(&mul_s(&mul(g, &result)?, f64::NEG_INFINITY)?, &cmp_s(Ge, &e, 0.0)?)?
            } else {
                mul_s(&mul(g, &result)?, base.ln())?
            };
            (None, Some(gb))
        }
        Pow => {
            let a = next();
            let e = next();
            let result = next();
            let ga = if na {
                let d = mul(&e, &pow_tensor(&a, &sub_one(&e)?)?)?;
                Some(zero_where(&mul(g, &d)?, &cmp_s(Eq, &e, 0.0)?)?)
            } else {
                None
            };
            let gb = if nb {
                let d = mul(&mul(g, &result)?, &un(crate::ops::unary::UnaryOp::Log, &a)?)?;
                let zero_base = cmp(LogicalAnd, &cmp_s(Eq, &a, 0.0)?, &Arg::Tensor(cmp_s(Ge, &e, 0.0)?))?;
                Some(zero_where(&d, &zero_base)?)
            } else {
                None
            };
            (ga, gb)
        }
        Maximum | Minimum => {
            let (a, b) = (next(), next());
            let (lose_a, lose_b) = if info.op == Maximum { (Lt, Gt) } else { (Gt, Lt) };
            let eq = cmp(Eq, &a, &Arg::Tensor(b.clone()))?;
            let half = where_t(&eq, &mul_s(g, 0.5)?, g)?;
            let ga = if na { Some(zero_where(&half, &cmp(lose_a, &a, &Arg::Tensor(b.clone()))?)?) } else { None };
            let gb = if nb { Some(zero_where(&half, &cmp(lose_b, &a, &Arg::Tensor(b.clone()))?)?) } else { None };
            (ga, gb)
        }
        DivFloor | DivTrunc => (na.then(|| zeros_like(g)).transpose()?, nb.then(|| zeros_like(g)).transpose()?),
        Remainder => {
            let gb = if nb && !info.b_number {
                let (a, b) = (next(), next());
                Some(neg(&mul(g, &binary_raw(DivFloor, &Arg::Tensor(a), &Arg::Tensor(b), None)?)?)?)
            } else {
                None
            };
            (na.then(|| g.clone()), gb)
        }
        _ => (None, None),
    };
    let ga = ga.map(|t| sum_to(&t, &info.a_shape)).transpose()?;
    let gb = gb.map(|t| sum_to(&t, &info.b_shape)).transpose()?;
    Ok(vec![ga, gb])
}

fn pow_tensor(a: &Tensor, e: &Tensor) -> Result<Tensor> {
    binary(BinaryOp::Pow, &Arg::Tensor(a.clone()), &Arg::Tensor(e.clone()), None)
}
fn sub_one(e: &Tensor) -> Result<Tensor> {
    crate::autograd::formulas::add_s(e, -1.0)
}

fn info_of(op: BinaryOp, a: &Arg, b: &Arg, alpha: Option<Scalar>) -> BinaryInfo {
    // For number ** tensor and tensor ** number the number rides in `alpha`.
    let alpha = match (op, a, b) {
        (BinaryOp::Pow, _, Arg::Scalar(s)) | (BinaryOp::Pow, Arg::Scalar(s), _) => s.to_f64(),
        _ => alpha.map(|s| s.to_f64()).unwrap_or(1.0),
    };
    BinaryInfo {
        op,
        alpha,
        a_shape: a.shape().to_vec(),
        b_shape: b.shape().to_vec(),
        a_number: matches!(a, Arg::Scalar(_)),
        b_number: matches!(b, Arg::Scalar(_)),
    }
}

/// Differentiable `op(a, b)`. A number divided by a tensor is torch's `reciprocal() * number`.
pub fn binary(op: BinaryOp, a: &Arg, b: &Arg, alpha: Option<Scalar>) -> Result<Tensor> {
    crate::autograd::record::precheck(&[a.tensor(), b.tensor()])?;
    if let (BinaryOp::Div, Arg::Scalar(s), Arg::Tensor(bt)) = (op, a, b) {
        if bt.requires_grad() && crate::autograd::mode::is_grad_enabled() && bt.dtype().is_floating() {
            let r = crate::ops::unary::unary(crate::ops::unary::UnaryOp::Reciprocal, bt)?;
            return binary(BinaryOp::Mul, &Arg::Tensor(r), &Arg::Scalar(*s), None);
        }
    }
    let out = binary_raw(op, a, b, alpha)?;
    if !is_differentiable(op) {
        return Ok(out);
    }
    let Some(mut rec) = crate::autograd::Recorder::new(&[a.tensor(), b.tensor()])? else { return Ok(out) };
    let info = info_of(op, a, b, alpha);
    save_binary(&mut rec, &info, &wrapped(a)?, &wrapped(b)?)?;
    if saves_result(&info) {
        rec.save_output("result", &out, 0);
    }
    let name = node_name(op, info.a_number, info.b_number);
    rec.finish(name, &[&out], Box::new(move |ctx| binary_backward(&info, ctx)))?;
    Ok(out)
}

/// Differentiable `a.op_(b)`.
pub fn binary_(op: BinaryOp, a: &Tensor, b: &Arg, alpha: Option<Scalar>) -> Result<()> {
    let _blame = crate::autograd::blame::op(inplace_name(op));
    let rec = crate::autograd::Recorder::inplace(a, &[b.tensor()])?;
    let rec = rec.filter(|_| is_differentiable(op));
    let aa = Arg::Tensor(a.clone());
    let info = info_of(op, &aa, b, alpha);
    let mut rec = match rec {
        Some(mut rec) => {
            // `self` as the formula needs it is the value *before* the write (R14).
            let needs_self = matches!(op, BinaryOp::Mul if rec.needs(1)) || matches!(op, BinaryOp::Div if rec.needs(1))
                || matches!(op, BinaryOp::Pow | BinaryOp::Maximum | BinaryOp::Minimum | BinaryOp::DivFloor | BinaryOp::DivTrunc)
                || (op == BinaryOp::Remainder && !info.b_number);
            // torch saves `self.clone()`, a recorded op (an integer self that came to require
            // grad fails right here, as in torch)
            let old = if needs_self { crate::ops::copy::clone(a)? } else { a.clone() };
            save_binary(&mut rec, &info, &old, &wrapped(b)?)?;
            Some(rec)
        }
        None => None,
    };
    binary_inplace_raw(op, a, b, alpha)?;
    if let Some(mut rec) = rec.take() {
        if saves_result(&info) {
            rec.save_output("result", a, 0);
        }
        let name = node_name(op, false, info.b_number);
        rec.finish_inplace(name, a, Box::new(move |ctx| binary_backward(&info, ctx)))?;
    }
    Ok(())
}

fn inplace_name(op: BinaryOp) -> &'static str {
    use BinaryOp::*;
    match op {
        Add => "add_", Sub => "sub_", Mul => "mul_", Div | DivFloor | DivTrunc => "div_", Remainder => "remainder_", Pow => "pow_",
        Maximum => "maximum_", Minimum => "minimum_", _ => "an in-place operation",
    }
}

/// Differentiable `where(cond, a, b)`: WhereBackward0 saves only the condition.
pub fn where_(cond: &Tensor, a: &Arg, b: &Arg) -> Result<Tensor> {
    crate::autograd::record::precheck(&[a.tensor(), b.tensor()])?;
    let out = where_raw(cond, a, b)?;
    let Some(mut rec) = crate::autograd::Recorder::new(&[None, a.tensor(), b.tensor()])? else { return Ok(out) };
    rec.save("condition", cond)?;
    let (sa, sb) = (a.shape().to_vec(), b.shape().to_vec());
    rec.finish("WhereBackward0", &[&out], Box::new(move |ctx| {
        use crate::autograd::formulas::*;
        let (g, c) = (ctx.grad(), ctx.saved(0));
        let ga = if ctx.needs(1) { Some(sum_to(&zero_where(g, &crate::ops::unary::unary_raw(crate::ops::unary::UnaryOp::LogicalNot, c)?)?, &sa)?) } else { None };
        let gb = if ctx.needs(2) { Some(sum_to(&zero_where(g, c)?, &sb)?) } else { None };
        Ok(vec![None, ga, gb])
    }))?;
    Ok(out)
}

/// The mask where a clamp passes the gradient to `x`: `lo <= x <= hi` (bounds inclusive, R57).
fn clamp_pass(x: &Tensor, lo: Option<&Arg>, hi: Option<&Arg>) -> Result<Tensor> {
    use crate::autograd::formulas::cmp;
    let mut m: Option<Tensor> = None;
    if let Some(lo) = lo {
        m = Some(cmp(BinaryOp::Ge, x, lo)?);
    }
    if let Some(hi) = hi {
        let le = cmp(BinaryOp::Le, x, hi)?;
        m = Some(match m {
            Some(m) => cmp(BinaryOp::LogicalAnd, &m, &Arg::Tensor(le))?,
            None => le,
        });
    }
    Ok(m.expect("clamp has a bound"))
}

fn not(m: &Tensor) -> Result<Tensor> {
    crate::ops::unary::unary_raw(crate::ops::unary::UnaryOp::LogicalNot, m)
}

/// Differentiable clamp with number bounds; `node` is torch's name for the API used
/// (`ClampBackward1`, `ClampMinBackward0`, `ClampMaxBackward0`).
pub fn clamp_scalar(x: &Tensor, min: Option<Scalar>, max: Option<Scalar>, in_place: bool, node: &'static str) -> Result<Tensor> {
    if !in_place {
        crate::autograd::record::precheck(&[Some(x)])?;
    }
    let formula = move |ctx: &crate::autograd::node::Ctx| -> Result<Vec<Option<Tensor>>> {
        let lo = min.map(Arg::Scalar);
        let hi = max.map(Arg::Scalar);
        let pass = clamp_pass(ctx.saved(0), lo.as_ref(), hi.as_ref())?;
        Ok(vec![Some(crate::autograd::formulas::zero_where(ctx.grad(), &not(&pass)?)?)])
    };
    if !in_place {
        let out = clamp_scalar_raw(x, min, max, false)?;
        if let Some(mut rec) = crate::autograd::Recorder::new(&[Some(x)])? {
            rec.save("self", x)?;
            rec.finish(node, &[&out], Box::new(formula))?;
        }
        return Ok(out);
    }
    let _blame = crate::autograd::blame::op("clamp_");
    let rec = crate::autograd::Recorder::inplace(x, &[])?;
    let old = rec.as_ref().map(|_| crate::ops::copy::clone(x)).transpose()?;
    clamp_scalar_raw(x, min, max, true)?;
    if let (Some(mut rec), Some(old)) = (rec, old) {
        rec.save("self", &old)?;
        rec.finish_inplace(node, x, Box::new(formula))?;
    }
    Ok(x.clone())
}

/// Differentiable clamp with tensor bounds (ClampBackward0 / ClampMinBackward1 / ClampMaxBackward1).
pub fn clamp_tensor(x: &Tensor, min: Option<&Tensor>, max: Option<&Tensor>, in_place: bool, node: &'static str) -> Result<Tensor> {
    if !in_place {
        crate::autograd::record::precheck(&[Some(x), min, max])?;
    }
    let (smin, smax) = (min.map(|t| t.shape().to_vec()), max.map(|t| t.shape().to_vec()));
    let (has_min, has_max) = (min.is_some(), max.is_some());
    let x_shape = x.shape().to_vec();
    let formula = move |ctx: &crate::autograd::node::Ctx| -> Result<Vec<Option<Tensor>>> {
        use crate::autograd::formulas::*;
        let g = ctx.grad();
        let xs = ctx.saved(0);
        let lo = has_min.then(|| Arg::Tensor(ctx.saved(1).clone()));
        let hi = has_max.then(|| Arg::Tensor(ctx.saved(if has_min { 2 } else { 1 }).clone()));
        let pass = clamp_pass(xs, lo.as_ref(), hi.as_ref())?;
        let gx = if ctx.needs(0) { Some(sum_to(&zero_where(g, &not(&pass)?)?, &x_shape)?) } else { None };
        let mut out = vec![gx];
        if let Some(lo) = &lo {
            let mut m = cmp(BinaryOp::Lt, xs, lo)?;
            if let Some(hi) = &hi {
                let Arg::Tensor(lo_t) = lo else { unreachable!() };
                m = cmp(BinaryOp::LogicalAnd, &m, &Arg::Tensor(cmp(BinaryOp::Lt, lo_t, hi)?))?;
            }
            out.push(if ctx.needs(1) { Some(sum_to(&zero_where(g, &not(&m)?)?, smin.as_ref().expect("min given"))?) } else { None });
        }
        if let Some(hi) = &hi {
            let mut m = cmp(BinaryOp::Gt, xs, hi)?;
            if let Some(lo) = &lo {
                let Arg::Tensor(hi_t) = hi else { unreachable!() };
                m = cmp(BinaryOp::LogicalOr, &m, &Arg::Tensor(cmp(BinaryOp::Lt, hi_t, lo)?))?;
            }
            let i = out.len();
            out.push(if ctx.needs(i) { Some(sum_to(&zero_where(g, &not(&m)?)?, smax.as_ref().expect("max given"))?) } else { None });
        }
        Ok(out)
    };
    let operands: Vec<Option<&Tensor>> = [min, max].into_iter().flatten().map(Some).collect();
    if !in_place {
        let out = clamp_tensor_raw(x, min, max, false)?;
        let mut all = vec![Some(x)];
        all.extend(operands.iter().copied());
        if let Some(mut rec) = crate::autograd::Recorder::new(&all)? {
            rec.save("self", x)?;
            for (name, t) in [("min", min), ("max", max)] {
                if let Some(t) = t {
                    rec.save(name, t)?;
                }
            }
            rec.finish(node, &[&out], Box::new(formula))?;
        }
        return Ok(out);
    }
    let _blame = crate::autograd::blame::op("clamp_");
    let rec = crate::autograd::Recorder::inplace(x, &operands)?;
    let old = rec.as_ref().map(|_| crate::ops::copy::clone(x)).transpose()?;
    let mut rec = rec;
    if let (Some(r), Some(old)) = (rec.as_mut(), old.as_ref()) {
        r.save("self", old)?;
        for (name, t) in [("min", min), ("max", max)] {
            if let Some(t) = t {
                r.save(name, t)?;
            }
        }
    }
    clamp_tensor_raw(x, min, max, true)?;
    if let Some(rec) = rec {
        rec.finish_inplace(node, x, Box::new(formula))?;
    }
    Ok(x.clone())
}

/// Differentiable `clamp(min, max)` with tensor or number bounds (either may be absent, not
/// both): tensor bounds take `clamp_tensor`, numbers (and 0-d tensors mixed with numbers)
/// `clamp_scalar`.
pub fn clamp(x: &Tensor, min: Option<&Arg>, max: Option<&Arg>, in_place: bool) -> Result<Tensor> {
    let number = |a: &Arg| matches!(a, Arg::Scalar(_));
    if min.is_some_and(number) || max.is_some_and(number) {
        let scalar = |a: Option<&Arg>| -> Result<Option<Scalar>> {
            match a {
                None => Ok(None),
                Some(Arg::Scalar(s)) => Ok(Some(*s)),
                Some(Arg::Tensor(t)) => t.item().map(Some),
            }
        };
        return clamp_scalar(x, scalar(min)?, scalar(max)?, in_place, "ClampBackward1");
    }
    let tensor = |a: Option<&Arg>| match a {
        Some(Arg::Tensor(t)) => Some(t.clone()),
        _ => None,
    };
    clamp_tensor(x, tensor(min).as_ref(), tensor(max).as_ref(), in_place, "ClampBackward0")
}

/// Differentiable `masked_fill(mask, value)`: MaskedFillBackward0 for a number (saves the mask),
/// MaskedFillBackward1 for a 0-d tensor value (which also gets a gradient).
pub fn masked_fill(x: &Tensor, mask: &Tensor, value: &Arg, in_place: bool) -> Result<Tensor> {
    if !in_place {
        crate::autograd::record::precheck(&[Some(x), value.tensor()])?;
    }
    let value_t = value.tensor();
    let node = if value_t.is_some() { "MaskedFillBackward1" } else { "MaskedFillBackward0" };
    let x_shape = x.shape().to_vec();
    let formula = move |ctx: &crate::autograd::node::Ctx| -> Result<Vec<Option<Tensor>>> {
        use crate::autograd::formulas::*;
        let (g, m) = (ctx.grad(), ctx.saved(0));
        let gx = if ctx.needs(0) { Some(sum_to(&zero_where(g, m)?, &x_shape)?) } else { None };
        let mut out = vec![gx, None];
        if ctx.needs.len() > 2 {
            out.push(if ctx.needs(2) { Some(crate::ops::reduce::sum(&zero_where(g, &not(m)?)?, None, false, None)?) } else { None });
        }
        Ok(out)
    };
    let inputs = [Some(x), None, value_t];
    let inputs: &[Option<&Tensor>] = if value_t.is_some() { &inputs } else { &inputs[..2] };
    if !in_place {
        let out = masked_fill_raw(x, mask, value, false)?;
        if let Some(mut rec) = crate::autograd::Recorder::new(inputs)? {
            rec.save("mask", mask)?;
            rec.finish(node, &[&out], Box::new(formula))?;
        }
        return Ok(out);
    }
    let _blame = crate::autograd::blame::op("masked_fill_");
    let rec = crate::autograd::Recorder::inplace(x, &inputs[1..])?;
    masked_fill_raw(x, mask, value, true)?;
    if let Some(mut rec) = rec {
        rec.save("mask", mask)?;
        rec.finish_inplace(node, x, Box::new(formula))?;
    }
    Ok(x.clone())
}
