//! `smooth_l1_loss` (SmoothL1LossBackward0) and `huber_loss` (HuberLossBackward0): quadratic
//! near zero, linear beyond a threshold. With d = input - target and z = |d|:
//! smooth_l1 = z < beta ? z^2 / (2 beta) : z - beta / 2 (beta = 0: torch computes l1_loss);
//! huber = z < delta ? z^2 / 2 : delta (z - delta / 2) = beta · smooth_l1 with beta = delta.
//! Their gradients in the input are d clamped to [-1, 1] after dividing by beta (smooth_l1) and
//! d clamped to [-delta, delta] (huber), times the incoming gradient (over the count for a
//! mean); in the target, the same of `target - input`, as torch's formulas swap the two.

use super::mse_l1::{as_number, broadcast_pair};
use super::{reduce_values, spread, Reduction};
use crate::autograd::Recorder;
use crate::dtype::Scalar;
use crate::error::{Error, Result};
use crate::ops::binary::{self, BinaryOp};
use crate::ops::formulas as fm;
use crate::ops::norm::f64s;
use crate::ops::Arg;
use crate::tensor::Tensor;

/// Which of the two losses, with its threshold.
#[derive(Debug, Clone, Copy)]
pub enum Robust {
    SmoothL1 { beta: f64 },
    Huber { delta: f64 },
}

impl Robust {
    /// One element's loss for a difference `d`, in f64 (NaN stays NaN: `z < t` is false).
    fn loss(self, d: f64) -> f64 {
        let z = d.abs();
        match self {
            Robust::SmoothL1 { beta } if z < beta => 0.5 * z * z / beta,
            Robust::SmoothL1 { beta } => z - 0.5 * beta,
            Robust::Huber { delta } if z < delta => 0.5 * z * z,
            Robust::Huber { delta } => delta * (z - 0.5 * delta),
        }
    }

    /// d loss / d(first operand) for the difference `d = a - b`, times `g` spread over the
    /// elements: a clamp, so NaN differences give NaN gradients as torch's kernel does.
    fn gradient(self, a: &Tensor, b: &Tensor, g: &Tensor, r: Reduction) -> Result<Tensor> {
        // torch's huber_loss_backward kernel takes no other dtype than `a`'s (the gradient's)
        if matches!(self, Robust::Huber { .. }) && b.dtype() != a.dtype() {
            return Err(Error::Runtime(format!("Found dtype {} but expected {}", b.dtype().scalar_type_name(), a.dtype().scalar_type_name())));
        }
        let d = fm::sub(&as_number(a, b)?, &as_number(b, a)?)?;
        let (slope, bound) = match self {
            Robust::SmoothL1 { beta } => (fm::div_c(&d, beta)?, 1.0),
            Robust::Huber { delta } => (d, delta),
        };
        let clamped = binary::clamp_scalar(&slope, Some(Scalar::Float(-bound)), Some(Scalar::Float(bound)), false, "ClampBackward1")?;
        fm::mul(&clamped, &spread(g, r, a.numel())?)
    }
}

/// Differentiable `smooth_l1_loss` / `huber_loss` over input `x` and target `t` (broadcast
/// against each other); saves self and target, the threshold and the reduction.
pub fn robust_loss(kind: Robust, x: &Tensor, t: &Tensor, r: Reduction) -> Result<Tensor> {
    match kind {
        Robust::SmoothL1 { beta } if beta < 0.0 => return Err(Error::Runtime("smooth_l1_loss does not support negative values for beta.".into())),
        Robust::SmoothL1 { beta } if beta == 0.0 => return super::l1_loss(x, t, r),
        Robust::Huber { delta } if delta <= 0.0 => return Err(Error::Runtime("huber_loss does not support non-positive values for delta.".into())),
        _ => {}
    }
    crate::autograd::precheck(&[Some(x), Some(t)])?;
    let (x, t) = broadcast_pair(x, t)?;
    super::mse_l1::check_floating(&x, &t, if matches!(kind, Robust::Huber { .. }) { "huber" } else { "smooth_l1" })?;
    let d = binary::binary_raw(BinaryOp::Sub, &Arg::Tensor(as_number(&x, &t)?), &Arg::Tensor(as_number(&t, &x)?), None)?;
    // huber's loss has the input's dtype (torch writes it into `empty_like(input)`), which must
    // hold the common dtype; smooth_l1's has the common dtype
    let dt = match kind {
        Robust::Huber { .. } if !x.dtype().is_floating() => {
            return Err(Error::Runtime(format!(
                "result type {} can't be cast to the desired output type {}",
                d.dtype().scalar_type_name(),
                x.dtype().scalar_type_name()
            )))
        }
        Robust::Huber { .. } => x.dtype(),
        Robust::SmoothL1 { .. } => d.dtype(),
    };
    let losses: Vec<f64> = f64s(&d)?.iter().map(|&v| kind.loss(v)).collect();
    let out = reduce_values(losses, d.shape(), r, dt, d.device())?;
    let Some(mut rec) = Recorder::new(&[Some(&x), Some(&t)])? else { return Ok(out) };
    let number = |v: f64| crate::ops::reduce::py_number(Scalar::Float(v));
    let name = match kind {
        Robust::SmoothL1 { beta } => {
            rec.value("beta", number(beta));
            "SmoothL1LossBackward0"
        }
        Robust::Huber { delta } => {
            rec.value("delta", number(delta));
            "HuberLossBackward0"
        }
    };
    rec.value("reduction", r as i64);
    rec.save("self", &x)?;
    rec.save("target", &t)?;
    rec.finish(name, &[&out], Box::new(move |ctx| {
        let (g, x, t) = (ctx.grad(), ctx.saved(0), ctx.saved(1));
        let gi = if ctx.needs(0) { Some(kind.gradient(x, t, g, r)?) } else { None };
        let gt = if ctx.needs(1) { Some(kind.gradient(t, x, g, r)?) } else { None };
        Ok(vec![gi, gt])
    }))?;
    Ok(out)
}
