//! Advanced indexing with ONE bool mask and nothing else but `None`s (`x[mask]`, `x[:, mask]`,
//! `x[mask] = v`, index_put_ with accumulate, and so the backward of `x[mask]` and of
//! masked_select): the mask's true elements get their ranks on the mask's device
//! (`Backend::mask_ranks`: on cuda the compaction of compact.cu, only the count coming back),
//! and one kernel reads or writes through them (`Backend::masked_take` / `masked_put`). No
//! coordinate or offset table is built on the host. Shapes, layouts, checks and error texts are
//! the general path's (the mask's `nonzero()` columns as torch's `make_info` makes them).

use crate::dtype::DType;
use crate::error::Result;
use crate::kernels::index::{Dim, Walk};
use crate::layout::Layout;
use crate::ops::copy::{contiguous_copy, contiguous_raw, empty_with_layout, to_device_raw};
use crate::ops::iter_layout::{iter_layout, Operand};
use crate::ops::write::{write, Alias};
use crate::ops::broadcast_strides;
use crate::shape::contiguous_strides;
use crate::tensor::Tensor;
use super::info::{check_mask, row_major_offsets};

/// The one mask of `indices` and the dim it starts at, when every other entry is `None`
/// (a 0-d mask, which adds a dim, takes the general path).
pub(super) fn single_mask(indices: &[Option<Tensor>]) -> Option<(usize, &Tensor)> {
    let mut first = 0;
    let mut found = None;
    for idx in indices {
        match idx {
            None if found.is_none() => first += 1,
            None => {}
            Some(t) if found.is_none() && t.dtype() == DType::Bool && t.ndim() > 0 => found = Some(t),
            Some(_) => return None,
        }
    }
    found.map(|m| (first, m))
}

/// The checked mask on x's device, contiguous, with its ranks and its number of true elements.
fn ranks(x: &Tensor, first: usize, mask: &Tensor) -> Result<(Tensor, usize)> {
    check_mask(&x.layout, mask, first)?;
    // torch takes a CPU mask for a tensor on another device: it moves (as in Info::new)
    let mask = contiguous_raw(&to_device_raw(mask, x.device())?)?;
    crate::device::backend_for(&[&mask])?.mask_ranks(&mask)
}

/// x's shape with the mask's dims replaced by one of size `n`.
fn result_shape(x: &Tensor, first: usize, k: usize, n: usize) -> Vec<usize> {
    let mut s = x.shape()[..first].to_vec();
    s.push(n);
    s.extend_from_slice(&x.shape()[first + k..]);
    s
}

/// `x[indices]` for a single mask at dim `first`, laid out as torch's TensorIterator lays out
/// the general path's result (x restrided, and the mask's k nonzero columns: stride 1 over n).
pub(super) fn take(x: &Tensor, first: usize, mask: &Tensor) -> Result<Tensor> {
    let k = mask.ndim();
    let (ranks, n) = ranks(x, first, mask)?;
    let shape = result_shape(x, first, k, n);
    let mut restrided = x.strides()[..first].to_vec();
    restrided.push(0);
    restrided.extend_from_slice(&x.strides()[first + k..]);
    let mut operands = vec![Operand { shape: shape.clone(), strides: restrided }];
    let mut view_shape = vec![1usize; first];
    view_shape.push(n);
    view_shape.resize(shape.len(), 1);
    let column = Operand { shape: view_shape.clone(), strides: contiguous_strides(&view_shape).to_vec() };
    operands.extend(std::iter::repeat_n(column, k));
    let it = iter_layout(&shape, &operands);
    let out = empty_with_layout(&Layout { strides: it.strides.into(), shape: shape.into(), offset: 0 }, x.dtype(), x.device())?;
    if out.numel() > 0 {
        crate::device::backend_for(&[&out, x])?.masked_take(&out, x, first, &ranks)?;
    }
    Ok(out)
}

