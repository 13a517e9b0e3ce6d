//! `_C` entry points for the conv family of `nn.functional`: conv2d, the 2-d poolings and
//! constant padding. Python (`nn/_functional/conv.py`) turns ints and tuples into lists; the
//! core checks values with torch's messages.

use crate::convert::wrap;
use crate::errors::run;
use crate::tensor::TensorBase;
use minigrad_core::ops::conv::{self, Padding};
use minigrad_core::ops::{pad, pool};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

fn value(x: &Bound<'_, TensorBase>) -> minigrad_core::Tensor {
    x.borrow().t.clone()
}

fn pair(v: &[i64]) -> [i64; 2] {
    [v[0], v[1]]
}

/// `conv2d`: `padding` is a list of ints, or `same_or_valid` names the string form.
#[pyfunction]
#[pyo3(signature = (x, weight, bias, stride, padding, dilation, groups, same_or_valid=None))]
#[allow(clippy::too_many_arguments)]
pub fn conv2d(
    py: Python<'_>,
    x: &Bound<'_, TensorBase>,
    weight: &Bound<'_, TensorBase>,
    bias: Option<&Bound<'_, TensorBase>>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    groups: i64,
    same_or_valid: Option<&str>,
) -> PyResult<Py<PyAny>> {
    let (t, w, b) = (value(x), value(weight), bias.map(value));
    let padding = match same_or_valid {
        Some("same") => Padding::Same,
        Some(_) => Padding::Valid,
        None => Padding::Explicit(padding),
    };
    let taps = w.shape().iter().skip(2).product::<usize>().max(1);
    let out = run(py, t.numel().saturating_mul(taps), || conv::conv2d(&t, &w, b.as_ref(), &stride, &padding, &dilation, groups))?;
    wrap(py, out)
}

/// `max_pool2d`: (values, indices); lists have two entries each.
#[pyfunction]
pub fn max_pool2d(py: Python<'_>, x: &Bound<'_, TensorBase>, kernel: Vec<i64>, stride: Vec<i64>, padding: Vec<i64>, dilation: Vec<i64>, ceil_mode: bool) -> PyResult<Py<PyAny>> {
    let t = value(x);
    let (v, i) = run(py, t.numel(), || pool::max_pool2d(&t, &pair(&kernel), &pair(&stride), &pair(&padding), &pair(&dilation), ceil_mode))?;
    Ok(PyTuple::new(py, [wrap(py, v)?, wrap(py, i)?])?.into_any().unbind())
}

/// `max_pool2d` without the indices (`return_indices=False`): values only where no gradient
/// is recorded.
#[pyfunction]
pub fn max_pool2d_values(py: Python<'_>, x: &Bound<'_, TensorBase>, kernel: Vec<i64>, stride: Vec<i64>, padding: Vec<i64>, dilation: Vec<i64>, ceil_mode: bool) -> PyResult<Py<PyAny>> {
    let t = value(x);
    let v = run(py, t.numel(), || pool::max_pool2d_values(&t, &pair(&kernel), &pair(&stride), &pair(&padding), &pair(&dilation), ceil_mode))?;
    wrap(py, v)
}

#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn avg_pool2d(
    py: Python<'_>,
    x: &Bound<'_, TensorBase>,
    kernel: Vec<i64>,
    stride: Vec<i64>,
    padding: Vec<i64>,
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
) -> PyResult<Py<PyAny>> {
    let t = value(x);
    let out = run(py, t.numel(), || pool::avg_pool2d(&t, &pair(&kernel), &pair(&stride), &pair(&padding), ceil_mode, count_include_pad, divisor_override))?;
    wrap(py, out)
}

#[pyfunction]
pub fn adaptive_avg_pool2d(py: Python<'_>, x: &Bound<'_, TensorBase>, output_size: Vec<i64>) -> PyResult<Py<PyAny>> {
    let t = value(x);
    let out = run(py, t.numel(), || pool::adaptive_avg_pool2d(&t, &output_size))?;
    wrap(py, out)
}

#[pyfunction]
pub fn constant_pad(py: Python<'_>, x: &Bound<'_, TensorBase>, pad: Vec<i64>, value_: f64) -> PyResult<Py<PyAny>> {
    let t = value(x);
    let out = run(py, t.numel(), || pad::constant_pad(&t, &pad, value_))?;
    wrap(py, out)
}

/// `pad(mode='reflect'|'replicate')` of the last two dims; `pad` is (left, right, top, bottom).
#[pyfunction]
pub fn pad2d(py: Python<'_>, x: &Bound<'_, TensorBase>, pad: Vec<i64>, mode: &str) -> PyResult<Py<PyAny>> {
    let t = value(x);
    let mode = if mode == "reflect" { pad::Mode2d::Reflect } else { pad::Mode2d::Replicate };
    let out = run(py, t.numel(), || pad::pad2d(&t, &pad, mode))?;
    wrap(py, out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(conv2d, m)?)?;
    m.add_function(wrap_pyfunction!(max_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(avg_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(adaptive_avg_pool2d, m)?)?;
    m.add_function(wrap_pyfunction!(constant_pad, m)?)?;
    m.add_function(wrap_pyfunction!(pad2d, m)?)?;
    m.add_function(wrap_pyfunction!(max_pool2d_values, m)?)?;
    Ok(())
}
