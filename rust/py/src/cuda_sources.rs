//! `_C._cuda_sources()` and `_C._cuda_headers()`: the CUDA kernel sources embedded in the
//! extension, for `minigrad kernels` (and the host-build tests). Plain strings: no CUDA needed.

use minigrad_core::ops::cuda_kernels::{HEADERS, NVRTC_OPTIONS, SOURCES};
use pyo3::prelude::*;

/// `[(name, path, source, [instance, ...]), ...]` for every `.cu` file.
#[pyfunction]
fn _cuda_sources() -> Vec<(&'static str, &'static str, &'static str, Vec<String>)> {
    SOURCES.iter().map(|s| (s.name, s.path, s.source, s.instances())).collect()
}

/// `[(include name, text), ...]`: the headers the sources include.
#[pyfunction]
fn _cuda_headers() -> Vec<(&'static str, &'static str)> {
    HEADERS.to_vec()
}

/// The NVRTC options every source is compiled with (besides the target architecture).
#[pyfunction]
fn _cuda_nvrtc_options() -> Vec<&'static str> {
    NVRTC_OPTIONS.to_vec()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_cuda_sources, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_headers, m)?)?;
    m.add_function(wrap_pyfunction!(_cuda_nvrtc_options, m)?)?;
    Ok(())
}
