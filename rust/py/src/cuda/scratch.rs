//! Scratch memory the backend keeps per stream: the split reduction's partial slots and its
//! ticket counters (reduce.rs). The counters must be zero before a launch, and the kernel leaves
//! them zero (docs/gpu.md, "One launch"), so they are zeroed once, when the block is made, and
//! the block is kept for the next reduction on the same stream instead of being allocated (and
//! zeroed: a second operation) per call. Launches on one stream run in order, so one block per
//! stream is never used by two kernels at once. The per-thread default stream has one handle
//! for every thread (2) but is a different stream in each, so it is kept per thread too.
//!
//! The blocks come from the driver's pool like a tensor's but belong to no tensor, so they are
//! not counted in `memory_allocated` (as cuBLAS's workspace is not); the pool's `reserved`
//! includes them. A block that is too small is replaced; the old one goes back to the pool when
//! the last launch that holds it has been enqueued (the pool orders reuse by stream).

use super::driver::Driver;
use minigrad_core::error::Result;
use pyo3::prelude::*;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

/// CUDA's per-thread default stream handle (`CU_STREAM_PER_THREAD`).
const PER_THREAD_STREAM: usize = 2;

pub struct Block {
    ptr: u64,
    tickets: usize,
    slots: usize,
    _owner: Py<PyAny>,
}

impl Block {
    /// The address of the ticket counters (`u32`, zero between launches).
    pub fn tickets(&self) -> u64 {
        self.ptr
    }

    /// The address of the 16-byte slots (after the counters, 16-byte aligned).
    pub fn slots(&self) -> u64 {
        self.ptr + Self::tickets_bytes(self.tickets) as u64
    }

    fn tickets_bytes(tickets: usize) -> usize {
        (tickets * 4).next_multiple_of(16)
    }
}

#[derive(Default)]
pub struct Scratch {
    blocks: Mutex<HashMap<(usize, Option<ThreadId>), Arc<Block>>>,
}

impl Scratch {
    /// A block of this stream with room for `tickets` counters and `slots` slots of
    /// `slot_bytes`; hold the `Arc` until the launch that uses it has been enqueued.
    pub fn get(&self, driver: &Driver, tickets: usize, slots: usize, slot_bytes: usize) -> Result<Arc<Block>> {
        let stream = driver.current_stream()?;
        let key = (stream, (stream == PER_THREAD_STREAM).then(|| std::thread::current().id()));
        let mut blocks = self.blocks.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(b) = blocks.get(&key) {
            if b.tickets >= tickets && b.slots >= slots {
                return Ok(b.clone());
            }
        }
        // grow to what is asked and at least what the last block had (and a small floor), so a
        // few sizes settle quickly
        let old = blocks.get(&key).map_or((0, 0), |b| (b.tickets, b.slots));
        let tickets = tickets.max(old.0).max(1024);
        let slots = slots.max(old.1).max(4096);
        let tb = Block::tickets_bytes(tickets);
        let (ptr, owner) = driver.alloc(tb + slots * slot_bytes)?;
        driver.memset_zero(ptr, tb)?;
        let b = Arc::new(Block { ptr, tickets, slots, _owner: owner });
        blocks.insert(key, b.clone());
        Ok(b)
    }
}
