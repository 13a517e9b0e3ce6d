//! Copies and casts: contiguous, clone, to(dtype), and the cast-copy kernel they share.

use crate::kernels::TensorArg;
use crate::dtype::{DType, Scalar};
use crate::error::Result;
use crate::shape::{broadcast_shapes, check_inplace_shape};
use crate::element::Element;
use crate::kernels::elementwise::map;
use crate::kernels::Arg;
use crate::layout::Layout;
use crate::ops::broadcast_strides;
use crate::device::Device;
use crate::tensor::Tensor;
use crate::version::VersionCounter;

/// Writes `src` (broadcast to `dst`'s shape, cast to `dst`'s dtype) into `dst`, on their device.
/// Kernel level: the caller has checked shapes and overlap (fresh `dst`, or via `ops::write`).
pub fn copy_kernel(dst: &Tensor, src: &Tensor) -> Result<()> {
    let strides = broadcast_strides(src, dst.shape());
    crate::device::backend_for(&[dst, src])?.copy(dst, src, &strides)
}

/// The CPU's cast-copy loop (the CPU backend's `copy`).
pub(crate) fn cpu_kernel(dst: &Tensor, src: &Tensor, strides: &[isize]) {
    crate::dispatch_all!(dst.dtype(), D => crate::dispatch_all!(src.dtype(), S => {
        // SAFETY: both layouts lie inside their storages; dst does not overlap src (caller).
        unsafe { map::<S, D>(dst.shape(), Arg::of(dst), Arg::broadcast(src, strides), D::cast_from) }
    }))
}

/// A new tensor with `t`'s values in row-major contiguous memory.
pub fn contiguous_copy(t: &Tensor, dtype: DType) -> Result<Tensor> {
    let out = Tensor::empty_on(t.shape(), dtype, t.device())?;
    copy_kernel(&out, t)?;
    Ok(out)
}

/// `t.contiguous()`: `t` itself when already contiguous (R6), else a copy.
pub fn contiguous_raw(t: &Tensor) -> Result<Tensor> {
    if t.is_contiguous() {
        Ok(t.clone())
    } else {
        contiguous_copy(t, t.dtype())
    }
}

/// torch's `preserve_format` layout for a new tensor like `t` (`clone()`, `to(dtype)`, `*_like`):
/// `t`'s own strides when it is non-overlapping and dense, else dense strides in `t`'s dim order.
pub use crate::ops::iter_layout::{is_non_overlapping_and_dense, iterator_layout, preserve_format};

pub fn preserved_layout(t: &Tensor) -> Layout {
    preserve_format(&t.layout)
}

/// The layout an input of an elementwise op has once cast to the compute dtype: itself, or (torch
/// casts with `to()`) its preserve-format copy.
pub fn cast_layout(t: &Tensor, dtype: DType) -> Layout {
    if t.dtype() == dtype {
        t.layout.clone()
    } else {
        preserved_layout(t)
    }
}

pub use crate::ops::write::assert_no_partial_overlap as check_no_partial_overlap;

/// `dst.copy_(src)`: `src` broadcast to `dst`'s shape (R44) and cast to its dtype, through the
/// write path. Copying a tensor onto its very own elements writes nothing but still counts as
/// a write (the version goes up), as in torch, where it also skips the overlap checks.
pub fn copy_inplace_raw(dst: &Tensor, src: &Tensor) -> Result<()> {
    if src.device() != dst.device() {
        // copy_ is the one op that may mix devices (torch moves the values, then copies)
        return copy_inplace_raw(dst, &to_device_raw(src, dst.device())?);
    }
    if dst.same_storage(src) && dst.layout == src.layout {
        crate::ops::write::bump_metadata(dst);
        return Ok(());
    }
    crate::ops::write::check_no_internal_overlap(dst)?;
    check_no_partial_overlap(dst, src)?;
    let shape = broadcast_shapes(dst.shape(), src.shape())?;
    check_inplace_shape(dst.shape(), &shape)?;
    crate::ops::write::write(dst, &[src], |reads| {
        copy_kernel(dst, &reads[0].0)
    })
}

/// `fill_(value)` / `zero_()`. torch lets these write an expanded tensor (every alias gets the
/// same value), so the write goes to the distinct elements: dims of stride 0 are dropped first.
pub fn fill_inplace_raw(dst: &Tensor, value: Scalar) -> Result<()> {
    let target = distinct_elements(dst);
    crate::ops::write::write(&target, &[], |_| crate::device::backend_for(&[&target])?.fill(&target, value))
}

