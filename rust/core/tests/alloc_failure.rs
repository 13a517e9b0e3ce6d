//! A refused allocation is an error, not an abort, and leaves the allocator's counters as they
//! were. Its own test binary: the counters are process-wide, so no other test may allocate
//! while this one reads them.

use minigrad_core::alloc::{stats, try_vec, Block};
use minigrad_core::{DType, Tensor};

#[test]
fn refused_allocations_are_errors_and_counters_stay() {
    let keep = Block::new(1 << 16, false).unwrap();
    let before = stats();
    let e = Block::new(usize::MAX / 2, false).err().expect("the system cannot give 2**63 bytes");
    assert_eq!(
        e.to_string(),
        format!("DefaultCPUAllocator: can't allocate memory: you tried to allocate {} bytes. Error code 12 (Cannot allocate memory)", usize::MAX / 2)
    );
    let after = stats();
    assert_eq!((after.allocated, after.peak), (before.allocated, before.peak), "a refused request counts nothing");
    assert!(after.reserved <= before.reserved, "a refused request reserves nothing");
    assert!(try_vec(usize::MAX / 16, 0.0f64).is_err());

    // Through the tensor path: the size check refuses past int64, the system past memory.
    let e = Tensor::empty(&[1 << 40, 1 << 40], DType::Float32).unwrap_err();
    assert_eq!(e.to_string(), "Storage size calculation overflowed with sizes=[1099511627776, 1099511627776]");
    let e = Tensor::zeros(&[1 << 60], DType::Float64).unwrap_err();
    assert!(e.to_string().starts_with("Storage size calculation overflowed"), "{}", e);
    // 2**61 bytes fits int64 but no machine has it: the allocator's error
    let e = Tensor::empty(&[1 << 59], DType::Float32).unwrap_err();
    assert!(e.to_string().starts_with("DefaultCPUAllocator: can't allocate memory: you tried to allocate 2305843009213693952 bytes"), "{}", e);
    assert_eq!(stats().allocated, before.allocated);
    // the block allocated before every failure is intact and usable
    // SAFETY: `keep` owns 65536 bytes.
    unsafe { std::ptr::write_bytes(keep.as_ptr(), 1, 1 << 16) };
    drop(keep);
}
