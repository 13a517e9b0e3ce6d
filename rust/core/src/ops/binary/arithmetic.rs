//! `binary` / `binary_`: one `BinaryOp` out of place or in place (alpha, integer division by
//! zero, negative integer powers, torch's check order), what its node saves and its backward
//! formula (derivatives.yaml).

use crate::dtype::{check_castable, result_type, DType, Scalar};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::ops::copy::{cast_input, check_no_partial_overlap, copy_kernel};
use crate::ops::write::{check_no_internal_overlap, write, Alias};
use crate::ops::Arg;
use crate::shape::{broadcast_shapes, check_inplace_shape};
use crate::tensor::Tensor;
use super::{output_like, BinaryOp};
use super::compute::Mode;
use super::fast::Operand;
use crate::device::backend_for;

const INT_DIV_ZERO: &str = "ZeroDivisionError";

/// Integer division/remainder by zero raises, as torch does.
/// (Only when the op computes anything: an empty result divides nothing.)
fn check_int_zero_division(op: BinaryOp, compute: DType, b: &Tensor, out_numel: usize) -> Result<()> {
    if out_numel == 0 || !compute.is_integral(false) || !matches!(op, BinaryOp::DivFloor | BinaryOp::DivTrunc | BinaryOp::Remainder | BinaryOp::Fmod) {
        return Ok(());
    }
    let has_zero = crate::dispatch_all!(compute, T => b.to_vec::<T>()?.iter().any(|v| v.to_i64() == 0));
    if has_zero {
        return Err(Error::Runtime(INT_DIV_ZERO.into()));
    }
    Ok(())
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
    let mut alpha = alpha?.to_f64();
    if compute.is_narrow() && compute.is_floating() {
        // torch rounds alpha to the half type before its float32 `a + alpha * b`
        alpha = crate::element::round_through(compute, alpha);
    }
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

/// The tensor an operand enters the kernel as: cast to `compute`, except that torch's CPU mul and
/// div kernels read a CPU scalar (a number or a 0-d CPU tensor) of a float16/bfloat16 op in
/// float32 without rounding it to half first (mul: either side; div: the divisor). The widening
/// backend then computes in float32 as it does for every half op.
fn operand(op: BinaryOp, arg: &Arg, compute: DType, first: bool) -> Result<Tensor> {
    let opmath_scalar = compute.is_narrow()
        && compute.is_floating()
        && match op {
            BinaryOp::Mul => true,
            BinaryOp::Div | BinaryOp::DivFloor | BinaryOp::DivTrunc => !first,
            _ => false,
        }
        && match arg {
            Arg::Scalar(_) => true,
            Arg::Tensor(t) => t.ndim() == 0 && t.device().is_cpu(),
        };
    arg.as_tensor(if opmath_scalar { compute.opmath() } else { compute })
}

/// Out-of-place `op(a, b)`, broadcasting, with torch's promotion.
pub fn binary_raw(op: BinaryOp, a: &Arg, b: &Arg, alpha: Option<Scalar>) -> Result<Tensor> {
    if let Some(out) = super::fast::fast_binary(op, Operand::of(a), Operand::of(b), alpha)? {
        return Ok(out);
    }
    binary_general(op, a, b, alpha)
}

/// `binary_raw` without the fast path (which its caller has tried).
fn binary_general(op: BinaryOp, a: &Arg, b: &Arg, alpha: Option<Scalar>) -> Result<Tensor> {
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
    let (ta, tb) = (operand(op, a, compute, true)?, operand(op, &b, compute, false)?);
    check_int_zero_division(op, compute, &tb, out.numel())?;
    if let (BinaryOp::Pow, Arg::Scalar(e)) = (op, &b) {
        if pow_special(&out, &ta, e.to_f64())? {
            return Ok(out);
        }
    }
    backend_for(&[&out, &ta, &tb])?.binary(op, &out, &ta, &tb, Mode::Fresh, fused)?;
    Ok(out)
}

const POW_SPECIAL: [f64; 6] = [0.5, -0.5, -1.0, 2.0, 3.0, -2.0];

/// torch's `pow(float tensor, number)` sends some exponents to other kernels
/// (pow_tensor_scalar_kernel): 0.5 sqrt, -0.5 rsqrt, -1 reciprocal, 2 `x*x`, 3 `x*x*x`, -2
/// `1/(x*x)`. Their values are those kernels' (`pow(-0.0, 0.5)` is -0.0, `pow(-inf, 0.5)` NaN,
/// and the roundings differ from `pow`'s), and the backward's `pow(x, e - 1)` inherits them.
/// Writes `dst` (fresh, `a`'s shape) and returns true when `e` is one of them.
fn pow_special(dst: &Tensor, a: &Tensor, e: f64) -> Result<bool> {
    use crate::ops::unary::UnaryOp::{Reciprocal, Rsqrt, Sqrt};
    use BinaryOp::Mul;
    if !dst.dtype().is_floating() || !POW_SPECIAL.contains(&e) {
        return Ok(false);
    }
    let be = backend_for(&[dst, a])?;
    match e {
        0.5 => be.unary(Sqrt, dst, a, false)?,
        -0.5 => be.unary(Rsqrt, dst, a, false)?,
        -1.0 => be.unary(Reciprocal, dst, a, false)?,
        2.0 => be.binary(Mul, dst, a, a, Mode::Fresh, None)?,
        3.0 => {
            be.binary(Mul, dst, a, a, Mode::Fresh, None)?;
            be.binary(Mul, dst, dst, a, Mode::InPlace, None)?;
        }
        _ => {
            be.binary(Mul, dst, a, a, Mode::Fresh, None)?;
            be.unary(Reciprocal, dst, dst, true)?;
        }
    }
    Ok(true)
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
    let tb = operand(op, &b, compute, false)?;
    check_int_zero_division(op, compute, &tb, a.numel())?;
    let special = match (op, &b) {
        (BinaryOp::Pow, Arg::Scalar(e)) if compute.is_floating() && POW_SPECIAL.contains(&e.to_f64()) => Some(e.to_f64()),
        _ => None,
    };
    write(a, &[&tb], |reads| {
        let (b_read, alias) = &reads[0];
        if let Some(e) = special {
            // the special exponents (see `pow_special`) through a temporary
            let ta = crate::ops::copy::cast_input(a, compute)?;
            let tmp = Tensor::empty_on(a.shape(), out_dtype, a.device())?;
            if pow_special(&tmp, &ta, e)? {
                copy_kernel(a, &tmp)?;
                return Ok(());
            }
        }
        if compute == a.dtype() && out_dtype == a.dtype() {
            let mode = if *alias == Alias::Same { Mode::InPlaceSelf } else { Mode::InPlace };
            backend_for(&[a, b_read])?.binary(op, a, a, b_read, mode, fused)?;
        } else {
            // Mixed dtypes: compute into a temporary of the result type, then cast into a.
            let ta = crate::ops::copy::cast_input(a, compute)?;
            let tmp = Tensor::empty_on(a.shape(), out_dtype, a.device())?;
            backend_for(&[&tmp, &ta, b_read])?.binary(op, &tmp, &ta, b_read, Mode::Fresh, fused)?;
            copy_kernel(a, &tmp)?;
        }
        Ok(())
    })
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
        Fmod if b_number => "FmodBackward0",
        Copysign if b_number => "CopysignBackward1",
        Xlogy if a_number => "XlogyBackward1",
        Xlogy if b_number => "XlogyBackward2",
        DivFloor | DivTrunc => "DivBackward2",
        _ => op.def().node,
    }
}

