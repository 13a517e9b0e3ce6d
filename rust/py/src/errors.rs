//! Core errors become the Python exceptions torch raises; panics never reach Python.

use minigrad_core::tensor::NoKernelOnDevice;
use minigrad_core::Error;
use pyo3::exceptions::{PyIndexError, PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

thread_local! {
    /// A Python exception raised by user code the core called back (a hook, a custom backward),
    /// with the message the core error carries for it; re-raised as is when that error
    /// reaches Python.
    static PY_ERROR: RefCell<Option<(String, PyErr)>> = const { RefCell::new(None) };
}

/// Parks a Python exception raised inside a callback and returns the core error that carries
/// it back through the core.
pub fn stash(e: PyErr) -> Error {
    let msg = e.to_string();
    PY_ERROR.with(|p| *p.borrow_mut() = Some((msg.clone(), e)));
    Error::Runtime(msg)
}

/// The parked Python exception, whatever core error brought it back.
pub fn take_stashed() -> Option<PyErr> {
    PY_ERROR.with(|p| p.borrow_mut().take()).map(|(_, e)| e)
}

pub fn to_py(e: Error) -> PyErr {
    if let Error::Runtime(m) = &e {
        let parked = PY_ERROR.with(|p| {
            let mut p = p.borrow_mut();
            if p.as_ref().is_some_and(|(msg, _)| msg == m) { p.take() } else { None }
        });
        if let Some((_, err)) = parked {
            return err;
        }
    }
    match e {
        Error::Runtime(m) => PyRuntimeError::new_err(m),
        Error::Index(m) => PyIndexError::new_err(m),
        Error::Type(m) => PyTypeError::new_err(m),
        Error::Value(m) => PyValueError::new_err(m),
        Error::NotImplemented(m) => PyNotImplementedError::new_err(m),
    }
}

/// Element count above which a call releases the GIL while its kernel runs.
pub const GIL_RELEASE_ELEMS: usize = 1 << 15;

/// Runs a core call: releases the GIL when `work` elements justify it, turns a core error into
/// the matching Python exception, and a panic (a bug) into a RuntimeError instead of aborting.
pub fn run<T: Send>(py: Python<'_>, work: usize, f: impl FnOnce() -> minigrad_core::Result<T> + Send) -> PyResult<T> {
    let guarded = move || match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(ErrOrPanic::Err),
        Err(p) => Err(match p.downcast_ref::<NoKernelOnDevice>() {
            Some(NoKernelOnDevice(device)) => ErrOrPanic::Err(Error::NotImplemented(format!(
                "minigrad: this operation has no kernel for {device} tensors yet (it runs on the CPU only; docs/gpu.md lists what runs on the GPU)"
            ))),
            None => ErrOrPanic::Panic(panic_message(p)),
        }),
    };
    let out = if work >= GIL_RELEASE_ELEMS { py.detach(guarded) } else { guarded() };
    // UserWarnings the core queued (deprecations, anomaly mode) are raised as Python warnings.
    for w in minigrad_core::autograd::mode::take_warnings() {
        let warnings = py.import("warnings")?;
        warnings.call_method1("warn", (w, py.get_type::<pyo3::exceptions::PyUserWarning>(), 2))?;
    }
    out.map_err(|e| match e {
        ErrOrPanic::Err(e) => to_py(e),
        ErrOrPanic::Panic(m) => PyRuntimeError::new_err(format!("minigrad internal error (please report): {}", m)),
    })
}

enum ErrOrPanic {
    Err(Error),
    Panic(String),
}

/// Keeps the default panic report (stderr) for real bugs, and stays quiet for a
/// `NoKernelOnDevice` payload, which `run` turns into a NotImplementedError.
pub fn install_panic_hook() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<NoKernelOnDevice>().is_none() {
            default(info);
        }
    }));
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "panic".into()
    }
}

pub fn type_err(msg: impl Into<String>) -> PyErr {
    PyTypeError::new_err(msg.into())
}
