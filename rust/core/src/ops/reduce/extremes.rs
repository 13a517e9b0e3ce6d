//! `amax`/`amin`, `max`/`min` (of everything, or along a dim with indices) and
//! `argmax`/`argmin`: torch's empty-input checks, and the backward formulas (ties share the
//! gradient evenly; `max(dim)` scatters it to the saved indices).

use crate::ops::formulas as fm;
use crate::autograd::Recorder;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::binary::BinaryOp;
use crate::ops::copy::contiguous_raw;
use crate::ops::views;
use crate::shape::wrap_dim;
use crate::tensor::Tensor;
use super::{as_i64, dim_mask, float_mask, launch, new_out, py_bool, py_ints, reduced_dims, reduced_shape, sum_raw, tensor_arg, unsqueeze_dims, DimCheck, ReduceOp, Reduction};

/// torch's check for a reduction with no identity over an empty input (`dims` as given).
fn zero_numel_check(x: &Tensor, dims: &[i64], name: &str) -> Result<()> {
    if x.numel() != 0 {
        return Ok(());
    }
    if dims.is_empty() {
        return Err(Error::Runtime(format!(
            "{}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.",
            name
        )));
    }
    for &d in dims {
        let w = wrap_dim(d, x.ndim())?;
        if x.shape()[w] == 0 {
            return Err(Error::Index(format!("{}(): Expected reduction dim {} to have non-zero size.", name, d)));
        }
    }
    Ok(())
}

/// `amax(dim=(), keepdim)` / `amin`: an empty `dims` reduces every dim.
pub fn amax_raw(x: &Tensor, dims: &[i64], keepdim: bool, is_max: bool) -> Result<Tensor> {
    let op = if is_max { ReduceOp::Amax } else { ReduceOp::Amin };
    zero_numel_check(x, dims, op.name())?;
    let mask = dim_mask(Some(dims), x.ndim(), true, DimCheck::WrapAllFirst)?;
    extreme(x, &mask, keepdim, is_max)
}

/// `max()` / `min()` of every element: a 0-d tensor.
pub fn max_all_raw(x: &Tensor, is_max: bool) -> Result<Tensor> {
    let op = if is_max { ReduceOp::Max } else { ReduceOp::Min };
    zero_numel_check(x, &[], op.name())?;
    Ok(extreme(x, &vec![true; x.ndim()], false, is_max)?)
}

fn extreme(x: &Tensor, mask: &[bool], keepdim: bool, is_max: bool) -> crate::error::Result<Tensor> {
    let out = new_out(x, &reduced_shape(x.shape(), mask, keepdim), x.dtype())?;
    launch(if is_max { Reduction::Amax } else { Reduction::Amin }, Some(&out), None, x, mask)?;
    Ok(out)
}

/// `max(dim, keepdim)` / `min`: (values, indices) of the first extreme element (or first NaN).
pub fn max_dim_raw(x: &Tensor, dim: i64, keepdim: bool, is_max: bool) -> Result<(Tensor, Tensor)> {
    let op = if is_max { ReduceOp::Max } else { ReduceOp::Min };
    let w = wrap_dim(dim, x.ndim())?;
    zero_numel_check(x, &[w as i64], op.name())?;
    let mask = dim_mask(Some(&[dim]), x.ndim(), true, DimCheck::WrapAllFirst)?;
    let shape = reduced_shape(x.shape(), &mask, keepdim);
    let (values, indices) = (new_out(x, &shape, x.dtype())?, new_out(x, &shape, DType::Int64)?);
    arg_extreme(x, &mask, Some(&values), &indices, is_max)?;
    Ok((values, indices))
}

/// `argmax(dim=None, keepdim)` / `argmin`: with no dim, the flat (row-major) index.
pub fn argmax(x: &Tensor, dim: Option<i64>, keepdim: bool, is_max: bool) -> Result<Tensor> {
    let op = if is_max { ReduceOp::Argmax } else { ReduceOp::Argmin };
    if x.dtype() == DType::Bool {
        return Err(Error::Runtime(format!("{}(): does not support bool input", op.name())));
    }
    match dim {
        Some(d) => {
            let w = wrap_dim(d, x.ndim())?;
            if x.numel() == 0 && x.shape()[w] == 0 {
                return Err(Error::Index(format!("{}(): Expected reduction dim {} to have non-zero size.", op.name(), w)));
            }
            let mask = dim_mask(Some(&[d]), x.ndim(), true, DimCheck::WrapAllFirst)?;
            let indices = new_out(x, &reduced_shape(x.shape(), &mask, keepdim), DType::Int64)?;
            arg_extreme(x, &mask, None, &indices, is_max)?;
            Ok(indices)
        }
        None => {
            if x.numel() == 0 {
                return Err(Error::Index(format!(
                    "{}(): Expected reduction dim to be specified for input.numel() == 0.",
                    op.name()
                )));
            }
            // The flat index counts in logical order: reduce a contiguous 1-d view.
            let c = contiguous_raw(x)?;
            let flat = c.view_as_layout(Layout { shape: smallvec::smallvec![c.numel()], strides: smallvec::smallvec![1], offset: c.layout.offset });
            let shape = if keepdim { vec![1; x.ndim()] } else { vec![] };
            let indices = new_out(x, &shape, DType::Int64)?;
            arg_extreme(&flat, &[true], None, &indices, is_max)?;
            Ok(indices)
        }
    }
}

