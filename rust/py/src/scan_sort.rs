//! `_C` entry points for the scans (cumsum, cumprod, logcumsumexp, cummax, cummin) and the sorting family
//! (sort, topk, kthvalue, median, searchsorted). The Python wrappers (`_ops/scans.py`, `_ops/sorting.py`)
//! resolve torch's overloads and argument kinds; these parse plain values, release the GIL for
//! large tensors, and return `self` itself from in-place variants.

use crate::convert::{to_dtype, wrap};
use crate::errors::{run, type_err};
use crate::tensor::TensorBase;
use minigrad_core::ops::scan::{self, ScanOp};
use minigrad_core::ops::sort as sorting;
use minigrad_core::Tensor;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

fn value(x: &Bound<'_, TensorBase>) -> Tensor {
    x.borrow().t.clone()
}

fn pair(py: Python<'_>, (v, i): (Tensor, Tensor)) -> PyResult<Py<PyAny>> {
    Ok(PyTuple::new(py, [wrap(py, v)?, wrap(py, i)?])?.into_any().unbind())
}

/// `cumsum` / `cumprod` (`op`), out of place or in place.
#[pyfunction]
#[pyo3(signature = (x, op, dim, dtype=None, inplace=false))]
pub fn cum(py: Python<'_>, x: &Bound<'_, TensorBase>, op: &str, dim: i64, dtype: Option<&Bound<'_, PyAny>>, inplace: bool) -> PyResult<Py<PyAny>> {
    let op = match op {
        "cumsum" => ScanOp::Cumsum,
        "cumprod" => ScanOp::Cumprod,
        other => return Err(type_err(format!("unknown scan {}", other))),
    };
    let (t, dtype) = (value(x), to_dtype(dtype)?);
    if inplace {
        run(py, t.numel(), move || scan::cum_(op, &t, dim, dtype))?;
        return Ok(x.clone().into_any().unbind());
    }
    let out = run(py, t.numel(), move || scan::cum(op, &t, dim, dtype))?;
    wrap(py, out)
}

#[pyfunction]
pub fn logcumsumexp(py: Python<'_>, x: &Bound<'_, TensorBase>, dim: i64) -> PyResult<Py<PyAny>> {
    let t = value(x);
    let out = run(py, t.numel(), move || scan::logcumsumexp(&t, dim))?;
    wrap(py, out)
}

/// `sort(dim, descending, stable)`: a (values, indices) tuple; `stable` is None when the call
/// did not name it (torch's other overload, another node name).
#[pyfunction]
#[pyo3(signature = (x, dim, descending, stable=None))]
pub fn sort(py: Python<'_>, x: &Bound<'_, TensorBase>, dim: i64, descending: bool, stable: Option<bool>) -> PyResult<Py<PyAny>> {
    let t = value(x);
    let out = run(py, t.numel(), move || sorting::sort(&t, dim, descending, stable))?;
    pair(py, out)
}

#[pyfunction]
pub fn topk(py: Python<'_>, x: &Bound<'_, TensorBase>, k: i64, dim: i64, largest: bool, sorted: bool) -> PyResult<Py<PyAny>> {
    let t = value(x);
    let out = run(py, t.numel(), move || sorting::topk(&t, k, dim, largest, sorted))?;
    pair(py, out)
}

/// `cummax(dim)` / `cummin(dim)`: (values, indices).
#[pyfunction]
pub fn cum_extreme(py: Python<'_>, x: &Bound<'_, TensorBase>, dim: i64, is_max: bool) -> PyResult<Py<PyAny>> {
    let t = value(x);
    let out = run(py, t.numel(), move || minigrad_core::ops::cum_extreme::cum_extreme(&t, dim, is_max))?;
    pair(py, out)
}

#[pyfunction]
pub fn kthvalue(py: Python<'_>, x: &Bound<'_, TensorBase>, k: i64, dim: i64, keepdim: bool) -> PyResult<Py<PyAny>> {
    let t = value(x);
    let out = run(py, t.numel(), move || sorting::kthvalue(&t, k, dim, keepdim))?;
    pair(py, out)
}

/// `median()` (a 0-d tensor) or `median(dim, keepdim)` (a (values, indices) tuple).
#[pyfunction]
#[pyo3(signature = (x, dim=None, keepdim=false))]
pub fn median(py: Python<'_>, x: &Bound<'_, TensorBase>, dim: Option<i64>, keepdim: bool) -> PyResult<Py<PyAny>> {
    let t = value(x);
    match dim {
        None => {
            let out = run(py, t.numel(), move || sorting::median(&t))?;
            wrap(py, out)
        }
        Some(d) => {
            let out = run(py, t.numel(), move || sorting::median_dim(&t, d, keepdim))?;
            pair(py, out)
        }
    }
}

/// A tensor, or a Python number (torch's Scalar overloads).
fn tensor_or_number(v: &Bound<'_, PyAny>) -> PyResult<minigrad_core::ops::Arg> {
    use minigrad_core::ops::Arg;
    match v.cast::<TensorBase>() {
        Ok(t) => Ok(Arg::Tensor(value(t))),
        Err(_) => Ok(Arg::Scalar(crate::convert::to_scalar(v)?.ok_or_else(|| type_err("expected a Tensor or a number"))?)),
    }
}

fn numel(a: &minigrad_core::ops::Arg) -> usize {
    a.tensor().map_or(1, |t| t.numel())
}

/// `searchsorted(sorted_sequence, values, out_int32, right, side, sorter)`, values a tensor or a
/// number.
#[pyfunction]
#[pyo3(signature = (seq, values, out_int32, right, side, sorter))]
pub fn searchsorted(py: Python<'_>, seq: &Bound<'_, TensorBase>, values: &Bound<'_, PyAny>, out_int32: bool, right: bool, side: Option<String>, sorter: Option<&Bound<'_, TensorBase>>) -> PyResult<Py<PyAny>> {
    let (s, v, order) = (value(seq), tensor_or_number(values)?, sorter.map(value));
    let work = s.numel() + numel(&v);
    let out = run(py, work, move || minigrad_core::ops::searchsorted::searchsorted(&s, &v, out_int32, right, side.as_deref(), order.as_ref()))?;
    wrap(py, out)
}

/// `bucketize(values, boundaries, out_int32, right)`.
#[pyfunction]
pub fn bucketize(py: Python<'_>, values: &Bound<'_, PyAny>, boundaries: &Bound<'_, TensorBase>, out_int32: bool, right: bool) -> PyResult<Py<PyAny>> {
    let (v, b) = (tensor_or_number(values)?, value(boundaries));
    let work = b.numel() + numel(&v);
    let out = run(py, work, move || minigrad_core::ops::searchsorted::bucketize(&v, &b, out_int32, right))?;
    wrap(py, out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(cum, m)?)?;
    m.add_function(wrap_pyfunction!(logcumsumexp, m)?)?;
    m.add_function(wrap_pyfunction!(sort, m)?)?;
    m.add_function(wrap_pyfunction!(searchsorted, m)?)?;
    m.add_function(wrap_pyfunction!(bucketize, m)?)?;
    m.add_function(wrap_pyfunction!(topk, m)?)?;
    m.add_function(wrap_pyfunction!(kthvalue, m)?)?;
    m.add_function(wrap_pyfunction!(cum_extreme, m)?)?;
    m.add_function(wrap_pyfunction!(median, m)?)?;
    Ok(())
}
