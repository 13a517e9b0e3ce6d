//! Losses of `nn.functional`: mse_loss (MseLossBackward0), l1_loss (composed, as torch does),
//! nll_loss (NllLossBackward0 / NllLoss2DBackward0), cross_entropy (LogSoftmax then NllLoss,
//! label smoothing and class-probability targets composed as torch composes them),
//! binary_cross_entropy (BinaryCrossEntropyBackward0) and binary_cross_entropy_with_logits
//! (BinaryCrossEntropyWithLogitsBackward0).
//!
//! Forward kernels accumulate in f64 in a fixed order. Backward formulas are written with
//! differentiable ops, so double backward works (through composed nodes).

use crate::autograd::formulas as fm;
use crate::autograd::Recorder;
use crate::dtype::{DType, Scalar};
use crate::error::{fmt_shape, Error, Result};
use crate::ops::binary::{self, BinaryOp};
use crate::ops::norm::{f64s, from_f64s};
use crate::ops::reduce;
use crate::ops::unary::UnaryOp;
use crate::ops::{views, Arg};
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;

/// `reduction=`: torch's enum values (none 0, mean 1, sum 2), as `_saved_reduction` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduction {
    None = 0,
    Mean = 1,
    Sum = 2,
}

impl Reduction {
    pub fn parse(s: &str) -> Result<Reduction> {
        match s {
            "none" => Ok(Reduction::None),
            "mean" => Ok(Reduction::Mean),
            "sum" => Ok(Reduction::Sum),
            other => Err(Error::Value(format!("{} is not a valid value for reduction", other))),
        }
    }
}

/// Python's repr of a shape as minigrad prints it in these messages: `minigrad.Size([2, 3])`.
pub fn torch_size(shape: &[usize]) -> String {
    format!("minigrad.Size({})", fmt_shape(shape))
}

/// Differentiable mean / sum / identity.
fn apply_reduction(t: &Tensor, r: Reduction) -> Result<Tensor> {
    match r {
        Reduction::None => Ok(t.clone()),
        Reduction::Mean => reduce::mean(t, None, false, None),
        Reduction::Sum => reduce::sum(t, None, false, None),
    }
}

/// Reduces f64 element losses in order: the output tensor of `dtype`.
fn reduce_values(v: Vec<f64>, shape: &[usize], r: Reduction, dtype: DType) -> Result<Tensor> {
    match r {
        Reduction::None => from_f64s(v, shape, dtype),
        Reduction::Sum => from_f64s(vec![v.iter().sum()], &[], dtype),
        Reduction::Mean => from_f64s(vec![v.iter().sum::<f64>() / v.len() as f64], &[], dtype),
    }
}

/// The gradient of a reduced loss spread over elements: `g / n` for mean, `g` otherwise.
fn spread(g: &Tensor, r: Reduction, n: usize) -> Result<Tensor> {
    match r {
        Reduction::Mean => binary::binary(BinaryOp::Div, &Arg::Tensor(g.clone()), &Arg::Scalar(Scalar::Int(n as i64)), None),
        _ => Ok(g.clone()),
    }
}

/// `t` expanded (differentiably) to `shape` when it differs.
fn expand_to(t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if t.shape() == shape {
        return Ok(t.clone());
    }
    views::expand(t, &shape.iter().map(|&d| d as i64).collect::<Vec<_>>())
}

/// F.mse_loss / F.l1_loss broadcast input and target against each other first.
fn broadcast_pair(x: &Tensor, t: &Tensor) -> Result<(Tensor, Tensor)> {
    let shape = broadcast_shapes(x.shape(), t.shape())?;
    Ok((expand_to(x, &shape)?, expand_to(t, &shape)?))
}

fn num(v: f64) -> Arg {
    Arg::Scalar(Scalar::Float(v))
}

