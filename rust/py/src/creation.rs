//! Factory functions of `_C`: from Python data, constant fills, ranges, random tensors.

use crate::convert::{shape_from_args, tensor_of, to_dtype, to_scalar, wrap};
use crate::errors::{run, type_err};
use crate::tensor::TensorBase;
use minigrad_core::device::RandomDist;
use minigrad_core::ops::creation;
use minigrad_core::{DType, Scalar, Tensor};
use pyo3::prelude::*;
use pyo3::types::PyTuple;

fn dtype_or(d: Option<&Bound<'_, PyAny>>, default: DType) -> PyResult<DType> {
    Ok(to_dtype(d)?.unwrap_or(default))
}

#[pyfunction]
#[pyo3(signature = (*size, dtype=None, cuda=None))]
pub fn empty(py: Python<'_>, size: &Bound<'_, PyTuple>, dtype: Option<&Bound<'_, PyAny>>, cuda: Option<u32>) -> PyResult<Py<PyAny>> {
    let shape = shape_from_args(size)?;
    let d = dtype_or(dtype, DType::Float32)?;
    wrap(py, run(py, 0, move || Tensor::empty_on(&shape, d, on(cuda)))?)
}

#[pyfunction]
#[pyo3(signature = (*size, dtype=None, cuda=None))]
pub fn zeros(py: Python<'_>, size: &Bound<'_, PyTuple>, dtype: Option<&Bound<'_, PyAny>>, cuda: Option<u32>) -> PyResult<Py<PyAny>> {
    let shape = shape_from_args(size)?;
    let d = dtype_or(dtype, DType::Float32)?;
    let n = minigrad_core::shape::numel(&shape);
    wrap(py, run(py, n, move || Tensor::zeros_on(&shape, d, on(cuda)))?)
}

/// The device of the `cuda=` argument of the constant factories: an ordinal, or the CPU.
fn on(cuda: Option<u32>) -> minigrad_core::Device {
    cuda.map_or(minigrad_core::Device::Cpu, minigrad_core::Device::Cuda)
}

/// `full(size, value, dtype=None)`: the dtype follows the value (1 -> int64, 1.0 -> float32).
#[pyfunction]
#[pyo3(signature = (size, fill_value, dtype=None, cuda=None))]
pub fn full(py: Python<'_>, size: &Bound<'_, PyAny>, fill_value: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>, cuda: Option<u32>) -> PyResult<Py<PyAny>> {
    let shape = shape_from_args(&PyTuple::new(py, [size])?)?;
    let v = match to_scalar(fill_value)? {
        Some(v) => v,
        None => match fill_value.cast::<TensorBase>() {
            Ok(t) if t.borrow().t.ndim() == 0 => t.borrow().t.item().map_err(crate::errors::to_py)?,
            _ => return Err(type_err(format!("full(): argument 'fill_value' must be Number, not {}", crate::convert::type_name(fill_value)))),
        },
    };
    let d = dtype_or(dtype, v.wrapped_dtype())?;
    let n = minigrad_core::shape::numel(&shape);
    wrap(py, run(py, n, move || Tensor::full_on(&shape, v, d, on(cuda)))?)
}

#[pyfunction]
#[pyo3(signature = (start, end, step, dtype=None))]
pub fn arange(py: Python<'_>, start: &Bound<'_, PyAny>, end: &Bound<'_, PyAny>, step: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
    let num = |o: &Bound<'_, PyAny>, name: &str| -> PyResult<Scalar> {
        match to_scalar(o)? {
            Some(s) => Ok(s),
            None => match o.cast::<TensorBase>() {
                Ok(t) => t.borrow().t.item().map_err(crate::errors::to_py),
                Err(_) => Err(type_err(format!("arange(): argument '{}' must be Number, not {}", name, crate::convert::type_name(o)))),
            },
        }
    };
    let (s, e, st) = (num(start, "start")?, num(end, "end")?, num(step, "step")?);
    let d = to_dtype(dtype)?;
    wrap(py, run(py, 0, move || creation::arange(s, e, st, d))?)
}

#[pyfunction]
#[pyo3(signature = (start, end, steps, dtype=None))]
pub fn linspace(py: Python<'_>, start: &Bound<'_, PyAny>, end: &Bound<'_, PyAny>, steps: i64, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
    let d = dtype_or(dtype, DType::Float32)?;
    let num = |o: &Bound<'_, PyAny>| to_scalar(o)?.ok_or_else(|| type_err("linspace(): start and end must be numbers"));
    let (start, end) = (num(start)?, num(end)?);
    wrap(py, run(py, 0, move || creation::linspace(start, end, steps, d))?)
}

#[pyfunction]
#[pyo3(signature = (n, m=None, dtype=None))]
pub fn eye(py: Python<'_>, n: i64, m: Option<i64>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
    let d = dtype_or(dtype, DType::Float32)?;
    wrap(py, run(py, 0, move || creation::eye(n, m, d))?)
}

#[pyfunction]
#[pyo3(signature = (*size, dtype=None))]
pub fn rand(py: Python<'_>, size: &Bound<'_, PyTuple>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
    let shape = shape_from_args(size)?;
    let d = dtype_or(dtype, DType::Float32)?;
    wrap(py, run(py, 0, move || creation::rand(&shape, d))?)
}

#[pyfunction]
#[pyo3(signature = (*size, dtype=None))]
pub fn randn(py: Python<'_>, size: &Bound<'_, PyTuple>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
    let shape = shape_from_args(size)?;
    let d = dtype_or(dtype, DType::Float32)?;
    wrap(py, run(py, 0, move || creation::randn(&shape, d))?)
}