/// `dst` with its stride-0 dims cut to one element: each memory location once (what a fill
/// of an expanded tensor writes).
pub(crate) fn distinct_elements(dst: &Tensor) -> Tensor {
    let mut distinct = dst.layout.clone();
    for (s, &st) in distinct.shape.iter_mut().zip(&dst.layout.strides) {
        if st == 0 {
            *s = (*s).min(1);
        }
    }
    Tensor { layout: distinct, ..dst.clone() }
}

/// An empty tensor laid out like `layout` (offset 0, storage just large enough), as torch's
/// TensorIterator allocates an output: a contiguous layout is checked (and worded) as `empty`,
/// any other as `empty_strided`.
pub fn empty_with_layout(layout: &Layout, dtype: DType, device: Device) -> Result<Tensor> {
    if layout.is_contiguous() {
        crate::shape::storage_nbytes_contiguous(&layout.shape, dtype.size())?;
    } else {
        check_strided(layout, dtype)?;
    }
    allocate_layout(layout, dtype, device)
}

/// torch's `empty_strided` (what `empty_like`, `clone` and `to` allocate with): the size check
/// names the sizes and the strides.
pub fn empty_strided(layout: &Layout, dtype: DType, device: Device) -> Result<Tensor> {
    check_strided(layout, dtype)?;
    allocate_layout(layout, dtype, device)
}

fn check_strided(layout: &Layout, dtype: DType) -> Result<usize> {
    let sizes: Vec<i64> = layout.shape.iter().map(|&d| d as i64).collect();
    let strides: Vec<i64> = layout.strides.iter().map(|&s| s as i64).collect();
    crate::shape::storage_nbytes_strided(&sizes, &strides, 0, dtype.size())
}

/// Memory for a dense `layout` whose size has been checked (its extent is its element count).
fn allocate_layout(layout: &Layout, dtype: DType, device: Device) -> Result<Tensor> {
    let len = layout.extent().map(|(_, hi)| hi as usize).unwrap_or(0);
    let nbytes = crate::shape::storage_nbytes_contiguous(&[len], dtype.size())?;
    let storage = crate::device::backend(device)?.allocate(nbytes, dtype, false)?;
    Ok(Tensor { storage, layout: Layout { offset: 0, ..layout.clone() }, version: VersionCounter::new(), meta: crate::autograd::AutogradMeta::new_ref(), stale_size0: false })
}

/// `clone()`: new memory, fresh version counter, torch's preserve_format strides.
pub fn clone_raw(t: &Tensor) -> Result<Tensor> {
    let out = empty_strided(&preserved_layout(t), t.dtype(), t.device())?;
    copy_kernel(&out, t)?;
    Ok(out)
}

/// `to(dtype)`: `t` itself when the dtype already matches (R6), else a converted copy.
pub fn to_dtype_raw(t: &Tensor, dtype: DType) -> Result<Tensor> {
    if t.dtype() == dtype {
        return Ok(t.clone());
    }
    let out = empty_strided(&preserved_layout(t), dtype, t.device())?;
    copy_kernel(&out, t)?;
    Ok(out)
}

/// `to(device)`: `t` itself when already there (R6), else a contiguous copy on `device`, moved
/// through host memory by the non-CPU side's backend (which synchronises, as torch's copies do).
pub fn to_device_raw(t: &Tensor, device: Device) -> Result<Tensor> {
    let from = t.device();
    if from == device {
        return Ok(t.clone());
    }
    let src = contiguous_raw(t)?;
    let host = if from.is_cpu() {
        src
    } else {
        let host = Tensor::empty(t.shape(), t.dtype())?;
        crate::device::backend(from)?.transfer(&host, &src, true)?;
        host
    };
    if device.is_cpu() {
        return Ok(host);
    }
    let out = Tensor::empty_on(t.shape(), t.dtype(), device)?;
    crate::device::backend(device)?.transfer(&host, &out, false)?;
    Ok(out)
}

/// Differentiable `to(device)` (ToCopyBackward0: the gradient goes back to `t`'s device).
pub fn to_device(t: &Tensor, device: Device) -> Result<Tensor> {
    if t.device() == device {
        return Ok(t.clone());
    }
    let out = to_device_raw(t, device)?;
    if let Some(rec) = crate::autograd::Recorder::new(&[Some(t)])? {
        let back = t.device();
        rec.finish("ToCopyBackward0", &[&out], Box::new(move |ctx| Ok(vec![Some(to_device_raw(ctx.grad(), back)?)])))?;
    }
    Ok(out)
}

