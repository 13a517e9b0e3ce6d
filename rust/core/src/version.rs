//! The version counter (invariant 2): one shared integer per alias group. Views and `detach()`
//! share it with their base; new tensors, `clone()` and `.data` start a fresh one at 0.
//!
//! In anomaly mode each bump also records which in-place op made it and where in the user's
//! program, so a version error can name the culprit (mutation blame, `autograd::blame`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

#[derive(Default, Debug)]
struct Inner {
    n: AtomicU64,
    /// (version after the bump, op name, user source location); only filled in anomaly mode.
    log: Mutex<Vec<(u64, String, String)>>,
}

#[derive(Debug, Clone, Default)]
pub struct VersionCounter(Arc<Inner>);

impl VersionCounter {
    pub fn new() -> Self {
        VersionCounter(Arc::new(Inner::default()))
    }
    pub fn get(&self) -> u64 {
        self.0.n.load(Ordering::Acquire)
    }
    /// Only the write path in `ops::write` calls this.
    pub fn bump(&self) {
        let v = self.0.n.fetch_add(1, Ordering::AcqRel) + 1;
        if crate::autograd::mode::is_anomaly_enabled() {
            let op = crate::autograd::blame::current_op();
            let at = crate::autograd::mode::current_trace();
            self.0.log.lock().unwrap_or_else(|e| e.into_inner()).push((v, op, at));
        }
    }
    pub fn shares_with(&self, other: &VersionCounter) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
    /// Recorded bumps after `version` (anomaly mode only).
    pub fn bumps_since(&self, version: u64) -> Vec<(u64, String, String)> {
        self.0.log.lock().unwrap_or_else(|e| e.into_inner()).iter().filter(|(v, _, _)| *v > version).cloned().collect()
    }
}
