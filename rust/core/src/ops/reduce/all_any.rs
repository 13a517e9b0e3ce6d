//! `all`, `any` and `count_nonzero`: bool and int64 results, no gradient.

use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use super::{dim_mask, launch, new_out, reduced_shape, DimCheck, Reduction};

/// `all(dim, keepdim)` / `any`: bool results; dim=() reduces nothing.
pub fn all(x: &Tensor, dims: Option<&[i64]>, keepdim: bool, is_all: bool) -> Result<Tensor> {
    let mask = dim_mask(dims, x.ndim(), false, DimCheck::WrapAllFirst)?;
    let out = new_out(x, &reduced_shape(x.shape(), &mask, keepdim), DType::Bool)?;
    launch(if is_all { Reduction::All } else { Reduction::Any }, Some(&out), None, x, &mask)?;
    Ok(out)
}

/// `count_nonzero(dim=None)`: int64 counts; dim=() counts everything.
pub fn count_nonzero(x: &Tensor, dims: Option<&[i64]>) -> Result<Tensor> {
    let mask = dim_mask(dims, x.ndim(), true, DimCheck::WrapAllFirst)?;
    let out = new_out(x, &reduced_shape(x.shape(), &mask, false), DType::Int64)?;
    launch(Reduction::CountNonzero, Some(&out), None, x, &mask)?;
    Ok(out)
}
