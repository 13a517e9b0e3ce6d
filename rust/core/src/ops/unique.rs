//! `unique` and `unique_consecutive`, over all elements or over the slices along a dim: the
//! distinct values (or slices) in ascending order, or runs of equal neighbours merged, with the
//! optional inverse (where each element went) and counts. Equality is `==`: -0.0 and 0.0 are one
//! value (the first in sorted order is kept, as torch), every NaN its own.
//!
//! Built from device ops (a stable sort, neighbour comparisons, `masked_select`, a cumulative
//! sum for the group of each element, `scatter` for the inverse and `bincount` for the counts),
//! so it runs wherever the input lives. Slices are ordered lexicographically by stable sorts on
//! their columns, last column first. No derivative: an input that requires grad gives the
//! values torch's node (Unique2Backward0, UniqueDimBackward0, UniqueConsecutiveBackward0),
//! whose backward raises torch's NotImplementedError.

use crate::autograd::mode::GradModeGuard;
use crate::autograd::Recorder;
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::ops::binary::{binary_raw, BinaryOp};
use crate::ops::gather::{index_select_raw, scatter_raw, Source};
use crate::ops::histograms::bincount_raw;
use crate::ops::join::cat_raw;
use crate::ops::mask::masked_select_raw;
use crate::ops::reduce::all;
use crate::ops::scan::{cum_raw, ScanOp};
use crate::ops::sort::sort_raw;
use crate::ops::views::{movedim_one, narrow_raw, reshape_raw};
use crate::ops::Arg;
use crate::shape::wrap_dim;
use crate::tensor::Tensor;

/// What `unique` returns: the values, and (always computed) the inverse and the counts.
pub struct Unique {
    pub values: Tensor,
    pub inverse: Tensor,
    pub counts: Tensor,
}

/// Run starts of `sorted` (n rows, compared whole along dim 1 when 2-D): true at 0 and
/// wherever a row differs from the one before.
fn run_starts(sorted: &Tensor) -> Result<Tensor> {
    let n = sorted.shape()[0] as i64;
    let first = Tensor::full_on(&[1], Scalar::Bool(true), DType::Bool, sorted.device())?;
    if n <= 1 {
        return narrow_raw(&first, 0, 0, n);
    }
    let (next, prev) = (narrow_raw(sorted, 0, 1, n - 1)?, narrow_raw(sorted, 0, 0, n - 1)?);
    let mut differs = binary_raw(BinaryOp::Ne, &Arg::Tensor(next), &Arg::Tensor(prev), None)?;
    if differs.ndim() == 2 {
        differs = all(&differs, Some(&[1]), false, false)?; // any column differs
    }
    cat_raw(&[first, differs], 0)
}

/// The groups of `starts` (0 for the first run, then one more at each start), the inverse
/// (each original row's group: `order` maps sorted rows back, None when unsorted) and counts.
fn groups(starts: &Tensor, order: Option<&Tensor>) -> Result<(Tensor, Tensor)> {
    let group = binary_raw(BinaryOp::Sub, &Arg::Tensor(cum_raw(ScanOp::Cumsum, starts, 0, None)?), &Arg::Scalar(Scalar::Int(1)), None)?;
    let counts = if group.numel() == 0 { Tensor::zeros_on(&[0], DType::Int64, group.device())? } else { bincount_raw(&group, None, 0)? };
    let inverse = match order {
        None => group,
        Some(order) => scatter_raw(&Tensor::zeros_on(group.shape(), DType::Int64, group.device())?, 0, order, &Source::Tensor(group), None, false)?,
    };
    Ok((inverse, counts))
}

/// Unique elements of the flattened `x` (`sorted`: sort first; else merge runs of neighbours).
fn unique_flat(x: &Tensor, sort: bool) -> Result<Unique> {
    let flat = reshape_raw(x, &[-1])?;
    let (sorted, order) = if sort {
        let (s, o) = sort_raw(&flat, 0, false, true)?;
        (s, Some(o))
    } else {
        (flat, None)
    };
    let starts = run_starts(&sorted)?;
    let values = masked_select_raw(&sorted, &starts)?;
    let (inverse, counts) = groups(&starts, order.as_ref())?;
    let shape: Vec<i64> = x.shape().iter().map(|&s| s as i64).collect();
    Ok(Unique { values, inverse: reshape_raw(&inverse, &shape)?, counts })
}

