//! Grad, inference and anomaly modes, and the user's stack for anomaly traces.

use minigrad_core::autograd::mode;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

#[pyfunction]
pub(super) fn is_grad_enabled() -> bool {
    mode::is_grad_enabled()
}
#[pyfunction]
pub(super) fn _set_grad_enabled(on: bool) {
    mode::set_grad_enabled(on)
}
#[pyfunction]
pub(super) fn is_inference_mode_enabled() -> bool {
    mode::is_inference_mode()
}
#[pyfunction]
pub(super) fn _set_inference_mode(on: bool) {
    mode::set_inference_mode(on)
}
#[pyfunction]
pub(super) fn is_anomaly_enabled() -> bool {
    mode::is_anomaly_enabled()
}
#[pyfunction]
pub(super) fn is_anomaly_check_nan_enabled() -> bool {
    mode::is_anomaly_check_nan_enabled()
}
#[pyfunction]
pub(super) fn _set_anomaly_enabled(on: bool, check_nan: bool) {
    mode::set_anomaly_enabled(on, check_nan)
}

/// The user's stack (innermost user frames), for anomaly traces and mutation blame.
static TRACE_FN: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn python_trace() -> String {
    Python::attach(|py| match TRACE_FN.get(py) {
        Some(f) => f.bind(py).call0().and_then(|s| s.extract::<String>()).unwrap_or_default(),
        None => String::new(),
    })
}

#[pyfunction]
pub(super) fn _set_trace_fn(py: Python<'_>, f: Py<PyAny>) {
    let _ = TRACE_FN.set(py, f);
    mode::set_trace_hook(python_trace);
}
