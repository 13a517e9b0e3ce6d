//! Normalization: `batch_norm` (NativeBatchNormBackward0) and `layer_norm`
//! (NativeLayerNormBackward0). Both normalize groups of elements to zero mean and unit
//! (biased) variance, then scale and shift per feature.
//!
//! Forward kernels accumulate in f64 with a fixed order per group and parallelise over groups
//! only, so results are bit-identical run to run. Backward formulas recompute the statistics
//! from the saved input with differentiable ops, so double backward is right (the second-order
//! nodes are the composed ops' nodes, not torch's `NativeBatchNormBackwardBackward0`). The
//! forwards go through the device's `Backend::batch_norm` / `layer_norm` (the CPU's are here);
//! the backward formulas are routed ops, so they run on any device that has those.

use crate::ops::formulas as fm;
use crate::autograd::Recorder;
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::ops::copy::to_dtype_raw;
use crate::ops::reduce::{self, py_bool, py_ints};
use crate::ops::unary::UnaryOp;
use crate::ops::views;
use crate::tensor::Tensor;
use rayon::prelude::*;

#[path = "norm_bn_cpu.rs"]
mod bn_cpu;
pub(crate) use bn_cpu::batch_norm_backward_cpu;

/// Element count below which the group loops stay on one thread.
const PAR_MIN: usize = 1 << 15;

/// A tensor's values as f64, row-major.
pub(crate) fn f64s(t: &Tensor) -> Result<Vec<f64>> {
    to_dtype_raw(t, DType::Float64)?.to_vec::<f64>()
}

/// A row-major f64 buffer as a tensor of `dtype`.
pub(crate) fn from_f64s(v: Vec<f64>, shape: &[usize], dtype: DType) -> crate::error::Result<Tensor> {
    let t = Tensor::from_vec(v, shape)?;
    to_dtype_raw(&t, dtype)
}

/// torch's check that every parameter shares the input's dtype (CPU kernels).
fn same_dtype(x: &Tensor, others: &[Option<&Tensor>]) -> Result<()> {
    if others.iter().flatten().any(|t| t.dtype() != x.dtype()) {
        return Err(Error::Runtime("mixed dtype (CPU): all inputs must share same datatype.".into()));
    }
    Ok(())
}

/// Writes `values` into `dst` element by element, without a version bump: torch's
/// native_batch_norm updates running statistics inside its kernel, and their `_version`
/// stays where it was (checked against torch 2.13).
fn store_unversioned(dst: &Tensor, values: &[f64]) -> Result<()> {
    let src = from_f64s(values.to_vec(), dst.shape(), dst.dtype())?;
    crate::ops::copy::copy_kernel(dst, &src)?;
    Ok(())
}

// ----- batch_norm -----

/// `torch.batch_norm` with its checks in torch's order. Returns (output, save_mean,
/// save_invstd): the batch statistics in training, empty tensors in evaluation.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm_raw(
    x: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let c = if x.ndim() > 1 { x.shape()[1] } else { 0 };
    let check = |name: &str, t: Option<&Tensor>, must: bool| -> Result<()> {
        match t {
            Some(t) if t.numel() != c => Err(Error::Runtime(format!("{} should contain {} elements not {}", name, c, t.numel()))),
            None if must => Err(Error::Runtime(format!("{} must be defined in evaluation mode", name))),
            _ => Ok(()),
        }
    };
    check("running_mean", running_mean, !training)?;
    check("running_var", running_var, !training)?;
    check("weight", weight, false)?;
    check("bias", bias, false)?;
    // In evaluation torch dispatches on the dtype before it reads dim 1; in training it reads
    // dim 1 first (for the batch statistics).
    if !training && !x.dtype().is_floating() {
        return Err(Error::NotImplemented(format!("\"batch_norm\" not implemented for '{}'", x.dtype().scalar_type_name())));
    }
    if x.ndim() < 2 {
        let n = x.ndim().max(1) as i64;
        return Err(Error::Index(format!("Dimension out of range (expected to be in range of [{}, {}], but got 1)", -n, n - 1)));
    }
    if !x.dtype().is_floating() {
        return Err(Error::NotImplemented(format!("\"batch_norm\" not implemented for '{}'", x.dtype().scalar_type_name())));
    }
    same_dtype(x, &[weight, bias, running_mean, running_var])?;
    let operands: Vec<&Tensor> = [Some(x), running_mean, running_var, weight, bias].into_iter().flatten().collect();
    crate::device::backend_for(&operands)?.batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)
}