/// Unique slices of `x` along wrapped dim `d`, with torch's checks on zero-sized dims.
fn unique_slices(x: &Tensor, dim: i64, sort: bool) -> Result<Unique> {
    if x.ndim() == 0 {
        return Err(Error::Index(format!("Dimension specified as {} but tensor has no dimensions", dim)));
    }
    let d = wrap_dim(dim, x.ndim())?;
    let zero_dims = x.shape().iter().filter(|&&s| s == 0).count();
    let empty_long = || Tensor::zeros_on(&[0], DType::Int64, x.device());
    if x.shape()[d] == 0 {
        if zero_dims != 1 {
            return Err(Error::Runtime("Number of zero sized dimensions is more than one, so unique cannot be applied ".into()));
        }
        return Ok(Unique { values: Tensor::zeros_on(x.shape(), x.dtype(), x.device())?, inverse: empty_long()?, counts: empty_long()? });
    }
    if zero_dims != 0 {
        return Err(Error::Runtime("There are 0 sized dimensions, and they aren't selected, so unique cannot be applied".into()));
    }
    let front = movedim_one(x, d as i64, 0)?;
    let rest: Vec<i64> = front.shape()[1..].iter().map(|&s| s as i64).collect();
    let n = x.shape()[d];
    let rows = reshape_raw(&front, &[n as i64, -1])?;
    let order = if sort {
        // lexicographic: stable sorts by each column, the last one first
        let mut order = crate::ops::creation::arange(Scalar::Int(0), Scalar::Int(n as i64), Scalar::Int(1), None)?;
        order = crate::ops::copy::to_device_raw(&order, x.device())?;
        for c in (0..rows.shape()[1] as i64).rev() {
            let column = index_select_raw(&narrow_raw(&rows, 1, c, 1)?, 0, &order)?;
            let (_, by) = sort_raw(&reshape_raw(&column, &[-1])?, 0, false, true)?;
            order = index_select_raw(&order, 0, &by)?;
        }
        Some(order)
    } else {
        None
    };
    let sorted = match &order {
        Some(o) => index_select_raw(&rows, 0, o)?,
        None => rows,
    };
    let starts = run_starts(&sorted)?;
    let picked = masked_select_raw(&crate::ops::copy::to_device_raw(&crate::ops::scan::positions_along(&[n], 0)?, x.device())?, &starts)?;
    let kept = index_select_raw(&sorted, 0, &picked)?;
    let mut shape = vec![picked.numel() as i64];
    shape.extend(rest);
    let values = movedim_one(&reshape_raw(&kept, &shape)?, 0, d as i64)?;
    let (inverse, counts) = groups(&starts, order.as_ref())?;
    Ok(Unique { values, inverse, counts })
}

/// `unique(sorted=True, dim=None)` (`consecutive`: `unique_consecutive`), recording torch's
/// node on the values when `x` requires grad. torch's CPU unique sorts whatever `sorted` says.
pub fn unique(x: &Tensor, dim: Option<i64>, consecutive: bool) -> Result<Unique> {
    let u = {
        let _off = GradModeGuard::new(false);
        match dim {
            None => unique_flat(x, !consecutive)?,
            Some(d) => unique_slices(x, d, !consecutive)?,
        }
    };
    let op = match (consecutive, dim) {
        (true, _) => "unique_consecutive",
        (false, None) => "_unique2",
        (false, Some(_)) => "unique_dim",
    };
    if x.dtype().is_floating() {
        if let Some(rec) = Recorder::new(&[Some(x)])? {
            let node = match op {
                "_unique2" => "Unique2Backward0",
                "unique_dim" => "UniqueDimBackward0",
                _ => "UniqueConsecutiveBackward0",
            };
            let message = format!("the derivative for '{}' is not implemented.", op);
            rec.finish(node, &[&u.values], Box::new(move |_| Err(Error::NotImplemented(message.clone()))))?;
        }
    }
    Ok(u)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_inverse_and_counts() {
        let x = Tensor::from_vec(vec![3i64, 1, 2, 3, 1, 5], &[6]).unwrap();
        let u = unique(&x, None, false).unwrap();
        assert_eq!(u.values.to_vec::<i64>().unwrap(), vec![1, 2, 3, 5]);
        assert_eq!(u.inverse.to_vec::<i64>().unwrap(), vec![2, 0, 1, 2, 0, 3]);
        assert_eq!(u.counts.to_vec::<i64>().unwrap(), vec![2, 1, 2, 1]);
        let c = unique(&x, None, true).unwrap();
        assert_eq!(c.values.to_vec::<i64>().unwrap(), vec![3, 1, 2, 3, 1, 5]);
        let rows = Tensor::from_vec(vec![1i64, 2, 1, 2, 0, 5], &[3, 2]).unwrap();
        let r = unique(&rows, Some(0), false).unwrap();
        assert_eq!((r.values.to_vec::<i64>().unwrap(), r.inverse.to_vec::<i64>().unwrap()), (vec![0, 5, 1, 2], vec![1, 1, 0]));
    }
}
