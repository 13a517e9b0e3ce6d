//! Counting into bins: `bincount` (how often each non-negative integer occurs, or the sum of
//! its weights) and `histc` (counts over `bins` equal-width bins between min and max). Neither
//! has a derivative: bincount's output with weights that require grad gets torch's
//! `NotImplemented` node, histc's output never requires grad (derivatives.yaml).
//!
//! Both are built from device ops, so they run wherever their input lives: the counts are
//! `index_add`s into zeros (in index order on the CPU: torch's sequential loop, so float32
//! weights round as torch's do), and histc's bin of each element is torch's linear
//! interpolation `trunc((x - min) * bins / (max - min))` computed op by op in the input's dtype,
//! as torch's kernel computes it in `input_t` (each step rounded, so elements near an edge fall
//! in the bin torch puts them in).

use crate::autograd::Recorder;
use crate::dtype::{DType, Scalar};
use crate::element::round_through;
use crate::error::{fmt_g, not_implemented_for as not_implemented, Error, Result};
use crate::ops::binary::{binary_raw, where_raw, BinaryOp, NOT_IMPLEMENTED_NODE};
use crate::ops::copy::{cast_input, contiguous_raw, to_dtype_raw};
use crate::ops::gather::index_add_raw;
use crate::ops::mask::masked_select_raw;
use crate::ops::reduce::amax_raw;
use crate::ops::Arg;
use crate::tensor::Tensor;

/// `index`'s positions counted into `nbins` zeros of `dtype`, each adding its `weights` element
/// (or 1).
fn count_into(index: &Tensor, weights: Option<&Tensor>, nbins: usize, dtype: DType) -> Result<Tensor> {
    let out = Tensor::zeros_on(&[nbins], dtype, index.device())?;
    if index.numel() == 0 {
        return Ok(out);
    }
    let ones;
    let source = match weights {
        Some(w) => w,
        None => {
            ones = Tensor::full_on(&[index.numel()], Scalar::Int(1), dtype, index.device())?;
            &ones
        }
    };
    index_add_raw(&out, 0, &cast_input(index, DType::Int64)?, source, Scalar::Int(1), true)
}

/// `bincount(self, weights=None, minlength=0)` without autograd, with torch's CPU checks in
/// its order: the dtype (integers only), minlength, then the values and the weights' shape.
/// float32 weights count in float32, other weights in float64, none in int64.
pub fn bincount_raw(x: &Tensor, weights: Option<&Tensor>, minlength: i64) -> Result<Tensor> {
    if !x.dtype().is_integral(false) {
        return Err(not_implemented("bincount_cpu", x.dtype()));
    }
    if minlength < 0 {
        return Err(Error::Runtime("minlength should be >= 0".into()));
    }
    if x.ndim() == 1 && x.numel() == 0 {
        return Tensor::zeros_on(&[minlength as usize], DType::Int64, x.device());
    }
    let refused = || Error::Runtime("bincount only supports 1-d non-negative integral inputs.".into());
    if x.ndim() != 1 {
        return Err(refused());
    }
    let lowest = amax_raw(x, &[], false, false)?.item()?.to_i64();
    if lowest < 0 {
        return Err(refused());
    }
    if let Some(w) = weights {
        if w.ndim() != 1 || w.shape()[0] != x.shape()[0] {
            return Err(Error::Runtime("weights should be 1-d and have the same length as input".into()));
        }
    }
    let highest = amax_raw(x, &[], false, true)?.item()?.to_i64();
    let nbins = usize::try_from(highest).ok().and_then(|h| h.checked_add(1)).ok_or_else(refused)?.max(minlength as usize);
    match weights {
        None => count_into(x, None, nbins, DType::Int64),
        Some(w) => {
            let dtype = if w.dtype() == DType::Float32 { DType::Float32 } else { DType::Float64 };
            count_into(x, Some(&contiguous_raw(&cast_input(w, dtype)?)?), nbins, dtype)
        }
    }
}

/// `bincount`: weights that require grad give the output torch's NotImplemented node, whose
/// backward raises.
pub fn bincount(x: &Tensor, weights: Option<&Tensor>, minlength: i64) -> Result<Tensor> {
    let out = bincount_raw(x, weights, minlength)?;
    let wanting: Vec<Option<&Tensor>> = [Some(x), weights].into_iter().filter(|t| t.is_some_and(|t| t.requires_grad())).collect();
    if let Some(rec) = Recorder::new(&wanting)? {
        rec.finish(NOT_IMPLEMENTED_NODE, &[&out], Box::new(|_| Err(Error::Runtime("derivative for aten::bincount is not implemented".into()))))?;
    }
    Ok(out)
}

