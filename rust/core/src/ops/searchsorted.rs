//! `searchsorted(sorted_sequence, values, right=, side=, sorter=, out_int32=)` and
//! `bucketize(values, boundaries, right=, out_int32=)`: for each value, how many elements of its
//! sorted row lie below it (`right`: at or below it), torch's lower/upper bound.
//!
//! Built from device ops as a merge: each row of values is joined to its sorted row (values
//! first for the lower bound, so a value sorts before the elements equal to it; last for the
//! upper bound), the joined row is sorted stably, and the number of sequence elements before
//! each value is a cumulative count of sequence flags, scattered back to the value's place.
//! O((n + m) log(n + m)) per row, on whatever device the operands live; NaN values sort last
//! and get n, as torch's search gives them. Both operands are compared in torch's `result_type`
//! of the two (a Python number, or a 0-d tensor of values, does not widen the sequence's dtype).

use crate::dtype::{result_type, DType, Scalar};
use crate::error::{fmt_shape, Error, Result};
use crate::ops::copy::cast_input;
use crate::ops::gather::{gather_raw, scatter_raw, Source};
use crate::ops::join::cat_raw;
use crate::ops::scan::{cum_raw, ScanOp};
use crate::ops::sort::sort_raw;
use crate::ops::views::{expand_raw, narrow_raw, reshape_raw};
use crate::ops::Arg;
use crate::tensor::Tensor;

fn fail(message: String) -> Error {
    Error::Runtime(format!("torch.searchsorted(): {}", message))
}

/// torch's checks (`searchsorted_pre_check`), in its order.
fn check(seq: &Tensor, values: &Tensor, right: bool, side: Option<&str>, sorter: Option<&Tensor>) -> Result<bool> {
    let right = match side {
        None => right,
        Some(s) if s != "left" && s != "right" => return Err(fail(format!("side can only be 'left' or 'right' but got {}", s))),
        Some(s) if right && s == "left" => {
            return Err(fail("side and right can't be set to opposites, got side of left while right was True".into()))
        }
        Some(s) => s == "right",
    };
    if let Some(sorter) = sorter {
        if sorter.shape() != seq.shape() {
            return Err(fail(format!(
                "boundary and sorter must have the same size, but got boundary tensor {}and got sorter tensor {}",
                fmt_shape(seq.shape()),
                fmt_shape(sorter.shape())
            )));
        }
        if sorter.dtype() != DType::Int64 {
            return Err(fail(format!("sorter must be a tensor of long dtype but got dtype {}", sorter.dtype().scalar_type_name())));
        }
        if sorter.numel() > 0 {
            let picks = sorter.to_vec::<i64>()?;
            let last = *seq.shape().last().unwrap_or(&0) as i64;
            if picks.iter().any(|&p| p < 0 || p >= last) {
                return Err(fail("sorter index out of range".into()));
            }
        }
    }
    if !(values.ndim() > 0 || (values.numel() == 1 && seq.ndim() == 1)) {
        return Err(fail(format!(
            "input value can be a scalar only when boundaries tensor dimension is 1, but we got boundaries tensor dim({}) and input value's dim({}) numel({})",
            seq.ndim(),
            values.ndim(),
            values.numel()
        )));
    }
    if seq.ndim() == 0 {
        return Err(fail("boundaries tensor should have positive dimension, but got 0 dimension".into()));
    }
    let leading_match = seq.ndim() == values.ndim() && seq.shape()[..seq.ndim() - 1] == values.shape()[..seq.ndim() - 1];
    if seq.ndim() != 1 && !leading_match {
        return Err(fail(format!(
            "boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor {} and input value tensor {}",
            fmt_shape(seq.shape()),
            fmt_shape(values.shape())
        )));
    }
    Ok(right)
}

