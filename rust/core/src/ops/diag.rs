//! Ops on diagonals that make new tensors (`diagonal` itself is a view, in `views.rs`):
//! `trace` (TraceBackward0), `diag_embed` (DiagEmbedBackward0) and `diagonal_copy`, the
//! matrix case of `diag` (its node is torch's `DiagonalBackward0_copy`). Each forward is a
//! diagonal view of a fresh tensor written or read by the existing kernels, so every device
//! and dtype those kernels take works here.

use crate::autograd::{record_view_with_backward_op, Recorder};
use crate::autograd::SavedValue::{self, Int};
use crate::bail;
use crate::dtype::{DType, Scalar};
use crate::error::Result;
use crate::ops::copy::{copy_kernel, fill_inplace_raw};
use crate::ops::formulas as fm;
use crate::ops::reduce::sum_raw;
use crate::ops::views::diagonal_raw;
use crate::shape::wrap_dim;
use crate::tensor::Tensor;
use std::sync::Arc;

/// Differentiable `trace(x)`: the sum of a matrix's main diagonal, with sum's dtypes (integers
/// sum to int64; bool is refused as torch's kernel refuses it). The gradient is the incoming
/// 0-d gradient on the diagonal of zeros shaped like x (recorded as a product with a constant
/// diagonal mask, so a create_graph gradient depends on the gradient only).
pub fn trace(x: &Tensor) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    // torch's kernel dispatch (the dtype) comes before its rank check
    if x.dtype() == DType::Bool {
        bail!(NotImplemented, "\"trace\" not implemented for 'Bool'");
    }
    if x.ndim() != 2 {
        bail!(Runtime, "trace: expected a matrix, but got tensor with dim {}", x.ndim());
    }
    let out = sum_raw(&diagonal_raw(x, 0, 0, 1)?, None, false, None)?;
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok(out) };
    rec.values(vec![("self_sym_sizes", SavedValue::sizes(x.shape()))]);
    let (shape, device) = (x.shape().to_vec(), x.device());
    rec.finish("TraceBackward0", &[&out], Box::new(move |ctx| {
        let g = ctx.grad();
        let mask = fm::zeros(&shape, g.dtype(), device)?;
        fill_inplace_raw(&diagonal_raw(&mask, 0, 0, 1)?, Scalar::Float(1.0))?;
        Ok(vec![Some(fm::mul(&mask, g)?)])
    }))?;
    Ok(out)
}

/// `diag_embed(x, offset, dim1, dim2)` without a graph: zeros with one more dim, x's last dim
/// written on the (offset) diagonal of dims dim1 and dim2 (ATen's steps and checks).
fn diag_embed_raw(x: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    let nd = x.ndim() as i64 + 1;
    let (d1, d2) = (wrap_dim(dim1, nd as usize)?, wrap_dim(dim2, nd as usize)?);
    if d1 == d2 {
        bail!(Runtime, "diagonal dimensions cannot be identical {}, {}", dim1, dim2);
    }
    let last = *x.shape().last().ok_or_else(|| crate::Error::Index("Dimension specified as -1 but tensor has no dimensions".into()))?;
    let side = last + offset.unsigned_abs() as usize;
    let mut shape = x.shape()[..x.ndim() - 1].to_vec();
    shape.insert(d1.min(d2), side);
    shape.insert(d1.max(d2), side);
    let out = fm::zeros(&shape, x.dtype(), x.device())?;
    copy_kernel(&diagonal_raw(&out, offset, d1 as i64, d2 as i64)?, x)?;
    Ok(out)
}

/// Differentiable `diag_embed`: the gradient is the same diagonal of the incoming gradient
/// (a recorded `diagonal`, DiagonalBackward0 under create_graph, as torch's formula).
pub fn diag_embed(x: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    let out = diag_embed_raw(x, offset, dim1, dim2)?;
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok(out) };
    rec.values(vec![("dim1", Int(dim1)), ("dim2", Int(dim2)), ("offset", Int(offset))]);
    rec.finish("DiagEmbedBackward0", &[&out], Box::new(move |ctx| {
        Ok(vec![Some(crate::ops::views::diagonal(ctx.grad(), offset, dim1, dim2)?)])
    }))?;
    Ok(out)
}

/// Differentiable `diagonal_copy(x, offset, dim1, dim2)`: the diagonal as a new contiguous
/// tensor; its backward is diagonal's (the gradient scattered into zeros through the view).
pub fn diagonal_copy(x: &Tensor, offset: i64, dim1: i64, dim2: i64) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    let view = diagonal_raw(x, offset, dim1, dim2)?;
    let out = Tensor::empty_on(view.shape(), x.dtype(), x.device())?; // contiguous, as torch's
    copy_kernel(&out, &view)?;
    let values = || vec![("dim1", Int(dim1)), ("dim2", Int(dim2)), ("offset", Int(offset)), ("self_sym_sizes", SavedValue::sizes(x.shape()))];
    let view = Arc::new(move |z: &Tensor| Ok(vec![diagonal_raw(z, offset, dim1, dim2)?]));
    record_view_with_backward_op("DiagonalBackward0_copy", "DiagonalBackwardBackward0", x, &out, values, view)?;
    Ok(out)
}

/// `diag(x, diagonal)`: a vector becomes a matrix with it on that diagonal (diag_embed), a
/// matrix gives that diagonal as a vector (diagonal_copy).
pub fn diag(x: &Tensor, diagonal: i64) -> Result<Tensor> {
    match x.ndim() {
        1 => diag_embed(x, diagonal, -2, -1), // ATen passes diag_embed's defaults
        2 => diagonal_copy(x, diagonal, 0, 1),
        n => bail!(Runtime, "diag(): Supports 1D or 2D tensors. Got {}D", n),
    }
}
