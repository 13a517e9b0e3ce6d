//! `all`, `any` and `count_nonzero`: bool and int64 results, no gradient.

use crate::dtype::DType;
use crate::error::Result;
use crate::kernels::reducers::{AllAny, CountNonzero};
use crate::tensor::Tensor;
use crate::dispatch;
use super::{dim_mask, out_ptr, reduced_shape, run, DimCheck};

/// `all(dim, keepdim)` / `any`: bool results; dim=() reduces nothing.
pub fn all(x: &Tensor, dims: Option<&[i64]>, keepdim: bool, is_all: bool) -> Result<Tensor> {
    let mask = dim_mask(dims, x.ndim(), false, DimCheck::WrapAllFirst)?;
    let out = Tensor::empty(&reduced_shape(x.shape(), &mask, keepdim), DType::Bool)?;
    let p = out_ptr::<bool>(&out);
    dispatch!(x.dtype(), T => {
        if is_all { run(AllAny::<T, true>::new(p), x, &mask) } else { run(AllAny::<T, false>::new(p), x, &mask) }
    });
    Ok(out)
}

/// `count_nonzero(dim=None)`: int64 counts; dim=() counts everything.
pub fn count_nonzero(x: &Tensor, dims: Option<&[i64]>) -> Result<Tensor> {
    let mask = dim_mask(dims, x.ndim(), true, DimCheck::WrapAllFirst)?;
    let out = Tensor::empty(&reduced_shape(x.shape(), &mask, false), DType::Int64)?;
    let p = out_ptr::<i64>(&out);
    dispatch!(x.dtype(), T => run(CountNonzero::<T>::new(p), x, &mask));
    Ok(out)
}