/// `x.index_put_(indices, values, accumulate)` for a single mask at dim `first` (the caller
/// has done the overlap checks and the masked_fill branch): torch's checks in torch's order,
/// then one write.
pub(super) fn put(x: &Tensor, first: usize, mask: &Tensor, values: &Tensor, accumulate: bool) -> Result<()> {
    let k = mask.ndim();
    let (ranks, n) = ranks(x, first, mask)?;
    let shape = result_shape(x, first, k, n);
    super::index_put::check_values(x, values, &shape)?;
    write(x, &[values], |reads| {
        let (v, alias) = &reads[0];
        // Values that are the destination's own elements are read from a copy.
        let v = if *alias == Alias::Same { contiguous_copy(v, v.dtype())? } else { v.clone() };
        // A wrapped number (a 0-d CPU tensor) joins a device write as a device copy.
        let v = if v.ndim() == 0 && v.device() != x.device() { to_device_raw(&v, x.device())? } else { v };
        if n == 0 || x.numel() == 0 {
            return Ok(());
        }
        let layout = Layout { strides: broadcast_strides(&v, &shape).into(), shape: shape[..].into(), offset: v.layout.offset };
        let v = v.view_as_layout(layout);
        crate::device::backend_for(&[x, &v])?.masked_put(x, first, &ranks, &v, accumulate)
    })
}

/// The Walk of `Backend::masked_put` / `masked_take` on the CPU: outer dims before the mask,
/// one position per true element (its offset in `by_mask`, its rank's in `by_rank`), inner
/// dims after. `a` is `by_mask` for a put, `by_rank` for a take.
fn cpu_walk(by_mask: &Tensor, by_rank: &Tensor, first: usize, ranks: &Tensor, put: bool) -> Result<Walk> {
    let k = ranks.ndim();
    let (ms, rs) = (by_mask.strides(), by_rank.strides());
    let r = ranks.to_vec::<i64>()?;
    let at = row_major_offsets(ranks.shape(), &ms[first..first + k]);
    let pairs = at.into_iter().zip(r).filter(|&(_, r)| r >= 0).map(|(m, r)| (m, r as isize * rs[first]));
    let dim = |d: usize, rd: usize| {
        let (m, r) = (ms[d], rs[rd]);
        Dim { size: by_mask.shape()[d], a: if put { m } else { r }, b: if put { r } else { m } }
    };
    let (mo, ro) = (by_mask.layout.offset as isize, by_rank.layout.offset as isize);
    Ok(Walk {
        outer: (0..first).map(|d| dim(d, d)).collect(),
        positions: pairs.map(|(m, r)| if put { (m, r) } else { (r, m) }).collect(),
        inner: (first + k..by_mask.ndim()).map(|d| dim(d, d + 1 - k)).collect(),
        a_offset: if put { mo } else { ro },
        b_offset: if put { ro } else { mo },
    })
}

/// The CPU side of `Backend::mask_ranks` (its contract there).
pub(crate) fn mask_ranks_cpu_kernel(mask: &Tensor) -> Result<(Tensor, usize)> {
    let mut next = 0i64;
    let ranks: Vec<i64> = mask
        .to_vec::<bool>()?
        .into_iter()
        .map(|f| {
            next += i64::from(f);
            if f { next - 1 } else { -1 }
        })
        .collect();
    Ok((Tensor::from_vec(ranks, mask.shape())?, next as usize))
}

/// The CPU side of `Backend::masked_put` (its contract there): the index scatter's kernel.
pub(crate) fn masked_put_cpu_kernel(dst: &Tensor, first: usize, ranks: &Tensor, values: &Tensor, accumulate: bool) -> Result<()> {
    let w = cpu_walk(dst, values, first, ranks, true)?;
    super::index_scatter_cpu_kernel(dst, values, &w, accumulate);
    Ok(())
}

/// The CPU side of `Backend::masked_take` (its contract there): the index gather's kernel.
pub(crate) fn masked_take_cpu_kernel(dst: &Tensor, src: &Tensor, first: usize, ranks: &Tensor) -> Result<()> {
    let w = cpu_walk(src, dst, first, ranks, false)?;
    super::index_gather_cpu_kernel(dst, src, &w);
    Ok(())
}