/// Casts `t` for use as a kernel input: the same tensor when the dtype matches.
pub fn cast_input(t: &Tensor, dtype: DType) -> Result<Tensor> {
    if t.dtype() == dtype {
        Ok(t.clone())
    } else {
        contiguous_copy(t, dtype)
    }
}

#[allow(dead_code)]
fn _assert_element_bound<T: Element>() {}

/// Zeros, contiguous, on `device` (gradient buffers: on the device of the gradient they hold).
pub fn zeros_raw(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
    Tensor::zeros_on(shape, dtype, device)
}

// ----- autograd -----

pub(crate) fn record_identity(name: &'static str, x: &Tensor, out: &Tensor) -> Result<()> {
    if let Some(rec) = crate::autograd::Recorder::new(&[Some(x)])? {
        let dtype = x.dtype();
        rec.finish(name, &[out], Box::new(move |ctx| {
            let g = ctx.grad();
            Ok(vec![Some(if g.dtype() == dtype { g.clone() } else { to_dtype(g, dtype)? })])
        }))?;
    }
    Ok(())
}

/// Differentiable `contiguous()` (CloneBackward0 when it copies).
pub fn contiguous(t: &Tensor) -> Result<Tensor> {
    if t.is_contiguous() {
        return Ok(t.clone());
    }
    let out = contiguous_raw(t)?;
    record_identity("CloneBackward0", t, &out)?;
    Ok(out)
}

/// Differentiable `clone()`.
pub fn clone(t: &Tensor) -> Result<Tensor> {
    let out = clone_raw(t)?;
    record_identity("CloneBackward0", t, &out)?;
    Ok(out)
}

/// Differentiable `to(dtype)` (ToCopyBackward0; the gradient is cast back).
pub fn to_dtype(t: &Tensor, dtype: DType) -> Result<Tensor> {
    if t.dtype() == dtype {
        return Ok(t.clone());
    }
    let out = to_dtype_raw(t, dtype)?;
    if dtype.is_floating() {
        record_identity("ToCopyBackward0", t, &out)?;
    }
    Ok(out)
}

/// Differentiable `dst.copy_(src)`: torch's CopyBackwards gives self zeros and src the
/// gradient (cast to its dtype, summed to its shape).
pub fn copy_(dst: &Tensor, src: &Tensor) -> Result<()> {
    let _blame = crate::autograd::blame::op("copy_");
    // torch's copy_ records only into a differentiable (floating) destination
    let rec = if dst.dtype().is_floating() {
        crate::autograd::Recorder::inplace(dst, &[Some(src)])?
    } else {
        crate::autograd::check_inplace(dst, false)?;
        None
    };
    copy_inplace_raw(dst, src)?;
    if let Some(rec) = rec {
        let (shape, dtype, device) = (src.shape().to_vec(), src.dtype(), src.device());
        rec.finish_inplace("torch::autograd::CopyBackwards", dst, Box::new(move |ctx| {
            let g = ctx.grad();
            let gs = if ctx.needs(1) {
                let c = if g.dtype() == dtype { g.clone() } else { to_dtype(g, dtype)? };
                Some(to_device(&crate::ops::formulas::sum_to(&c, &shape)?, device)?)
            } else {
                None
            };
            Ok(vec![ctx.needs(0).then(|| zeros_raw(g.shape(), g.dtype(), g.device())).transpose()?, gs])
        }))?;
    }
    Ok(())
}

/// Finishes an in-place op whose old values get no gradient (fill_, zero_, the random fills).
pub(crate) fn zero_grad_node(name: &'static str, dst: &Tensor, rec: crate::autograd::Recorder) -> Result<()> {
    rec.finish_inplace(name, dst, Box::new(|ctx| Ok(vec![Some(zeros_raw(ctx.grad().shape(), ctx.grad().dtype(), ctx.grad().device())?)])))
}

/// Differentiable `fill_(number)` (FillBackward2: the old values get no gradient).
pub fn fill_(dst: &Tensor, value: Scalar) -> Result<()> {
    let _blame = crate::autograd::blame::op("fill_");
    let rec = crate::autograd::Recorder::inplace(dst, &[])?;
    fill_inplace_raw(dst, value)?;
    match rec {
        Some(rec) => zero_grad_node("FillBackward2", dst, rec),
        None => Ok(()),
    }
}

/// Differentiable `zero_()` (ZeroBackward0).
pub fn zero_(dst: &Tensor) -> Result<()> {
    let _blame = crate::autograd::blame::op("zero_");
    let rec = crate::autograd::Recorder::inplace(dst, &[])?;
    fill_inplace_raw(dst, Scalar::Int(0))?;
    match rec {
        Some(rec) => zero_grad_node("ZeroBackward0", dst, rec),
        None => Ok(()),
    }
}

