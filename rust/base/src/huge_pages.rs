//! Transparent huge pages for large blocks (Linux).
//!
//! A kernel streaming a large tensor misses the TLB once per page it enters: every 4 KiB with
//! ordinary pages, every 2 MiB with huge ones. Under a virtual machine each miss walks two page
//! tables, so on this project's 2-core VM an in-place multiply of 1e7 floats runs about 12%
//! faster on huge pages (NumPy, which advises them for arrays of 4 MiB and more, measured in one
//! process: 1278 us against 1450). Linux gives them to memory advised with `MADV_HUGEPAGE` when
//! `/sys/kernel/mm/transparent_hugepage/enabled` is `always` or `madvise` (the common default);
//! with `never` the advice is a no-op. torch's CPU allocator advises only under
//! `THP_MEM_ALLOC_ENABLE=1`.
//!
//! The advice changes where bytes live, never their values: no result depends on it.

use std::ptr::NonNull;

/// A huge page on x86-64 and on aarch64 with 4 KiB base pages.
pub const PAGE: usize = 2 << 20;

/// Blocks of at least this many bytes are huge-page aligned and advised (NumPy's threshold):
/// below it a block covers at most one whole huge page, and the alignment would waste more
/// address space than the TLB saves.
pub const MIN_BYTES: usize = 4 << 20;

/// Whether a block of `size` bytes gets huge pages.
pub fn wanted(size: usize) -> bool {
    cfg!(target_os = "linux") && size >= MIN_BYTES
}

/// Advises the whole huge pages of a fresh block (`ptr` aligned to `PAGE`, `size` bytes) before
/// anything touches it: pages faulted in earlier stay small. A refusal (an old kernel, THP
/// compiled out) only loses the speed-up, so its error is ignored.
#[cfg(target_os = "linux")]
pub fn advise(ptr: NonNull<u8>, size: usize) {
    let len = size / PAGE * PAGE;
    // SAFETY: madvise only changes how the kernel backs the range [ptr, ptr + len), which lies
    // inside the block we just allocated and own (len <= size); MADV_HUGEPAGE never changes
    // the contents or the validity of the memory, so no Rust reference can observe it.
    unsafe { libc::madvise(ptr.as_ptr().cast(), len, libc::MADV_HUGEPAGE) };
}

#[cfg(not(target_os = "linux"))]
pub fn advise(_ptr: NonNull<u8>, _size: usize) {}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// The kernel's flags of the mapping holding `addr`, from /proc/self/smaps ("hg": advised
    /// MADV_HUGEPAGE).
    fn vm_flags(addr: usize) -> Option<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").ok()?;
        let mut inside = false;
        for line in smaps.lines() {
            let first = line.split_whitespace().next().unwrap_or("");
            if let Some((lo, hi)) = first.split_once('-') {
                if let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16)) {
                    inside = lo <= addr && addr < hi;
                    continue;
                }
            }
            if inside {
                if let Some(flags) = line.strip_prefix("VmFlags:") {
                    return Some(flags.to_string());
                }
            }
        }
        None
    }

    #[test]
    fn a_large_block_is_advised_and_a_small_one_is_not() {
        let layout = std::alloc::Layout::from_size_align(MIN_BYTES * 2, PAGE).unwrap();
        // SAFETY: non-zero size, power-of-two alignment; freed below with the same layout.
        let p = NonNull::new(unsafe { std::alloc::alloc(layout) }).unwrap();
        advise(p, layout.size());
        let flags = vm_flags(p.as_ptr() as usize).expect("the block is mapped");
        // SAFETY: allocated above with this layout, not used after.
        unsafe { std::alloc::dealloc(p.as_ptr(), layout) };
        let thp = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").unwrap_or_default();
        if thp.contains("[never]") || thp.is_empty() {
            return; // the kernel ignores the advice; nothing to see
        }
        assert!(flags.split_whitespace().any(|f| f == "hg"), "VmFlags {flags}");
        assert!(wanted(MIN_BYTES) && !wanted(MIN_BYTES - 1));
    }
}
