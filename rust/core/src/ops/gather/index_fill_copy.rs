//! `index_fill` and `index_copy` (in place or not): whole slices along a dim, picked by an
//! index, set to a value (IndexFillBackward0 for a number, IndexFillBackward1 for a 0-d tensor)
//! or to the slices of a source (IndexCopyBackward0). Each picked slice is written in index
//! order through views of the destination, so repeated indices end with the last one's slice
//! on every device (deterministic), within one write (one version bump). Out of place,
//! index_fill writes a clone of self keeping its layout (torch's `clone(Preserve)`), index_copy
//! a contiguous copy (torch's structured kernel allocates one).

use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::ops::copy::{clone_raw, copy_kernel, distinct_elements};
use crate::ops::views::select_raw;
use crate::ops::write::{write, write_overlapping};
use crate::shape::wrap_dim;
use crate::tensor::Tensor;
use super::{check_inplace, destination, finish, index_select, recorder};

/// The index as torch reads it for these ops: int64 only (`what` words the dtype error), at
/// most 1-D; negative values count from the end for index_fill (`wrap_negative`).
fn index_values(index: &Tensor, size: usize, op: &str, wrap_negative: bool) -> Result<Vec<usize>> {
    let vals = index.to_vec::<i64>()?;
    let n = size as i64;
    vals.iter()
        .map(|&v| {
            let ok = if wrap_negative { (-n..n).contains(&v) } else { (0..n).contains(&v) };
            if !ok {
                let dim_note = if op.is_empty() { String::new() } else { format!("{op}(): ") };
                return Err(Error::Index(format!("{dim_note}index {v} is out of bounds for dimension {{dim}} with size {size}")));
            }
            Ok(if v < 0 { (v + n) as usize } else { v as usize })
        })
        .collect()
}

/// `self` as the ops index it: a 0-d tensor is a one-element vector.
fn as_vector(x: &Tensor) -> Result<Tensor> {
    if x.ndim() == 0 { crate::ops::views::reshape_raw(x, &[1]) } else { Ok(x.clone()) }
}

/// What index_fill writes: a number (int_Scalar) or a 0-d tensor's value (int_Tensor).
#[derive(Clone)]
pub enum FillValue {
    Number(Scalar),
    Tensor(Tensor),
}

/// `index_fill(self, dim, index, value)` (in place when `in_place`), unrecorded.
pub fn index_fill_raw(x: &Tensor, dim: i64, index: &Tensor, value: &FillValue, in_place: bool) -> Result<Tensor> {
    let value = match value {
        FillValue::Number(s) => *s,
        FillValue::Tensor(v) => {
            if v.ndim() != 0 {
                return Err(Error::Runtime(format!(
                    "index_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                    v.ndim()
                )));
            }
            v.item()?
        }
    };
    if index.dtype() != DType::Int64 {
        return Err(Error::Index("index_fill_(): Expected dtype int64 for index.".into()));
    }
    if in_place {
        crate::ops::write::assert_no_overlap(x, index)?;
        if x.layout.has_internal_overlap() {
            // torch fills an expanded tensor too, with this deprecation warning
            crate::autograd::mode::push_warning("Use of index_fill_ on expanded tensors is deprecated. Please clone() the tensor before performing this operation. This also applies to advanced indexing e.g. tensor[mask] = scalar".into());
        }
    }
    let xv = as_vector(x)?;
    let d = wrap_dim(dim, xv.ndim())?;
    if index.ndim() > 1 {
        return Err(Error::Runtime("Index has to be a vector/scalar".into()));
    }
    let size = xv.shape()[d];
    let picks = index_values(index, size, "", true).map_err(|e| with_dim(e, d))?;
    let dst = if in_place { x.clone() } else { clone_raw(x)? };
    let target = as_vector(&dst)?;
    let fill = |_: &[(Tensor, crate::ops::write::Alias)]| -> Result<()> {
        for &p in &picks {
            // each location once: an expanded self's aliases get the same value
            let slice = distinct_elements(&select_raw(&target, d as i64, p as i64)?);
            crate::device::backend_for(&[&slice])?.fill(&slice, value)?;
        }
        Ok(())
    };
    if in_place { write_overlapping(&dst, &[], fill)? } else { fill(&[])? }
    Ok(dst)
}

