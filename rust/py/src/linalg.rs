//! `_C` entry points for matrix products, joining and gathering. The Python layer
//! (`_linalg_methods.py`) checks argument kinds with torch's TypeErrors; these parse, release
//! the GIL for large work, and return the very `self` object from in-place variants.

use crate::convert::{tensor_of, to_scalar, wrap};
use crate::errors::{run, type_err};
use crate::tensor::TensorBase;
use minigrad_core::ops::gather::{self as gops, Source};
use minigrad_core::ops::{join, linalg};
use minigrad_core::{Scalar, Tensor};
use pyo3::prelude::*;
use pyo3::types::PySequence;

/// `op` is one of matmul, mm, bmm, mv, dot.
#[pyfunction]
pub fn matmul(py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>, op: &str) -> PyResult<Py<PyAny>> {
    let (x, y) = (tensor_of(a, "input")?, tensor_of(b, "other")?);
    let f = match op {
        "matmul" => linalg::matmul,
        "mm" => linalg::mm,
        "bmm" => linalg::bmm,
        "mv" => linalg::mv,
        "dot" => linalg::dot,
        _ => return Err(type_err(format!("unknown product {}", op))),
    };
    // a product's work is its multiply-adds (m·k·n), not its operands' sizes: a 128x128 mm
    // must release the GIL too
    let n = if y.shape().len() >= 2 { y.shape()[y.shape().len() - 1] } else { 1 };
    let work = x.numel().saturating_mul(n).max(y.numel());
    let out = run(py, work, move || f(&x, &y))?;
    wrap(py, out)
}

/// `addmm(self, mat1, mat2, *, beta=1, alpha=1)`.
#[pyfunction]
pub fn addmm(py: Python<'_>, x: &Bound<'_, PyAny>, mat1: &Bound<'_, PyAny>, mat2: &Bound<'_, PyAny>, beta: &Bound<'_, PyAny>, alpha: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let (t, a, b) = (tensor_of(x, "input")?, tensor_of(mat1, "mat1")?, tensor_of(mat2, "mat2")?);
    let number = |v: &Bound<'_, PyAny>| -> PyResult<Scalar> { to_scalar(v)?.ok_or_else(|| type_err("addmm(): beta and alpha must be numbers")) };
    let (beta, alpha) = (number(beta)?, number(alpha)?);
    let work = a.numel().max(b.numel());
    let out = run(py, work, move || linalg::addmm(&t, &a, &b, beta, alpha))?;
    wrap(py, out)
}

/// `kron(self, other)`.
#[pyfunction]
pub fn kron(py: Python<'_>, a: &Bound<'_, PyAny>, b: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let (x, y) = (tensor_of(a, "input")?, tensor_of(b, "other")?);
    let work = x.numel().saturating_mul(y.numel());
    let out = run(py, work, move || linalg::kron(&x, &y))?;
    wrap(py, out)
}

fn tensors(seq: &Bound<'_, PyAny>) -> PyResult<Vec<Tensor>> {
    let seq = seq.cast::<PySequence>().map_err(|_| type_err("expected a sequence of Tensors"))?;
    seq.try_iter()?.map(|t| tensor_of(&t?, "tensors")).collect()
}

#[pyfunction]
pub fn cat(py: Python<'_>, ts: &Bound<'_, PyAny>, dim: i64) -> PyResult<Py<PyAny>> {
    let ts = tensors(ts)?;
    let work = ts.iter().map(|t| t.numel()).sum();
    let out = run(py, work, move || join::cat(&ts, dim))?;
    wrap(py, out)
}

#[pyfunction]
pub fn stack(py: Python<'_>, ts: &Bound<'_, PyAny>, dim: i64) -> PyResult<Py<PyAny>> {
    let ts = tensors(ts)?;
    let work = ts.iter().map(|t| t.numel()).sum();
    let out = run(py, work, move || join::stack(&ts, dim))?;
    wrap(py, out)
}