fn is_differentiable(op: BinaryOp) -> bool {
    use BinaryOp::*;
    matches!(
        op,
        Add | Sub | Mul | Div | DivFloor | DivTrunc | Remainder | Pow | Maximum | Minimum | Atan2 | Hypot | Fmod | Copysign
            | Xlogy | Logaddexp | Logaddexp2
    )
}

/// The number operand as the 0-d tensor torch saves for it (`mul(t, 2)` saves `tensor(2)`).
/// A Python number as torch saves it for backward: a 0-d double (or int64 / bool) tensor, so
/// a float64 gradient sees the number at full precision; 0-d, it never widens a float32 one.
fn wrapped(a: Operand<'_>) -> crate::error::Result<Tensor> {
    match a {
        Operand::Tensor(t) => Ok(t.clone()),
        Operand::Number(s @ Scalar::Float(_)) => Tensor::scalar(s, DType::Float64),
        Operand::Number(s) => Tensor::scalar(s, s.wrapped_dtype()),
    }
}

/// What a binary node keeps besides its saved tensors.
#[derive(Clone)]
struct BinaryInfo {
    op: BinaryOp,
    alpha: f64,
    /// The operands' shapes for `sum_to`, None where an operand has the result's shape (its
    /// gradient then needs no reduction: `sum_to` would return it as it is).
    a_shape: Option<Vec<usize>>,
    b_shape: Option<Vec<usize>>,
    a_number: bool,
    b_number: bool,
}