/// histc's outer edges (torch's `histc_select_outer_bin_edges`): min and max as given, or the
/// data's extremes when they are equal, widened by 1 each way when still equal; finite, min <
/// max.
fn outer_edges(x: &Tensor, min: f64, max: f64) -> Result<(f64, f64)> {
    let (mut lo, mut hi) = (min, max);
    if lo == hi && x.numel() > 0 {
        lo = amax_raw(x, &[], false, false)?.item()?.to_f64();
        hi = amax_raw(x, &[], false, true)?.item()?.to_f64();
    }
    if lo == hi {
        lo -= 1.0;
        hi += 1.0;
    }
    if !(lo.is_finite() && hi.is_finite()) {
        // torch's extremes of data with a NaN are the processor's default NaN, which glibc
        // prints "-nan"; a NaN given as min or max keeps its sign
        let show = |v: f64, from_data: bool| if v.is_nan() && (from_data || v.is_sign_negative()) { "-nan".to_string() } else { fmt_g(v) };
        let from_data = min == max;
        return Err(Error::Runtime(format!("torch.histc: range of [{}, {}] is not finite", show(lo, from_data), show(hi, from_data))));
    }
    if lo >= hi {
        return Err(Error::Runtime("torch.histc: max must be larger than min".into()));
    }
    Ok((lo, hi))
}

/// `histc(self, bins=100, min=0, max=0)`: counts (in self's dtype) of the elements in each of
/// `bins` equal-width bins over [min, max] (the last bin includes max); elements outside, and
/// NaN, are left out. Floating dtypes only.
pub fn histc(x: &Tensor, bins: i64, min: f64, max: f64) -> Result<Tensor> {
    if bins <= 0 {
        return Err(Error::Runtime(format!("torch.histogram(): bins must be > 0, but got {} for dimension 0", bins)));
    }
    let (lo, hi) = outer_edges(x, min, max)?;
    if x.dtype() == DType::Bool {
        return Err(not_implemented("linspace_cpu", x.dtype())); // torch fails making the edges first
    }
    if !x.dtype().is_floating() {
        return Err(not_implemented("histogram_cpu", x.dtype()));
    }
    let dtype = x.dtype();
    let nbins = bins as usize;
    // the edges as torch's linspace writes them into the input's dtype: its ends are min and max
    let (lo, hi) = (round_through(dtype, lo), round_through(dtype, hi));
    let (t, num) = (|v: &Tensor| Arg::Tensor(v.clone()), |v: f64| Arg::Scalar(Scalar::Float(v)));
    let inside = binary_raw(BinaryOp::LogicalAnd, &t(&binary_raw(BinaryOp::Ge, &t(x), &num(lo), None)?), &t(&binary_raw(BinaryOp::Le, &t(x), &num(hi), None)?), None)?;
    let kept = masked_select_raw(x, &inside)?;
    // ((x - lo) * bins) / (hi - lo), each step in the dtype (the scalars are exact in it)
    let offset = binary_raw(BinaryOp::Sub, &t(&kept), &num(lo), None)?;
    let scaled = binary_raw(BinaryOp::Mul, &t(&offset), &num(round_through(dtype, bins as f64)), None)?;
    let ratio = binary_raw(BinaryOp::Div, &t(&scaled), &num(round_through(dtype, hi - lo)), None)?;
    let pos = to_dtype_raw(&ratio, DType::Int64)?; // truncation toward zero, as static_cast
    let last = Arg::Scalar(Scalar::Int(bins - 1));
    let pos = where_raw(&binary_raw(BinaryOp::Ge, &t(&pos), &last, None)?, &last, &t(&pos))?;
    count_into(&pos, None, nbins, dtype)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bincount_counts_and_sums_weights() {
        let x = Tensor::from_vec(vec![0i64, 1, 1, 3], &[4]).unwrap();
        assert_eq!(bincount_raw(&x, None, 6).unwrap().to_vec::<i64>().unwrap(), vec![1, 2, 0, 1, 0, 0]);
        let w = Tensor::from_vec(vec![0.5f32, 1., 1., 2.], &[4]).unwrap();
        let got = bincount_raw(&x, Some(&w), 0).unwrap();
        assert_eq!((got.dtype(), got.to_vec::<f32>().unwrap()), (DType::Float32, vec![0.5, 2., 0., 2.]));
        let neg = Tensor::from_vec(vec![-1i64, 2], &[2]).unwrap();
        assert_eq!(bincount_raw(&neg, None, 0).unwrap_err().to_string(), "bincount only supports 1-d non-negative integral inputs.");
    }

    #[test]
    fn histc_bins_with_the_last_edge_included() {
        let x = Tensor::from_vec(vec![0f32, 1., 1., 3., f32::NAN, 7.], &[6]).unwrap();
        assert_eq!(histc(&x, 4, 0.0, 3.0).unwrap().to_vec::<f32>().unwrap(), vec![1., 2., 0., 1.]);
        let e = histc(&x, 4, 0.0, 0.0).unwrap_err();
        assert_eq!(e.to_string(), "torch.histc: range of [-nan, -nan] is not finite");
    }
}