#[pyfunction]
pub fn gather(py: Python<'_>, x: &Bound<'_, TensorBase>, dim: i64, index: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let (t, i) = (x.borrow().t.clone(), tensor_of(index, "index")?);
    let out = run(py, i.numel(), move || gops::gather(&t, dim, &i))?;
    wrap(py, out)
}

#[pyfunction]
pub fn index_select(py: Python<'_>, x: &Bound<'_, TensorBase>, dim: i64, index: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let (t, i) = (x.borrow().t.clone(), tensor_of(index, "index")?);
    let work = t.numel();
    let out = run(py, work, move || gops::index_select(&t, dim, &i))?;
    wrap(py, out)
}

/// Returns `x` itself for in-place calls (R59), else the new tensor.
fn result(py: Python<'_>, x: &Bound<'_, TensorBase>, out: Tensor, inplace: bool) -> PyResult<Py<PyAny>> {
    if inplace {
        return Ok(x.clone().into_any().unbind());
    }
    wrap(py, out)
}

/// `scatter(dim, index, src|value, reduce=None)`; `src` is a tensor or a number.
#[pyfunction]
#[pyo3(signature = (x, dim, index, src, reduce=None, inplace=false))]
pub fn scatter(py: Python<'_>, x: &Bound<'_, TensorBase>, dim: i64, index: &Bound<'_, PyAny>, src: &Bound<'_, PyAny>, reduce: Option<String>, inplace: bool) -> PyResult<Py<PyAny>> {
    let (t, i) = (x.borrow().t.clone(), tensor_of(index, "index")?);
    let source = match src.cast::<TensorBase>() {
        Ok(s) => Source::Tensor(s.borrow().t.clone()),
        Err(_) => Source::Value(to_scalar(src)?.ok_or_else(|| type_err("scatter(): value must be a number"))?),
    };
    let work = t.numel();
    let out = run(py, work, move || gops::scatter(&t, dim, &i, &source, reduce.as_deref(), inplace))?;
    result(py, x, out, inplace)
}

#[pyfunction]
#[pyo3(signature = (x, dim, index, src, inplace=false))]
pub fn scatter_add(py: Python<'_>, x: &Bound<'_, TensorBase>, dim: i64, index: &Bound<'_, PyAny>, src: &Bound<'_, PyAny>, inplace: bool) -> PyResult<Py<PyAny>> {
    let (t, i, s) = (x.borrow().t.clone(), tensor_of(index, "index")?, tensor_of(src, "src")?);
    let work = t.numel();
    let out = run(py, work, move || gops::scatter_add(&t, dim, &i, &s, inplace))?;
    result(py, x, out, inplace)
}

#[pyfunction]
#[pyo3(signature = (x, dim, index, source, alpha, inplace=false))]
pub fn index_add(py: Python<'_>, x: &Bound<'_, TensorBase>, dim: i64, index: &Bound<'_, PyAny>, source: &Bound<'_, PyAny>, alpha: &Bound<'_, PyAny>, inplace: bool) -> PyResult<Py<PyAny>> {
    let (t, i, s) = (x.borrow().t.clone(), tensor_of(index, "index")?, tensor_of(source, "source")?);
    let alpha: Scalar = to_scalar(alpha)?.ok_or_else(|| type_err("index_add(): alpha must be a number"))?;
    let work = t.numel();
    let out = run(py, work, move || gops::index_add(&t, dim, &i, &s, alpha, inplace))?;
    result(py, x, out, inplace)
}

/// `index_fill(dim, index, value)`: `value` a number or a 0-d tensor (torch's two overloads).
#[pyfunction]
#[pyo3(signature = (x, dim, index, value, inplace=false))]
pub fn index_fill(py: Python<'_>, x: &Bound<'_, TensorBase>, dim: i64, index: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>, inplace: bool) -> PyResult<Py<PyAny>> {
    let (t, i) = (x.borrow().t.clone(), tensor_of(index, "index")?);
    let value = match value.cast::<TensorBase>() {
        Ok(v) => gops::FillValue::Tensor(v.borrow().t.clone()),
        Err(_) => gops::FillValue::Number(to_scalar(value)?.ok_or_else(|| type_err("index_fill(): value must be a number or a tensor"))?),
    };
    let work = t.numel();
    let out = run(py, work, move || gops::index_fill(&t, dim, &i, &value, inplace))?;
    result(py, x, out, inplace)
}