/// Saves what `op`'s formula needs for the gradients that are wanted (R11, R13). `a_old` is
/// `self` as the formula must see it (a clone of the old value for in-place ops, R14).
fn save_binary(rec: &mut crate::autograd::Recorder, info: &BinaryInfo, a_old: &Tensor, b: &Tensor) -> Result<()> {
    use BinaryOp::*;
    let (na, nb) = (rec.needs(0), rec.needs(1));
    // a Python number operand is torch's wrapped number: saved, but never packed by hooks
    let save = |rec: &mut crate::autograd::Recorder, name: &'static str, t: &Tensor, number: bool| -> Result<()> {
        if number {
            rec.save_number(name, t);
            Ok(())
        } else {
            rec.save(name, t)
        }
    };
    let (an, bn) = (info.a_number, info.b_number);
    // a save guarded by one input's need (torch's codegen): made, or shown as None
    let save_if = |rec: &mut crate::autograd::Recorder, need: bool, name: &'static str, t: &Tensor, number: bool| -> Result<()> {
        if need {
            save(rec, name, t, number)
        } else {
            rec.not_saved(name);
            Ok(())
        }
    };
    match info.op {
        Mul => {
            save_if(rec, na, "other", b, bn)?;
            save_if(rec, nb, "self", a_old, an)?;
        }
        Div => {
            // used by both inputs' formulas, so torch's codegen saves it unconditionally (even
            // when no input needs a gradient, e.g. a view made under no_grad)
            save(rec, "other", b, bn)?;
            save_if(rec, nb, "self", a_old, an)?;
        }
        Pow if info.b_number => save(rec, "self", a_old, an)?,
        Pow if info.a_number => save(rec, "exponent", b, bn)?,
        Pow => {
            save(rec, "self", a_old, an)?;
            save(rec, "exponent", b, bn)?;
        }
        Maximum | Minimum | DivFloor | DivTrunc => {
            save(rec, "self", a_old, an)?;
            save(rec, "other", b, bn)?;
        }
        Remainder if !info.b_number => {
            save(rec, "self", a_old, an)?;
            save(rec, "other", b, bn)?;
        }
        // used by both inputs' formulas: saved whichever gradients are wanted
        Atan2 | Logaddexp | Logaddexp2 => {
            save(rec, "self", a_old, an)?;
            save(rec, "other", b, bn)?;
        }
        // each operand only by its own formula (torch's codegen guards it by that input)
        Hypot => {
            save_if(rec, na, "self", a_old, an)?;
            save_if(rec, nb, "other", b, bn)?;
        }
        // both only by other's formula, `-grad * self.div(other, rounding_mode="trunc")`
        Fmod if !info.b_number => {
            save_if(rec, nb, "self", a_old, an)?;
            save_if(rec, nb, "other", b, bn)?;
        }
        Copysign => save_if(rec, na, "self", a_old, an)?,
        // xlogy's Scalar overloads keep the number as a number (`_saved_self` is 2, not a tensor)
        Xlogy if info.a_number => {
            rec.value("self", crate::ops::reduce::py_number(a_old.item()?));
            save(rec, "other", b, bn)?;
        }
        Xlogy if info.b_number => {
            save(rec, "self", a_old, an)?;
            rec.value("other", crate::ops::reduce::py_number(b.item()?));
        }
        Xlogy => {
            save(rec, "self", a_old, an)?;
            save(rec, "other", b, bn)?;
        }
        _ => {}
    }
    Ok(())
}