/// The bounds error names the wrapped dim, known only after wrapping.
fn with_dim(e: Error, d: usize) -> Error {
    match e {
        Error::Index(m) => Error::Index(m.replace("{dim}", &d.to_string())),
        other => other,
    }
}

/// `index_copy(self, dim, index, source)` (in place when `in_place`), unrecorded, with torch's
/// checks in its order and words.
pub fn index_copy_raw(x: &Tensor, dim: i64, index: &Tensor, source: &Tensor, in_place: bool) -> Result<Tensor> {
    let d = wrap_dim(dim, x.ndim())?;
    if index.ndim() >= 2 {
        return Err(Error::Index(format!("index_copy_(): Index should have dimension 1 or 0 (got {})", index.ndim())));
    }
    let count = index.numel();
    if source.ndim() == 0 && count != 1 {
        return Err(Error::Index(format!(
            "index_copy_(): When source is scalar, index should have one element (got {count})"
        )));
    }
    if source.ndim() != x.ndim() && source.ndim() != 0 && x.ndim() != 0 {
        return Err(Error::Index(format!(
            "index_copy_(): When source and destination are not scalars, their dimensionality must match. Source dimensionality ({}), destination dimensionality ({})",
            source.ndim(),
            x.ndim()
        )));
    }
    if index.dtype() != DType::Int64 {
        return Err(Error::Runtime(format!(
            "index_copy_(): Expected a long tensor for index, but got {}",
            index.dtype().scalar_type_name()
        )));
    }
    if x.dtype() != source.dtype() {
        return Err(Error::Runtime(format!(
            "index_copy_(): self and source expected to have the same dtype, but got (self) {} and (source) {}",
            x.dtype().scalar_type_name(),
            source.dtype().scalar_type_name()
        )));
    }
    if source.ndim() > 0 && count != source.shape()[d] {
        return Err(Error::Index(format!(
            "index_copy_(): Number of indices ({}) should be equal to source.size(dim) ({})",
            count,
            source.shape()[d]
        )));
    }
    if x.ndim() > 0 && source.ndim() > 0 {
        let (mut xs, mut ss) = (x.shape().to_vec(), source.shape().to_vec());
        xs.remove(d);
        ss.remove(d);
        if xs != ss {
            let join = |v: &[usize]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(" ");
            return Err(Error::Runtime(format!(
                "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: {} at dimension {} and source slice shape: {} at dimension 0.",
                join(&xs),
                d,
                join(&ss)
            )));
        }
    }
    if in_place {
        check_inplace(x, &[index, source])?;
    }
    let xv = as_vector(x)?;
    let picks = index_values(index, xv.shape()[d], "index_copy_", false).map_err(|e| with_dim(e, d))?;
    // torch's structured index_copy allocates a contiguous result (index_fill clones self)
    let dst = destination(x, in_place)?;
    let target = as_vector(&dst)?;
    let copy = |reads: &[(Tensor, crate::ops::write::Alias)]| -> Result<()> {
        let src = as_vector(reads.first().map(|r| &r.0).unwrap_or(source))?;
        for (i, &p) in picks.iter().enumerate() {
            copy_kernel(&select_raw(&target, d as i64, p as i64)?, &select_raw(&src, d as i64, i as i64)?)?;
        }
        Ok(())
    };
    if in_place { write(&dst, &[source], copy)? } else { copy(&[])? }
    Ok(dst)
}

