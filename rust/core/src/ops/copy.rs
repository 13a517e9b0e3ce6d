//! Copies and casts: contiguous, clone, to(dtype), and the cast-copy kernel they share.

use crate::dtype::DType;
use crate::element::Element;
use crate::kernels::elementwise::map;
use crate::kernels::Arg;
use crate::layout::Layout;
use crate::ops::broadcast_strides;
use crate::storage::Storage;
use crate::tensor::Tensor;
use crate::version::VersionCounter;

/// Writes `src` (broadcast to `dst`'s shape, cast to `dst`'s dtype) into `dst`.
/// Kernel level: the caller has checked shapes and overlap (fresh `dst`, or via `ops::write`).
pub fn copy_kernel(dst: &Tensor, src: &Tensor) {
    let strides = broadcast_strides(src, dst.shape());
    crate::dispatch!(dst.dtype(), D => crate::dispatch!(src.dtype(), S => {
        // SAFETY: both layouts lie inside their storages; dst does not overlap src (caller).
        unsafe { map::<S, D>(dst.shape(), Arg::of(dst), Arg::broadcast(src, &strides), |x| D::cast_from(x)) }
    }))
}

/// A new tensor with `t`'s values in row-major contiguous memory.
pub fn contiguous_copy(t: &Tensor, dtype: DType) -> Tensor {
    let out = Tensor::empty(t.shape(), dtype);
    copy_kernel(&out, t);
    out
}

/// `t.contiguous()`: `t` itself when already contiguous (R6), else a copy.
pub fn contiguous(t: &Tensor) -> Tensor {
    if t.is_contiguous() {
        t.clone()
    } else {
        contiguous_copy(t, t.dtype())
    }
}

/// Strides for a new tensor that keeps `t`'s memory order (torch's `preserve_format`) when `t`
/// is non-overlapping and dense; plain row-major strides otherwise.
pub fn preserved_layout(t: &Tensor) -> Layout {
    let l = &t.layout;
    if l.is_contiguous() || l.has_internal_overlap() {
        return Layout::contiguous(l.shape.as_slice());
    }
    let n = l.ndim();
    let mut perm: Vec<usize> = (0..n).collect();
    // Innermost first: ascending stride; ties keep the later dim inner, as in torch.
    perm.sort_by(|&a, &b| l.strides[a].cmp(&l.strides[b]).then(b.cmp(&a)));
    let mut strides = vec![0isize; n];
    let mut acc: isize = 1;
    for &d in &perm {
        strides[d] = acc;
        acc *= l.shape[d].max(1) as isize;
    }
    let dense = Layout { shape: l.shape.clone(), strides: strides.clone(), offset: 0 };
    // Only "dense" inputs (memory exactly filled) keep their order.
    let extent = l.extent().map(|(lo, hi)| (hi - lo) as usize).unwrap_or(0);
    if extent == l.numel() {
        dense
    } else {
        Layout::contiguous(l.shape.as_slice())
    }
}

/// An empty tensor laid out like `layout` (offset 0, storage just large enough).
pub fn empty_with_layout(layout: &Layout, dtype: DType) -> Tensor {
    let len = layout.extent().map(|(_, hi)| hi as usize).unwrap_or(0);
    let storage = Storage::new(len, dtype, false);
    Tensor { storage, layout: Layout { offset: 0, ..layout.clone() }, version: VersionCounter::new(), is_view: false }
}

/// `clone()`: new memory, fresh version counter, torch's preserve_format strides.
pub fn clone(t: &Tensor) -> Tensor {
    let out = empty_with_layout(&preserved_layout(t), t.dtype());
    copy_kernel(&out, t);
    out
}

/// `to(dtype)`: `t` itself when the dtype already matches (R6), else a converted copy.
pub fn to_dtype(t: &Tensor, dtype: DType) -> Tensor {
    if t.dtype() == dtype {
        return t.clone();
    }
    let out = empty_with_layout(&preserved_layout(t), dtype);
    copy_kernel(&out, t);
    out
}

/// Casts `t` for use as a kernel input: the same tensor when the dtype matches.
pub fn cast_input(t: &Tensor, dtype: DType) -> Tensor {
    if t.dtype() == dtype {
        t.clone()
    } else {
        contiguous_copy(t, dtype)
    }
}

#[allow(dead_code)]
fn _assert_element_bound<T: Element>() {}
