//! The version counter (invariant 2): one shared integer per alias group. Views and `detach()`
//! share it with their base; new tensors, `clone()` and `.data` start a fresh one at 0.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

#[derive(Debug, Clone, Default)]
pub struct VersionCounter(Arc<AtomicU64>);

impl VersionCounter {
    pub fn new() -> Self {
        VersionCounter(Arc::new(AtomicU64::new(0)))
    }
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
    /// Only the write path in `ops::write` calls this.
    pub fn bump(&self) {
        self.0.fetch_add(1, Ordering::AcqRel);
    }
    pub fn shares_with(&self, other: &VersionCounter) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}
