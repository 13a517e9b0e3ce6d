//! The one allocator all tensor memory comes from.
//!
//! Fresh pages cost a page fault each on first touch: on a 2-core VM, allocating a new 40 MB
//! output costs about ten times the kernel that fills it. So freed blocks are kept in per-size
//! free lists and handed out again (like torch's CUDA caching allocator, which torch does not
//! use on the CPU). Every byte is counted, which makes `minigrad.memory` exact.
//!
//! Large blocks ask Linux for transparent huge pages (`huge_pages.rs`): a kernel streaming a
//! 40 MB tensor then walks 20 page-table entries instead of 10 000 (NumPy does the same).

use crate::error::{Error, Result};
use std::alloc::{alloc, alloc_zeroed, dealloc, Layout as AllocLayout};
use std::collections::HashMap;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use crate::huge_pages;

/// Alignment of every block: a cache line, which also suits AVX-512 loads.
pub const ALIGN: usize = 64;

/// The alignment a block of `size` (rounded) bytes is allocated and freed with: large blocks
/// start on a huge-page boundary so that all of their whole 2 MiB pages can be huge.
fn align_of_block(size: usize) -> usize {
    if huge_pages::wanted(size) {
        huge_pages::PAGE
    } else {
        ALIGN
    }
}

/// Blocks below this size are rounded up to a multiple of 512 bytes, larger ones to a
/// multiple of 1/8 of their power of two, so that similar sizes share free lists.
fn round_size(nbytes: usize) -> usize {
    let n = nbytes.max(1);
    if n <= 4096 {
        return n.div_ceil(512) * 512;
    }
    let pow = n.next_power_of_two();
    let step = (pow / 8).max(4096);
    n.div_ceil(step) * step
}

/// Hashes a size class with one multiply (SipHash, the std default, was ~90 instructions of
/// every allocation and free). Sizes are multiples of 512, so the product's high half is
/// folded into the low bits the table indexes by.
#[derive(Default)]
struct SizeHasher(u64);

impl std::hash::Hasher for SizeHasher {
    fn finish(&self) -> u64 {
        let h = self.0.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        h ^ (h >> 29)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | b as u64;
        }
    }
    fn write_usize(&mut self, n: usize) {
        self.0 = n as u64;
    }
}

type FreeLists = HashMap<usize, Vec<NonNull<u8>>, std::hash::BuildHasherDefault<SizeHasher>>;

struct Cache {
    free: FreeLists,
    cached_bytes: usize,
}

// SAFETY: the cache only stores pointers to blocks nobody else references (they were returned
// by `Block::drop`); moving them between threads is moving ownership of plain heap memory.
unsafe impl Send for Cache {}

static CACHE: Mutex<Option<Cache>> = Mutex::new(None);
static ALLOCATED: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static RESERVED: AtomicUsize = AtomicUsize::new(0);
/// Upper bound on bytes kept in free lists; beyond it freed blocks go back to the OS.
static CACHE_LIMIT: AtomicUsize = AtomicUsize::new(2 << 30);

/// An owned, aligned block of tensor memory. Dropping it returns it to the cache.
pub struct Block {
    ptr: NonNull<u8>,
    size: usize,
    requested: usize,
}

// SAFETY: a Block is unique ownership of a heap allocation; the allocation has no thread affinity.
unsafe impl Send for Block {}
// SAFETY: &Block only exposes the pointer value and sizes; reads/writes through the pointer are
// governed by the tensor-level rules documented in storage.rs.
unsafe impl Sync for Block {}

impl Block {
    /// Allocates `nbytes` (uninitialised unless `zeroed`); reuses a cached block of the same class.
    /// When the system refuses, the cache is returned to the OS and the request tried once more;
    /// if that fails too, the error carries torch's `DefaultCPUAllocator` words and every counter
    /// is as it was (nothing already allocated is touched).
    pub fn new(nbytes: usize, zeroed: bool) -> Result<Block> {
        let size = round_size(nbytes);
        let reused = {
            let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
            let cache = guard.get_or_insert_with(|| Cache { free: FreeLists::default(), cached_bytes: 0 });
            let hit = cache.free.get_mut(&size).and_then(|v| v.pop());
            if hit.is_some() {
                cache.cached_bytes -= size;
            }
            hit
        };
        let ptr = match reused {
            Some(p) => {
                if zeroed {
                    // SAFETY: p points to `size` bytes we own exclusively (just taken from the cache).
                    unsafe { std::ptr::write_bytes(p.as_ptr(), 0, size) };
                }
                p
            }
            None => {
                let p = match system_alloc(size, zeroed) {
                    Some(p) => p,
                    None => {
                        empty_cache();
                        system_alloc(size, zeroed).ok_or_else(|| out_of_memory(nbytes))?
                    }
                };
                RESERVED.fetch_add(size, Ordering::Relaxed);
                p
            }
        };
        let now = ALLOCATED.fetch_add(nbytes, Ordering::Relaxed) + nbytes;
        PEAK.fetch_max(now, Ordering::Relaxed);
        Ok(Block { ptr, size, requested: nbytes })
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn len(&self) -> usize {
        self.requested
    }

    pub fn is_empty(&self) -> bool {
        self.requested == 0
    }
}

impl Drop for Block {
    fn drop(&mut self) {
        ALLOCATED.fetch_sub(self.requested, Ordering::Relaxed);
        let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        let cache = guard.get_or_insert_with(|| Cache { free: FreeLists::default(), cached_bytes: 0 });
        if cache.cached_bytes + self.size <= CACHE_LIMIT.load(Ordering::Relaxed) {
            cache.cached_bytes += self.size;
            cache.free.entry(self.size).or_default().push(self.ptr);
        } else {
            drop(guard);
            RESERVED.fetch_sub(self.size, Ordering::Relaxed);
            // SAFETY: ptr was allocated with exactly this size and alignment and is not in use.
            unsafe { dealloc(self.ptr.as_ptr(), AllocLayout::from_size_align_unchecked(self.size, align_of_block(self.size))) };
        }
    }
}

/// One aligned block from the system allocator, or None when it refuses (or the size cannot be
/// described to it at all). A large block is advised to be backed by huge pages before any of
/// it is touched (pages faulted in before the advice stay small), and only then zeroed.
fn system_alloc(size: usize, zeroed: bool) -> Option<NonNull<u8>> {
    let layout = AllocLayout::from_size_align(size, align_of_block(size)).ok()?;
    if !huge_pages::wanted(size) {
        // SAFETY: layout has non-zero size (round_size >= 512) and a valid power-of-two alignment.
        let raw = unsafe { if zeroed { alloc_zeroed(layout) } else { alloc(layout) } };
        return NonNull::new(raw);
    }
    // SAFETY: as above.
    let p = NonNull::new(unsafe { alloc(layout) })?;
    huge_pages::advise(p, size);
    if zeroed {
        // SAFETY: p points to `size` bytes we own exclusively (just allocated).
        unsafe { std::ptr::write_bytes(p.as_ptr(), 0, size) };
    }
    Some(p)
}

/// torch's text for a refused CPU allocation (without its `[enforce fail at ...]` source prefix).
pub fn out_of_memory(nbytes: usize) -> Error {
    Error::Runtime(format!(
        "DefaultCPUAllocator: can't allocate memory: you tried to allocate {} bytes. Error code 12 (Cannot allocate memory)",
        nbytes
    ))
}

/// A scratch vector of `n` copies of `value` for a kernel's workspace, failing with the
/// allocator's error instead of aborting the process when the system refuses.
pub fn try_vec<T: Clone>(n: usize, value: T) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| out_of_memory(n.saturating_mul(std::mem::size_of::<T>())))?;
    v.resize(n, value);
    Ok(v)
}

