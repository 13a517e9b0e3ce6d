//! `sum`, `mean`, `prod`: sum's dtype rule (integers and bool sum to int64), SumBackward0/1 and
//! MeanBackward0/1 (the gradient expanded back over the reduced dims), ProdBackward0/1 (saves
//! self and result; zeros are handled so that double backward is right).

use crate::ops::formulas as fm;
use crate::autograd::Recorder;
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::ops::binary::{self, BinaryOp};
use crate::ops::{views, Arg as OpArg};
use crate::shape::wrap_dim;
use crate::tensor::Tensor;
use super::{dim_mask, launch, new_out, py_bool, py_ints, py_opt_ints, reduced_dims, reduced_shape, DimCheck, Reduction};

/// `sum(dim, keepdim, dtype=)`: integers and bool sum to int64 unless `dtype` says otherwise.
pub fn sum_raw(x: &Tensor, dims: Option<&[i64]>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let mask = dim_mask(dims, x.ndim(), true, DimCheck::WrapAllFirst)?;
    let out_dtype = dtype.unwrap_or(if x.dtype().is_integral(true) { DType::Int64 } else { x.dtype() });
    Ok(sum_prod::<false>(x, &mask, keepdim, out_dtype, false)?)
}

/// `prod()` or `prod(dim, keepdim)`, with sum's dtype rule.
pub fn prod_raw(x: &Tensor, dim: Option<i64>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let dims: Option<Vec<i64>> = dim.map(|d| vec![d]);
    let mask = dim_mask(dims.as_deref(), x.ndim(), true, DimCheck::WrapAllFirst)?;
    let out_dtype = dtype.unwrap_or(if x.dtype().is_integral(true) { DType::Int64 } else { x.dtype() });
    Ok(sum_prod::<true>(x, &mask, keepdim && dim.is_some(), out_dtype, false)?)
}

/// `mean(dim, keepdim, dtype=)`: floating inputs (or a floating `dtype`) only.
pub fn mean_raw(x: &Tensor, dims: Option<&[i64]>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let (what, d) = match dtype {
        Some(d) => ("Optional", d),
        None => ("Input", x.dtype()),
    };
    if !d.is_floating() {
        return Err(Error::Runtime(format!(
            "mean(): could not infer output dtype. {} dtype must be either a floating point or complex dtype. Got: {}",
            what,
            d.scalar_type_name()
        )));
    }
    let mask = dim_mask(dims, x.ndim(), true, DimCheck::WrapAllFirst)?;
    Ok(sum_prod::<false>(x, &mask, keepdim, d, true)?)
}

fn sum_prod<const PROD: bool>(x: &Tensor, mask: &[bool], keepdim: bool, out_dtype: DType, is_mean: bool) -> crate::error::Result<Tensor> {
    let out = new_out(x, &reduced_shape(x.shape(), mask, keepdim), out_dtype)?;
    let op = if is_mean { Reduction::Mean } else if PROD { Reduction::Prod } else { Reduction::Sum };
    launch(op, Some(&out), None, x, mask)?;
    Ok(out)
}

fn div_s(a: &Tensor, v: f64) -> Result<Tensor> {
    binary::binary(BinaryOp::Div, &OpArg::Tensor(a.clone()), &OpArg::Scalar(Scalar::Float(v)), None)
}


/// Differentiable `sum(dim, keepdim, dtype=)`: SumBackward0 (no dims) / SumBackward1; the
/// gradient is expanded back over the reduced dims.
pub fn sum(x: &Tensor, dims: Option<&[i64]>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(x)])?;
    let out = sum_raw(x, dims, keepdim, dtype)?;
    let Some(mut rec) = rec else { return Ok(out) };
    let name = if dims.is_none() && !keepdim { "SumBackward0" } else { "SumBackward1" };
    if name == "SumBackward1" {
        rec.value("dim", py_opt_ints(dims));
        rec.value("keepdim", py_bool(keepdim));
    }
    rec.value("self_sym_sizes", py_ints(x.shape()));
    let rd = unsqueezed_dims(x.ndim(), dims)?;
    let shape = x.shape().to_vec();
    rec.finish(name, &[&out], Box::new(move |ctx| Ok(vec![Some(fm::expand_back(ctx.grad(), &shape, &rd, keepdim)?)])))?;
    Ok(out)
}

