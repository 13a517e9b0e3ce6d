//! `linalg_cross(input, other, dim)`: the cross product of 3-vectors along `dim`, batch dims
//! broadcast (LinalgCrossBackward0, saving self, other and dim). `torch.cross` without `dim`
//! picks the first dim of size 3 (the Python wrapper warns, as torch does).
//!
//! The forward is three components, each `a[j] * b[k] - a[k] * b[j]` through the binary
//! kernels into one slice of a fresh contiguous result (torch's `cross` kernel: the same
//! products, rounded one by one), so every device and dtype those kernels take works here.
//! The backward is two cross products again (derivatives.yaml), recorded, so a graph of the
//! backward has torch's nodes; the engine sums the gradient of a broadcast input back to its
//! shape as torch's does.

use crate::autograd::{Recorder, SavedValue};
use crate::bail;
use crate::dtype::DType;
use crate::error::Result;
use crate::ops::binary::{binary_raw, BinaryOp};
use crate::ops::copy::copy_kernel;
use crate::ops::views::{expand_raw, select_raw};
use crate::ops::Arg;
use crate::shape::{broadcast_shapes, wrap_dim};
use crate::tensor::Tensor;

/// The checks of torch's `linalg_cross` meta function, in its order, and the output shape.
fn check(input: &Tensor, other: &Tensor, dim: i64) -> Result<(usize, Vec<usize>)> {
    if input.ndim() != other.ndim() {
        bail!(Runtime, "linalg.cross: inputs must have the same number of dimensions.");
    }
    if input.ndim() == 0 {
        // `input.size(dim)` of a 0-d tensor, whatever dim is
        bail!(Index, "Dimension specified as {} but tensor has no dimensions", dim);
    }
    let d = wrap_dim(dim, input.ndim())?;
    if input.shape()[d] != 3 || other.shape()[d] != 3 {
        bail!(
            Runtime,
            "linalg.cross: inputs dimension {} must have length 3. Got {} and {}",
            dim,
            input.shape()[d],
            other.shape()[d]
        );
    }
    Ok((d, broadcast_shapes(input.shape(), other.shape())?))
}

/// `linalg_cross` without a graph.
pub fn linalg_cross_raw(input: &Tensor, other: &Tensor, dim: i64) -> Result<Tensor> {
    let (d, shape) = check(input, other, dim)?;
    if input.dtype() != other.dtype() {
        bail!(
            Runtime,
            "expected scalar type {} but found {}",
            input.dtype().scalar_type_name(),
            other.dtype().scalar_type_name()
        );
    }
    if input.dtype() == DType::Bool {
        bail!(NotImplemented, "\"cross\" not implemented for 'Bool'");
    }
    let sizes: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
    let (a, b) = (expand_raw(input, &sizes)?, expand_raw(other, &sizes)?);
    let out = Tensor::empty_on(&shape, input.dtype(), input.device())?;
    let part = |t: &Tensor, i: usize| -> Result<Arg> { Ok(Arg::Tensor(select_raw(t, d as i64, i as i64)?)) };
    for i in 0..3 {
        let (j, k) = ((i + 1) % 3, (i + 2) % 3);
        let left = binary_raw(BinaryOp::Mul, &part(&a, j)?, &part(&b, k)?, None)?;
        let right = binary_raw(BinaryOp::Mul, &part(&a, k)?, &part(&b, j)?, None)?;
        let component = binary_raw(BinaryOp::Sub, &Arg::Tensor(left), &Arg::Tensor(right), None)?;
        copy_kernel(&select_raw(&out, d as i64, i as i64)?, &component)?;
    }
    Ok(out)
}

/// Differentiable `linalg_cross(input, other, dim)`.
pub fn linalg_cross(input: &Tensor, other: &Tensor, dim: i64) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(input), Some(other)])?;
    let out = linalg_cross_raw(input, other, dim)?;
    let Some(mut rec) = Recorder::new(&[Some(input), Some(other)])? else { return Ok(out) };
    rec.values(vec![("dim", SavedValue::Int(dim))]);
    rec.save("self", input)?;
    rec.save("other", other)?;
    rec.finish("LinalgCrossBackward0", &[&out], Box::new(move |ctx| {
        let (g, a, b) = (ctx.grad(), ctx.saved(0), ctx.saved(1));
        Ok(vec![
            if ctx.needs(0) { Some(linalg_cross(b, g, dim)?) } else { None },
            if ctx.needs(1) { Some(linalg_cross(g, a, dim)?) } else { None },
        ])
    }))?;
    Ok(out)
}

/// torch's `_default_cross_dim`: the given dim, else the first of size 3.
pub fn default_cross_dim(dim: Option<i64>, shape: &[usize]) -> Result<i64> {
    if let Some(d) = dim {
        return Ok(d);
    }
    match shape.iter().position(|&s| s == 3) {
        Some(i) => Ok(i as i64),
        None => bail!(Runtime, "no dimension of size 3 in input"),
    }
}
