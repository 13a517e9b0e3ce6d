//! `mse_loss` (MseLossBackward0) and `l1_loss` (composed, as torch does); both broadcast
//! input and target against each other first.

use crate::ops::formulas as fm;
use crate::autograd::Recorder;
use crate::error::Result;
use crate::ops::binary::{self, BinaryOp};
use crate::ops::norm::f64s;
use crate::ops::reduce;
use crate::ops::unary::UnaryOp;
use crate::ops::Arg;
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;
use super::{expand_to, reduce_values, spread, Reduction};

/// Differentiable mean / sum / identity.
fn apply_reduction(t: &Tensor, r: Reduction) -> Result<Tensor> {
    match r {
        Reduction::None => Ok(t.clone()),
        Reduction::Mean => reduce::mean(t, None, false, None),
        Reduction::Sum => reduce::sum(t, None, false, None),
    }
}

/// F.mse_loss / F.l1_loss (and smooth_l1 / huber) broadcast input and target against each
/// other first.
pub(super) fn broadcast_pair(x: &Tensor, t: &Tensor) -> Result<(Tensor, Tensor)> {
    let shape = broadcast_shapes(x.shape(), t.shape())?;
    Ok((expand_to(x, &shape)?, expand_to(t, &shape)?))
}

/// torch's kernels of the pointwise losses run on the inputs' common dtype, which must be
/// floating: `"mse_cpu" not implemented for 'Long'` (not an integer loss computed anyway).
pub(super) fn check_floating(x: &Tensor, t: &Tensor, kernel: &str) -> Result<()> {
    let common = minigrad_base::dtype::promote_types(x.dtype(), t.dtype());
    if common.is_floating() {
        return Ok(());
    }
    let device = if x.device().is_cpu() { "cpu" } else { "cuda" };
    Err(crate::error::Error::NotImplemented(format!("\"{kernel}_{device}\" not implemented for '{}'", common.scalar_type_name())))
}

/// `t` as the pointwise-loss kernels read it next to `other`: a bool operand is 0/1 in the
/// pair's common dtype (torch's kernels promote; its `-` operator refuses bools, which is why
/// l1_loss, composed of `-`, does refuse them). A bool never requires grad: a plain cast.
pub(super) fn as_number(t: &Tensor, other: &Tensor) -> Result<Tensor> {
    if t.dtype() != minigrad_base::dtype::DType::Bool || other.dtype() == t.dtype() {
        return Ok(t.clone());
    }
    crate::ops::copy::to_dtype_raw(t, minigrad_base::dtype::promote_types(t.dtype(), other.dtype()))
}

/// Differentiable `mse_loss` (MseLossBackward0: saves self and target).
pub fn mse_loss(x: &Tensor, t: &Tensor, r: Reduction) -> Result<Tensor> {
    let (x, t) = broadcast_pair(x, t)?;
    check_floating(&x, &t, "mse")?;
    let d = binary::binary_raw(BinaryOp::Sub, &Arg::Tensor(as_number(&x, &t)?), &Arg::Tensor(as_number(&t, &x)?), None)?;
    let dt = d.dtype();
    let sq: Vec<f64> = f64s(&d)?.iter().map(|v| v * v).collect();
    let out = reduce_values(sq, d.shape(), r, dt, d.device())?;
    let Some(mut rec) = Recorder::new(&[Some(&x), Some(&t)])? else { return Ok(out) };
    rec.value("reduction", r as i64);
    rec.save("self", &x)?;
    rec.save("target", &t)?;
    rec.finish("MseLossBackward0", &[&out], Box::new(move |ctx| {
        let (g, x, t) = (ctx.grad(), ctx.saved(0), ctx.saved(1));
        // torch: mse_loss_backward(grad, target, self) for the target, not -grad_input (the
        // sign of a zero)
        let gi = if ctx.needs(0) { Some(mse_loss_backward(g, x, t, r)?) } else { None };
        let gt = if ctx.needs(1) { Some(mse_loss_backward(g, t, x, r)?) } else { None };
        Ok(vec![gi, gt])
    }))?;
    Ok(out)
}

/// torch's `mse_loss_backward(grad_output, self, target, reduction)`, `2 (self - target) grad`
/// (over the element count for a mean): MseLossBackward0's formula as one op of its own
/// (`autograd::backward_op`), so a graph of the backward holds `MseLossBackwardBackward0` with
/// derivatives.yaml's formulas.
fn mse_loss_backward(g: &Tensor, a: &Tensor, b: &Tensor, r: Reduction) -> Result<Tensor> {
    let n = a.numel();
    let value = || fm::mul(&fm::mul_s(&fm::sub(&as_number(a, b)?, &as_number(b, a)?)?, 2.0)?, &spread(g, r, n)?);
    crate::autograd::backward_op(&[Some(g), Some(a), Some(b)], value, |mut rec, out| {
        rec.value("reduction", r as i64);
        rec.save("grad_output", g)?;
        rec.save("self", a)?;
        rec.save("target", b)?;
        let reduced = g.shape() != a.shape();
        rec.finish("MseLossBackwardBackward0", &[out], Box::new(move |ctx| {
            let (gg, g, a, b) = (ctx.grad(), ctx.saved(0), ctx.saved(1), ctx.saved(2));
            // grad_output: mse_loss_backward(grad, self, target), summed back to grad_output's
            // shape (torch's engine does that sum: SumBackward0)
            let d_grad = match ctx.needs(0) {
                false => None,
                true => {
                    let v = mse_loss_backward(gg, a, b, r)?;
                    Some(if reduced { reduce::sum(&v, None, false, None)? } else { v })
                }
            };
            // mse_loss_double_backward(grad * grad_output): 2 * that (a C++ Scalar, MulBackward1),
            // divided by the count for a mean (DivBackward1); the target's is its negation
            let double = || {
                let twice = fm::mul_c(&fm::mul(gg, g)?, 2.0)?;
                if r == Reduction::Mean { fm::div_c(&twice, n as f64) } else { Ok(twice) }
            };
            let d_a = if ctx.needs(1) { Some(double()?) } else { None };
            let d_b = if ctx.needs(2) { Some(fm::neg(&double()?)?) } else { None };
            Ok(vec![d_grad, d_a, d_b])
        }))?;
        Ok(())
    })
}

/// `l1_loss`: torch composes it, `(input - target).abs()` then mean or sum.
pub fn l1_loss(x: &Tensor, t: &Tensor, r: Reduction) -> Result<Tensor> {
    let (x, t) = broadcast_pair(x, t)?;
    apply_reduction(&fm::un(UnaryOp::Abs, &fm::sub(&x, &t)?)?, r)
}
