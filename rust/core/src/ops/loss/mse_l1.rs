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

/// F.mse_loss / F.l1_loss broadcast input and target against each other first.
fn broadcast_pair(x: &Tensor, t: &Tensor) -> Result<(Tensor, Tensor)> {
    let shape = broadcast_shapes(x.shape(), t.shape())?;
    Ok((expand_to(x, &shape)?, expand_to(t, &shape)?))
}

/// Differentiable `mse_loss` (MseLossBackward0: saves self and target).
pub fn mse_loss(x: &Tensor, t: &Tensor, r: Reduction) -> Result<Tensor> {
    let (x, t) = broadcast_pair(x, t)?;
    let d = binary::binary_raw(BinaryOp::Sub, &Arg::Tensor(x.clone()), &Arg::Tensor(t.clone()), None)?;
    let dt = d.dtype();
    let sq: Vec<f64> = f64s(&d)?.iter().map(|v| v * v).collect();
    let out = reduce_values(sq, d.shape(), r, dt, d.device())?;
    let Some(mut rec) = Recorder::new(&[Some(&x), Some(&t)])? else { return Ok(out) };
    rec.value("reduction", r as i64);
    rec.save("self", &x)?;
    rec.save("target", &t)?;
    let n = x.numel();
    rec.finish("MseLossBackward0", &[&out], Box::new(move |ctx| {
        let (x, t) = (ctx.saved(0), ctx.saved(1));
        let gi = fm::mul(&fm::mul_s(&fm::sub(x, t)?, 2.0)?, &spread(ctx.grad(), r, n)?)?;
        // torch: mse_loss_backward(grad, target, self), not -grad_input (the sign of a zero)
        let gt = if ctx.needs(1) { Some(fm::mul(&fm::mul_s(&fm::sub(t, x)?, 2.0)?, &spread(ctx.grad(), r, n)?)?) } else { None };
        Ok(vec![ctx.needs(0).then_some(gi), gt])
    }))?;
    Ok(out)
}

/// `l1_loss`: torch composes it, `(input - target).abs()` then mean or sum.
pub fn l1_loss(x: &Tensor, t: &Tensor, r: Reduction) -> Result<Tensor> {
    let (x, t) = broadcast_pair(x, t)?;
    apply_reduction(&fm::un(UnaryOp::Abs, &fm::sub(&x, &t)?)?, r)
}