#[pyfunction]
#[pyo3(signature = (low, high, size, dtype=None))]
pub fn randint(py: Python<'_>, low: i64, high: i64, size: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
    let shape = shape_from_args(&PyTuple::new(py, [size])?)?;
    let d = dtype_or(dtype, DType::Int64)?;
    wrap(py, run(py, 0, move || creation::randint(low, high, &shape, d))?)
}

/// A new tensor shaped and laid out like `x` (torch's `preserve_format`), of `dtype`, optionally
/// filled with `fill`. Nobody has seen it yet, so filling it is not a write (version 0).
#[pyfunction]
#[pyo3(signature = (x, dtype, fill=None))]
pub fn empty_like(py: Python<'_>, x: &Bound<'_, TensorBase>, dtype: &Bound<'_, PyAny>, fill: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
    let d = to_dtype(Some(dtype))?.unwrap_or(DType::Float32);
    let value = match fill {
        None => None,
        Some(v) => Some(to_scalar(v)?.ok_or_else(|| type_err("fill value must be a number"))?),
    };
    let t = x.borrow().t.clone();
    let out = run(py, t.numel(), move || {
        let out = minigrad_core::ops::copy::empty_strided(&minigrad_core::ops::copy::preserved_layout(&t), d, t.device())?;
        if let Some(v) = value {
            minigrad_core::device::backend_for(&[&out])?.fill(&out, v)?;
        }
        Ok(out)
    })?;
    wrap(py, out)
}

#[pyfunction]
pub fn manual_seed(seed: i64) {
    creation::manual_seed(seed as u64);
}

/// The default generator's state as bytes (`minigrad.get_rng_state`).
#[pyfunction]
pub fn _rng_state() -> Vec<u8> {
    creation::rng_state()
}

#[pyfunction]
pub fn _set_rng_state(state: Vec<u8>) -> PyResult<()> {
    creation::set_rng_state(&state).map_err(crate::errors::to_py)
}

/// In-place random fills (`uniform_`, `normal_`) through the write path. `fresh` marks a tensor
/// just made by a `*_like` factory: filled without counting as a write, like torch's factories.
#[pyfunction]
#[pyo3(signature = (x, kind, a, b, fresh=false))]
pub fn random_(py: Python<'_>, x: &Bound<'_, TensorBase>, kind: &str, a: f64, b: f64, fresh: bool) -> PyResult<Py<PyAny>> {
    let t = x.borrow().t.clone();
    // torch's normal_ never reaches its (float-only) kernel for an empty tensor
    if !t.dtype().is_floating() && !(kind == "normal" && t.numel() == 0) {
        return Err(pyo3::exceptions::PyNotImplementedError::new_err(format!(
            "\"{}\" not implemented for '{}'",
            match (kind, t.device().is_cpu()) {
                ("uniform", _) => "check_uniform_bounds",
                (_, true) => "normal_kernel_cpu",
                _ => "normal_kernel_cuda",
            },
            t.dtype().scalar_type_name()
        )));
    }
    let dist = if kind == "uniform" { RandomDist::Uniform { from: a, to: b } } else { RandomDist::Normal { mean: a, std: b } };
    run(py, t.numel(), move || {
        if fresh {
            return minigrad_core::device::backend_for(&[&t])?.random_fill(&t, dist);
        }
        creation::random_(&t, dist)
    })?;
    Ok(x.clone().into_any().unbind())
}

/// `minigrad.memory` counters from the core allocator.
#[pyfunction]
pub fn memory_stats(py: Python<'_>) -> PyResult<Py<PyAny>> {
    let s = minigrad_core::alloc::stats();
    let d = pyo3::types::PyDict::new(py);
    d.set_item("allocated_bytes", s.allocated)?;
    d.set_item("peak_bytes", s.peak)?;
    d.set_item("reserved_bytes", s.reserved)?;
    d.set_item("cached_bytes", s.cached)?;
    Ok(d.into_any().unbind())
}

#[pyfunction]
pub fn reset_peak_memory() {
    minigrad_core::alloc::reset_peak();
}

#[pyfunction]
pub fn empty_cache() {
    minigrad_core::alloc::empty_cache();
}

#[pyfunction]
pub fn _check_tensor(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(tensor_of(obj, "x").is_ok())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(empty_like, m)?)?;
    m.add_function(wrap_pyfunction!(empty, m)?)?;
    m.add_function(wrap_pyfunction!(zeros, m)?)?;
    m.add_function(wrap_pyfunction!(full, m)?)?;
    m.add_function(wrap_pyfunction!(arange, m)?)?;
    m.add_function(wrap_pyfunction!(linspace, m)?)?;
    m.add_function(wrap_pyfunction!(eye, m)?)?;
    m.add_function(wrap_pyfunction!(rand, m)?)?;
    m.add_function(wrap_pyfunction!(randn, m)?)?;
    m.add_function(wrap_pyfunction!(randint, m)?)?;
    m.add_function(wrap_pyfunction!(manual_seed, m)?)?;
    m.add_function(wrap_pyfunction!(_rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(_set_rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(random_, m)?)?;
    m.add_function(wrap_pyfunction!(memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(reset_peak_memory, m)?)?;
    m.add_function(wrap_pyfunction!(empty_cache, m)?)?;
    m.add_function(wrap_pyfunction!(_check_tensor, m)?)?;
    Ok(())
}