/// `t * v` (or `t / v`) as torch's C++ Tensor-Scalar overloads record it: MulBackward1 /
/// DivBackward1. The formula multiplies by a 0-d tensor of the gradient's dtype, so a float64
/// graph keeps the number's full precision at every order.
fn scalar_node(t: &Tensor, v: f64, div: bool) -> Result<Tensor> {
    let op = if div { BinaryOp::Div } else { BinaryOp::Mul };
    let out = binary::binary_raw(op, &Arg::Tensor(t.clone()), &num(v), None)?;
    let Some(mut rec) = Recorder::new(&[Some(t)])? else { return Ok(out) };
    rec.value("other", crate::ops::reduce::py_number(Scalar::Float(v)));
    let name = if div { "DivBackward1" } else { "MulBackward1" };
    rec.finish(name, &[&out], Box::new(move |ctx| {
        let g = ctx.grad();
        let c = Tensor::scalar(Scalar::Float(v), g.dtype())?;
        Ok(vec![Some(if div { fm::div(g, &c)? } else { fm::mul(g, &c)? })])
    }))?;
    Ok(out)
}

// ----- mse_loss, l1_loss -----

/// Differentiable `mse_loss` (MseLossBackward0: saves self and target).
pub fn mse_loss(x: &Tensor, t: &Tensor, r: Reduction) -> Result<Tensor> {
    let (x, t) = broadcast_pair(x, t)?;
    let d = binary::binary_raw(BinaryOp::Sub, &Arg::Tensor(x.clone()), &Arg::Tensor(t.clone()), None)?;
    let dt = d.dtype();
    let sq: Vec<f64> = f64s(&d)?.iter().map(|v| v * v).collect();
    let out = reduce_values(sq, d.shape(), r, dt)?;
    let Some(mut rec) = Recorder::new(&[Some(&x), Some(&t)])? else { return Ok(out) };
    rec.value("reduction", r as i64);
    rec.save("self", &x)?;
    rec.save("target", &t)?;
    let n = x.numel();
    rec.finish("MseLossBackward0", &[&out], Box::new(move |ctx| {
        let (x, t) = (ctx.saved(0), ctx.saved(1));
        let gi = fm::mul(&fm::mul_s(&fm::sub(x, t)?, 2.0)?, &spread(ctx.grad(), r, n)?)?;
        let gt = if ctx.needs(1) { Some(fm::neg(&gi)?) } else { None };
        Ok(vec![ctx.needs(0).then_some(gi), gt])
    }))?;
    Ok(out)
}

/// `l1_loss`: torch composes it, `(input - target).abs()` then mean or sum.
pub fn l1_loss(x: &Tensor, t: &Tensor, r: Reduction) -> Result<Tensor> {
    let (x, t) = broadcast_pair(x, t)?;
    apply_reduction(&fm::un(UnaryOp::Abs, &fm::sub(&x, &t)?)?, r)
}

// ----- nll_loss -----

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

/// The kernel: per-element losses `-w[t] * x[t]` (0 where ignored) and the total weight.
fn nll_values(x: &Tensor, target: &Tensor, weight: Option<&Tensor>, ignore_index: i64, sh: &NllShape) -> Result<(Vec<f64>, f64)> {
    check_target_dtype(target)?;
    if let Some(w) = weight {
        if w.dtype() != x.dtype() {
            return Err(Error::Runtime(format!("expected scalar type {} but found {}", x.dtype().scalar_type_name(), w.dtype().scalar_type_name())));
        }
    }
    let xs = f64s(x)?;
    let ts = target.to_vec::<i64>()?;
    let ws = weight.map(f64s).transpose()?;
    let mut losses = Vec::with_capacity(sh.n * sh.s);
    let mut total = 0.0;
    for i in 0..sh.n {
        for j in 0..sh.s {
            let cls = ts[i * sh.s + j];
            if cls == ignore_index {
                losses.push(0.0);
                continue;
            }
            if cls < 0 || cls as usize >= sh.c {
                return Err(Error::Index(format!("Target {} is out of bounds.", cls)));
            }
            let w = ws.as_ref().map_or(1.0, |w| w[cls as usize]);
            total += w;
            losses.push(-w * xs[(i * sh.c + cls as usize) * sh.s + j]);
        }
    }
    Ok((losses, total))
}

