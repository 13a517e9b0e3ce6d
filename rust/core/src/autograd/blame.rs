//! Mutation blame (beyond torch): in anomaly mode, a version error also says which in-place op
//! modified the saved tensor and where, and where the tensor was saved.

use crate::tensor::Tensor;
use std::cell::RefCell;

thread_local! {
    static OP: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

/// Names the in-place op running on this thread until the guard drops.
pub struct OpGuard;
impl Drop for OpGuard {
    fn drop(&mut self) {
        OP.with(|o| o.borrow_mut().pop());
    }
}
pub fn op(name: &'static str) -> OpGuard {
    OP.with(|o| o.borrow_mut().push(name));
    OpGuard
}

pub fn current_op() -> String {
    OP.with(|o| o.borrow().first().copied().unwrap_or("an in-place operation").to_string())
}

/// The extra text appended to a version error in anomaly mode.
pub fn explain(t: &Tensor, saved_version: u64, saved_at: Option<&str>) -> String {
    let mut s = String::new();
    if let Some(at) = saved_at.filter(|a| !a.is_empty()) {
        s.push_str(&format!("\nMutation blame: the tensor was saved for backward at {}", at));
    }
    for (v, op, at) in t.version.bumps_since(saved_version) {
        let at = if at.is_empty() { String::new() } else { format!(" at {}", at) };
        s.push_str(&format!("\nMutation blame: {} moved it to version {}{}", op, v, at));
    }
    s
}
