//! `embedding` (EmbeddingBackward0): rows of a weight matrix picked by integer indices, and
//! `embedding_renorm_`, the in-place row rescaling that `max_norm=` asks for.

use crate::ops::formulas as fm;
use crate::autograd::Recorder;
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::ops::gather::{index_add, index_select_raw};
use crate::ops::norm::{f64s, from_f64s};
use crate::ops::reduce::py_bool;
use crate::ops::views;
use crate::tensor::Tensor;

fn check_indices(indices: &Tensor) -> Result<()> {
    if !matches!(indices.dtype(), DType::Int64 | DType::Int32) {
        return Err(Error::Runtime(format!(
            "Expected tensor for argument #1 'indices' to have one of the following scalar types: Long, Int; but got minigrad.{} instead (while checking arguments for embedding)",
            indices.dtype().legacy_tensor_name()
        )));
    }
    Ok(())
}

/// `torch.embedding(weight, indices)`: shape `indices.shape + [embedding_dim]`.
pub fn embedding_raw(weight: &Tensor, indices: &Tensor) -> Result<Tensor> {
    if weight.ndim() != 2 {
        return Err(Error::Runtime("'weight' must be 2-D".into()));
    }
    check_indices(indices)?;
    let flat = views::reshape_raw(indices, &[-1])?;
    let rows = index_select_raw(weight, 0, &flat)?;
    let mut shape: Vec<i64> = indices.shape().iter().map(|&d| d as i64).collect();
    shape.push(weight.shape()[1] as i64);
    views::view_raw(&rows, &shape)
}

/// Each looked-up row's gradient factor: 0 for `padding_idx`, 1/count with
/// `scale_grad_by_freq` (count: how often the index occurs in this batch), else 1.
fn row_scales(idx: &[i64], padding_idx: i64, scale_grad_by_freq: bool, num_weights: usize) -> Vec<f64> {
    let mut counts = vec![0usize; if scale_grad_by_freq { num_weights } else { 0 }];
    for &i in idx.iter().filter(|_| scale_grad_by_freq) {
        counts[i as usize] += 1;
    }
    idx.iter()
        .map(|&i| {
            if i == padding_idx {
                0.0
            } else if scale_grad_by_freq {
                1.0 / counts[i as usize] as f64
            } else {
                1.0
            }
        })
        .collect()
}

/// Differentiable `embedding` (EmbeddingBackward0: saves the indices). The weight gradient is
/// the output gradient's rows index-added into zeros, so it differentiates again through the
/// gradient. `padding_idx` is -1 for none (torch's convention after F.embedding's wrapping).
pub fn embedding(weight: &Tensor, indices: &Tensor, padding_idx: i64, scale_grad_by_freq: bool, sparse: bool) -> Result<Tensor> {
    if sparse && weight.requires_grad() {
        return Err(Error::NotImplemented("embedding(sparse=True): minigrad has no sparse tensors; use sparse=False".into()));
    }
    crate::autograd::precheck(&[Some(weight)])?;
    let out = embedding_raw(weight, indices)?;
    let Some(mut rec) = Recorder::new(&[Some(weight)])? else { return Ok(out) };
    rec.value("padding_idx", padding_idx);
    rec.value("scale_grad_by_freq", py_bool(scale_grad_by_freq));
    rec.value("sparse", py_bool(sparse));
    rec.value("weight_sym_argsize_0", weight.shape()[0]);
    rec.save("indices", indices)?;
    let (num_weights, dim) = (weight.shape()[0], weight.shape()[1]);
    rec.finish("EmbeddingBackward0", &[&out], Box::new(move |ctx| {
        let (g, indices) = (ctx.grad(), ctx.saved(0));
        let flat = crate::ops::copy::to_dtype_raw(&views::reshape_raw(indices, &[-1])?, DType::Int64)?;
        let scales = row_scales(&flat.to_vec::<i64>()?, padding_idx, scale_grad_by_freq, num_weights);
        let rows = views::reshape(g, &[-1, dim as i64])?;
        let rows = if scales.iter().all(|&s| s == 1.0) {
            rows
        } else {
            let scales = crate::ops::copy::to_device_raw(&from_f64s(scales, &[flat.numel(), 1], g.dtype())?, g.device())?;
            fm::mul(&rows, &scales)?
        };
        let zeros = fm::zeros(&[num_weights, dim], g.dtype(), g.device())?;
        Ok(vec![Some(index_add(&zeros, 0, &flat, &rows, Scalar::Int(1), false)?)])
    }))?;
    Ok(out)
}

/// `embedding_renorm_(weight, indices, max_norm, norm_type)`: each distinct looked-up row
/// whose `norm_type`-norm exceeds `max_norm` is scaled by `max_norm / (norm + 1e-7)`, in
/// place (one version bump). The caller runs it under no_grad, as F.embedding does.
pub fn embedding_renorm_(weight: &Tensor, indices: &Tensor, max_norm: f64, norm_type: f64) -> Result<()> {
    if weight.ndim() != 2 {
        return Err(Error::Runtime("'weight' must be 2-D".into()));
    }
    check_indices(indices)?;
    let idx = crate::ops::copy::to_dtype_raw(indices, DType::Int64)?.to_vec::<i64>()?;
    let (n, d) = (weight.shape()[0], weight.shape()[1]);
    if idx.iter().any(|&i| i < 0 || i as usize >= n) {
        return Err(Error::Index("index out of range in self".into()));
    }
    let mut w = f64s(weight)?;
    let mut seen = vec![false; n];
    for &i in &idx {
        let i = i as usize;
        if std::mem::replace(&mut seen[i], true) {
            continue;
        }
        let row = &mut w[i * d..(i + 1) * d];
        let norm = if norm_type == 1.0 {
            row.iter().map(|v| v.abs()).sum::<f64>()
        } else if norm_type == 2.0 {
            row.iter().map(|v| v * v).sum::<f64>().sqrt()
        } else if norm_type.is_infinite() {
            row.iter().fold(0.0f64, |m, v| m.max(v.abs()))
        } else {
            row.iter().map(|v| v.abs().powf(norm_type)).sum::<f64>().powf(1.0 / norm_type)
        };
        if norm > max_norm {
            let scale = max_norm / (norm + 1e-7);
            row.iter_mut().for_each(|v| *v *= scale);
        }
    }
    // Computed on the host (a rare path: max_norm=); the rescaled rows go back to the weight's device.
    crate::ops::copy::copy_(weight, &crate::ops::copy::to_device_raw(&from_f64s(w, &[n, d], weight.dtype())?, weight.device())?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    #[test]
    fn lookup_padding_and_frequency() {
        let w = rand_leaf(&[4, 3], 3);
        let idx = Tensor::from_vec(vec![1i64, 1, 2, 0], &[2, 2]).unwrap();
        let y = embedding(&w, &idx, 2, true, false).unwrap();
        assert_eq!(y.shape(), &[2, 2, 3]);
        assert_eq!(node_name(&y), "EmbeddingBackward0");
        backward(&y, None);
        let g = grad(&w);
        assert_eq!(&g[0..3], &[1., 1., 1.]);
        assert_eq!(&g[3..6], &[1., 1., 1.], "two hits of row 1, each scaled by 1/2");
        assert_eq!(&g[6..12], &[0.; 6], "padding row and an unused row");
        gradcheck("embedding", &|t| embedding(&t[0], &idx, -1, false, false), &[rand_leaf(&[4, 3], 4)], true);
        let e = embedding_raw(&w, &Tensor::from_vec(vec![4i64], &[1]).unwrap()).unwrap_err();
        assert_eq!(e, Error::Index("index out of range in self".into()));
    }
}
