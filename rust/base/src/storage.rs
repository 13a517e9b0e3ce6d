//! Storage: a flat byte buffer shared (through `Arc`) by a tensor and all its views.
//!
//! Memory is either a `Block` from our allocator (CPU) or foreign memory kept alive by an owner:
//! a NumPy array handed to `from_numpy`, a DLPack producer's tensor, or a CuPy memory-pool
//! allocation holding a CUDA tensor's bytes. `device` says which address space `as_ptr` is in:
//! only the CPU's may be dereferenced by the core; a CUDA pointer is handed to that device's
//! backend and nowhere else. Access goes through raw pointers: several views may
//! alias one storage, so no `&mut [T]` to the whole buffer ever exists. Kernels form slices only
//! over the exact ranges an op reads or writes, after the op layer has ruled out overlap between
//! what it writes and what it reads (see `ops::write`).

use crate::alloc::Block;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::Result;
use std::any::Any;
use std::sync::Arc;

enum Memory {
    Owned(Block),
    /// Foreign memory; `owner` keeps it alive and is dropped with the storage.
    Foreign { ptr: *mut u8, len: usize, _owner: Box<dyn Any + Send + Sync> },
}

pub struct Storage {
    memory: Memory,
    pub dtype: DType,
    pub device: Device,
}

// SAFETY: Storage is a heap buffer plus (for foreign memory) an owner that is itself Send+Sync.
// The raw pointer is an address, not a borrow; concurrent access is governed by the op layer,
// which writes only through the single write path and releases the GIL only while the Python
// caller holds references to every tensor involved.
unsafe impl Send for Storage {}
// SAFETY: see above; &Storage hands out the base address only.
unsafe impl Sync for Storage {}

impl Storage {
    /// New storage of `nbytes` bytes (already checked by `shape::storage_nbytes_*`), zero-filled
    /// when asked; fails with torch's allocator error when the system refuses.
    pub fn new(nbytes: usize, dtype: DType, zeroed: bool) -> Result<Arc<Storage>> {
        Ok(Arc::new(Storage { memory: Memory::Owned(Block::new(nbytes, zeroed)?), dtype, device: Device::Cpu }))
    }

    /// Wraps host memory owned by someone else.
    ///
    /// # Safety
    /// `ptr` must point to `len_bytes` readable and writable bytes, aligned for `dtype`, that stay
    /// valid for as long as `owner` lives.
    pub unsafe fn from_foreign(ptr: *mut u8, len_bytes: usize, dtype: DType, owner: Box<dyn Any + Send + Sync>) -> Arc<Storage> {
        // SAFETY: forwarded to the caller's contract.
        unsafe { Storage::from_foreign_on(Device::Cpu, ptr, len_bytes, dtype, owner) }
    }

    /// Wraps memory on `device` owned by someone else (a CUDA backend's pool allocation).
    ///
    /// # Safety
    /// `ptr` must be an address on `device` of `len_bytes` bytes, aligned for `dtype`, valid for as
    /// long as `owner` lives. For a device other than the CPU the core never dereferences it.
    pub unsafe fn from_foreign_on(device: Device, ptr: *mut u8, len_bytes: usize, dtype: DType, owner: Box<dyn Any + Send + Sync>) -> Arc<Storage> {
        Arc::new(Storage { memory: Memory::Foreign { ptr, len: len_bytes, _owner: owner }, dtype, device })
    }

    pub fn as_ptr(&self) -> *mut u8 {
        match &self.memory {
            Memory::Owned(b) => b.as_ptr(),
            Memory::Foreign { ptr, .. } => *ptr,
        }
    }

    pub fn nbytes(&self) -> usize {
        match &self.memory {
            Memory::Owned(b) => b.len(),
            Memory::Foreign { len, .. } => *len,
        }
    }

    /// Number of elements of `dtype` the storage holds.
    pub fn len(&self) -> usize {
        self.nbytes() / self.dtype.size()
    }

    pub fn is_empty(&self) -> bool {
        self.nbytes() == 0
    }

    pub fn is_foreign(&self) -> bool {
        matches!(self.memory, Memory::Foreign { .. })
    }
}
