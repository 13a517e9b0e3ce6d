//! The one write path (DESIGN invariant 1).
//!
//! Every write into memory a user can already see — in-place ops, `out=`, `__setitem__`,
//! `copy_`, `fill_`, `zero_`, optimizer steps — comes through `write`. It refuses destinations
//! whose elements alias each other, refuses (like torch) or resolves (where torch would compute
//! garbage) reads that partially overlap the destination, runs the kernel, and bumps the
//! version counter exactly once. Autograd's leaf/view checks and history rebase (issue 3) hook
//! in here, before and after the kernel.

use crate::error::{Error, Result};
use crate::ops::iter_layout::is_non_overlapping_and_dense;
use crate::ops::copy::contiguous_copy;
use crate::tensor::Tensor;

pub const INTERNAL_OVERLAP: &str = "unsupported operation: more than one element of the written-to tensor refers to a single memory location. Please clone() the tensor before performing the operation.";
pub const PARTIAL_OVERLAP: &str = "unsupported operation: some elements of the input tensor and the written-to tensor refer to a single memory location. Please clone() the tensor before performing the operation.";

/// How a read operand relates to the destination's memory.
#[derive(Debug, PartialEq, Eq)]
pub enum Alias {
    /// Different memory: read freely.
    None,
    /// The very same elements in the same order: an elementwise kernel may read and write in place.
    Same,
    /// Overlapping memory in another arrangement: must be read from a copy.
    Other,
}

/// torch's `get_overlap_status` between a written tensor and an input.
#[derive(Debug, PartialEq, Eq)]
pub enum Overlap {
    /// Different memory, or empty.
    No,
    /// The same dense block with the same strides.
    Full,
    /// Dense blocks that meet without being the same.
    Partial,
    /// One of them is not dense: torch cannot tell, and lets the write go ahead.
    TooHard,
}

pub fn overlap(dst: &Tensor, src: &Tensor) -> Overlap {
    // torch's get_overlap_status: the very same tensor overlaps itself fully, even when empty
    if dst.same_tensor(src) {
        return Overlap::Full;
    }
    if !dst.same_storage(src) || dst.numel() == 0 || src.numel() == 0 {
        return Overlap::No;
    }
    if dst.layout == src.layout {
        return Overlap::Full;
    }
    if !is_non_overlapping_and_dense(&dst.layout) || !is_non_overlapping_and_dense(&src.layout) {
        return Overlap::TooHard;
    }
    // Dense layouts (non-negative strides) cover [offset, offset + numel).
    let (a0, b0) = (dst.layout.offset, src.layout.offset);
    let (a1, b1) = (a0 + dst.numel(), b0 + src.numel());
    if a0 == b0 && a1 == b1 {
        if dst.strides() == src.strides() { Overlap::Full } else { Overlap::Partial }
    } else if a0 < b1 && b0 < a1 {
        Overlap::Partial
    } else {
        Overlap::No
    }
}

/// torch's `assert_no_partial_overlap` (elementwise ops and copies).
pub fn assert_no_partial_overlap(dst: &Tensor, src: &Tensor) -> Result<()> {
    match overlap(dst, src) {
        Overlap::Partial => Err(Error::Runtime(PARTIAL_OVERLAP.into())),
        _ => Ok(()),
    }
}

/// torch's `assert_no_overlap` (index ops: any shared element is refused).
pub fn assert_no_overlap(dst: &Tensor, src: &Tensor) -> Result<()> {
    match overlap(dst, src) {
        Overlap::Partial | Overlap::Full => Err(Error::Runtime(PARTIAL_OVERLAP.into())),
        _ => Ok(()),
    }
}

/// Classifies `src` against `dst`, raising torch's partial-overlap error where torch does.
/// Too-hard layouts that may share elements are read from a copy (torch reads them as it goes).
pub fn alias_of(dst: &Tensor, src: &Tensor) -> Result<Alias> {
    match overlap(dst, src) {
        Overlap::No => Ok(Alias::None),
        Overlap::Full if dst.layout == src.layout => Ok(Alias::Same),
        Overlap::Full => Ok(Alias::Other),
        Overlap::Partial => Err(Error::Runtime(PARTIAL_OVERLAP.into())),
        Overlap::TooHard => {
            let (Some((a0, a1)), Some((b0, b1))) = (dst.layout.extent(), src.layout.extent()) else {
                return Ok(Alias::None);
            };
            Ok(if a1 <= b0 || b1 <= a0 { Alias::None } else { Alias::Other })
        }
    }
}