/// torch's index_fill(grad, dim, index, 0): the gradient with the filled slices zeroed.
fn zero_filled(g: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    index_fill(g, dim, index, &FillValue::Number(Scalar::Int(0)), false)
}

/// Differentiable `index_fill` / `index_fill_`: self's gradient is the incoming one with the
/// filled slices zeroed; a tensor value's is the sum of the gradient over the distinct filled
/// slices (IndexFillBackward1).
pub fn index_fill(x: &Tensor, dim: i64, index: &Tensor, value: &FillValue, in_place: bool) -> Result<Tensor> {
    let _blame = in_place.then(|| crate::autograd::blame::op("index_fill_"));
    let value_tensor = match value {
        FillValue::Tensor(v) => Some(v),
        FillValue::Number(_) => None,
    };
    let operands: Vec<Option<&Tensor>> = value_tensor.into_iter().map(Some).collect();
    let rec = recorder(x, &operands, in_place)?;
    let out = index_fill_raw(x, dim, index, value, in_place)?;
    let Some(mut rec) = rec else { return Ok(out) };
    rec.value("dim", dim);
    rec.save("index", index)?;
    let target = if in_place { x } else { &out };
    let has_value = value_tensor.is_some();
    let name = if has_value { "IndexFillBackward1" } else { "IndexFillBackward0" };
    finish(rec, name, target, in_place, Box::new(move |ctx| {
        let (g, index) = (ctx.grad(), ctx.saved(0));
        let gx = if ctx.needs(0) { Some(zero_filled(g, dim, index)?) } else { None };
        if !has_value {
            return Ok(vec![gx]);
        }
        let gv = if ctx.needs(1) {
            // grad.index_select(dim, unique(index)).sum(): each filled slice counted once
            let gv = as_vector(g)?;
            let size = gv.shape()[wrap_dim(dim, gv.ndim())?] as i64;
            let mut distinct = index.to_vec::<i64>()?;
            distinct.iter_mut().for_each(|v| if *v < 0 { *v += size });
            distinct.sort_unstable();
            distinct.dedup();
            let n = distinct.len();
            let picked = index_select(&gv, dim, &Tensor::from_vec(distinct, &[n])?)?;
            Some(crate::ops::reduce::sum(&picked, None, false, None)?)
        } else {
            None
        };
        Ok(vec![gx, gv])
    }))?;
    Ok(out)
}

/// Differentiable `index_copy` / `index_copy_` (IndexCopyBackward0): self's gradient is the
/// incoming one with the copied slices zeroed, source's the copied slices of it.
pub fn index_copy(x: &Tensor, dim: i64, index: &Tensor, source: &Tensor, in_place: bool) -> Result<Tensor> {
    let _blame = in_place.then(|| crate::autograd::blame::op("index_copy_"));
    let rec = recorder(x, &[Some(source)], in_place)?;
    let out = index_copy_raw(x, dim, index, source, in_place)?;
    let Some(mut rec) = rec else { return Ok(out) };
    rec.value("dim", dim);
    rec.value("source_dim", source.ndim());
    rec.save("index", index)?;
    rec.save("source", source)?;
    let target = if in_place { x } else { &out };
    let src_shape: Vec<i64> = source.shape().iter().map(|&s| s as i64).collect();
    let src_is_scalar = source.ndim() == 0;
    finish(rec, "IndexCopyBackward0", target, in_place, Box::new(move |ctx| {
        let (g, index) = (ctx.grad(), ctx.saved(0));
        let gx = if ctx.needs(0) { Some(zero_filled(g, dim, index)?) } else { None };
        let gs = if ctx.needs(1) {
            let picked = if src_is_scalar {
                index_select(g, dim, &crate::ops::views::reshape(index, &[])?)?
            } else {
                crate::ops::views::expand(&index_select(g, dim, index)?, &src_shape)?
            };
            Some(picked)
        } else {
            None
        };
        Ok(vec![gx, gs])
    }))?;
    Ok(out)
}