/// Pow's result is saved too when the exponent is a tensor (PowBackward1/2); hypot's and
/// copysign's always.
fn saves_result(info: &BinaryInfo) -> bool {
    (info.op == BinaryOp::Pow && !info.b_number) || matches!(info.op, BinaryOp::Hypot | BinaryOp::Copysign)
}

/// torch's `maybe_multiply(t, alpha)`: `t` itself when alpha is 1.
fn times_alpha(t: Tensor, alpha: f64) -> Result<Tensor> {
    if alpha == 1.0 {
        Ok(t)
    } else {
        crate::ops::formulas::mul_c(&t, alpha)
    }
}

/// Named access to the saved tensors in `save_binary`'s order.
fn binary_backward(info: &BinaryInfo, ctx: &crate::autograd::Ctx) -> Result<Vec<Option<Tensor>>> {
    use crate::ops::formulas::*;
    use BinaryOp::*;
    let g = ctx.grad();
    let (na, nb) = (ctx.needs(0), ctx.needs(1));
    let mut saved = ctx.saved.iter();
    let mut next = || saved.next().cloned().expect("saved by the forward");
    let (ga, gb): (Option<Tensor>, Option<Tensor>) = match info.op {
        // torch: other gets maybe_multiply(grad, alpha) (-grad for sub): grad itself when
        // alpha is 1, else grad * alpha with a C++ Scalar (MulBackward1 in a recorded graph)
        Add => (na.then(|| g.clone()), if nb { Some(times_alpha(g.clone(), info.alpha)).transpose()? } else { None }),
        Sub => (na.then(|| g.clone()), if nb { Some(times_alpha(neg(g)?, info.alpha)).transpose()? } else { None }),
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
            let ga = if e == 0.0 { zeros_like(&a)? } else { mul(g, &mul_c(&pow_s(&a, e - 1.0)?, e)?)? };
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
                // torch: grad * (result * log(base)), a C++ Scalar product
                mul(g, &mul_c(&result, base.ln())?)?
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
        Atan2 => {
            // torch's atan2_backward: `recip = (self * self + other * other).reciprocal()`
            let (a, b) = (next(), next());
            let recip = un(crate::ops::unary::UnaryOp::Reciprocal, &add(&mul(&a, &a)?, &mul(&b, &b)?)?)?;
            let ga = if na { Some(mul(&mul(g, &b)?, &recip)?) } else { None };
            let gb = if nb { Some(mul(&mul(g, &neg(&a)?)?, &recip)?) } else { None };
            (ga, gb)
        }
        Hypot => {
            // grad * self / result, grad * other / result
            let a = if na { Some(next()) } else { None };
            let b = if nb { Some(next()) } else { None };
            let result = next();
            let ga = a.map(|a| div(&mul(g, &a)?, &result)).transpose()?;
            let gb = b.map(|b| div(&mul(g, &b)?, &result)).transpose()?;
            (ga, gb)
        }
        Fmod => {
            let gb = if nb && !info.b_number {
                let (a, b) = (next(), next());
                Some(mul(&neg(g)?, &binary_raw(DivTrunc, &Arg::Tensor(a), &Arg::Tensor(b), None)?)?)
            } else {
                None
            };
            (na.then(|| g.clone()), gb)
        }
        Copysign => {
            // copysign_tensor_self_backward: grad * (result / self), 0 where self is 0; other's
            // gradient is zeros
            let ga = if na {
                let a = next();
                let result = next();
                let ratio = zero_where(&div(&result, &a)?, &cmp_s(Eq, &a, 0.0)?)?;
                Some(mul(g, &ratio)?)
            } else {
                None
            };
            (ga, (nb && !info.b_number).then(|| zeros_like(g)).transpose()?)
        }
        Xlogy => xlogy_backward(info, g, na, nb, &mut next)?,
        Logaddexp | Logaddexp2 => {
            // grad / (1 + exp(other - self)) and grad / (1 + exp(self - other)); base 2 for logaddexp2
            let (a, b) = (next(), next());
            let share = |x: &Tensor, y: &Tensor| -> Result<Tensor> {
                let d = sub(x, y)?;
                let e = if info.op == Logaddexp { un(crate::ops::unary::UnaryOp::Exp, &d)? } else { pow_base(2.0, &d)? };
                div(g, &add_s(&e, 1.0)?)
            };
            (if na { Some(share(&b, &a)?) } else { None }, if nb { Some(share(&a, &b)?) } else { None })
        }
        _ => (None, None),
    };
    let reduce = |t: Tensor, shape: &Option<Vec<usize>>| match shape {
        Some(s) => sum_to(&t, s),
        None => Ok(t),
    };
    let ga = ga.map(|t| reduce(t, &info.a_shape)).transpose()?;
    let gb = gb.map(|t| reduce(t, &info.b_shape)).transpose()?;
    Ok(vec![ga, gb])
}

