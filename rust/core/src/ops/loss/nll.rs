//! `nll_loss` over (N, C) or (N, C, d1, ...) inputs (NllLossBackward0 / NllLoss2DBackward0):
//! class weights, `ignore_index`, the f64 forward and the backward formula.

use crate::ops::formulas as fm;
use crate::autograd::Recorder;
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ops::copy::to_device_raw;
use crate::ops::gather::{gather_in_bounds, scatter_in_bounds};
use crate::ops::norm::{f64s, from_f64s};
use crate::ops::views;
use crate::tensor::Tensor;
use super::Reduction;

/// Validated arguments of one nll kernel call, viewing the input as (N, C, S).
struct NllShape {
    n: usize,
    c: usize,
    s: usize,
    out_shape: Vec<usize>,
}

fn check_target_dtype(target: &Tensor) -> Result<()> {
    if target.dtype() != DType::Int64 {
        return Err(Error::Runtime(format!("expected target dtype to be Long or Byte, but got {}", target.dtype().scalar_type_name())));
    }
    Ok(())
}

/// Each target's class, with 0 standing in for an ignored one, as an int64 `(n, 1, s)` tensor on
/// `device`: the index that gathers each sample's picked log-probability (and scatters its
/// gradient coefficient) on the input's device.
fn class_index(ts: &[i64], ignore_index: i64, sh: &NllShape, device: crate::device::Device) -> Result<Tensor> {
    let safe: Vec<i64> = ts.iter().map(|&c| if c == ignore_index { 0 } else { c }).collect();
    to_device_raw(&Tensor::from_vec(safe, &[sh.n, 1, sh.s])?, device)
}

/// What the forward read on the host and the backward reuses (the targets and weights cannot
/// change in between: autograd's version check guards the saved tensors), so that the backward
/// reads nothing back from a GPU.
struct NllHost {
    targets: Vec<i64>,
    weights: Option<Vec<f64>>,
    /// the total weight as the saved `total_weight` holds it (rounded to the input's dtype)
    total_weight: f64,
    /// `class_index` of the targets on the input's device (None when nothing was gathered)
    index: Option<Tensor>,
}

/// The kernel: per-element losses `-w[t] * x[t]` (0 where ignored), the total weight and the
/// host values. The targets are read on the host (to check them, as torch's CPU kernel does);
/// the picked inputs are gathered on the input's device and only they come to the host, where
/// the loss is summed in f64 in a fixed order.
fn nll_values(x: &Tensor, target: &Tensor, weight: Option<&Tensor>, ignore_index: i64, sh: &NllShape) -> Result<(Vec<f64>, f64, NllHost)> {
    check_target_dtype(target)?;
    if let Some(w) = weight {
        if w.dtype() != x.dtype() {
            return Err(Error::Runtime(format!("expected scalar type {} but found {}", x.dtype().scalar_type_name(), w.dtype().scalar_type_name())));
        }
    }
    let ts = target.to_vec::<i64>()?;
    if let Some(&cls) = ts.iter().find(|&&c| c != ignore_index && (c < 0 || c as usize >= sh.c)) {
        return Err(Error::Index(format!("Target {} is out of bounds.", cls)));
    }
    let (picked, index) = if ts.is_empty() || sh.c == 0 {
        (vec![0.0; ts.len()], None) // (every target ignored when there is no class)
    } else {
        let xv = views::reshape_raw(x, &[sh.n as i64, sh.c as i64, sh.s as i64])?;
        let index = class_index(&ts, ignore_index, sh, x.device())?;
        (f64s(&gather_in_bounds(&xv, 1, &index)?)?, Some(index))
    };
    let ws = weight.map(f64s).transpose()?;
    let mut losses = Vec::with_capacity(sh.n * sh.s);
    let mut total = 0.0;
    for (&cls, &v) in ts.iter().zip(&picked) {
        if cls == ignore_index {
            losses.push(0.0);
            continue;
        }
        let w = ws.as_ref().map_or(1.0, |w| w[cls as usize]);
        total += w;
        losses.push(-w * v);
    }
    Ok((losses, total, NllHost { targets: ts, weights: ws, total_weight: f64::NAN, index }))
}

/// The coefficient tensor of the input gradient, `(n, c, s)` on `device`: `-w[t] / scale` at
/// each target position (scattered on the device), 0 elsewhere.
fn nll_coefficients(host: &NllHost, ignore_index: i64, sh: &NllShape, scale: f64, dtype: DType, device: crate::device::Device) -> Result<Tensor> {
    let (ts, ws) = (&host.targets, &host.weights);
    let Some(index) = &host.index else { return Tensor::zeros_on(&[sh.n, sh.c, sh.s], dtype, device) };
    let coef: Vec<f64> = ts
        .iter()
        .map(|&cls| if cls == ignore_index { 0.0 } else { -ws.as_ref().map_or(1.0, |w| w[cls as usize]) / scale })
        .collect();
    let out = Tensor::zeros_on(&[sh.n, sh.c, sh.s], dtype, device)?;
    let coef = to_device_raw(&from_f64s(coef, &[sh.n, 1, sh.s], dtype)?, device)?;
    scatter_in_bounds(&out, 1, index, &coef)?;
    Ok(out)
}

