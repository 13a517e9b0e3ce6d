//! `binary_cross_entropy` (BinaryCrossEntropyBackward0) and
//! `binary_cross_entropy_with_logits` (BinaryCrossEntropyWithLogitsBackward0), with torch's
//! checks on target and weight.

use crate::ops::formulas as fm;
use crate::autograd::Recorder;
use crate::error::{fmt_shape, Error, Result};
use crate::ops::binary::{self, BinaryOp};
use crate::ops::norm::f64s;
use crate::ops::unary::UnaryOp;
use crate::ops::{views, Arg};
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;
use super::{expand_to, num, reduce_values, spread, torch_size, Reduction};

/// Python's `F.binary_cross_entropy` / `_with_logits` argument checks on target and weight.
fn check_float_target(x: &Tensor, target: &Tensor) -> Result<()> {
    if target.dtype() != x.dtype() {
        return Err(Error::Runtime(format!("Found dtype {} but expected {}", target.dtype().scalar_type_name(), x.dtype().scalar_type_name())));
    }
    Ok(())
}

/// A weight broadcast to `shape` as F.binary_cross_entropy expands it (torch's message when
/// it cannot be).
fn expand_weight(w: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let n = shape.len().max(w.ndim());
    for k in 1..=n {
        let ws = if k <= w.ndim() { w.shape()[w.ndim() - k] } else { 1 };
        let ts = if k <= shape.len() { shape[shape.len() - k] } else { 1 };
        if ws != ts && ws != 1 {
            return Err(Error::Runtime(format!(
                "Attempting to broadcast a dimension of length {} at -{}! Mismatching argument at index 1 had {}; but expected shape should be broadcastable to {}",
                ws,
                k,
                torch_size(w.shape()),
                fmt_shape(shape)
            )));
        }
    }
    expand_to(w, shape)
}

/// Differentiable `binary_cross_entropy` (BinaryCrossEntropyBackward0: saves self, target,
/// weight). Each log is clamped at -100 as torch does.
pub fn binary_cross_entropy(x: &Tensor, target: &Tensor, weight: Option<&Tensor>, r: Reduction) -> Result<Tensor> {
    if target.shape() != x.shape() {
        return Err(Error::Value(format!(
            "Using a target size ({}) that is different to the input size ({}) is deprecated. Please ensure they have the same size.",
            torch_size(target.shape()),
            torch_size(x.shape())
        )));
    }
    let weight = weight.map(|w| expand_weight(w, target.shape())).transpose()?;
    check_float_target(x, target)?;
    let xs = f64s(x)?;
    let ts = f64s(target)?;
    if xs.iter().any(|v| !(0.0..=1.0).contains(v)) {
        return Err(Error::Runtime("all elements of input should be between 0 and 1".into()));
    }
    if ts.iter().any(|v| !(0.0..=1.0).contains(v)) {
        return Err(Error::Runtime("all elements of target should be between 0 and 1".into()));
    }
    let ws = weight.as_ref().map(f64s).transpose()?;
    let losses: Vec<f64> = xs
        .iter()
        .zip(&ts)
        .enumerate()
        .map(|(i, (&p, &t))| {
            let l = (t - 1.0) * (1.0 - p).ln().max(-100.0) - t * p.ln().max(-100.0);
            l * ws.as_ref().map_or(1.0, |w| w[i])
        })
        .collect();
    let out = reduce_values(losses, x.shape(), r, x.dtype(), x.device())?;
    let Some(mut rec) = Recorder::new(&[Some(x), Some(target)])? else { return Ok(out) };
    rec.value("reduction", r as i64);
    rec.save("self", x)?;
    rec.save("target", target)?;
    if let Some(w) = &weight {
        rec.save("weight", w)?;
    }
    let has_w = weight.is_some();
    let n = x.numel();
    rec.finish("BinaryCrossEntropyBackward0", &[&out], Box::new(move |ctx| {
        let (x, t) = (ctx.saved(0), ctx.saved(1));
        let mut g = spread(ctx.grad(), r, n)?;
        if has_w {
            g = fm::mul(&g, ctx.saved(2))?;
        }
        let gi = if ctx.needs(0) {
            // (x - t) / max(x (1 - x), 1e-12)
            let denom = fm::mul(x, &fm::rsub_s(x, 1.0)?)?;
            let small = fm::cmp_s(BinaryOp::Lt, &denom, 1e-12)?;
            let denom = binary::where_(&small, &num(1e-12), &Arg::Tensor(denom))?;
            Some(fm::mul(&g, &fm::div(&fm::sub(x, t)?, &denom)?)?)
        } else {
            None
        };
        let gt = if ctx.needs(1) {
            // -logit(x) = log(1 - x) - log(x)
            let logit = fm::sub(&fm::un(UnaryOp::Log, &fm::rsub_s(x, 1.0)?)?, &fm::un(UnaryOp::Log, x)?)?;
            Some(fm::mul(&g, &logit)?)
        } else {
            None
        };
        Ok(vec![gi, gt])
    }))?;
    Ok(out)
}