/// xlogy's three overloads (derivatives.yaml): self gets `xlogy(grad, other)`, zeroed where
/// self is 0 and other <= 0 (with a number other: zeroed where self is 0 when other <= 0);
/// other gets `grad * self / other`. The number of a Scalar overload rides in `alpha`.
fn xlogy_backward(info: &BinaryInfo, g: &Tensor, na: bool, nb: bool, next: &mut dyn FnMut() -> Tensor) -> Result<(Option<Tensor>, Option<Tensor>)> {
    use crate::ops::formulas::*;
    use BinaryOp::*;
    let xlogy = |x: &Tensor, y: &Arg| binary(Xlogy, &Arg::Tensor(x.clone()), y, None);
    if info.a_number {
        let b = next();
        return Ok((None, Some(div(&mul_c(g, info.alpha)?, &b)?)));
    }
    if info.b_number {
        let a = next();
        let y = Arg::Scalar(Scalar::Float(info.alpha));
        let ga = xlogy(g, &y)?;
        let ga = if info.alpha > 0.0 { ga } else { zero_where(&ga, &cmp_s(Eq, &a, 0.0)?)? };
        return Ok((Some(ga), None));
    }
    let (a, b) = (next(), next());
    let ga = if na {
        let undefined = cmp(LogicalAnd, &cmp_s(Eq, &a, 0.0)?, &Arg::Tensor(cmp_s(Le, &b, 0.0)?))?;
        Some(zero_where(&xlogy(g, &Arg::Tensor(b.clone()))?, &undefined)?)
    } else {
        None
    };
    let gb = if nb { Some(div(&mul(g, &a)?, &b)?) } else { None };
    Ok((ga, gb))
}

/// `base ** x` for a tensor exponent (recorded: PowBackward2 in a double-backward graph).
fn pow_base(base: f64, x: &Tensor) -> Result<Tensor> {
    binary(BinaryOp::Pow, &Arg::Scalar(Scalar::Float(base)), &Arg::Tensor(x.clone()), None)
}

fn pow_tensor(a: &Tensor, e: &Tensor) -> Result<Tensor> {
    binary(BinaryOp::Pow, &Arg::Tensor(a.clone()), &Arg::Tensor(e.clone()), None)
}
fn sub_one(e: &Tensor) -> Result<Tensor> {
    crate::ops::formulas::add_s(e, -1.0)
}

fn info_of(op: BinaryOp, a: Operand<'_>, b: Operand<'_>, alpha: Option<Scalar>, out_shape: &[usize]) -> BinaryInfo {
    let shape_of = |x: Operand<'_>| (x.shape() != out_shape).then(|| x.shape().to_vec());
    // For number ** tensor and tensor ** number (and xlogy's numbers) the number rides in `alpha`.
    let alpha = match (op, a, b) {
        (BinaryOp::Pow | BinaryOp::Xlogy, _, Operand::Number(s)) | (BinaryOp::Pow | BinaryOp::Xlogy, Operand::Number(s), _) => s.to_f64(),
        _ => alpha.map(|s| s.to_f64()).unwrap_or(1.0),
    };
    BinaryInfo {
        op,
        alpha,
        a_shape: shape_of(a),
        b_shape: shape_of(b),
        a_number: matches!(a, Operand::Number(_)),
        b_number: matches!(b, Operand::Number(_)),
    }
}