/// The coefficient tensor of the input gradient: `-w[t] / scale` at each target position.
fn nll_coefficients(target: &Tensor, weight: Option<&Tensor>, ignore_index: i64, sh: &NllShape, scale: f64, dtype: DType) -> Result<Tensor> {
    let ts = target.to_vec::<i64>()?;
    let ws = weight.map(f64s).transpose()?;
    let mut coef = crate::alloc::try_vec(sh.n * sh.c * sh.s, 0.0f64)?;
    for i in 0..sh.n {
        for j in 0..sh.s {
            let cls = ts[i * sh.s + j];
            if cls != ignore_index {
                let w = ws.as_ref().map_or(1.0, |w| w[cls as usize]);
                coef[(i * sh.c + cls as usize) * sh.s + j] = -w / scale;
            }
        }
    }
    from_f64s(coef, &[sh.n * sh.c * sh.s], dtype)
}

/// Runs the kernel and records `name` (NllLossBackward0 / NllLoss2DBackward0).
fn nll_record(name: &'static str, x: &Tensor, target: &Tensor, weight: Option<&Tensor>, r: Reduction, ignore_index: i64, sh: NllShape) -> Result<Tensor> {
    let (losses, total) = nll_values(x, target, weight, ignore_index, &sh)?;
    let out = match r {
        Reduction::None => from_f64s(losses, &sh.out_shape, x.dtype())?,
        Reduction::Sum => from_f64s(vec![losses.iter().sum()], &[], x.dtype())?,
        Reduction::Mean => from_f64s(vec![losses.iter().sum::<f64>() / total], &[], x.dtype())?,
    };
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok(out) };
    let total_weight = from_f64s(vec![total], &[], x.dtype())?;
    rec.value("ignore_index", ignore_index);
    rec.value("reduction", r as i64);
    rec.save("self", x)?;
    rec.save("target", target)?;
    rec.save("total_weight", &total_weight)?;
    if let Some(w) = weight {
        rec.save("weight", w)?;
    }
    let has_w = weight.is_some();
    let in_shape = x.shape().to_vec();
    rec.finish(name, &[&out], Box::new(move |ctx| {
        let g = ctx.grad();
        let target = ctx.saved(1);
        let w = has_w.then(|| ctx.saved(3));
        let scale = if r == Reduction::Mean { ctx.saved(2).item()?.to_f64() } else { 1.0 };
        let coef = nll_coefficients(target, w, ignore_index, &sh, scale, g.dtype())?;
        let coef = views::view_raw(&coef, &in_shape.iter().map(|&d| d as i64).collect::<Vec<_>>())?;
        // A per-sample gradient (reduction none) broadcasts over the class dim.
        let g = if r == Reduction::None && in_shape.len() > 1 { views::unsqueeze(g, 1)? } else { g.clone() };
        Ok(vec![Some(fm::mul(&g, &coef)?)])
    }))?;
    Ok(out)
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
    crate::autograd::record::precheck(&[Some(x)])?;
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

// ----- cross_entropy -----

