//! Exact accounting of device memory, torch.cuda's counters: bytes held by live tensors now and
//! the highest that has been since the last reset. A tensor's block is counted from allocation
//! until its storage is dropped (when the last view of it goes), whatever the pool does after.

use pyo3::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Devices whose memory is counted (ordinals 0..MAX_DEVICES).
pub const MAX_DEVICES: usize = 16;

pub struct Counters {
    allocated: AtomicUsize,
    peak: AtomicUsize,
}

#[allow(clippy::declare_interior_mutable_const)] // the initialiser of a static array, not shared
const ZERO: Counters = Counters { allocated: AtomicUsize::new(0), peak: AtomicUsize::new(0) };
static COUNTERS: [Counters; MAX_DEVICES] = [ZERO; MAX_DEVICES];

pub fn counters(device: u32) -> Option<&'static Counters> {
    COUNTERS.get(device as usize)
}

impl Counters {
    pub fn allocated(&self) -> usize {
        self.allocated.load(Ordering::Relaxed)
    }

    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    pub fn reset_peak(&self) {
        self.peak.store(self.allocated(), Ordering::Relaxed);
    }

    fn add(&self, n: usize) {
        let now = self.allocated.fetch_add(n, Ordering::Relaxed) + n;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    fn sub(&self, n: usize) {
        self.allocated.fetch_sub(n, Ordering::Relaxed);
    }
}

/// The owner of a tensor's device block: keeps the driver's allocation object alive (CuPy's
/// `MemoryPointer`) and counts the bytes while it lives. Dropping it without the GIL is fine:
/// PyO3 releases the Python object at the next moment the interpreter is attached, and the pool
/// gets the block back then (before the backend's next allocation, which attaches first).
pub struct DeviceBlock {
    _owner: Py<PyAny>,
    nbytes: usize,
    counters: &'static Counters,
}

impl DeviceBlock {
    pub fn new(owner: Py<PyAny>, nbytes: usize, counters: &'static Counters) -> DeviceBlock {
        counters.add(nbytes);
        DeviceBlock { _owner: owner, nbytes, counters }
    }
}

impl Drop for DeviceBlock {
    fn drop(&mut self) {
        self.counters.sub(self.nbytes);
    }
}