/// `log(sigmoid(z))` from differentiable pieces, stable for large |z|:
/// `min(z, 0) - log1p(exp(-|z|))`, with `min(z, 0) = (z - |z|) / 2`.
fn log_sigmoid(z: &Tensor) -> Result<Tensor> {
    let a = fm::un(UnaryOp::Abs, z)?;
    let min0 = fm::mul_s(&fm::sub(z, &a)?, 0.5)?;
    fm::sub(&min0, &fm::un(UnaryOp::Log1p, &fm::un(UnaryOp::Exp, &fm::neg(&a)?)?)?)
}

/// Differentiable `binary_cross_entropy_with_logits` (BinaryCrossEntropyWithLogitsBackward0:
/// saves self, target, weight, pos_weight). The forward is torch's stable form
/// `(1 - t) x + lw (log(exp(-m) + exp(-x - m)) + m)`, `m = max(-x, 0)`, `lw = 1 + (pw - 1) t`.
pub fn binary_cross_entropy_with_logits(x: &Tensor, target: &Tensor, weight: Option<&Tensor>, pos_weight: Option<&Tensor>, r: Reduction) -> Result<Tensor> {
    if target.shape() != x.shape() {
        return Err(Error::Value(format!("Target size ({}) must be the same as input size ({})", torch_size(target.shape()), torch_size(x.shape()))));
    }
    if !target.dtype().is_floating() {
        return Err(Error::Runtime(format!(
            "result type {} can't be cast to the desired output type {}",
            x.dtype().scalar_type_name(),
            target.dtype().scalar_type_name()
        )));
    }
    let mut shape = x.shape().to_vec();
    // torch's order of operations decides which shape is "tensor a" in the message.
    if let Some(pw) = pos_weight {
        shape = broadcast_shapes(pw.shape(), &shape)?;
    }
    if let Some(w) = weight {
        shape = broadcast_shapes(&shape, w.shape())?;
    }
    let dtype = crate::dtype::promote_types(x.dtype(), target.dtype());
    let at = |t: &Tensor| -> Result<Vec<f64>> { Ok(f64s(&views::expand_raw(t, &shape.iter().map(|&d| d as i64).collect::<Vec<_>>())?)?) };
    let (xs, ts) = (at(x)?, at(target)?);
    let ws = weight.map(at).transpose()?;
    let pws = pos_weight.map(at).transpose()?;
    let losses: Vec<f64> = (0..xs.len())
        .map(|i| {
            let (v, t) = (xs[i], ts[i]);
            let m = (-v).max(0.0);
            let lw = pws.as_ref().map_or(1.0, |pw| 1.0 + (pw[i] - 1.0) * t);
            let l = (1.0 - t) * v + lw * (((-m).exp() + (-v - m).exp()).ln() + m);
            l * ws.as_ref().map_or(1.0, |w| w[i])
        })
        .collect();
    let out = reduce_values(losses, &shape, r, dtype, x.device())?;
    let Some(mut rec) = Recorder::new(&[Some(x), Some(target)])? else { return Ok(out) };
    rec.value("reduction", r as i64);
    rec.save("self", x)?;
    rec.save("target", target)?;
    if let Some(w) = weight {
        rec.save("weight", w)?;
    }
    if let Some(pw) = pos_weight {
        rec.save("pos_weight", pw)?;
    }
    let (has_w, has_pw) = (weight.is_some(), pos_weight.is_some());
    let n = x.numel();
    rec.finish("BinaryCrossEntropyWithLogitsBackward0", &[&out], Box::new(move |ctx| {
        let (x, t) = (ctx.saved(0), ctx.saved(1));
        let w = has_w.then(|| ctx.saved(2));
        let pw = has_pw.then(|| ctx.saved(2 + has_w as usize));
        let mut g = spread(ctx.grad(), r, n)?;
        if let Some(w) = w {
            g = fm::mul(&g, w)?;
        }
        let gi = if ctx.needs(0) {
            let core = match pw {
                Some(pw) => {
                    let tp = fm::mul(pw, t)?;
                    fm::sub(&fm::mul(&fm::sub(&fm::add_s(&tp, 1.0)?, t)?, &fm::un(UnaryOp::Sigmoid, x)?)?, &tp)?
                }
                None => fm::sub(&fm::un(UnaryOp::Sigmoid, x)?, t)?,
            };
            Some(fm::mul(&core, &g)?)
        } else {
            None
        };
        let gt = if ctx.needs(1) {
            let core = match pw {
                Some(pw) => fm::sub(&log_sigmoid(&fm::neg(x)?)?, &fm::mul(&log_sigmoid(x)?, pw)?)?,
                None => fm::neg(x)?,
            };
            Some(fm::mul(&core, &g)?)
        } else {
            None
        };
        Ok(vec![gi, gt])
    }))?;
    Ok(out)
}