/// The CPU backend's `batch_norm`: statistics and output in f64, per channel in parallel.
#[allow(clippy::too_many_arguments)]
pub(crate) fn batch_norm_cpu(
    x: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let c = x.shape()[1];
    let dt = x.dtype();
    let (n, s) = (x.shape()[0], x.shape()[2..].iter().product::<usize>());
    let per_channel = n * s;
    let xt = bn_cpu::typed(x)?;
    let (mean, invstd, var): (Vec<f64>, Vec<f64>, Vec<f64>) = if training {
        let stats = bn_cpu::channel_stats(&xt);
        let mean: Vec<f64> = stats.iter().map(|s| s.0).collect();
        let var: Vec<f64> = stats.iter().map(|s| s.1 / per_channel as f64).collect();
        let invstd = var.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
        let unbiased = stats.iter().map(|s| s.1 / (per_channel as f64 - 1.0)).collect();
        (mean, invstd, unbiased)
    } else {
        let rm = f64s(running_mean.expect("checked above"))?;
        let invstd = f64s(running_var.expect("checked above"))?.iter().map(|v| 1.0 / (v + eps).sqrt()).collect();
        (rm, invstd, Vec::new())
    };
    let w = weight.map(f64s).transpose()?;
    let b = bias.map(f64s).transpose()?;
    let out = bn_cpu::normalize(&xt, &mean, &invstd, w.as_deref(), b.as_deref())?;
    let out = if out.dtype() == dt { out } else { to_dtype_raw(&out, dt)? };
    if training && per_channel > 0 {
        if let Some(rm) = running_mean {
            let old = f64s(rm)?;
            let new: Vec<f64> = old.iter().zip(&mean).map(|(r, m)| (1.0 - momentum) * r + momentum * m).collect();
            store_unversioned(rm, &new)?;
        }
        if let Some(rv) = running_var {
            let old = f64s(rv)?;
            let new: Vec<f64> = old.iter().zip(&var).map(|(r, v)| (1.0 - momentum) * r + momentum * v).collect();
            store_unversioned(rv, &new)?;
        }
    }
    let (save_mean, save_invstd) = if training { (from_f64s(mean, &[c], dt)?, from_f64s(invstd, &[c], dt)?) } else { (Tensor::empty(&[0], dt)?, Tensor::empty(&[0], dt)?) };
    Ok((out, save_mean, save_invstd))
}

/// The dims a per-channel statistic reduces over: all but dim 1.
fn channel_dims(ndim: usize) -> Vec<i64> {
    (0..ndim as i64).filter(|&d| d != 1).collect()
}

/// `t` (one value per channel) shaped to broadcast against an input of `ndim` dims.
fn per_channel(t: &Tensor, ndim: usize) -> Result<Tensor> {
    let mut shape = vec![1i64; ndim];
    shape[1] = t.numel() as i64;
    views::view(t, &shape)
}

/// The input gradient of normalizing `x` over `dims` (biased variance, `eps`), given the
/// gradient already multiplied by the scale (`gw`). Written with differentiable ops and
/// statistics recomputed from `x`, so it differentiates again correctly:
/// `invstd * (gw - mean(gw) - xhat * mean(gw * xhat))`.
fn normalized_input_grad(gw: &Tensor, x: &Tensor, dims: &[i64], eps: f64) -> Result<Tensor> {
    let (xhat, invstd) = normalize(x, dims, eps)?;
    let mean_g = reduce::mean(gw, Some(dims), true, None)?;
    let mean_gx = reduce::mean(&fm::mul(gw, &xhat)?, Some(dims), true, None)?;
    let centered = fm::sub(&fm::sub(gw, &mean_g)?, &fm::mul(&xhat, &mean_gx)?)?;
    fm::mul(&invstd, &centered)
}

/// (x - mean) * invstd and invstd over `dims` (kept), differentiably.
fn normalize(x: &Tensor, dims: &[i64], eps: f64) -> Result<(Tensor, Tensor)> {
    let mean = reduce::mean(x, Some(dims), true, None)?;
    let xc = fm::sub(x, &mean)?;
    let var = reduce::mean(&fm::mul(&xc, &xc)?, Some(dims), true, None)?;
    let invstd = fm::un(UnaryOp::Rsqrt, &fm::add_s(&var, eps)?)?;
    Ok((fm::mul(&xc, &invstd)?, invstd))
}