/// Counters behind `minigrad.memory`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryStats {
    /// Bytes held by live tensors' storages (as requested, not rounded).
    pub allocated: usize,
    /// Highest `allocated` since the last `reset_peak`.
    pub peak: usize,
    /// Bytes obtained from the OS and not yet returned (live + cached blocks).
    pub reserved: usize,
    /// Bytes sitting in free lists, ready for reuse.
    pub cached: usize,
}

pub fn stats() -> MemoryStats {
    let cached = CACHE.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map_or(0, |c| c.cached_bytes);
    MemoryStats {
        allocated: ALLOCATED.load(Ordering::Relaxed),
        peak: PEAK.load(Ordering::Relaxed),
        reserved: RESERVED.load(Ordering::Relaxed),
        cached,
    }
}

pub fn reset_peak() {
    PEAK.store(ALLOCATED.load(Ordering::Relaxed), Ordering::Relaxed);
}

/// Returns every cached block to the OS.
pub fn empty_cache() {
    let blocks: Vec<(usize, NonNull<u8>)> = {
        let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
        match guard.as_mut() {
            None => vec![],
            Some(c) => {
                c.cached_bytes = 0;
                c.free.drain().flat_map(|(s, v)| v.into_iter().map(move |p| (s, p))).collect()
            }
        }
    };
    for (size, p) in blocks {
        RESERVED.fetch_sub(size, Ordering::Relaxed);
        // SAFETY: cached blocks were allocated with this size/alignment and are referenced by nobody.
        unsafe { dealloc(p.as_ptr(), AllocLayout::from_size_align_unchecked(size, align_of_block(size))) };
    }
}

pub fn set_cache_limit(bytes: usize) {
    CACHE_LIMIT.store(bytes, Ordering::Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_freed_blocks() {
        let a = Block::new(1 << 20, false).unwrap();
        let p = a.as_ptr();
        drop(a);
        let b = Block::new(1 << 20, false).unwrap();
        assert_eq!(b.as_ptr(), p, "a freed block of the same size class is handed out again");
        assert_eq!(b.as_ptr() as usize % ALIGN, 0);
    }

    #[test]
    fn zeroed_reuse_is_zero() {
        let a = Block::new(4096, false).unwrap();
        // SAFETY: we own the 4096-byte block.
        unsafe { std::ptr::write_bytes(a.as_ptr(), 7, 4096) };
        drop(a);
        let b = Block::new(4096, true).unwrap();
        // SAFETY: b owns at least 4096 initialised (zeroed) bytes.
        let s = unsafe { std::slice::from_raw_parts(b.as_ptr(), 4096) };
        assert!(s.iter().all(|&x| x == 0));
    }

    #[test]
    fn large_blocks_start_on_a_huge_page_and_zero_when_asked() {
        let size = 9 << 20;
        let a = Block::new(size, true).unwrap();
        assert_eq!(a.as_ptr() as usize % huge_pages::PAGE, 0);
        // SAFETY: a owns `size` initialised (zeroed) bytes.
        let s = unsafe { std::slice::from_raw_parts(a.as_ptr(), size) };
        assert!(s.iter().all(|&x| x == 0));
        drop(a);
        let small = Block::new(1 << 20, false).unwrap();
        assert_eq!(small.as_ptr() as usize % ALIGN, 0);
    }

    #[test]
    fn rounding() {
        assert_eq!(round_size(1), 512);
        assert_eq!(round_size(4096), 4096);
        assert!(round_size(40_000_000) >= 40_000_000);
        assert!(round_size(40_000_000) < 44_000_000);
    }
}
