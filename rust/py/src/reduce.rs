//! `_C` entry points for reductions and softmax. The Python methods (`_reduce_methods.py`)
//! resolve torch's overloads and hand over plain values: dims as a list of ints or None.

use crate::convert::{to_dtype, wrap};
use crate::errors::{run, type_err};
use crate::tensor::TensorBase;
use minigrad_core::ops::reduce as ops;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

fn value(x: &Bound<'_, TensorBase>) -> minigrad_core::Tensor {
    x.borrow().t.clone()
}

/// Reductions over a list of dims: sum, nansum, mean, amax, amin, all, any, count_nonzero, logsumexp,
/// and the all-element max_all/min_all.
#[pyfunction]
#[pyo3(signature = (x, op, dims=None, keepdim=false, dtype=None))]
pub fn reduce(
    py: Python<'_>,
    x: &Bound<'_, TensorBase>,
    op: &str,
    dims: Option<Vec<i64>>,
    keepdim: bool,
    dtype: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyAny>> {
    let dtype = to_dtype(dtype)?;
    let t = value(x);
    let d = dims.as_deref();
    let out = match op {
        "sum" => run(py, t.numel(), || ops::sum(&t, d, keepdim, dtype)),
        "nansum" => run(py, t.numel(), || ops::nansum(&t, d, keepdim, dtype)),
        "mean" => run(py, t.numel(), || ops::mean(&t, d, keepdim, dtype)),
        "amax" | "amin" => run(py, t.numel(), || ops::amax(&t, d.unwrap_or(&[]), keepdim, op == "amax")),
        "max_all" | "min_all" => run(py, t.numel(), || ops::max_all(&t, op == "max_all")),
        "all" | "any" => run(py, t.numel(), || ops::all(&t, d, keepdim, op == "all")),
        "count_nonzero" => run(py, t.numel(), || ops::count_nonzero(&t, d)),
        "logsumexp" => run(py, t.numel(), || ops::logsumexp(&t, d.unwrap_or(&[]), keepdim)),
        other => return Err(type_err(format!("unknown reduction {}", other))),
    }?;
    wrap(py, out)
}

#[pyfunction]
#[pyo3(signature = (x, dim=None, keepdim=false, dtype=None))]
pub fn prod(py: Python<'_>, x: &Bound<'_, TensorBase>, dim: Option<i64>, keepdim: bool, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
    let dtype = to_dtype(dtype)?;
    let t = value(x);
    let out = run(py, t.numel(), || ops::prod(&t, dim, keepdim, dtype))?;
    wrap(py, out)
}

/// `max(dim)` / `min(dim)`: a (values, indices) tuple; Python wraps it as a named result.
#[pyfunction]
pub fn max_dim(py: Python<'_>, x: &Bound<'_, TensorBase>, dim: i64, keepdim: bool, is_max: bool) -> PyResult<Py<PyAny>> {
    let t = value(x);
    let (v, i) = run(py, t.numel(), || ops::max_dim(&t, dim, keepdim, is_max))?;
    Ok(PyTuple::new(py, [wrap(py, v)?, wrap(py, i)?])?.into_any().unbind())
}

/// `aminmax(dim=None, keepdim)`: a (min, max) tuple; Python wraps it as a named result.
#[pyfunction]
#[pyo3(signature = (x, dim=None, keepdim=false))]
pub fn aminmax(py: Python<'_>, x: &Bound<'_, TensorBase>, dim: Option<i64>, keepdim: bool) -> PyResult<Py<PyAny>> {
    let t = value(x);
    let (lo, hi) = run(py, t.numel(), || ops::aminmax(&t, dim, keepdim))?;
    Ok(PyTuple::new(py, [wrap(py, lo)?, wrap(py, hi)?])?.into_any().unbind())
}

#[pyfunction]
#[pyo3(signature = (x, dim=None, keepdim=false, is_max=true))]
pub fn argmax(py: Python<'_>, x: &Bound<'_, TensorBase>, dim: Option<i64>, keepdim: bool, is_max: bool) -> PyResult<Py<PyAny>> {
    let t = value(x);
    let out = run(py, t.numel(), || ops::argmax(&t, dim, keepdim, is_max))?;
    wrap(py, out)
}

/// torch's warning when a variance has no degrees of freedom left.
fn dof_warning(op: &str) -> String {
    format!("{op}(): degrees of freedom is <= 0. Correction should be strictly less than the reduction factor (input numel divided by output numel).")
}

/// `var` / `std` (`sqrt`): (result, warning text or None). torch warns when the degrees of
/// freedom are <= 0; Python issues the warning so it points at the user's line.
#[pyfunction]
#[pyo3(signature = (x, dims, correction, keepdim, sqrt))]
pub fn var(py: Python<'_>, x: &Bound<'_, TensorBase>, dims: Option<Vec<i64>>, correction: f64, keepdim: bool, sqrt: bool) -> PyResult<(Py<PyAny>, Option<String>)> {
    let t = value(x);
    let (out, warn) = run(py, t.numel(), || ops::var(&t, dims.as_deref(), correction, keepdim, sqrt))?;
    let warning = warn.then(|| dof_warning(if sqrt { "std" } else { "var" }));
    Ok((wrap(py, out)?, warning))
}

/// `var_mean` / `std_mean` (`sqrt`): (spread, mean, warning text or None), as `var`.
#[pyfunction]
#[pyo3(signature = (x, dims, correction, keepdim, sqrt))]
pub fn var_mean(py: Python<'_>, x: &Bound<'_, TensorBase>, dims: Option<Vec<i64>>, correction: f64, keepdim: bool, sqrt: bool) -> PyResult<(Py<PyAny>, Py<PyAny>, Option<String>)> {
    let t = value(x);
    let (spread, centre, warn) = run(py, t.numel(), || ops::var_mean(&t, dims.as_deref(), correction, keepdim, sqrt))?;
    let warning = warn.then(|| dof_warning(if sqrt { "std_mean" } else { "var_mean" }));
    Ok((wrap(py, spread)?, wrap(py, centre)?, warning))
}

#[pyfunction]
#[pyo3(signature = (x, ord, dims=None, keepdim=false, dtype=None))]
pub fn vector_norm(py: Python<'_>, x: &Bound<'_, TensorBase>, ord: f64, dims: Option<Vec<i64>>, keepdim: bool, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
    let dtype = to_dtype(dtype)?;
    let t = value(x);
    let out = run(py, t.numel(), || ops::vector_norm(&t, ord, dims.as_deref(), keepdim, dtype))?;
    wrap(py, out)
}

#[pyfunction]
#[pyo3(signature = (x, dim, dtype=None, log=false))]
pub fn softmax(py: Python<'_>, x: &Bound<'_, TensorBase>, dim: i64, dtype: Option<&Bound<'_, PyAny>>, log: bool) -> PyResult<Py<PyAny>> {
    let dtype = to_dtype(dtype)?;
    let t = value(x);
    let out = run(py, t.numel(), || ops::softmax(&t, dim, dtype, log))?;
    wrap(py, out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(reduce, m)?)?;
    m.add_function(wrap_pyfunction!(prod, m)?)?;
    m.add_function(wrap_pyfunction!(max_dim, m)?)?;
    m.add_function(wrap_pyfunction!(argmax, m)?)?;
    m.add_function(wrap_pyfunction!(var, m)?)?;
    m.add_function(wrap_pyfunction!(var_mean, m)?)?;
    m.add_function(wrap_pyfunction!(aminmax, m)?)?;
    m.add_function(wrap_pyfunction!(vector_norm, m)?)?;
    m.add_function(wrap_pyfunction!(softmax, m)?)?;
    Ok(())
}