/// Rejects destinations with self-overlapping elements (an expanded tensor, say).
pub fn check_no_internal_overlap(dst: &Tensor) -> Result<()> {
    if dst.layout.has_internal_overlap() {
        return Err(Error::Runtime(INTERNAL_OVERLAP.into()));
    }
    Ok(())
}

/// Prepares the reads of a write into `dst`: each is returned with its alias class; reads that
/// overlap `dst` in another arrangement are replaced by private copies first.
pub fn prepare_reads(dst: &Tensor, reads: &[&Tensor]) -> Result<Vec<(Tensor, Alias)>> {
    check_no_internal_overlap(dst)?;
    reads
        .iter()
        .map(|&r| match alias_of(dst, r)? {
            Alias::Other => Ok((contiguous_copy(r, r.dtype())?, Alias::None)),
            a => Ok((r.clone(), a)),
        })
        .collect()
}

/// Runs `kernel` as a write into `dst` and bumps its version once (even for a no-op write,
/// as torch does: `add_(0)` bumps too).
pub fn write<R>(dst: &Tensor, reads: &[&Tensor], kernel: impl FnOnce(&[(Tensor, Alias)]) -> Result<R>) -> Result<R> {
    let prepared = prepare_reads(dst, reads)?;
    let out = kernel(&prepared)?;
    dst.version.bump();
    Ok(out)
}

/// `write` for a kernel that reads at most one tensor and needs no copy of it (the binary
/// ops' small-call fast path, `binary::fast`): allocates nothing. Returns false, having written
/// and bumped nothing, when `write` is needed instead: `dst` may name an element twice, or
/// `read` overlaps `dst` other than as the very same elements (`write` refuses or copies those).
/// `kernel` is told whether `read` is `dst`'s very elements (`Alias::Same`).
pub fn write_direct(dst: &Tensor, read: Option<&Tensor>, kernel: impl FnOnce(bool)) -> bool {
    if dst.layout.has_internal_overlap() {
        return false;
    }
    let same = match read.map(|r| (overlap(dst, r), r)) {
        None | Some((Overlap::No, _)) => false,
        Some((Overlap::Full, r)) if dst.layout == r.layout => true,
        Some(_) => return false,
    };
    kernel(same);
    dst.version.bump();
    true
}

/// `write` for the ops torch lets write a self-overlapping (expanded) destination after a
/// deprecation warning (`masked_fill_`): the kernel must write such a destination serially.
pub fn write_overlapping<R>(dst: &Tensor, reads: &[&Tensor], kernel: impl FnOnce(&[(Tensor, Alias)]) -> Result<R>) -> Result<R> {
    let prepared = reads
        .iter()
        .map(|&r| match alias_of(dst, r)? {
            Alias::Other => Ok((contiguous_copy(r, r.dtype())?, Alias::None)),
            a => Ok((r.clone(), a)),
        })
        .collect::<Result<Vec<_>>>()?;
    let out = kernel(&prepared)?;
    dst.version.bump();
    Ok(out)
}

/// Bumps the version without writing data: in-place metadata ops (`t_`, `squeeze_`, ... R3).
pub fn bump_metadata(dst: &Tensor) {
    dst.version.bump();
}

/// The write of a multi-tensor kernel (a fused optimizer step): checks every destination, runs
/// `kernel` once, then moves each destination's version by its count: the number of in-place
/// ops torch's own step makes on that tensor (0 for memory nobody has seen yet, or for torch's
/// `fused=True` steps, which bump nothing). Reads are the kernel's business (the caller checked
/// that no two operands share memory).
pub fn write_many<R>(dsts: &[(&Tensor, u32)], kernel: impl FnOnce() -> Result<R>) -> Result<R> {
    for (d, _) in dsts {
        check_no_internal_overlap(d)?;
    }
    let out = kernel()?;
    for (d, n) in dsts {
        for _ in 0..*n {
            d.version.bump();
        }
    }
    Ok(out)
}
