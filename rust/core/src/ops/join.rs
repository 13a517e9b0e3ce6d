//! Joining: `cat` and `stack`, with torch's type promotion, its legacy skipping of 1-D empty
//! tensors, its output memory format, and its error texts.

use crate::dtype::{promote_types, DType};
use crate::error::{fmt_shape, Error, Result};
use crate::layout::Layout;
use crate::ops::copy::{copy_kernel, empty_with_layout};
use crate::ops::views;
use crate::shape::wrap_dim;
use crate::tensor::Tensor;

/// torch still lets a size-[0] 1-D tensor join anything (it predates other empty shapes).
fn is_legacy_empty(t: &Tensor) -> bool {
    t.shape() == [0]
}

/// `legacy_cat_wrap_dim`: wrap against the first tensor that is not legacy-empty; when all
/// are, the dim is not checked at all.
fn wrap_cat_dim(dim: i64, ts: &[Tensor]) -> Result<Option<usize>> {
    match ts.iter().find(|t| !is_legacy_empty(t)) {
        Some(t) => Ok(Some(wrap_dim(dim, t.ndim())?)),
        None => Ok(None),
    }
}

/// torch's `is_channels_last_strides_{2d,3d}` heuristic: do these strides walk C innermost?
fn strides_like_channels_last(shape: &[usize], strides: &[isize]) -> bool {
    let order: &[usize] = match shape.len() {
        4 => &[1, 3, 2, 0],
        5 => &[1, 4, 3, 2, 0],
        _ => return false,
    };
    if strides[1] == 0 {
        return false;
    }
    let mut min: isize = 0;
    for &d in order {
        if shape[d] == 0 || strides[d] < min {
            return false;
        }
        // N111-like tensors are ambiguous; torch calls them contiguous.
        if d == 0 && min == strides[1] {
            return false;
        }
        min = strides[d];
        if shape[d] > 1 {
            min *= shape[d] as isize;
        }
    }
    true
}

/// Channels-last strides for a 4-D or 5-D shape (C innermost, then W, H, (D), N).
fn channels_last_strides(shape: &[usize]) -> Vec<isize> {
    let n = shape.len();
    let mut strides = vec![0isize; n];
    strides[1] = 1;
    let mut acc = shape[1] as isize;
    for d in (2..n).rev().chain(std::iter::once(0)) {
        strides[d] = acc;
        acc *= shape[d] as isize;
    }
    strides
}

/// `cat_compute_output_memory_format`: channels-last only when every input suggests the
/// same channels-last format.
fn output_is_channels_last(ts: &[Tensor]) -> bool {
    let rank = ts[0].ndim();
    ts.iter().all(|t| t.ndim() == rank && strides_like_channels_last(t.shape(), t.strides()))
}

/// `torch.cat(tensors, dim)`.
pub fn cat_raw(ts: &[Tensor], dim: i64) -> Result<Tensor> {
    for (i, t) in ts.iter().enumerate() {
        if t.ndim() == 0 {
            return Err(Error::Runtime(format!("zero-dimensional tensor (at position {}) cannot be concatenated", i)));
        }
    }
    let dim = wrap_cat_dim(dim, ts)?;
    if ts.is_empty() {
        return Err(Error::Value("torch.cat(): expected a non-empty list of Tensors".into()));
    }
    let dtype = ts.iter().map(|t| t.dtype()).reduce(promote_types).unwrap_or(DType::Float32);
    let device = || crate::device::common_device(&ts.iter().collect::<Vec<_>>());
    let (Some(dim), Some(first)) = (dim, ts.iter().find(|t| !is_legacy_empty(t))) else {
        // Only legacy-empty inputs: the result is one of them, promoted.
        return Tensor::empty_on(&[0], dtype, device()?);
    };
    let mut size_at_dim = 0;
    for (i, t) in ts.iter().enumerate() {
        if is_legacy_empty(t) {
            continue;
        }
        if t.ndim() != first.ndim() {
            return Err(Error::Runtime(format!(
                "Tensors must have same number of dimensions: got {} and {}",
                first.ndim(),
                t.ndim()
            )));
        }
        for d in 0..first.ndim() {
            if d != dim && t.shape()[d] != first.shape()[d] {
                return Err(Error::Runtime(format!(
                    "Sizes of tensors must match except in dimension {}. Expected size {} but got size {} for tensor number {} in the list.",
                    dim,
                    first.shape()[d],
                    t.shape()[d],
                    i
                )));
            }
        }
        size_at_dim += t.shape()[dim];
    }
    let mut shape = first.shape().to_vec();
    shape[dim] = size_at_dim;
    let device = device()?;
    let out = if output_is_channels_last(ts) {
        let strides = channels_last_strides(&shape);
        empty_with_layout(&Layout { shape: shape.into(), strides: strides.into(), offset: 0 }, dtype, device)?
    } else {
        Tensor::empty_on(&shape, dtype, device)?
    };
    let mut at = 0;
    for t in ts.iter().filter(|t| !is_legacy_empty(t)) {
        let len = t.shape()[dim];
        if len > 0 {
            // The slot is a view of fresh memory, so the copy cannot overlap its source.
            copy_kernel(&views::narrow_raw(&out, dim as i64, at as i64, len as i64)?, t)?;
        }
        at += len;
    }
    Ok(out)
}

