//! Per-thread work buffers for the conv kernels, reused from call to call.
//!
//! A column matrix is megabytes; allocating it per call means zero-filling it (and, on first touch,
//! page faults) only for `im2col` or gemm to overwrite every element. A returned buffer keeps its
//! contents (stale but initialised values), so the next call of the same size writes nothing extra.
//! Buffers above `KEEP_MAX` elements are freed rather than kept, which bounds what a thread holds
//! (at most `KEEP_COUNT` · 8 MiB in f64); for larger convolutions the zero-fill is small next to
//! the products.

use crate::error::Result;
use std::cell::RefCell;
use std::ops::{Deref, DerefMut};

/// Largest buffer (in elements) a thread keeps between calls, and how many it keeps. The
/// digits conv net's largest buffer is 590k elements; the Winograd kernels use four at once.
const KEEP_MAX: usize = 1 << 20;
const KEEP_COUNT: usize = 5;

thread_local! {
    static F32: RefCell<Vec<Vec<f32>>> = const { RefCell::new(Vec::new()) };
    static F64: RefCell<Vec<Vec<f64>>> = const { RefCell::new(Vec::new()) };
}

/// Element types with a per-thread buffer pool.
pub trait Pooled: Sized + Copy + 'static {
    fn with_pool<R>(f: impl FnOnce(&mut Vec<Vec<Self>>) -> R) -> R;
}

impl Pooled for f32 {
    fn with_pool<R>(f: impl FnOnce(&mut Vec<Vec<f32>>) -> R) -> R {
        F32.with(|p| f(&mut p.borrow_mut()))
    }
}

impl Pooled for f64 {
    fn with_pool<R>(f: impl FnOnce(&mut Vec<Vec<f64>>) -> R) -> R {
        F64.with(|p| f(&mut p.borrow_mut()))
    }
}

/// `n` initialised elements of a pooled buffer; goes back to the pool when dropped. Contents
/// are unspecified (zeros or a previous call's values): callers overwrite what they read.
pub struct Buf<T: Pooled> {
    v: Vec<T>,
    n: usize,
}

impl<T: Pooled + crate::element::Element> Buf<T> {
    /// A buffer of the product of `dims` elements, failing with the allocator's error (not
    /// aborting the process) when the product overflows or the system refuses.
    pub fn new(dims: &[usize]) -> Result<Buf<T>> {
        let n = dims.iter().try_fold(1usize, |a, &d| a.checked_mul(d)).unwrap_or(usize::MAX);
        // The smallest kept buffer that is big enough, else the largest (grown below).
        let mut v = T::with_pool(|pool| {
            let fit = pool.iter().enumerate().filter(|(_, b)| b.len() >= n).min_by_key(|(_, b)| b.len()).map(|(i, _)| i);
            let pick = fit.or_else(|| pool.iter().enumerate().max_by_key(|(_, b)| b.len()).map(|(i, _)| i));
            pick.map(|i| pool.swap_remove(i)).unwrap_or_default()
        });
        if n > v.len() {
            v.try_reserve_exact(n - v.len()).map_err(|_| crate::alloc::out_of_memory(n.saturating_mul(std::mem::size_of::<T>())))?;
            v.resize(n, T::zero());
        }
        Ok(Buf { v, n })
    }
}

impl<T: Pooled> Drop for Buf<T> {
    fn drop(&mut self) {
        let v = std::mem::take(&mut self.v);
        if v.len() <= KEEP_MAX {
            T::with_pool(|pool| {
                pool.push(v);
                if pool.len() > KEEP_COUNT {
                    // Keep the largest ones: they serve every smaller request.
                    let small = pool.iter().enumerate().min_by_key(|(_, b)| b.len()).map(|(i, _)| i);
                    if let Some(i) = small {
                        pool.swap_remove(i);
                    }
                }
            });
        }
    }
}

impl<T: Pooled> Deref for Buf<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.v[..self.n]
    }
}

impl<T: Pooled> DerefMut for Buf<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.v[..self.n]
    }
}
