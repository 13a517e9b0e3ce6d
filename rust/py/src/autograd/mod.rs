//! Autograd from Python: tensor attributes (requires_grad, grad, grad_fn, hooks...), graph
//! nodes as Python objects, the engine entry, grad/inference/anomaly modes, and the node of a
//! custom `autograd.Function` (whose backward is Python).
//!
//! This file holds how Python errors raised inside hooks and custom backwards travel through
//! the engine, and the registration of the whole surface; `node.rs` is graph nodes as Python
//! objects, `tensor_attrs.rs` the autograd attributes of tensors, `hooks.rs` tensor and node
//! hooks, `saved_hooks.rs` saved-tensor pack/unpack hooks, `engine.rs` the backward entry, `modes.rs` grad/inference/anomaly modes and
//! `function.rs` custom Functions.

use crate::convert::{tensor_of, wrap};
use crate::errors::to_py;
use minigrad_core::autograd::mode;
use minigrad_core::{Error, Tensor};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

mod engine;
mod function;
mod hooks;
mod modes;
mod node;
mod saved_hooks;
mod tensor_attrs;

use node::PyNode;

// ----- Python errors raised inside hooks and custom backwards -----

use crate::errors::stash;

/// Turns a core error into the Python exception: the original one if user code raised it.
fn raise(e: Error) -> PyErr {
    crate::errors::take_stashed().unwrap_or_else(|| to_py(e))
}

fn emit_warnings(py: Python<'_>) -> PyResult<()> {
    for w in mode::take_warnings() {
        let warnings = py.import("warnings")?;
        warnings.call_method1("warn", (w, py.get_type::<pyo3::exceptions::PyUserWarning>(), 2))?;
    }
    Ok(())
}

/// Runs a core autograd call with the GIL released; warnings queued by the core are emitted.
fn call<T: Send>(py: Python<'_>, f: impl FnOnce() -> minigrad_core::Result<T> + Send) -> PyResult<T> {
    let r = py.detach(move || std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    emit_warnings(py)?;
    match r {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(raise(e)),
        Err(_) => Err(PyRuntimeError::new_err("minigrad internal error in autograd (please report)")),
    }
}

fn opt_tensors(py: Python<'_>, ts: &[Option<Tensor>]) -> PyResult<Py<PyTuple>> {
    let items: Vec<Py<PyAny>> = ts.iter().map(|t| match t {
        Some(t) => wrap(py, t.clone()),
        None => Ok(py.None()),
    }).collect::<PyResult<_>>()?;
    Ok(PyTuple::new(py, items)?.unbind())
}

fn from_opt_tensors(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Option<Tensor>>> {
    let mut out = Vec::new();
    for item in obj.try_iter()? {
        let item = item?;
        out.push(if item.is_none() { None } else { Some(tensor_of(&item, "gradient")?) });
    }
    Ok(out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyNode>()?;
    m.add_function(wrap_pyfunction!(node::_set_node_factory, m)?)?;
    m.add_function(wrap_pyfunction!(engine::_run_backward, m)?)?;
    m.add_function(wrap_pyfunction!(modes::is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(modes::_set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(modes::is_inference_mode_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(modes::_set_inference_mode, m)?)?;
    m.add_function(wrap_pyfunction!(modes::is_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(modes::is_anomaly_check_nan_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(modes::_set_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(modes::_set_trace_fn, m)?)?;
    m.add_function(wrap_pyfunction!(function::_record_function, m)?)?;
    m.add_function(wrap_pyfunction!(function::_function_saved, m)?)?;
    m.add_function(wrap_pyfunction!(node::_is_accumulate, m)?)?;
    m.add_class::<saved_hooks::PySavedTensor>()?;
    m.add_function(wrap_pyfunction!(saved_hooks::_push_saved_tensors_default_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(saved_hooks::_pop_saved_tensors_default_hooks, m)?)?;
    m.add_function(wrap_pyfunction!(saved_hooks::_saved_tensors_hooks_disable, m)?)?;
    m.add_function(wrap_pyfunction!(saved_hooks::_saved_tensors_hooks_enable, m)?)?;
    m.add_function(wrap_pyfunction!(saved_hooks::_saved_tensors_hooks_get_disabled_error_message, m)?)?;
    m.add_function(wrap_pyfunction!(saved_hooks::_current_graph_task_id, m)?)?;
    m.add_function(wrap_pyfunction!(saved_hooks::_make_saved_tensor, m)?)?;
    Ok(())
}