/// `torch.stack(tensors, dim)`: equal shapes joined along a new dim.
pub fn stack_raw(ts: &[Tensor], dim: i64) -> Result<Tensor> {
    let Some(first) = ts.first() else {
        return Err(Error::Runtime("stack expects a non-empty TensorList".into()));
    };
    let d = wrap_dim(dim, first.ndim() + 1)?;
    for (i, t) in ts.iter().enumerate().skip(1) {
        if t.shape() != first.shape() {
            return Err(Error::Runtime(format!(
                "stack expects each tensor to be equal size, but got {} at entry 0 and {} at entry {}",
                fmt_shape(first.shape()),
                fmt_shape(t.shape()),
                i
            )));
        }
    }
    if d < first.ndim() {
        // As torch: cat along d, then split that dim (always expressible as a view).
        let out = cat_raw(ts, d as i64)?;
        let mut shape = first.shape().to_vec();
        shape.insert(d, ts.len());
        let strides = out.layout.view_strides(&shape).unwrap_or_else(|| crate::shape::contiguous_strides(&shape).to_vec());
        return Ok(Tensor { layout: Layout { shape: shape.into(), strides: strides.into(), offset: out.layout.offset }, ..out });
    }
    let parts: Vec<Tensor> = ts.iter().map(|t| views::unsqueeze_raw(t, d as i64)).collect::<Result<_>>()?;
    cat_raw(&parts, d as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Scalar;

    fn ar(n: usize, shape: &[usize]) -> Tensor {
        Tensor::from_vec((0..n).map(|v| v as f32).collect::<Vec<_>>(), shape).unwrap()
    }

    #[test]
    fn cat_promotes_and_skips_legacy_empty() {
        let a = ar(6, &[2, 3]);
        let b = Tensor::full(&[1, 3], Scalar::Int(7), DType::Float64).unwrap();
        let e = Tensor::empty(&[0], DType::Int64).unwrap();
        let r = cat_raw(&[a, e, b], 0).unwrap();
        assert_eq!(r.dtype(), DType::Float64);
        assert_eq!(r.shape(), &[3, 3]);
        assert_eq!(r.to_vec::<f64>().unwrap(), vec![0., 1., 2., 3., 4., 5., 7., 7., 7.]);
    }

    #[test]
    fn cat_errors_use_torch_words() {
        let a = ar(6, &[2, 3]);
        let b = ar(8, &[2, 4]);
        assert_eq!(
            cat_raw(&[a.clone(), b], 0).unwrap_err().to_string(),
            "Sizes of tensors must match except in dimension 0. Expected size 3 but got size 4 for tensor number 1 in the list."
        );
        let s = Tensor::scalar(Scalar::Float(1.0), DType::Float32).unwrap();
        assert_eq!(cat_raw(&[a, s], 0).unwrap_err().to_string(), "zero-dimensional tensor (at position 1) cannot be concatenated");
        assert!(matches!(cat_raw(&[], 0), Err(Error::Value(_))));
    }

    #[test]
    fn channels_last_inputs_give_channels_last_output() {
        let base = ar(120, &[2, 4, 5, 3]); // NHWC memory
        let cl = views::permute_raw(&base, &[0, 3, 1, 2]).unwrap(); // NCHW view, C innermost
        assert!(strides_like_channels_last(cl.shape(), cl.strides()));
        let r = cat_raw(&[cl.clone(), cl.clone()], 1).unwrap();
        assert_eq!(r.strides(), &[120, 1, 30, 6]);
        assert_eq!(channels_last_strides(&[2, 3, 4, 5, 6]), vec![360, 1, 90, 18, 3]);
    }

    #[test]
    fn stack_inserts_a_dim() {
        let a = ar(6, &[2, 3]);
        let r = stack_raw(&[a.clone(), a.clone()], 1).unwrap();
        assert_eq!(r.shape(), &[2, 2, 3]);
        assert_eq!(r.to_vec::<f32>().unwrap()[..6], [0., 1., 2., 0., 1., 2.]);
        let r = stack_raw(&[a.clone(), a], 2).unwrap();
        assert_eq!(r.shape(), &[2, 3, 2]);
        assert_eq!(r.strides(), &[6, 2, 1]);
    }
}

// ----- autograd: saves and backward formulas (derivatives.yaml) -----

use crate::autograd::Recorder;

/// The gradient piece of one input, cast back to that input's dtype.
fn cast_back(g: Tensor, dtype: DType) -> Result<Tensor> {
    if g.dtype() == dtype {
        Ok(g)
    } else {
        crate::ops::copy::to_dtype(&g, dtype)
    }
}

/// Differentiable `cat` (CatBackward0): each input gets its slice of the gradient (legacy
/// empty `[0]` inputs get an empty gradient), cast back to its dtype.
pub fn cat(ts: &[Tensor], dim: i64) -> Result<Tensor> {
    crate::autograd::precheck(&ts.iter().map(Some).collect::<Vec<_>>())?;
    let out = cat_raw(ts, dim)?;
    let inputs: Vec<Option<&Tensor>> = ts.iter().map(Some).collect();
    let Some(mut rec) = Recorder::new(&inputs)? else { return Ok(out) };
    rec.value("dim", dim);
    let d = wrap_cat_dim(dim, ts)?;
    let metas: Vec<(Vec<usize>, DType)> = ts.iter().map(|t| (t.shape().to_vec(), t.dtype())).collect();
    rec.finish("CatBackward0", &[&out], Box::new(move |ctx| {
        let g = ctx.grad();
        let mut at = 0usize;
        let mut grads = Vec::with_capacity(metas.len());
        for (i, (shape, dtype)) in metas.iter().enumerate() {
            if shape.as_slice() == [0] {
                grads.push(ctx.needs(i).then(|| Tensor::zeros_on(&[0], *dtype, g.device())).transpose()?);
                continue;
            }
            let d = d.expect("a non-empty input fixes the dim");
            let len = shape[d];
            grads.push(if ctx.needs(i) { Some(cast_back(views::narrow(g, d as i64, at as i64, len as i64)?, *dtype)?) } else { None });
            at += len;
        }
        Ok(grads)
    }))?;
    Ok(out)
}

/// Differentiable `stack` (StackBackward0): input i gets `grad.select(dim, i)`, cast back.
pub fn stack(ts: &[Tensor], dim: i64) -> Result<Tensor> {
    crate::autograd::precheck(&ts.iter().map(Some).collect::<Vec<_>>())?;
    let out = stack_raw(ts, dim)?;
    let inputs: Vec<Option<&Tensor>> = ts.iter().map(Some).collect();
    let Some(mut rec) = Recorder::new(&inputs)? else { return Ok(out) };
    rec.value("dim", dim);
    let d = wrap_dim(dim, ts[0].ndim() + 1)? as i64;
    let dtypes: Vec<DType> = ts.iter().map(|t| t.dtype()).collect();
    rec.finish("StackBackward0", &[&out], Box::new(move |ctx| {
        let g = ctx.grad();
        dtypes
            .iter()
            .enumerate()
            .map(|(i, &dt)| if ctx.needs(i) { views::select(g, d, i as i64).and_then(|s| cast_back(s, dt)).map(Some) } else { Ok(None) })
            .collect()
    }))?;
    Ok(out)
}

#[cfg(test)]
mod grad_tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    #[test]
    fn cat_and_stack_route_slices_back() {
        let a = leaf(vec![1., 2., 3., 4.], &[2, 2]);
        let b = leaf(vec![5., 6.], &[1, 2]);
        let out = cat(&[a.clone(), b.clone()], 0).unwrap();
        assert_eq!(node_name(&out), "CatBackward0");
        backward(&out, Some(vals(vec![1., 2., 3., 4., 5., 6.], &[3, 2])));
        assert_eq!(grad(&a), vec![1., 2., 3., 4.]);
        assert_eq!(grad(&b), vec![5., 6.]);

        let x = leaf(vec![1., 2.], &[2]);
        let y = leaf(vec![3., 4.], &[2]);
        let out = stack(&[x.clone(), y.clone()], 1).unwrap();
        assert_eq!(node_name(&out), "StackBackward0");
        backward(&out, Some(vals(vec![1., 2., 3., 4.], &[2, 2])));
        assert_eq!(grad(&x), vec![1., 3.]);
        assert_eq!(grad(&y), vec![2., 4.]);
    }

    #[test]
    fn cat_casts_back_and_skips_legacy_empty() {
        let a = leaf(vec![1., 2.], &[2]);
        let e = Tensor::empty(&[0], DType::Int64).unwrap();
        let f = Tensor::from_vec(vec![7.0f32], &[1]).unwrap();
        f.set_requires_grad(true, crate::autograd::RequiresGradEntry::Factory).unwrap();
        let out = cat(&[a.clone(), e, f.clone()], 0).unwrap();
        assert_eq!(out.dtype(), DType::Float64);
        backward(&out, Some(vals(vec![1., 2., 3.], &[3])));
        assert_eq!(grad(&a), vec![1., 2.]);
        let gf = f.grad().unwrap();
        assert_eq!((gf.dtype(), gf.to_vec::<f32>().unwrap()), (DType::Float32, vec![3.0]));
    }

    #[test]
    fn joins_pass_gradcheck() {
        let ins = [rand_leaf(&[2, 1], 1), rand_leaf(&[2, 3], 2), rand_leaf(&[2, 2], 3)];
        gradcheck("cat", &|t| cat(t, 1), &ins, true);
        let ins = [rand_leaf(&[2, 3], 4), rand_leaf(&[2, 3], 5)];
        gradcheck("stack 0", &|t| stack(t, 0), &ins, true);
        gradcheck("stack -1", &|t| stack(t, -1), &ins, true);
    }
}