fn arg_extreme(x: &Tensor, mask: &[bool], values: Option<&Tensor>, indices: &Tensor, is_max: bool) -> Result<()> {
    launch(if is_max { Reduction::Argmax } else { Reduction::Argmin }, values, Some(indices), x, mask)
}

/// Differentiable `amax`/`amin` (AmaxBackward0 / AminBackward0): the gradient is shared evenly
/// among the elements equal to the result.
pub fn amax(x: &Tensor, dims: &[i64], keepdim: bool, is_max: bool) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(x)])?;
    let out = amax_raw(x, dims, keepdim, is_max)?;
    let Some(mut rec) = rec else { return Ok(out) };
    rec.value("dim", py_ints(dims));
    rec.value("keepdim", py_bool(keepdim));
    rec.save("self", x)?;
    rec.save_output("result", &out, 0);
    let rd = reduced_dims(x.ndim(), Some(dims), DimCheck::WrapAllFirst)?;
    let name = if is_max { "AmaxBackward0" } else { "AminBackward0" };
    rec.finish(name, &[&out], Box::new(move |ctx| {
        Ok(vec![Some(shared_among_extremes(ctx.grad(), ctx.saved(0), ctx.saved(1), &rd, keepdim)?)])
    }))?;
    Ok(out)
}

/// torch's `scale_grad_by_count(restore_reduced_dims(grad), restore_reduced_dims(result) ==
/// self, dims)`: the gradient of a reduced extreme `r` shared evenly among the elements of `x`
/// equal to it (`rd`: the reduced dims).
fn shared_among_extremes(g: &Tensor, x: &Tensor, r: &Tensor, rd: &[usize], keepdim: bool) -> Result<Tensor> {
    let g = unsqueeze_dims(g, rd, keepdim)?;
    let r = unsqueeze_dims(r, rd, keepdim)?;
    let mask = float_mask(&fm::cmp(BinaryOp::Eq, x, &tensor_arg(&r))?, g.dtype())?;
    let count = sum_raw(&mask, Some(&as_i64(rd)), true, None)?;
    fm::mul(&fm::div(&g, &count)?, &mask)
}

/// Differentiable `aminmax(dim=None, keepdim)`: (min, max) under one node, AminmaxBackward0
/// (saves self and both results); each result's gradient is shared among its ties, as amin's
/// and amax's, and the two are added.
pub fn aminmax(x: &Tensor, dim: Option<i64>, keepdim: bool) -> Result<(Tensor, Tensor)> {
    crate::autograd::precheck(&[Some(x)])?;
    match dim {
        None if x.numel() == 0 => {
            return Err(Error::Runtime("aminmax(): cannot compute aminmax over an empty dimension as the operation has no identity.".into()))
        }
        Some(d) => {
            let w = wrap_dim(d, x.ndim())?;
            if x.ndim() > 0 && x.shape()[w] == 0 {
                return Err(Error::Index(format!("aminmax: Expected reduction dim {} to have non-zero size.", w)));
            }
        }
        None => {}
    }
    let dims: Vec<i64> = dim.into_iter().collect();
    let mask = dim_mask(Some(&dims), x.ndim(), true, DimCheck::WrapAllFirst)?;
    let (lo, hi) = (extreme(x, &mask, keepdim, false)?, extreme(x, &mask, keepdim, true)?);
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok((lo, hi)) };
    rec.value("dim", dim.map_or_else(|| "None".to_string(), |d| d.to_string()));
    rec.value("keepdim", py_bool(keepdim));
    rec.save("self", x)?;
    rec.save_output("min", &lo, 0);
    rec.save_output("max", &hi, 1);
    let rd = reduced_dims(x.ndim(), Some(&dims), DimCheck::WrapAllFirst)?;
    rec.finish("AminmaxBackward0", &[&lo, &hi], Box::new(move |ctx| {
        let x = ctx.saved(0);
        let mut total: Option<Tensor> = None;
        for (i, r) in [(0, ctx.saved(1)), (1, ctx.saved(2))] {
            if let Some(g) = ctx.grads[i].as_ref() {
                let part = shared_among_extremes(g, x, r, &rd, keepdim)?;
                total = Some(match total {
                    Some(t) => fm::add(&t, &part)?,
                    None => part,
                });
            }
        }
        Ok(vec![total])
    }))?;
    Ok((lo, hi))
}