/// `binary(op, a, b)` when autograd records nothing and the small-call fast path
/// (`fast::fast_binary`) takes it; None otherwise, and the caller runs `binary`. (With nothing
/// to record, `binary`'s precheck has nothing to check: it looks only at inputs that require grad.)
pub fn binary_unrecorded(op: BinaryOp, a: Operand<'_>, b: Operand<'_>, alpha: Option<Scalar>) -> Result<Option<Tensor>> {
    if crate::autograd::should_record(&[a.tensor(), b.tensor()]) {
        return Ok(None);
    }
    super::fast::fast_binary(op, a, b, alpha)
}

/// Differentiable `op(a, b)`. A number divided by a tensor is torch's `reciprocal() * number`.
pub fn binary(op: BinaryOp, a: &Arg, b: &Arg, alpha: Option<Scalar>) -> Result<Tensor> {
    binary_with(op, Operand::of(a), Operand::of(b), Some((a, b)), alpha)
}

/// `binary` on borrowed operands (the bindings' calls on the Python objects' own tensors): a
/// call the fast path takes, recorded or not, clones no operand's handle; any other clones
/// them once for the general path.
pub fn binary_operands(op: BinaryOp, a: Operand<'_>, b: Operand<'_>, alpha: Option<Scalar>) -> Result<Tensor> {
    binary_with(op, a, b, None, alpha)
}

/// `binary`, with the owned arguments when the caller has them (`args`).
fn binary_with(op: BinaryOp, a: Operand<'_>, b: Operand<'_>, args: Option<(&Arg, &Arg)>, alpha: Option<Scalar>) -> Result<Tensor> {
    // Comparisons and bitwise ops record nothing, so torch never reads their inputs' grad_fn:
    // `out == 1` works on a multi-output view whose base was modified (issue 14 A).
    if is_differentiable(op) {
        crate::autograd::precheck(&[a.tensor(), b.tensor()])?;
    }
    if let (BinaryOp::Div, Operand::Number(s), Operand::Tensor(bt)) = (op, a, b) {
        if bt.requires_grad() && crate::autograd::mode::is_grad_enabled() && bt.dtype().is_floating() {
            let r = crate::ops::unary::unary(crate::ops::unary::UnaryOp::Reciprocal, bt)?;
            return binary(BinaryOp::Mul, &Arg::Tensor(r), &Arg::Scalar(s), None);
        }
    }
    let out = match super::fast::fast_binary(op, a, b, alpha)? {
        Some(out) => out,
        None => match args {
            Some((x, y)) => binary_general(op, x, y, alpha)?,
            None => binary_general(op, &a.to_arg(), &b.to_arg(), alpha)?,
        },
    };
    if !is_differentiable(op) {
        return Ok(out);
    }
    let Some(mut rec) = crate::autograd::Recorder::new(&[a.tensor(), b.tensor()])? else { return Ok(out) };
    let info = info_of(op, a, b, alpha, out.shape());
    if !matches!(op, BinaryOp::Add | BinaryOp::Sub) {
        // (add and sub save nothing: no copies of the operands' handles to make)
        save_binary(&mut rec, &info, &wrapped(a)?, &wrapped(b)?)?;
    }
    if saves_result(&info) {
        rec.save_output("result", &out, 0);
    }
    let name = node_name(op, info.a_number, info.b_number);
    rec.finish(name, &[&out], formula_of(info))?;
    Ok(out)
}