/// `searchsorted` without autograd (its result is an index: never differentiable); `values` a
/// tensor or a number (torch's two overloads).
pub fn searchsorted(seq: &Tensor, values: &Arg, out_int32: bool, right: bool, side: Option<&str>, sorter: Option<&Tensor>) -> Result<Tensor> {
    let dtype = result_type(&[Arg::Tensor(seq.clone()).promotion(), values.promotion()]);
    let values = match values {
        Arg::Tensor(t) => t.clone(),
        Arg::Scalar(_) => crate::ops::copy::to_device_raw(&values.as_tensor(dtype)?, seq.device())?,
    };
    let values = &values;
    let right = check(seq, values, right, side, sorter)?;
    let out_dtype = if out_int32 { DType::Int32 } else { DType::Int64 };
    if dtype == DType::Bool {
        return Err(crate::error::not_implemented_for("searchsorted_out_cpu", dtype));
    }
    if values.numel() == 0 {
        return Tensor::zeros_on(values.shape(), out_dtype, values.device());
    }
    let mut seq = cast_input(seq, dtype)?;
    if let Some(order) = sorter {
        seq = gather_raw(&seq, -1, order)?;
    }
    let n = *seq.shape().last().unwrap_or(&0) as i64;
    let rows = (seq.numel() as i64).checked_div(n).unwrap_or(1).max(1);
    let seq = reshape_raw(&seq, &[if n == 0 { 1 } else { rows }, n])?;
    let vals = reshape_raw(&cast_input(values, dtype)?, &[seq.shape()[0] as i64, -1])?;
    let m = vals.shape()[1] as i64;
    let r = seq.shape()[0] as i64;
    let flags = |of: &Tensor, v: bool| -> Result<Tensor> {
        expand_raw(&Tensor::full_on(&[1, 1], Scalar::Int(v as i64), DType::Int64, of.device())?, &[r, of.shape()[1] as i64])
    };
    // lower bound: values before the elements equal to them; upper bound: after
    let (parts, flag_parts, value_offset) = if right {
        ([seq.clone(), vals.clone()], [flags(&seq, true)?, flags(&vals, false)?], n)
    } else {
        ([vals.clone(), seq.clone()], [flags(&vals, false)?, flags(&seq, true)?], 0)
    };
    let joined = cat_raw(&parts, 1)?;
    let is_seq = cat_raw(&flag_parts, 1)?;
    let (_, order) = sort_raw(&joined, 1, false, true)?;
    let seen = cum_raw(ScanOp::Cumsum, &gather_raw(&is_seq, 1, &order)?, 1, None)?;
    let placed = scatter_raw(&Tensor::zeros_on(joined.shape(), DType::Int64, joined.device())?, 1, &order, &Source::Tensor(seen), None, false)?;
    let counts = narrow_raw(&placed, 1, value_offset, m)?;
    let shape: Vec<i64> = values.shape().iter().map(|&s| s as i64).collect();
    cast_input(&reshape_raw(&counts, &shape)?, out_dtype)
}

/// `bucketize(values, boundaries)`: `searchsorted` over 1-D boundaries.
pub fn bucketize(values: &Arg, boundaries: &Tensor, out_int32: bool, right: bool) -> Result<Tensor> {
    if boundaries.ndim() != 1 {
        return Err(Error::Runtime(format!("boundaries tensor must be 1 dimension, but got dim({})", boundaries.ndim())));
    }
    searchsorted(boundaries, values, out_int32, right, None, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_and_upper_bounds() {
        let seq = Tensor::from_vec(vec![1f32, 2., 2., 3.], &[4]).unwrap();
        let v = Tensor::from_vec(vec![2f32, 0., 4., f32::NAN, 2.5], &[5]).unwrap();
        assert_eq!(searchsorted(&seq, &Arg::Tensor(v.clone()), false, false, None, None).unwrap().to_vec::<i64>().unwrap(), vec![1, 0, 4, 4, 3]);
        assert_eq!(searchsorted(&seq, &Arg::Tensor(v.clone()), false, true, None, None).unwrap().to_vec::<i64>().unwrap(), vec![3, 0, 4, 4, 3]);
        let rows = Tensor::from_vec(vec![1f32, 2., 3., 4.], &[2, 2]).unwrap();
        let w = Tensor::from_vec(vec![2f32, 0., 1., 3.5], &[2, 2]).unwrap();
        assert_eq!(searchsorted(&rows, &Arg::Tensor(w), false, false, None, None).unwrap().to_vec::<i64>().unwrap(), vec![1, 0, 0, 1]);
    }
}