/// Sums `t` over `dims`; an empty list sums nothing (unlike `sum(dim=())`).
fn sum_over(t: &Tensor, dims: &[i64]) -> Result<Tensor> {
    if dims.is_empty() {
        Ok(t.clone())
    } else {
        reduce::sum(t, Some(dims), false, None)
    }
}

/// Differentiable `batch_norm` (NativeBatchNormBackward0). torch saves input, weight,
/// running_mean, running_var and the two statistics outputs (result1, result2).
#[allow(clippy::too_many_arguments)]
pub fn batch_norm(
    x: &Tensor,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x), weight, bias])?;
    let (out, save_mean, save_invstd) = batch_norm_raw(x, running_mean, running_var, weight, bias, training, momentum, eps)?;
    let Some(mut rec) = Recorder::new(&[Some(x), weight, bias])? else { return Ok(out) };
    rec.value("eps", eps);
    rec.value("training", py_bool(training));
    rec.save("input", x)?;
    if let Some(w) = weight {
        rec.save("weight", w)?;
    }
    if let Some(rm) = running_mean {
        rec.save("running_mean", rm)?;
    }
    if let Some(rv) = running_var {
        rec.save("running_var", rv)?;
    }
    rec.save("result1", &save_mean)?;
    rec.save("result2", &save_invstd)?;
    let (has_w, has_rm) = (weight.is_some(), running_mean.is_some());
    let ndim = x.ndim();
    let dims = channel_dims(ndim);
    rec.finish("NativeBatchNormBackward0", &[&out], Box::new(move |ctx| {
        let g = ctx.grad();
        let x = ctx.saved(0);
        let w = has_w.then(|| ctx.saved(1).clone());
        let rest = 1 + has_w as usize;
        if (training || !has_rm) && !crate::autograd::mode::is_grad_enabled() {
            // first order: one fused kernel where the device has it
            let operands: Vec<&Tensor> = [Some(g), Some(x), w.as_ref()].into_iter().flatten().collect();
            if let Some((gi, gwt, gb)) = crate::device::backend_for(&operands)?.batch_norm_backward(g, x, w.as_ref(), eps)? {
                return Ok(vec![ctx.needs(0).then_some(gi), ctx.needs(1).then_some(gwt), ctx.needs(2).then_some(gb)]);
            }
        }
        let w_b = w.as_ref().map(|w| per_channel(w, ndim)).transpose()?;
        let gw = match &w_b {
            Some(w) => fm::mul(g, w)?,
            None => g.clone(),
        };
        // Evaluation uses the running statistics, which are constants of the graph.
        let (xhat, grad_input) = if training || !has_rm {
            let (xhat, _) = normalize(x, &dims, eps)?;
            let gi = if ctx.needs(0) { Some(normalized_input_grad(&gw, x, &dims, eps)?) } else { None };
            (xhat, gi)
        } else {
            let (rm, rv) = (ctx.saved(rest), ctx.saved(rest + 1));
            let invstd = per_channel(&crate::ops::unary::unary_raw(UnaryOp::Rsqrt, &fm::add_s(rv, eps)?)?, ndim)?;
            let xhat = fm::mul(&fm::sub(x, &per_channel(rm, ndim)?)?, &invstd)?;
            let gi = if ctx.needs(0) { Some(fm::mul(&gw, &invstd)?) } else { None };
            (xhat, gi)
        };
        let grad_weight = if ctx.needs(1) { Some(sum_over(&fm::mul(g, &xhat)?, &dims)?) } else { None };
        let grad_bias = if ctx.needs(2) { Some(sum_over(g, &dims)?) } else { None };
        Ok(vec![grad_input, grad_weight, grad_bias])
    }))?;
    Ok(out)
}

// ----- layer_norm -----

