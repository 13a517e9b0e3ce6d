//! The CUDA side of the device seam (docs/gpu.md): a `Backend` per GPU that launches the `.cu`
//! kernels kept beside each op, through a Python driver object that owns CUDA (CuPy on a GPU).
//! `minigrad.cuda` registers it the first time a CUDA device is asked for.

mod backend;
mod conv;
mod driver;
mod gather;
mod kernels;
mod launch;
mod memory;
mod norm;
mod optim;
mod random;
mod reduce;
mod sortscan;
mod sortlong;
mod compact;
mod entry;
mod scratch;
mod gemm;

use crate::errors::to_py;
use minigrad_core::device::{self, Device};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::BTreeMap;
use std::sync::Mutex;

/// Makes `driver` (see `driver.rs` for what it must provide) the backend of `cuda:index`.
#[pyfunction]
fn _cuda_register(py: Python<'_>, index: u32, driver: Py<PyAny>) -> PyResult<()> {
    let backend = backend::Cuda::new(index, driver::Driver::new(py, driver.clone_ref(py), index)?).map_err(to_py)?;
    device::register(Box::new(backend)).map_err(to_py)?;
    DRIVERS.lock().unwrap_or_else(|e| e.into_inner()).insert(index, driver);
    Ok(())
}

/// The driver objects registered, by ordinal (for `minigrad.cuda`'s device queries).
static DRIVERS: Mutex<BTreeMap<u32, Py<PyAny>>> = Mutex::new(BTreeMap::new());

/// Removes the backend of `cuda:index` (tests that emulate a device on the host use this to
/// leave the process as they found it). Tensors still on the device fail with the usual error.
#[pyfunction]
fn _cuda_unregister(index: u32) {
    device::unregister(Device::Cuda(index));
    DRIVERS.lock().unwrap_or_else(|e| e.into_inner()).remove(&index);
}

/// The driver object registered for `cuda:index`, or None.
#[pyfunction]
fn _cuda_driver(py: Python<'_>, index: u32) -> Option<Py<PyAny>> {
    DRIVERS.lock().unwrap_or_else(|e| e.into_inner()).get(&index).map(|d| d.clone_ref(py))
}

/// `{"allocated_bytes", "peak_bytes"}` of tensors on `cuda:index`, exact.
#[pyfunction]
fn _cuda_memory_stats(py: Python<'_>, index: u32) -> PyResult<Bound<'_, PyDict>> {
    let c = memory::counters(index).ok_or_else(|| PyRuntimeError::new_err("CUDA error: invalid device ordinal"))?;
    let d = PyDict::new(py);
    d.set_item("allocated_bytes", c.allocated())?;
    d.set_item("peak_bytes", c.peak())?;
    Ok(d)
}

#[pyfunction]
fn _cuda_reset_peak(index: u32) -> PyResult<()> {
    let c = memory::counters(index).ok_or_else(|| PyRuntimeError::new_err("CUDA error: invalid device ordinal"))?;
    c.reset_peak();
    Ok(())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_cuda_register, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_unregister, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_driver, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_reset_peak, m)?)?;
    m.add_function(wrap_pyfunction!(random::_cuda_manual_seed, m)?)?;
    m.add_function(wrap_pyfunction!(random::_cuda_manual_seed_all, m)?)?;
    m.add_function(wrap_pyfunction!(random::_cuda_rng_state, m)?)?;
    m.add_function(wrap_pyfunction!(random::_cuda_set_rng_state, m)?)?;
    Ok(())
}