#[pyfunction]
#[pyo3(signature = (x, dim, index, source, inplace=false))]
pub fn index_copy(py: Python<'_>, x: &Bound<'_, TensorBase>, dim: i64, index: &Bound<'_, PyAny>, source: &Bound<'_, PyAny>, inplace: bool) -> PyResult<Py<PyAny>> {
    let (t, i, s) = (x.borrow().t.clone(), tensor_of(index, "index")?, tensor_of(source, "source")?);
    let work = t.numel();
    let out = run(py, work, move || gops::index_copy(&t, dim, &i, &s, inplace))?;
    result(py, x, out, inplace)
}

#[pyfunction]
pub fn take(py: Python<'_>, x: &Bound<'_, TensorBase>, index: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let (t, i) = (x.borrow().t.clone(), tensor_of(index, "index")?);
    let out = run(py, i.numel(), move || gops::take(&t, &i))?;
    wrap(py, out)
}

/// `put(index, source, accumulate)`; in place (`put_`) returns `x` itself.
#[pyfunction]
#[pyo3(signature = (x, index, source, accumulate, inplace=false))]
pub fn put(py: Python<'_>, x: &Bound<'_, TensorBase>, index: &Bound<'_, PyAny>, source: &Bound<'_, PyAny>, accumulate: bool, inplace: bool) -> PyResult<Py<PyAny>> {
    let (t, i, s) = (x.borrow().t.clone(), tensor_of(index, "index")?, tensor_of(source, "source")?);
    let work = s.numel() + if inplace { 0 } else { t.numel() };
    let out = run(py, work, move || gops::put(&t, &i, &s, accumulate, inplace))?;
    result(py, x, out, inplace)
}

/// `linalg_cross(input, other, dim)`; `dim=None` is `torch.cross`'s default (the first dim of
/// size 3; the Python wrapper warns).
#[pyfunction]
pub fn linalg_cross(py: Python<'_>, input: &Bound<'_, TensorBase>, other: &Bound<'_, PyAny>, dim: Option<i64>) -> PyResult<Py<PyAny>> {
    let (a, b) = (input.borrow().t.clone(), tensor_of(other, "other")?);
    let work = a.numel().max(b.numel());
    let out = run(py, work, move || {
        let dim = minigrad_core::ops::cross::default_cross_dim(dim, a.shape())?;
        minigrad_core::ops::cross::linalg_cross(&a, &b, dim)
    })?;
    wrap(py, out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(linalg_cross, m)?)?;
    m.add_function(wrap_pyfunction!(index_fill, m)?)?;
    m.add_function(wrap_pyfunction!(index_copy, m)?)?;
    m.add_function(wrap_pyfunction!(matmul, m)?)?;
    m.add_function(wrap_pyfunction!(addmm, m)?)?;
    m.add_function(wrap_pyfunction!(kron, m)?)?;
    m.add_function(wrap_pyfunction!(cat, m)?)?;
    m.add_function(wrap_pyfunction!(stack, m)?)?;
    m.add_function(wrap_pyfunction!(gather, m)?)?;
    m.add_function(wrap_pyfunction!(index_select, m)?)?;
    m.add_function(wrap_pyfunction!(scatter, m)?)?;
    m.add_function(wrap_pyfunction!(scatter_add, m)?)?;
    m.add_function(wrap_pyfunction!(index_add, m)?)?;
    m.add_function(wrap_pyfunction!(take, m)?)?;
    m.add_function(wrap_pyfunction!(put, m)?)?;
    Ok(())
}