/// Differentiable `fill_(0-d tensor)` (FillBackward3: the value gets the summed gradient).
pub fn fill_tensor_(dst: &Tensor, value: &Tensor) -> Result<()> {
    let _blame = crate::autograd::blame::op("fill_");
    let rec = crate::autograd::Recorder::inplace(dst, &[Some(value)])?;
    if value.ndim() != 0 {
        return Err(crate::Error::Runtime(format!("fill_ only supports 0-dimension value tensor but got tensor with {} dimensions.", value.ndim())));
    }
    // fill_(Tensor) refuses overlapping destinations, unlike fill_(number)
    crate::ops::write::check_no_internal_overlap(dst)?;
    fill_inplace_raw(dst, value.item()?)?;
    if let Some(rec) = rec {
        rec.finish_inplace("FillBackward3", dst, Box::new(|ctx| {
            let g = ctx.grad();
            let gv = if ctx.needs(1) { Some(crate::ops::reduce::sum(g, None, false, None)?) } else { None };
            Ok(vec![ctx.needs(0).then(|| zeros_raw(g.shape(), g.dtype(), g.device())).transpose()?, gv])
        }))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::iter_layout::is_channels_last_contiguous;

    fn l(shape: &[usize], strides: &[isize]) -> Layout {
        Layout { shape: shape.into(), strides: strides.into(), offset: 0 }
    }

    // Expected strides below were read off torch 2.13 (clone(), exp(), a + b).
    #[test]
    fn preserve_format_like_torch() {
        // dense: kept exactly, size-1 strides included
        assert_eq!(preserve_format(&l(&[3, 1], &[1, 1])).strides.to_vec(), vec![1, 1]);
        assert_eq!(preserve_format(&l(&[3, 4], &[1, 3])).strides.to_vec(), vec![1, 3]);
        // zeros(4,6)[:, ::2].t(): not dense, dim order kept
        assert_eq!(preserve_format(&l(&[3, 4], &[2, 6])).strides.to_vec(), vec![1, 3]);
        // zeros(2,3,4,5).permute(0,2,3,1)[..., ::2]
        assert_eq!(preserve_format(&l(&[2, 4, 5, 2], &[60, 5, 1, 40])).strides.to_vec(), vec![40, 5, 1, 20]);
        // an empty tensor is contiguous, hence dense: strides kept
        assert_eq!(preserve_format(&l(&[3, 0, 1], &[0, 0, 0])).strides.to_vec(), vec![0, 0, 0]);
    }

    #[test]
    fn iterator_layout_like_torch() {
        let scalar = Layout::contiguous(&[]);
        // zeros(3,4)[:, :1] (strides (4,1)) + 1 -> contiguous
        assert_eq!(iterator_layout(&[3, 1], &[&l(&[3, 1], &[4, 1]), &scalar]).strides.to_vec(), vec![1, 1]);
        // zeros(2,3).t() + zeros(4,1,1) -> (6,1,3)
        let t = l(&[3, 2], &[1, 3]);
        assert_eq!(iterator_layout(&[4, 3, 2], &[&t, &Layout::contiguous(&[4, 1, 1])]).strides.to_vec(), vec![6, 1, 3]);
        // zeros(2,0).t() + 1 -> (1,0)
        assert_eq!(iterator_layout(&[0, 2], &[&l(&[0, 2], &[1, 1]), &scalar]).strides.to_vec(), vec![1, 0]);
        // same-shape dense inputs with equal strides: those strides
        assert_eq!(iterator_layout(&[3, 4], &[&l(&[3, 4], &[1, 3]), &l(&[3, 4], &[1, 3])]).strides.to_vec(), vec![1, 3]);
        // ... but a contiguous input among them makes the order follow the strict comparisons
        assert_eq!(iterator_layout(&[3, 4], &[&l(&[3, 4], &[1, 3]), &l(&[3, 4], &[4, 1])]).strides.to_vec(), vec![1, 3]);
    }

    #[test]
    fn dense_and_channels_last() {
        assert!(is_non_overlapping_and_dense(&l(&[2, 3], &[1, 2])));
        assert!(!is_non_overlapping_and_dense(&l(&[2, 3], &[1, 3])));
        assert!(is_channels_last_contiguous(&l(&[2, 3, 4, 5], &[60, 1, 15, 3])));
    }
}