/// Differentiable `max()`/`min()` of all elements (MaxBackward1 / MinBackward1): torch's
/// evenly_distribute_backward (ties share the gradient; a NaN result goes to the NaNs).
pub fn max_all(x: &Tensor, is_max: bool) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(x)])?;
    let out = max_all_raw(x, is_max)?;
    let Some(mut rec) = rec else { return Ok(out) };
    rec.save("self", x)?;
    rec.save_output("result", &out, 0);
    let name = if is_max { "MaxBackward1" } else { "MinBackward1" };
    rec.finish(name, &[&out], Box::new(move |ctx| {
        let (g, x, r) = (ctx.grad(), ctx.saved(0), ctx.saved(1));
        let mask = if r.item()?.to_f64().is_nan() {
            fm::cmp(BinaryOp::Ne, x, &tensor_arg(x))?
        } else {
            fm::cmp(BinaryOp::Eq, x, &tensor_arg(r))?
        };
        let mask = float_mask(&mask, g.dtype())?;
        let count = sum_raw(&mask, None, false, None)?;
        Ok(vec![Some(fm::mul(&mask, &fm::div(g, &count)?)?)])
    }))?;
    Ok(out)
}

/// Differentiable `max(dim)`/`min(dim)` (MaxBackward0 / MinBackward0): saves the indices; the
/// gradient is scattered to them.
pub fn max_dim(x: &Tensor, dim: i64, keepdim: bool, is_max: bool) -> Result<(Tensor, Tensor)> {
    crate::autograd::precheck(&[Some(x)])?;
    let (mut values, mut indices) = max_dim_raw(x, dim, keepdim, is_max)?;
    if x.ndim() == 1 && !keepdim {
        (values.stale_size0, indices.stale_size0) = (true, true);
    }
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok((values, indices)) };
    rec.value("dim", dim);
    rec.value("keepdim", py_bool(keepdim));
    rec.value("self_sym_sizes", py_ints(x.shape()));
    rec.save("indices", &indices)?;
    let shape = x.shape().to_vec();
    let w = wrap_dim(dim, x.ndim())?;
    let name = if is_max { "MaxBackward0" } else { "MinBackward0" };
    rec.finish(name, &[&values, &indices], Box::new(move |ctx| {
        let (g, idx) = (ctx.grad(), ctx.saved(0));
        if shape.is_empty() {
            return Ok(vec![Some(g.clone())]);
        }
        let (idx, g) = if keepdim { (idx.clone(), g.clone()) } else { (views::unsqueeze_raw(idx, w as i64)?, views::unsqueeze(g, w as i64)?) };
        let z = fm::zeros(&shape, g.dtype(), g.device())?;
        let src = crate::ops::gather::Source::Tensor(g);
        Ok(vec![Some(crate::ops::gather::scatter(&z, w as i64, &idx, &src, None, false)?)])
    }))?;
    Ok((values, indices))
}

#[cfg(test)]
mod grad_tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    #[test]
    fn extremes_share_ties() {
        let m = leaf(vec![1., 3., 3., 2., 2., 1.], &[2, 3]);
        let a = amax(&m, &[1], false, true).unwrap();
        assert_eq!(node_name(&a), "AmaxBackward0");
        backward(&a, None);
        assert_eq!(grad(&m), vec![0., 0.5, 0.5, 0.5, 0.5, 0.]);
        m.set_grad(None);
        let a = max_all(&m, true).unwrap();
        assert_eq!(node_name(&a), "MaxBackward1");
        backward(&a, None);
        assert_eq!(grad(&m), vec![0., 0.5, 0.5, 0., 0., 0.]);
        m.set_grad(None);
        let (v, i) = max_dim(&m, 1, false, false).unwrap();
        assert_eq!(node_name(&v), "MinBackward0");
        assert!(i.grad_fn().unwrap().is_none());
        backward(&v, Some(vals(vec![5., 7.], &[2])));
        assert_eq!(grad(&m), vec![5., 0., 0., 0., 0., 7.]);
    }
}
