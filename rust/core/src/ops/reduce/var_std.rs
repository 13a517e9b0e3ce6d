//! `var` / `std` with `correction`: a mean pass, then squared deviations; VarBackward0 (saves
//! self) and StdBackward0 (also its result).

use crate::ops::formulas as fm;
use crate::autograd::Recorder;
use crate::dtype::Scalar;
use crate::error::{Error, Result};
use crate::ops::binary::{self, BinaryOp};
use crate::shape::wrap_dim;
use crate::tensor::Tensor;
use super::{dim_mask, float_mask, launch, mean, new_out, num, py_bool, py_number, py_opt_ints, reduced_shape, tensor_arg, unsqueeze_dims, zero_at, DimCheck, Reduction};

/// `var` / `std` (`sqrt`) over `dims` (None or empty: all) with `correction` (1 = unbiased).
/// Also says whether torch warns that the degrees of freedom are <= 0.
pub fn var_raw(x: &Tensor, dims: Option<&[i64]>, correction: f64, keepdim: bool, sqrt: bool) -> Result<(Tensor, bool)> {
    if !x.dtype().is_floating() {
        return Err(Error::Runtime("std and var only support floating point and complex dtypes".into()));
    }
    let mask = dim_mask(dims, x.ndim(), true, DimCheck::InTurn)?;
    let out = new_out(x, &reduced_shape(x.shape(), &mask, keepdim), x.dtype())?;
    let out_numel = out.numel();
    let per_output = x.numel().checked_div(out_numel).unwrap_or(0);
    let warn = per_output as f64 - correction <= 0.0;
    if x.numel() == 0 {
        crate::device::backend_for(&[&out])?.fill(&out, crate::Scalar::Float(f64::NAN))?;
        return Ok((out, warn));
    }
    launch(Reduction::Var { correction, std: sqrt }, Some(&out), None, x, &mask)?;
    Ok((out, warn))
}

/// torch's var_backward: `2 / (n - correction) * grad * (self - mean)`. Without dims (or for a
/// 0-d input) the degrees of freedom are checked: <= 0 gives NaN where self equals its mean and
/// inf elsewhere. With dims, `n` is the product of the listed sizes (1 for an empty list).
fn var_backward(g: &Tensor, x: &Tensor, dims: Option<&[i64]>, correction: f64, keepdim: bool) -> Result<Tensor> {
    let Some(d) = dims.filter(|_| x.ndim() > 0) else {
        let dof = x.numel() as f64 - correction;
        let m = mean(x, None, false, None)?;
        if dof <= 0.0 {
            let eq = fm::cmp(BinaryOp::Eq, x, &tensor_arg(&m))?;
            let c = binary::where_raw(&eq, &num(f64::NAN), &num(f64::INFINITY))?;
            return fm::mul(g, &float_mask(&c, x.dtype())?);
        }
        return fm::mul(&fm::mul_s(g, 2.0 / dof)?, &fm::sub(x, &m)?);
    };
    let mut wrapped = d.iter().map(|&v| wrap_dim(v, x.ndim())).collect::<Result<Vec<_>>>()?;
    let rnumel = wrapped.iter().map(|&w| x.shape()[w]).product::<usize>() as f64;
    wrapped.sort_unstable();
    let g = if !keepdim && x.ndim() > 1 { unsqueeze_dims(g, &wrapped, false)? } else { g.clone() };
    let m = mean(x, Some(d), true, None)?;
    fm::mul(&fm::mul_s(&g, 2.0 / (rnumel - correction))?, &fm::sub(x, &m)?)
}

/// What var/std and var_mean/std_mean nodes keep: correction (an int when whole), dim, keepdim
/// and self.
fn record_args(rec: &mut Recorder, x: &Tensor, dims: Option<&[i64]>, correction: f64, keepdim: bool) -> Result<()> {
    rec.value("correction", py_number(if correction.fract() == 0.0 { Scalar::Int(correction as i64) } else { Scalar::Float(correction) }));
    rec.value("dim", py_opt_ints(dims));
    rec.value("keepdim", py_bool(keepdim));
    rec.save("self", x)
}

/// torch's std_backward before var's: `grad / (2 * std)`, 0 where the std is 0.
fn std_to_var_grad(g: &Tensor, std: &Tensor) -> Result<Tensor> {
    zero_at(&fm::div(g, &fm::mul_s(std, 2.0)?)?, &fm::cmp_s(BinaryOp::Eq, std, 0.0)?)
}