/// Runs the kernel and records `name` (NllLossBackward0 / NllLoss2DBackward0).
fn nll_record(name: &'static str, x: &Tensor, target: &Tensor, weight: Option<&Tensor>, r: Reduction, ignore_index: i64, sh: NllShape) -> Result<Tensor> {
    let (losses, total, mut host) = nll_values(x, target, weight, ignore_index, &sh)?;
    let out = match r {
        Reduction::None => from_f64s(losses, &sh.out_shape, x.dtype())?,
        Reduction::Sum => from_f64s(vec![losses.iter().sum()], &[], x.dtype())?,
        Reduction::Mean => from_f64s(vec![losses.iter().sum::<f64>() / total], &[], x.dtype())?,
    };
    let out = to_device_raw(&out, x.device())?;
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok(out) };
    let total_host = from_f64s(vec![total], &[], x.dtype())?;
    host.total_weight = total_host.item()?.to_f64();
    let total_weight = to_device_raw(&total_host, x.device())?;
    rec.value("ignore_index", ignore_index);
    rec.value("reduction", r as i64);
    rec.save("self", x)?;
    rec.save("target", target)?;
    rec.save("total_weight", &total_weight)?;
    match weight {
        Some(w) => rec.save("weight", w)?,
        None => rec.not_saved("weight"),
    }
    let (has_w, two_d) = (weight.is_some(), name == "NllLoss2DBackward0");
    rec.finish(name, &[&out], Box::new(move |ctx| {
        let (x, target) = (ctx.saved(0), ctx.saved(1));
        let call = NllCall { weight: has_w.then(|| ctx.saved(3)), r, ignore_index, sh: &sh, two_d, host: &host };
        Ok(vec![Some(nll_loss_backward(ctx.grad(), x, target, &call)?)])
    }))?;
    Ok(out)
}

/// The arguments of one `nll_loss` call that its backward reuses.
struct NllCall<'a> {
    weight: Option<&'a Tensor>,
    r: Reduction,
    ignore_index: i64,
    sh: &'a NllShape,
    /// nll_loss2d (an (N, C, H, W) input)
    two_d: bool,
    host: &'a NllHost,
}

/// torch's `nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index,
/// total_weight)` (`nll_loss2d_backward` for an (N, C, H, W) input): NllLossBackward0's formula
/// as one op of its own (`autograd::backward_op`), so a graph of the backward holds
/// `NllLossBackwardBackward0`, whose derivatives are `nll_loss(grad, target, ...)` for
/// grad_output and zeros for self (the gradient is linear in grad_output, constant in self).
fn nll_loss_backward(g: &Tensor, x: &Tensor, target: &Tensor, call: &NllCall) -> Result<Tensor> {
    let value = || {
        let scale = if call.r == Reduction::Mean { call.host.total_weight } else { 1.0 };
        let coef = nll_coefficients(call.host, call.ignore_index, call.sh, scale, g.dtype(), g.device())?;
        let coef = views::view_raw(&coef, &x.shape().iter().map(|&d| d as i64).collect::<Vec<_>>())?;
        // A per-sample gradient (reduction none) broadcasts over the class dim.
        let g = if call.r == Reduction::None && x.ndim() > 1 { views::unsqueeze(g, 1)? } else { g.clone() };
        fm::mul(&g, &coef)
    };
    crate::autograd::backward_op(&[Some(g), Some(x)], value, |mut rec, out| {
        let (r, ignore_index) = (call.r, call.ignore_index);
        rec.value("ignore_index", ignore_index);
        rec.value("reduction", r as i64);
        rec.save("target", target)?;
        if let Some(w) = call.weight {
            rec.save("weight", w)?;
        }
        let has_w = call.weight.is_some();
        let name = if call.two_d { "NllLoss2DBackwardBackward0" } else { "NllLossBackwardBackward0" };
        rec.finish(name, &[out], Box::new(move |ctx| {
            let (gg, target) = (ctx.grad(), ctx.saved(0));
            let d_grad = match ctx.needs(0) {
                true => Some(nll_loss(gg, target, has_w.then(|| ctx.saved(1)), r, ignore_index)?),
                false => None,
            };
            let d_self = if ctx.needs(1) { Some(fm::zeros_like(gg)?) } else { None };
            Ok(vec![d_grad, d_self])
        }))?;
        Ok(())
    })
}