/// Differentiable `nansum(dim, keepdim, dtype=)` (NansumBackward0): sum with every NaN counted
/// as 0 (integers and bool: sum itself). torch's nansum_backward: the gradient cast to self's
/// dtype, expanded back as sum's, times `self.isnan().logical_not()` (so a NaN's gradient is 0,
/// with the sign a product gives).
pub fn nansum(x: &Tensor, dims: Option<&[i64]>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    let rec = Recorder::new(&[Some(x)])?;
    let out = if x.dtype().is_floating() {
        let nan = fm::cmp(BinaryOp::Ne, x, &OpArg::Tensor(x.clone()))?;
        let zeros = fm::zeros_like(x)?;
        sum_raw(&binary::where_raw(&nan, &OpArg::Tensor(zeros), &OpArg::Tensor(x.clone()))?, dims, keepdim, dtype)?
    } else {
        sum_raw(x, dims, keepdim, dtype)?
    };
    let Some(mut rec) = rec else { return Ok(out) };
    rec.value("dim", py_opt_ints(dims));
    rec.value("keepdim", py_bool(keepdim));
    rec.save("self", x)?;
    let rd = unsqueezed_dims(x.ndim(), dims)?;
    let (shape, self_dtype) = (x.shape().to_vec(), x.dtype());
    rec.finish("NansumBackward0", &[&out], Box::new(move |ctx| {
        let x = ctx.saved(0);
        let g = fm::cast(ctx.grad(), self_dtype)?;
        let kept = fm::cmp(BinaryOp::Eq, x, &OpArg::Tensor(x.clone()))?; // not NaN
        Ok(vec![Some(fm::mul(&fm::expand_back(&g, &shape, &rd, keepdim)?, &kept)?)])
    }))?;
    Ok(out)
}

/// The dims torch's `sum_backward` unsqueezes the gradient at before expanding it: none for a
/// reduction of everything (`dim` absent or empty: the 0-d gradient is expanded directly, one
/// ExpandBackward0 node), else the reduced dims.
pub(super) fn unsqueezed_dims(ndim: usize, dims: Option<&[i64]>) -> Result<Vec<usize>> {
    match dims {
        None | Some([]) => Ok(vec![]),
        Some(_) => reduced_dims(ndim, dims, DimCheck::WrapAllFirst),
    }
}

/// Differentiable `mean`: MeanBackward0 / MeanBackward1, the expanded gradient over the count.
pub fn mean(x: &Tensor, dims: Option<&[i64]>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(x)])?;
    let out = mean_raw(x, dims, keepdim, dtype)?;
    let Some(mut rec) = rec else { return Ok(out) };
    let name = if dims.is_none() && !keepdim { "MeanBackward0" } else { "MeanBackward1" };
    if name == "MeanBackward1" {
        rec.value("dim", py_opt_ints(dims));
        rec.value("keepdim", py_bool(keepdim));
    }
    rec.value("self_sym_numel", x.numel());
    rec.value("self_sym_sizes", py_ints(x.shape()));
    let n = reduced_dims(x.ndim(), dims, DimCheck::WrapAllFirst)?.iter().map(|&d| x.shape()[d]).product::<usize>() as f64;
    let rd = unsqueezed_dims(x.ndim(), dims)?;
    let shape = x.shape().to_vec();
    rec.finish(name, &[&out], Box::new(move |ctx| Ok(vec![Some(mean_backward(ctx.grad(), &shape, &rd, keepdim, n)?)])))?;
    Ok(out)
}

/// torch's mean_backward: sum_backward(grad) / n, the division after the expansion (`rd`: the
/// dims to unsqueeze first, as `unsqueezed_dims` gives them; `n`: the count averaged over).
pub(super) fn mean_backward(g: &Tensor, shape: &[usize], rd: &[usize], keepdim: bool, n: f64) -> Result<Tensor> {
    div_s(&fm::expand_back(g, shape, rd, keepdim)?, n)
}

/// torch's prod_backward: `grad * result / self` when no element is zero; otherwise
/// `prod_safe_zeros_backward`, each element's product of the others from two exclusive
/// cumprods (so NaN, inf and -0.0 among the others give torch's values, and double backward
/// works); for the full product, more than one zero outside create_graph gives zeros.
fn prod_backward(g: &Tensor, x: &Tensor, r: &Tensor, dim: Option<usize>, keepdim: bool) -> Result<Tensor> {
    if x.ndim() == 0 {
        return Ok(g.clone());
    }
    let (g, r) = match dim {
        Some(d) if !keepdim => (views::unsqueeze(g, d as i64)?, views::unsqueeze(r, d as i64)?),
        _ => (g.clone(), r.clone()),
    };
    let zero = fm::cmp_s(BinaryOp::Eq, x, 0.0)?;
    let zeros = sum_raw(&zero, None, false, None)?.item()?.to_f64();
    if zeros == 0.0 {
        return fm::mul(&g, &fm::div(&r, x)?);
    }
    match dim {
        Some(d) => prod_safe_zeros_backward(&g, x, d),
        None if zeros > 1.0 && !crate::autograd::mode::is_grad_enabled() => fm::zeros_like(x),
        None => {
            let flat = views::reshape(x, &[-1])?;
            let shape: Vec<i64> = x.shape().iter().map(|&n| n as i64).collect();
            views::reshape(&prod_safe_zeros_backward(&g, &flat, 0)?, &shape)
        }
    }
}