/// Differentiable `var`/`std` (VarBackward0 saves self; StdBackward0 also its result).
pub fn var(x: &Tensor, dims: Option<&[i64]>, correction: f64, keepdim: bool, sqrt: bool) -> Result<(Tensor, bool)> {
    crate::autograd::precheck(&[Some(x)])?;
    let (out, warn) = var_raw(x, dims, correction, keepdim, sqrt)?;
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok((out, warn)) };
    record_args(&mut rec, x, dims, correction, keepdim)?;
    if sqrt {
        rec.save_output("result", &out, 0);
    }
    let d: Option<Vec<i64>> = dims.map(|d| d.to_vec());
    let name = if sqrt { "StdBackward0" } else { "VarBackward0" };
    rec.finish(name, &[&out], Box::new(move |ctx| {
        let (g, x) = (ctx.grad(), ctx.saved(0));
        let g = if sqrt { std_to_var_grad(g, ctx.saved(1))? } else { g.clone() };
        Ok(vec![Some(var_backward(&g, x, d.as_deref(), correction, keepdim)?)])
    }))?;
    Ok((out, warn))
}

/// `var_mean` / `std_mean` (`sqrt`): both statistics over the same dims, one node for the two
/// outputs (VarMeanBackward0 saves self; StdMeanBackward0 also `result0`, the std). Its
/// gradient is torch's var_mean_backward / std_mean_backward: var's (or std's) gradient plus
/// mean's, for whichever outputs received one. Also says whether torch warns (as `var_raw`).
pub fn var_mean(x: &Tensor, dims: Option<&[i64]>, correction: f64, keepdim: bool, sqrt: bool) -> Result<(Tensor, Tensor, bool)> {
    crate::autograd::precheck(&[Some(x)])?;
    if !x.dtype().is_floating() {
        let name = if sqrt { "std_mean" } else { "var_mean" };
        return Err(Error::Runtime(format!("{name} only support floating point and complex dtypes")));
    }
    let (spread, warn) = var_raw(x, dims, correction, keepdim, sqrt)?;
    let centre = super::mean_raw(x, dims, keepdim, None)?;
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok((spread, centre, warn)) };
    record_args(&mut rec, x, dims, correction, keepdim)?;
    if sqrt {
        rec.save_output("result0", &spread, 0);
    }
    let d: Option<Vec<i64>> = dims.map(|d| d.to_vec());
    let rd = super::sum_prod::unsqueezed_dims(x.ndim(), dims)?;
    let reduced = match dims {
        None | Some([]) => x.numel(),
        Some(_) => super::reduced_dims(x.ndim(), dims, DimCheck::WrapAllFirst)?.iter().map(|&i| x.shape()[i]).product(),
    } as f64;
    let shape = x.shape().to_vec();
    let name = if sqrt { "StdMeanBackward0" } else { "VarMeanBackward0" };
    rec.finish(name, &[&spread, &centre], Box::new(move |ctx| {
        let x = ctx.saved(0);
        let mut gself: Option<Tensor> = None;
        if let Some(g) = ctx.grads[0].as_ref() {
            let g = if sqrt { std_to_var_grad(g, ctx.saved(1))? } else { g.clone() };
            gself = Some(var_backward(&g, x, d.as_deref(), correction, keepdim)?);
        }
        if let Some(g) = ctx.grads[1].as_ref() {
            let aux = super::sum_prod::mean_backward(g, &shape, &rd, keepdim, reduced)?;
            gself = Some(match gself {
                Some(v) => fm::add(&v, &aux)?,
                None => aux,
            });
        }
        Ok(vec![gself])
    }))?;
    Ok((spread, centre, warn))
}

#[cfg(test)]
mod grad_tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    #[test]
    fn var_std_gradients() {
        let x = leaf(vec![1., 2., 4., 7.], &[2, 2]);
        let (v, _) = var(&x, Some(&[1]), 1.0, false, false).unwrap();
        assert_eq!(node_name(&v), "VarBackward0");
        backward(&v, None);
        // 2/(n-1) * (x - mean): rows [1,2] (mean 1.5) and [4,7] (mean 5.5)
        assert_eq!(grad(&x), vec![-1., 1., -3., 3.]);
        x.set_grad(None);
        let (s, _) = var(&x, None, 0.0, false, true).unwrap();
        assert_eq!(node_name(&s), "StdBackward0");
        backward(&s, None);
        let sd = s.to_vec::<f64>().unwrap()[0];
        let want: Vec<f64> = [1., 2., 4., 7.].iter().map(|v| (v - 3.5) / (4.0 * sd)).collect();
        assert!(close(&grad(&x), &want));
    }

}