fn check_layer_norm(x: &Tensor, normalized_shape: &[usize], weight: Option<&Tensor>, bias: Option<&Tensor>) -> Result<()> {
    if normalized_shape.is_empty() {
        return Err(Error::Runtime(format!(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least one element, but got normalized_shape = {}",
            fmt_shape(normalized_shape)
        )));
    }
    for (name, t) in [("weight", weight), ("bias", bias)] {
        if let Some(t) = t {
            if t.shape() != normalized_shape {
                return Err(Error::Runtime(format!(
                    "Expected {} to be of same shape as normalized_shape, but got {} of shape {} and normalized_shape = {}",
                    name,
                    name,
                    fmt_shape(t.shape()),
                    fmt_shape(normalized_shape)
                )));
            }
        }
    }
    let k = normalized_shape.len();
    if x.ndim() < k || &x.shape()[x.ndim() - k..] != normalized_shape {
        let dims: Vec<String> = normalized_shape.iter().map(|d| d.to_string()).collect();
        return Err(Error::Runtime(format!(
            "Given normalized_shape={}, expected input with shape [*, {}], but got input of size{}",
            fmt_shape(normalized_shape),
            dims.join(", "),
            fmt_shape(x.shape())
        )));
    }
    same_dtype(x, &[weight, bias])?;
    if !x.dtype().is_floating() {
        return Err(Error::NotImplemented(format!("\"LayerNormKernelImpl\" not implemented for '{}'", x.dtype().scalar_type_name())));
    }
    Ok(())
}

/// `torch.native_layer_norm`: (output, mean, rstd); the statistics have the input's leading
/// dims followed by ones.
pub fn layer_norm_raw(x: &Tensor, normalized_shape: &[usize], weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64) -> Result<(Tensor, Tensor, Tensor)> {
    check_layer_norm(x, normalized_shape, weight, bias)?;
    let operands: Vec<&Tensor> = [Some(x), weight, bias].into_iter().flatten().collect();
    crate::device::backend_for(&operands)?.layer_norm(x, normalized_shape, weight, bias, eps)
}

/// The CPU backend's `layer_norm`: one row at a time in f64, rows in parallel.
pub(crate) fn layer_norm_cpu(x: &Tensor, normalized_shape: &[usize], weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64) -> Result<(Tensor, Tensor, Tensor)> {
    let m: usize = normalized_shape.iter().product();
    let k = normalized_shape.len();
    let rows: usize = x.shape()[..x.ndim() - k].iter().product();
    let xs = f64s(x)?;
    let w = weight.map(f64s).transpose()?;
    let b = bias.map(f64s).transpose()?;
    let mut out = crate::alloc::try_vec(x.numel(), 0.0f64)?;
    // An empty normalized shape has no mean: NaN statistics, as torch.
    let mut stats = vec![(f64::NAN, f64::NAN); rows];
    if m > 0 {
        let min_len = if x.numel() < PAR_MIN { usize::MAX } else { 1 };
        out.par_chunks_mut(m).zip(stats.par_iter_mut()).with_min_len(min_len).enumerate().for_each(|(r, (dst, st))| {
            let src = &xs[r * m..(r + 1) * m];
            let mean = src.iter().sum::<f64>() / m as f64;
            let var = src.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / m as f64;
            let rstd = 1.0 / (var + eps).sqrt();
            for (j, (o, &v)) in dst.iter_mut().zip(src).enumerate() {
                let y = (v - mean) * rstd;
                *o = y * w.as_ref().map_or(1.0, |w| w[j]) + b.as_ref().map_or(0.0, |b| b[j]);
            }
            *st = (mean, rstd);
        });
    }
    let mut stat_shape = x.shape()[..x.ndim() - k].to_vec();
    stat_shape.extend(std::iter::repeat_n(1, k));
    let dt = x.dtype();
    let mean = from_f64s(stats.iter().map(|s| s.0).collect(), &stat_shape, dt)?;
    let rstd = from_f64s(stats.iter().map(|s| s.1).collect(), &stat_shape, dt)?;
    Ok((from_f64s(out, x.shape(), dt)?, mean, rstd))
}

