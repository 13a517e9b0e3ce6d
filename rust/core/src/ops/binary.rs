//! Binary elementwise ops (arithmetic, comparisons, bitwise), `where`, `clamp`, `masked_fill`,
//! and their in-place variants, with torch's type promotion and broadcasting.

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

/// The result of an elementwise op over `args` (cast to `compute`), laid out as torch's
/// TensorIterator lays it out. `where`'s condition (`cond`) takes part but is never cast.
fn output_like(op: Option<BinaryOp>, shape: &[usize], cond: Option<&Tensor>, args: &[&Arg], compute: DType, dtype: DType) -> Tensor {
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
    op.pre_check(a, b)?;
    check_int_pow(op, a, b)?;
    let shape = broadcast_shapes(a.shape(), b.shape())?;
    let common = result_type(&[a.promotion(), b.promotion()]);
    let (compute, out_dtype) = op.dtypes(common);
    check_alpha(alpha, common)?;
    op.kernel_check(compute, b)?;
    let out = output_like(Some(op), &shape, None, &[a, b], compute, out_dtype);
    let b = apply_alpha(op, b.clone(), alpha)?;
    let (ta, tb) = (a.as_tensor(compute), b.as_tensor(compute));
    check_int_zero_division(op, compute, &tb, out.numel())?;
    run(op, &out, &ta, &tb, Mode::Fresh);
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
pub fn binary_(op: BinaryOp, a: &Tensor, b: &Arg, alpha: Option<Scalar>) -> Result<()> {
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
    let b = apply_alpha(op, b.clone(), alpha)?;
    let tb = b.as_tensor(compute);
    check_int_zero_division(op, compute, &tb, a.numel())?;
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
    let out = output_like(None, &shape, Some(cond), &[a, b], dtype, dtype);
    let (ta, tb) = (a.as_tensor(dtype), b.as_tensor(dtype));
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
pub fn clamp_scalar(x: &Tensor, min: Option<Scalar>, max: Option<Scalar>, in_place: bool) -> Result<Tensor> {
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
    let out = empty_with_layout(&iterator_layout(x.shape(), &[&cast_layout(x, dtype)]), dtype);
    body(&out, &cast_input(x, dtype), false);
    Ok(out)
}

/// `clamp`/`clamp_min`/`clamp_max` with tensor bounds (torch's `clamp.Tensor`): an elementwise op
/// over `x` and the bounds with full type promotion and broadcasting.
pub fn clamp_tensor(x: &Tensor, min: Option<&Tensor>, max: Option<&Tensor>, in_place: bool) -> Result<Tensor> {
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
        Tensor::empty(&shape, dtype)
    } else {
        let mut layouts = vec![cast_layout(x, dtype)];
        layouts.extend(bounds.iter().map(|b| cast_layout(b, dtype)));
        let refs: Vec<&Layout> = layouts.iter().collect();
        empty_with_layout(&iterator_layout(&shape, &refs), dtype)
    };
    let tx = cast_input(x, dtype);
    let sx = broadcast_strides(&tx, &shape);
    let cast: Vec<Tensor> = bounds.iter().map(|b| cast_input(b, dtype)).collect();
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

/// `clamp(min, max)` with tensor or number bounds (either may be absent, not both): tensor
/// bounds take `clamp_tensor`, numbers (and 0-d tensors mixed with numbers) `clamp_scalar`.
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
        return clamp_scalar(x, scalar(min)?, scalar(max)?, in_place);
    }
    let tensor = |a: Option<&Arg>| match a {
        Some(Arg::Tensor(t)) => Some(t.clone()),
        _ => None,
    };
    clamp_tensor(x, tensor(min).as_ref(), tensor(max).as_ref(), in_place)
}

/// `masked_fill(mask, value)`; in place writes through the write path.
pub fn masked_fill(x: &Tensor, mask: &Tensor, value: &Arg, in_place: bool) -> Result<Tensor> {
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