/// `nll_loss` of a (C) or (N, C) input.
fn nll_loss_2d_input(x: &Tensor, target: &Tensor, weight: Option<&Tensor>, r: Reduction, ignore_index: i64) -> Result<Tensor> {
    if target.ndim() > 1 {
        return Err(Error::Runtime("0D or 1D target tensor expected, multi-target not supported".into()));
    }
    let no_batch = x.ndim() == 1 && target.ndim() == 0;
    if !no_batch && (target.ndim() == 0 || x.shape()[0] != target.shape()[0]) {
        return Err(Error::Runtime(format!("size mismatch (got input: {}, target: {})", fmt_shape(x.shape()), fmt_shape(target.shape()))));
    }
    let c = x.shape()[x.ndim() - 1];
    if let Some(w) = weight {
        if w.ndim() != 1 || w.numel() != c {
            return Err(Error::Runtime(format!(
                "weight tensor should be defined either for all {} classes or no classes but got weight tensor of shape: {}",
                c,
                fmt_shape(w.shape())
            )));
        }
    }
    let n = if x.ndim() == 1 { 1 } else { x.shape()[0] };
    let out_shape = if x.ndim() == 1 { vec![] } else { vec![n] };
    nll_record("NllLossBackward0", x, target, weight, r, ignore_index, NllShape { n, c, s: 1, out_shape })
}

/// `nll_loss2d` of an (N, C, H, W) input.
fn nll_loss_4d_input(x: &Tensor, target: &Tensor, weight: Option<&Tensor>, r: Reduction, ignore_index: i64) -> Result<Tensor> {
    if target.ndim() != 3 {
        return Err(Error::Runtime(format!("only batches of spatial targets supported (3D tensors) but got targets of dimension: {}", target.ndim())));
    }
    let c = x.shape()[1];
    if weight.is_some_and(|w| w.numel() != c) {
        return Err(Error::Runtime("weight tensor should be defined either for all or no classes".into()));
    }
    let (xs, ts) = (x.shape(), target.shape());
    if xs[0] != ts[0] || xs[2] != ts[1] || xs[3] != ts[2] {
        return Err(Error::Runtime(format!("size mismatch (got input: {} , target: {}", fmt_shape(xs), fmt_shape(ts))));
    }
    let sh = NllShape { n: xs[0], c, s: xs[2] * xs[3], out_shape: ts.to_vec() };
    nll_record("NllLoss2DBackward0", x, target, weight, r, ignore_index, sh)
}

/// `nll_loss` for any input rank (torch's nll_loss_nd): (C), (N, C), (N, C, d1, ...).
pub fn nll_loss(x: &Tensor, target: &Tensor, weight: Option<&Tensor>, r: Reduction, ignore_index: i64) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    if x.ndim() < 1 {
        return Err(Error::Value(format!("Expected 1 or more dimensions (got {})", x.ndim())));
    }
    let target_batch = target.shape().first().copied().unwrap_or(0);
    if x.ndim() != 1 && x.shape()[0] != target_batch {
        return Err(Error::Value(format!("Expected input batch_size ({}) to match target batch_size ({}).", x.shape()[0], target_batch)));
    }
    if x.ndim() != 1 && target.ndim() == 0 {
        return Err(Error::Index("Dimension specified as 0 but tensor has no dimensions".into()));
    }
    if x.ndim() == 1 && target.ndim() == 1 {
        if target.shape()[0] != 1 {
            return Err(Error::Value(format!("For 1D input, 1D target must have size 1, but got target size: {}", target.shape()[0])));
        }
        return nll_loss_2d_input(x, &views::reshape_raw(target, &[])?, weight, r, ignore_index);
    }
    match x.ndim() {
        1 | 2 => nll_loss_2d_input(x, target, weight, r, ignore_index),
        4 => nll_loss_4d_input(x, target, weight, r, ignore_index),
        _ => {
            // torch views (N, C, d1, d2, ...) as (N, C, 1, d1*d2*...) and back.
            let (n, c) = (x.shape()[0], x.shape()[1]);
            let mut out_size = vec![n];
            out_size.extend_from_slice(&x.shape()[2..]);
            if target.shape().get(1..) != Some(&x.shape()[2..]) {
                return Err(Error::Runtime(format!("Expected target size {}, got {}", fmt_shape(&out_size), fmt_shape(target.shape()))));
            }
            let xc = crate::ops::copy::contiguous(x)?;
            let tc = crate::ops::copy::contiguous_raw(target)?;
            let (xv, tv) = if x.numel() > 0 {
                (views::view(&xc, &[n as i64, c as i64, 1, -1])?, views::view_raw(&tc, &[n as i64, 1, -1])?)
            } else {
                (views::view(&xc, &[n as i64, c as i64, 0, 0])?, views::view_raw(&tc, &[n as i64, 0, 0])?)
            };
            let out = nll_loss_4d_input(&xv, &tv, weight, r, ignore_index)?;
            if r == Reduction::None {
                views::view(&out, &out_size.iter().map(|&d| d as i64).collect::<Vec<_>>())
            } else {
                Ok(out)
            }
        }
    }
}