/// `cross_entropy` as torch composes it: class-index targets go through log_softmax and
/// nll_loss (plus the smoothing term when `label_smoothing > 0`); a target shaped like the
/// input holds class probabilities.
pub fn cross_entropy(x: &Tensor, target: &Tensor, weight: Option<&Tensor>, r: Reduction, ignore_index: i64, label_smoothing: f64) -> Result<Tensor> {
    let class_dim: i64 = if x.ndim() == 1 { 0 } else { 1 };
    if x.shape() == target.shape() {
        if !target.dtype().is_floating() {
            return Err(Error::Runtime(format!("Expected floating point type for target with class probabilities, got {}", target.dtype().scalar_type_name())));
        }
        if ignore_index >= 0 {
            return Err(Error::Runtime("ignore_index is not supported for floating point target".into()));
        }
        check_smoothing(label_smoothing)?;
        let n_classes = class_count(x, class_dim)?;
        return cross_entropy_probs(x, target, weight, r, label_smoothing, class_dim, n_classes);
    }
    let n_classes = class_count(x, class_dim)?;
    let input = reduce::softmax(x, class_dim, Some(x.dtype()), true)?;
    if label_smoothing <= 0.0 {
        return nll_loss(&input, target, weight, r, ignore_index);
    }
    check_smoothing(label_smoothing)?;
    let nll = nll_loss(&input, target, weight, r, ignore_index)?;
    let ignore = fm::cmp(BinaryOp::Eq, target, &Arg::Scalar(Scalar::Int(ignore_index)))?;
    let weighted = match weight {
        Some(w) => fm::mul(&input, &class_view(w, input.ndim(), class_dim)?)?,
        None => input.clone(),
    };
    let smooth = fm::neg(&reduce::sum(&weighted, Some(&[class_dim]), false, None)?)?;
    let smooth = binary::masked_fill(&smooth, &ignore, &num(0.0), false)?;
    let ret = match r {
        Reduction::None => smooth,
        Reduction::Sum => reduce::sum(&smooth, None, false, None)?,
        Reduction::Mean => {
            let kept = fm::cmp(BinaryOp::Ne, target, &Arg::Scalar(Scalar::Int(ignore_index)))?;
            let denom = match weight {
                Some(w) => {
                    let picked = crate::ops::mask::masked_select_raw(target, &kept)?;
                    reduce::sum_raw(&crate::ops::gather::index_select_raw(w, 0, &picked)?, None, false, None)?
                }
                None => crate::ops::copy::to_dtype_raw(&reduce::sum_raw(&kept, None, false, None)?, x.dtype())?,
            };
            fm::div(&reduce::sum(&smooth, None, false, None)?, &denom)?
        }
    };
    let a = scalar_node(&nll, 1.0 - label_smoothing, false)?;
    let b = scalar_node(&ret, label_smoothing / n_classes as f64, false)?;
    fm::add(&a, &b)
}

/// The size of the class dim (torch's dim error for a 0-d input).
fn class_count(x: &Tensor, class_dim: i64) -> Result<usize> {
    let d = crate::shape::wrap_dim(class_dim, x.ndim())?;
    Ok(x.shape().get(d).copied().unwrap_or(1))
}

fn check_smoothing(ls: f64) -> Result<()> {
    if !(0.0..=1.0).contains(&ls) {
        return Err(Error::Runtime(format!("label_smoothing must be between 0.0 and 1.0. Got: {}", crate::error::fmt_g(ls))));
    }
    Ok(())
}

/// A per-class vector shaped to broadcast along `class_dim` of an `ndim` input.
fn class_view(w: &Tensor, ndim: usize, class_dim: i64) -> Result<Tensor> {
    let mut shape = vec![1i64; ndim];
    shape[class_dim as usize] = w.numel() as i64;
    views::view(w, &shape)
}

fn cross_entropy_probs(x: &Tensor, target: &Tensor, weight: Option<&Tensor>, r: Reduction, ls: f64, class_dim: i64, n_classes: usize) -> Result<Tensor> {
    if let Some(w) = weight {
        if w.ndim() != 1 || w.numel() != n_classes {
            return Err(Error::Runtime(format!(
                "cross_entropy: weight tensor should be defined either for all {} classes or no classes but got weight tensor of shape: {}",
                n_classes,
                fmt_shape(w.shape())
            )));
        }
    }
    let input = reduce::softmax(x, class_dim, Some(x.dtype()), true)?;
    let target = if ls > 0.0 { fm::add_s(&scalar_node(target, 1.0 - ls, false)?, ls / n_classes as f64)? } else { target.clone() };
    let mut prod = fm::mul(&input, &target)?;
    if let Some(w) = weight {
        prod = fm::mul(&prod, &class_view(w, input.ndim(), class_dim)?)?;
    }
    match r {
        Reduction::None => fm::neg(&reduce::sum(&prod, Some(&[class_dim]), false, None)?),
        Reduction::Sum => fm::neg(&reduce::sum(&prod, None, false, None)?),
        Reduction::Mean => {
            let total = reduce::sum(&prod, None, false, None)?;
            if input.numel() == 0 {
                // torch: -(...).sum().fill_(NAN); a factor of NaN stands in for the fill.
                return fm::neg(&scalar_node(&total, f64::NAN, false)?);
            }
            scalar_node(&fm::neg(&total)?, (input.numel() / n_classes) as f64, true)
        }
    }
}

