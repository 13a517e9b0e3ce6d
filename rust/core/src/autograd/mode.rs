//! Grad mode, inference mode and anomaly mode: the switches that decide whether ops record.
//!
//! Grad and inference mode are per thread, as in torch; anomaly mode is process-wide (torch's
//! `AnomalyMode` is a global flag too).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

thread_local! {
    static GRAD_ENABLED: Cell<bool> = const { Cell::new(true) };
    static INFERENCE: Cell<bool> = const { Cell::new(false) };
}
static ANOMALY: AtomicBool = AtomicBool::new(false);
static ANOMALY_CHECK_NAN: AtomicBool = AtomicBool::new(true);

pub fn is_grad_enabled() -> bool {
    GRAD_ENABLED.with(|g| g.get())
}
pub fn set_grad_enabled(on: bool) {
    GRAD_ENABLED.with(|g| g.set(on))
}
pub fn is_inference_mode() -> bool {
    INFERENCE.with(|g| g.get())
}
pub fn set_inference_mode(on: bool) {
    INFERENCE.with(|g| g.set(on))
}
pub fn is_anomaly_enabled() -> bool {
    ANOMALY.load(Ordering::Relaxed)
}
pub fn is_anomaly_check_nan_enabled() -> bool {
    ANOMALY_CHECK_NAN.load(Ordering::Relaxed)
}
pub fn set_anomaly_enabled(on: bool, check_nan: bool) {
    ANOMALY.store(on, Ordering::Relaxed);
    ANOMALY_CHECK_NAN.store(check_nan, Ordering::Relaxed);
}

/// Sets grad mode for a scope and restores the previous value on drop (also on error paths).
pub struct GradModeGuard(bool);
impl GradModeGuard {
    pub fn new(on: bool) -> Self {
        let prev = is_grad_enabled();
        set_grad_enabled(on);
        GradModeGuard(prev)
    }
}
impl Drop for GradModeGuard {
    fn drop(&mut self) {
        set_grad_enabled(self.0)
    }
}

/// Where the Python layer plugs in "where am I in the user's program" (a short stack text) for
/// anomaly mode and mutation blame; the core has no Python, so it asks through this hook.
pub type TraceFn = fn() -> String;
static TRACE: OnceLock<TraceFn> = OnceLock::new();

pub fn set_trace_hook(f: TraceFn) {
    let _ = TRACE.set(f);
}

/// The user's current source location (empty when no hook is installed).
pub fn current_trace() -> String {
    TRACE.get().map(|f| f()).unwrap_or_default()
}

thread_local! {
    static WARNINGS: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Queues a UserWarning for the binding to emit (the core cannot call Python's `warnings`).
pub fn push_warning(msg: String) {
    WARNINGS.with(|w| w.borrow_mut().push(msg))
}

/// The queued warnings, oldest first; the queue is left empty.
pub fn take_warnings() -> Vec<String> {
    WARNINGS.with(|w| std::mem::take(&mut *w.borrow_mut()))
}
