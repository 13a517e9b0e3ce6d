//! Rows along one dim: how the scan and sort ops hand a tensor to their kernels.
//!
//! Those kernels work on a row-major `[rows, n]` buffer whose last dim is the one scanned or
//! sorted. `rows_of` makes that buffer (the dim moved last, then a contiguous copy unless the
//! tensor is already laid out so), `from_rows` puts a result of the same form back into the
//! input's dim order as a fresh row-major tensor (what torch returns from these ops).

use crate::element::Element;
use crate::error::Result;
use crate::layout::Layout;
use crate::ops::copy::contiguous_raw;
use crate::ops::views::permute_raw;
use crate::tensor::Tensor;

/// The permutation that moves `dim` last.
fn dim_last(ndim: usize, dim: usize) -> Vec<i64> {
    (0..ndim).filter(|&d| d != dim).chain(std::iter::once(dim)).map(|d| d as i64).collect()
}

/// `x` as contiguous rows along `dim` (a 0-d tensor is one row of one element).
pub fn rows_of(x: &Tensor, dim: usize) -> Result<Tensor> {
    if x.ndim() == 0 {
        return contiguous_raw(x);
    }
    contiguous_raw(&permute_raw(x, &dim_last(x.ndim(), dim))?)
}

/// The row-major shape of `rows_of(x, dim)` with the last dim resized to `n`.
pub fn rows_shape(shape: &[usize], dim: usize, n: usize) -> Vec<usize> {
    let mut out: Vec<usize> = shape.iter().enumerate().filter(|&(d, _)| d != dim).map(|(_, &s)| s).collect();
    if !shape.is_empty() {
        out.push(n);
    }
    out
}

/// Undoes `rows_of` on a result `r` (whose last dim may have a new size): a row-major tensor
/// in the input's dim order.
pub fn from_rows(r: &Tensor, ndim: usize, dim: usize) -> Result<Tensor> {
    if ndim == 0 || dim + 1 == ndim {
        return Ok(r.fresh_handle());
    }
    let mut inverse = vec![0i64; ndim];
    for (i, &d) in dim_last(ndim, dim).iter().enumerate() {
        inverse[d as usize] = i as i64;
    }
    let back = contiguous_raw(&permute_raw(r, &inverse)?)?.fresh_handle();
    // row-major also in the strides of size-1 dims (torch's strides for a new tensor)
    let layout = Layout { offset: back.layout.offset, ..Layout::contiguous(back.shape()) };
    Ok(Tensor { layout, ..back })
}

/// The elements of a contiguous tensor, to read.
///
/// # Safety
/// `t` is contiguous, and nothing writes its memory while the slice lives (a private copy,
/// or an input of an op that writes only to fresh outputs).
pub unsafe fn read<T: Element>(t: &Tensor) -> &[T] {
    debug_assert!(t.is_contiguous());
    if t.numel() == 0 {
        return &[];
    }
    // SAFETY: the caller's contract; a contiguous layout covers numel elements from data_ptr.
    std::slice::from_raw_parts(t.data_ptr::<T>(), t.numel())
}

/// The elements of a fresh contiguous tensor, to write.
///
/// # Safety
/// `t` is contiguous and fresh: no other handle reads or writes it while the slice lives.
#[allow(clippy::mut_from_ref)]
pub unsafe fn write<T: Element>(t: &Tensor) -> &mut [T] {
    debug_assert!(t.is_contiguous());
    if t.numel() == 0 {
        return &mut [];
    }
    // SAFETY: the caller's contract.
    std::slice::from_raw_parts_mut(t.data_ptr::<T>(), t.numel())
}