/// Differentiable `layer_norm` (NativeLayerNormBackward0: saves input, weight, bias, mean
/// and rstd).
pub fn layer_norm(x: &Tensor, normalized_shape: &[usize], weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x), weight, bias])?;
    let (out, mean, rstd) = layer_norm_raw(x, normalized_shape, weight, bias, eps)?;
    let Some(mut rec) = Recorder::new(&[Some(x), weight, bias])? else { return Ok(out) };
    rec.value("normalized_shape", py_ints(normalized_shape));
    rec.save("input", x)?;
    if let Some(w) = weight {
        rec.save("weight", w)?;
    }
    if let Some(b) = bias {
        rec.save("bias", b)?;
    }
    rec.save("result1", &mean)?;
    rec.save("result2", &rstd)?;
    let has_w = weight.is_some();
    let nd = x.ndim();
    let k = normalized_shape.len();
    let norm_dims: Vec<i64> = ((nd - k) as i64..nd as i64).collect();
    let lead_dims: Vec<i64> = (0..(nd - k) as i64).collect();
    rec.finish("NativeLayerNormBackward0", &[&out], Box::new(move |ctx| {
        let (g, x) = (ctx.grad(), ctx.saved(0));
        let gw = if has_w { fm::mul(g, ctx.saved(1))? } else { g.clone() };
        let grad_input = if ctx.needs(0) { Some(normalized_input_grad(&gw, x, &norm_dims, eps)?) } else { None };
        let grad_weight = if ctx.needs(1) {
            let (xhat, _) = normalize(x, &norm_dims, eps)?;
            Some(sum_over(&fm::mul(g, &xhat)?, &lead_dims)?)
        } else {
            None
        };
        let grad_bias = if ctx.needs(2) { Some(sum_over(g, &lead_dims)?) } else { None };
        Ok(vec![grad_input, grad_weight, grad_bias])
    }))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    #[test]
    fn batch_norm_values_and_running_stats() {
        let x = vals(vec![1., 2., 3., 5., 7., 11.], &[3, 2]);
        let rm = vals(vec![0., 0.], &[2]);
        let rv = vals(vec![1., 1.], &[2]);
        let v0 = rm.version();
        let (y, m, _) = batch_norm_raw(&x, Some(&rm), Some(&rv), None, None, true, 0.1, 0.0).unwrap();
        assert_eq!(m.to_vec::<f64>().unwrap(), vec![11. / 3., 6.]);
        assert_eq!(rm.version(), v0, "torch does not bump running stats' versions");
        assert!(close(&rm.to_vec::<f64>().unwrap(), &[0.1 * 11. / 3., 0.6]));
        // unbiased variance of column 1 (2, 5, 11): mean 6, squares 16+1+25 = 42, / 2 = 21
        assert!(close(&rv.to_vec::<f64>().unwrap()[1..], &[0.9 + 0.1 * 21.0]));
        let col0: Vec<f64> = y.to_vec::<f64>().unwrap().iter().step_by(2).copied().collect();
        assert!(col0.iter().sum::<f64>().abs() < 1e-12);
    }

    #[test]
    fn norms_pass_gradcheck() {
        let x = || rand_leaf(&[3, 2, 4], 5);
        let w = || rand_leaf(&[2], 6);
        let b = || rand_leaf(&[2], 7);
        gradcheck("bn train", &|t| batch_norm(&t[0], None, None, Some(&t[1]), Some(&t[2]), true, 0.1, 1e-5), &[x(), w(), b()], true);
        let rm = vals(vec![0.5, -0.5], &[2]);
        let rv = vals(vec![2.0, 0.5], &[2]);
        gradcheck("bn eval", &|t| batch_norm(&t[0], Some(&rm), Some(&rv), Some(&t[1]), Some(&t[2]), false, 0.1, 1e-5), &[x(), w(), b()], true);
        gradcheck("bn no affine", &|t| batch_norm(&t[0], None, None, None, None, true, 0.1, 1e-5), &[rand_leaf(&[4, 3], 8)], true);
        let lw = || rand_leaf(&[2, 4], 9);
        gradcheck("ln", &|t| layer_norm(&t[0], &[2, 4], Some(&t[1]), Some(&t[2]), 1e-5), &[x(), lw(), rand_leaf(&[2, 4], 10)], true);
        gradcheck("ln last", &|t| layer_norm(&t[0], &[4], None, None, 1e-5), &[x()], true);
        let y = batch_norm(&x(), None, None, None, None, true, 0.1, 1e-5).unwrap();
        assert_eq!(node_name(&y), "NativeBatchNormBackward0");
        let y = layer_norm(&x(), &[4], None, None, 1e-5).unwrap();
        assert_eq!(node_name(&y), "NativeLayerNormBackward0");
    }

    #[test]
    fn errors_match_torch() {
        let x = vals(vec![0.; 8], &[4, 2]);
        let e = batch_norm_raw(&x, Some(&vals(vec![0.; 3], &[3])), None, None, None, true, 0.1, 1e-5).unwrap_err();
        assert_eq!(e.to_string(), "running_mean should contain 2 elements not 3");
        let e = batch_norm_raw(&x, None, None, None, None, false, 0.1, 1e-5).unwrap_err();
        assert_eq!(e.to_string(), "running_mean must be defined in evaluation mode");
        let e = layer_norm_raw(&x, &[4], None, None, 1e-5).unwrap_err();
        assert_eq!(e.to_string(), "Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[4, 2]");
    }
}
