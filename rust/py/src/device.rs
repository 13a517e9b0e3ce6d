//! Where a tensor lives, as Python sees it: `tensor.device` and `to(device)`. The Python layer
//! (`minigrad._device`, `minigrad.cuda`) parses device strings and explains a missing GPU; this
//! file only reads a tensor's device and moves tensors between registered backends.

use crate::convert::wrap;
use crate::errors::run;
use crate::tensor::TensorBase;
use minigrad_core::device::{self, Device};
use minigrad_core::ops::copy;
use pyo3::prelude::*;

fn parse(kind: &str, index: Option<u32>) -> PyResult<Device> {
    match kind {
        "cpu" => Ok(Device::Cpu),
        "cuda" => Ok(Device::Cuda(index.unwrap_or(0))),
        other => Err(pyo3::exceptions::PyRuntimeError::new_err(format!("minigrad has no '{}' device", other))),
    }
}

/// (type, index) of the tensor's device: ("cpu", None) or ("cuda", 0).
#[pyfunction]
pub fn device_of(x: &Bound<'_, TensorBase>) -> (&'static str, Option<u32>) {
    match x.borrow().t.device() {
        Device::Cpu => ("cpu", None),
        Device::Cuda(i) => ("cuda", Some(i)),
    }
}

/// Differentiable `to(device)`: the tensor itself when already there.
#[pyfunction]
#[pyo3(signature = (x, kind, index=None))]
pub fn to_device(py: Python<'_>, x: &Bound<'_, TensorBase>, kind: &str, index: Option<u32>) -> PyResult<Py<PyAny>> {
    let target = parse(kind, index)?;
    let t = x.borrow().t.clone();
    if t.device() == target {
        return Ok(x.clone().into_any().unbind());
    }
    wrap(py, run(py, t.numel(), move || copy::to_device(&t, target))?)
}

/// True when the core has a backend for `cuda:index` (the CUDA backend registers itself).
#[pyfunction]
pub fn has_backend(kind: &str, index: Option<u32>) -> PyResult<bool> {
    Ok(device::backend(parse(kind, index)?).is_ok())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(device_of, m)?)?;
    m.add_function(wrap_pyfunction!(to_device, m)?)?;
    m.add_function(wrap_pyfunction!(has_backend, m)?)?;
    Ok(())
}