// ----- binary_cross_entropy -----

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
    let out = reduce_values(losses, x.shape(), r, x.dtype())?;
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
    let out = reduce_values(losses, &shape, r, dtype)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    fn idx(v: Vec<i64>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape).unwrap()
    }

    #[test]
    fn losses_pass_gradcheck() {
        let reds = [Reduction::None, Reduction::Mean, Reduction::Sum];
        for r in reds {
            gradcheck("mse", &|t| mse_loss(&t[0], &t[1], r), &[rand_leaf(&[2, 3], 1), rand_leaf(&[2, 3], 2)], true);
            let target = idx(vec![0, 2, -100, 1], &[4]);
            let w = vals(vec![0.5, 2.0, 1.5], &[3]);
            gradcheck("nll", &|t| nll_loss(&t[0], &target, Some(&w), r, -100), &[rand_leaf(&[4, 3], 3)], true);
            let t3 = idx(vec![0, 2, 1, 1, 0, 2], &[2, 3]);
            gradcheck("nll 3d", &|t| nll_loss(&t[0], &t3, None, r, -100), &[rand_leaf(&[2, 3, 3], 4)], true);
            gradcheck("ce smooth", &|t| cross_entropy(&t[0], &target, Some(&w), r, -100, 0.2), &[rand_leaf(&[4, 3], 5)], true);
            gradcheck("ce probs", &|t| cross_entropy(&t[0], &t[1], None, r, -100, 0.1), &[rand_leaf(&[4, 3], 6), rand_leaf(&[4, 3], 7)], true);
            let p = || vals(vec![0.1, 0.5, 0.9, 0.3, 0.7, 0.2], &[2, 3]);
            let bw = vals(vec![1.0, 2.0, 0.5], &[3]);
            let leafed = |v: Tensor| leaf(v.to_vec::<f64>().unwrap(), v.shape());
            gradcheck("bce", &|t| binary_cross_entropy(&t[0], &t[1], Some(&bw), r), &[leafed(p()), leafed(vals(vec![0.2, 0.4, 0.6, 0.8, 0.5, 0.3], &[2, 3]))], true);
            let pw = vals(vec![3.0, 0.5, 1.0], &[3]);
            gradcheck("bce logits", &|t| binary_cross_entropy_with_logits(&t[0], &t[1], Some(&bw), Some(&pw), r), &[rand_leaf(&[2, 3], 8), leafed(p())], true);
        }
    }

    #[test]
    fn values_and_errors() {
        let x = vals(vec![-1.0, -2.0, -3.0, -4.0], &[2, 2]);
        let t = idx(vec![1, 0], &[2]);
        assert_eq!(nll_loss(&x, &t, None, Reduction::Mean, -100).unwrap().to_vec::<f64>().unwrap(), vec![2.5]);
        assert_eq!(nll_loss(&x, &idx(vec![2, 0], &[2]), None, Reduction::Sum, -100).unwrap_err().to_string(), "Target 2 is out of bounds.");
        assert!(nll_loss(&x, &idx(vec![-100, -100], &[2]), None, Reduction::Mean, -100).unwrap().to_vec::<f64>().unwrap()[0].is_nan());
        assert_eq!(Reduction::parse("avg").unwrap_err(), Error::Value("avg is not a valid value for reduction".into()));
        let p = vals(vec![0.0, 1.0], &[2]);
        let out = binary_cross_entropy(&p, &vals(vec![1.0, 0.0], &[2]), None, Reduction::Mean).unwrap();
        assert_eq!(out.to_vec::<f64>().unwrap(), vec![100.0], "logs clamp at -100");
        let big = vals(vec![1000.0, -1000.0], &[2]);
        let l = binary_cross_entropy_with_logits(&big, &vals(vec![1.0, 0.0], &[2]), None, None, Reduction::Sum).unwrap();
        assert_eq!(l.to_vec::<f64>().unwrap(), vec![0.0]);
    }
}