/// The formula closure. Two same-shape tensors with alpha 1 (the common call) read only the
/// op, so the closure points at a `static` info and is zero-sized: boxing it allocates nothing
/// (issue 13, per-op overhead).
fn formula_of(info: BinaryInfo) -> crate::autograd::Formula {
    const fn plain(op: BinaryOp) -> BinaryInfo {
        BinaryInfo { op, alpha: 1.0, a_shape: None, b_shape: None, a_number: false, b_number: false }
    }
    static ADD: BinaryInfo = plain(BinaryOp::Add);
    static SUB: BinaryInfo = plain(BinaryOp::Sub);
    static MUL: BinaryInfo = plain(BinaryOp::Mul);
    static DIV: BinaryInfo = plain(BinaryOp::Div);
    let is_plain = info.alpha == 1.0 && info.a_shape.is_none() && info.b_shape.is_none() && !info.a_number && !info.b_number;
    match info.op {
        BinaryOp::Add if is_plain => Box::new(|ctx| binary_backward(&ADD, ctx)),
        BinaryOp::Sub if is_plain => Box::new(|ctx| binary_backward(&SUB, ctx)),
        BinaryOp::Mul if is_plain => Box::new(|ctx| binary_backward(&MUL, ctx)),
        BinaryOp::Div if is_plain => Box::new(|ctx| binary_backward(&DIV, ctx)),
        _ => Box::new(move |ctx| binary_backward(&info, ctx)),
    }
}

/// Differentiable `a.op_(b)`.
pub fn binary_(op: BinaryOp, a: &Tensor, b: &Arg, alpha: Option<Scalar>) -> Result<()> {
    binary_inplace_with(op, a, Operand::of(b), Some(b), alpha)
}

/// `binary_` on a borrowed operand (the bindings' calls): a call the fast path takes clones
/// nothing and allocates nothing.
pub fn binary_operand_(op: BinaryOp, a: &Tensor, b: Operand<'_>, alpha: Option<Scalar>) -> Result<()> {
    binary_inplace_with(op, a, b, None, alpha)
}

/// `binary_`, with the owned argument when the caller has it (`arg`).
fn binary_inplace_with(op: BinaryOp, a: &Tensor, bo: Operand<'_>, arg: Option<&Arg>, alpha: Option<Scalar>) -> Result<()> {
    let _blame = crate::autograd::blame::op(inplace_name(op));
    let rec = crate::autograd::Recorder::inplace(a, &[bo.tensor()])?;
    let rec = rec.filter(|_| is_differentiable(op));
    // Nothing to record: the in-place rules are checked; the fast path writes if it can.
    if rec.is_none() && super::fast::fast_binary_(op, a, bo, alpha) {
        return Ok(());
    }
    let owned;
    let b = match arg {
        Some(b) => b,
        None => {
            owned = bo.to_arg();
            &owned
        }
    };
    let info = info_of(op, Operand::Tensor(a), bo, alpha, a.shape());
    let mut rec = match rec {
        Some(mut rec) => {
            // `self` as the formula needs it is the value *before* the write (R14).
            let needs_self = matches!(op, BinaryOp::Mul if rec.needs(1)) || matches!(op, BinaryOp::Div if rec.needs(1))
                || matches!(op, BinaryOp::Pow | BinaryOp::Maximum | BinaryOp::Minimum | BinaryOp::DivFloor | BinaryOp::DivTrunc)
                || (op == BinaryOp::Remainder && !info.b_number)
                || matches!(op, BinaryOp::Atan2 | BinaryOp::Xlogy | BinaryOp::Logaddexp | BinaryOp::Logaddexp2)
                || (matches!(op, BinaryOp::Hypot | BinaryOp::Copysign) && rec.needs(0))
                || (op == BinaryOp::Fmod && !info.b_number && rec.needs(1));
            // torch saves `self.clone()`, a recorded op (an integer self that came to require
            // grad fails right here, as in torch)
            let old = if needs_self { crate::ops::copy::clone(a)? } else { a.clone() };
            save_binary(&mut rec, &info, &old, &wrapped(bo)?)?;
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
        rec.finish_inplace(name, a, formula_of(info))?;
    }
    Ok(())
}

fn inplace_name(op: BinaryOp) -> &'static str {
    use BinaryOp::*;
    match op {
        Add => "add_", Sub => "sub_", Mul => "mul_", Div | DivFloor | DivTrunc => "div_", Remainder => "remainder_", Pow => "pow_",
        Maximum => "maximum_", Minimum => "minimum_", Atan2 => "atan2_", Hypot => "hypot_", Fmod => "fmod_",
        Copysign => "copysign_", Xlogy => "xlogy_", _ => "an in-place operation",
    }
}