/// `grad * (exclusive cumprod * reverse exclusive cumprod)` along `d`, torch's formula.
fn prod_safe_zeros_backward(g: &Tensor, x: &Tensor, d: usize) -> Result<Tensor> {
    use crate::ops::scan::{cum, ScanOp::Cumprod};
    use crate::ops::shape_ops::flip;
    let n = x.shape()[d] as i64;
    let di = d as i64;
    let mut one_shape = x.shape().to_vec();
    one_shape[d] = 1;
    let ones = fm::add_s(&fm::zeros(&one_shape, x.dtype(), x.device())?, 1.0)?;
    let cat = |a: &Tensor, b: Tensor| crate::ops::join::cat(&[a.clone(), b], di);
    let left = cum(Cumprod, &cat(&ones, views::narrow(x, di, 0, n - 1)?)?, di, None)?;
    let rev = flip(&views::narrow(x, di, 1, n - 1)?, &[di])?;
    let right = flip(&cum(Cumprod, &cat(&ones, rev)?, di, None)?, &[di])?;
    fm::mul(g, &fm::mul(&left, &right)?)
}

/// Differentiable `prod`: ProdBackward0 (all) / ProdBackward1 (one dim); saves self and result.
pub fn prod(x: &Tensor, dim: Option<i64>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(x)])?;
    let out = prod_raw(x, dim, keepdim, dtype)?;
    let Some(mut rec) = rec else { return Ok(out) };
    let name = if dim.is_some() { "ProdBackward1" } else { "ProdBackward0" };
    if let Some(d) = dim {
        rec.value("dim", d);
        rec.value("keepdim", py_bool(keepdim));
    }
    rec.save("self", x)?;
    rec.save_output("result", &out, 0);
    let wd = match dim {
        Some(d) if x.ndim() > 0 => Some(wrap_dim(d, x.ndim())?),
        _ => None,
    };
    let kd = keepdim && dim.is_some();
    rec.finish(name, &[&out], Box::new(move |ctx| Ok(vec![Some(prod_backward(ctx.grad(), ctx.saved(0), ctx.saved(1), wd, kd)?)])))?;
    Ok(out)
}

#[cfg(test)]
mod grad_tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    #[test]
    fn sum_mean_names_and_gradients() {
        let x = leaf(vec![1., 2., 3., 4., 5., 6.], &[2, 3]);
        let s = sum(&x, None, false, None).unwrap();
        assert_eq!(node_name(&s), "SumBackward0");
        let s1 = sum(&x, Some(&[1]), false, None).unwrap();
        assert_eq!(node_name(&s1), "SumBackward1");
        backward(&s1, Some(vals(vec![1., 2.], &[2])));
        assert_eq!(grad(&x), vec![1., 1., 1., 2., 2., 2.]);
        let m = mean(&x, Some(&[0]), true, None).unwrap();
        assert_eq!(node_name(&m), "MeanBackward1");
        x.set_grad(None);
        backward(&m, Some(vals(vec![2., 4., 6.], &[1, 3])));
        assert_eq!(grad(&x), vec![1., 2., 3., 1., 2., 3.]);
        // sum(dtype=float32) of a float64 input: the gradient comes back as float64.
        x.set_grad(None);
        let s = sum(&x, None, false, Some(DType::Float32)).unwrap();
        backward(&s, None);
        assert_eq!(grad(&x), vec![1.; 6]);
    }

    #[test]
    fn prod_with_and_without_zeros() {
        let x = leaf(vec![1., 0., 3., 0., 0., 2., 1., 2., 3.], &[3, 3]);
        let p = prod(&x, Some(1), false, None).unwrap();
        assert_eq!(node_name(&p), "ProdBackward1");
        backward(&p, None);
        assert_eq!(grad(&x), vec![0., 3., 0., 0., 0., 0., 6., 3., 2.]);
        let y = leaf(vec![2., 3., 4.], &[3]);
        let p = prod(&y, None, false, None).unwrap();
        assert_eq!(node_name(&p), "ProdBackward0");
        backward(&p, None);
        assert_eq!(grad(&y), vec![12., 8., 6.]);
        // Second derivative through a single zero: d2/dx0 dx1 of x0*x1*x2 at (0, 2, 5) is x2.
        let z = leaf(vec![0., 2., 5.], &[3]);
        let p = prod(&z, None, false, None).unwrap();
        let g = grad_graph(&p, &[&z]).remove(0);
        assert_eq!(g.to_vec::<f64>().unwrap(), vec![10., 0., 0.]);
        let gg = grad_graph(&sum(&g, None, false, None).unwrap(), &[&z]).remove(0);
        assert_eq!(gg.to_vec::<f64>().unwrap(), vec![7., 5., 2.]);
    }
}
