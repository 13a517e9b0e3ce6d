//! torch's `AdvancedIndex` (`make_info`): masks become their `nonzero()` columns, index
//! tensors are widened to int64 and broadcast together, non-adjacent indexed dims move to the
//! front; then every index value is bounds-checked and turned into a source offset.

use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::layout::Layout;
use crate::ops::iter_layout::Operand;
use crate::ops::copy::to_device_raw;
use crate::ops::mask::nonzero;
use crate::shape::{broadcast_all, contiguous_strides, wrap_dim};
use crate::tensor::Tensor;
use super::copy_preserving;
/// Index values as int64 (torch's `.to(kLong)`, which keeps the layout).
fn to_long(t: &Tensor) -> Result<Tensor> {
    if t.dtype() == DType::Int64 {
        Ok(t.clone())
    } else {
        copy_preserving(t, DType::Int64)
    }
}

/// torch's `AdvancedIndex` (built by `make_info`).
pub(super) struct Info {
    /// x's layout, indexed dims moved to the front when they were not adjacent.
    pub(super) src: Layout,
    /// Non-indexed dims before the indexed ones.
    pub(super) before: usize,
    /// (size, stride) of each indexed dim, in order.
    pub(super) indexed: Vec<(usize, isize)>,
    /// The broadcast shape of the index tensors; it replaces the indexed dims in the result.
    pub(super) replacement: Vec<usize>,
    /// The int64 index tensors, broadcast to `replacement`.
    pub(super) indices: Vec<Tensor>,
    /// Which of `indices` are a mask's `nonzero()` columns (in range by construction).
    pub(super) from_mask: Vec<bool>,
}

impl Info {
    pub(super) fn new(x: &Tensor, indices: &[Option<Tensor>]) -> Result<Info> {
        for t in indices.iter().flatten() {
            if !matches!(t.dtype(), DType::Int64 | DType::Int32 | DType::Bool) {
                return Err(Error::Index("tensors used as indices must be long, int, byte or bool tensors".into()));
            }
        }
        // torch takes index tensors on the CPU for a tensor on another device: they move.
        let indices: Vec<Option<Tensor>> =
            indices.iter().map(|t| t.as_ref().map(|t| to_device_raw(t, x.device())).transpose()).collect::<Result<_>>()?;
        let (list, mut masked) = expand_masks(&x.layout, &indices)?;
        let mut list = broadcast_indices(list)?;
        let ndim = x.ndim();
        list.resize(ndim.max(list.len()), None);
        masked.resize(list.len(), false);
        let mut src = x.layout.clone();
        if !adjacent(&list) {
            // Indexed dims first, in order, then the rest (torch's transposeToFront).
            // (Entries past x's dims are dropped here, as torch drops them.)
            let order: Vec<usize> =
                (0..ndim).filter(|&d| list[d].is_some()).chain((0..ndim).filter(|&d| list[d].is_none())).collect();
            src = src.permute(&order.iter().map(|&d| d as i64).collect::<Vec<_>>())?;
            list = order.iter().map(|&d| list[d].clone()).collect();
            masked = order.iter().map(|&d| masked[d]).collect();
        }
        let before = list.iter().position(Option::is_some).unwrap_or(list.len());
        let mut indexed = Vec::new();
        let mut ints = Vec::new();
        let mut from_mask = Vec::new();
        for (d, t) in list.iter().enumerate() {
            if let Some(t) = t {
                from_mask.push(masked[d]);
                // A mask followed by more indices can name dims x does not have.
                let w = wrap_dim(d as i64, ndim)?;
                indexed.push((src.shape[w], src.strides[w]));
                ints.push(to_long(t)?);
            }
        }
        let replacement = ints.last().map_or(vec![], |t| t.shape().to_vec());
        // No index value fits a size-0 dim; torch checks here since the kernel may not run.
        if indexed.iter().any(|&(s, _)| s == 0) && !replacement.contains(&0) {
            return Err(Error::Index("index is out of bounds for dimension with size 0".into()));
        }
        Ok(Info { src, before, indexed, replacement, indices: ints, from_mask })
    }

    /// The position table's recipe for a device (`Backend::index_*_table`): `rows` are the
    /// strides of the row-major side over `replacement`.
    pub(super) fn table(&self, rows: &[isize], indices_in_a: bool) -> crate::device::IndexTable {
        crate::device::IndexTable {
            replacement: self.replacement.clone(),
            rows: rows.to_vec(),
            indices: self.indices.iter().zip(&self.indexed).map(|(t, &(size, stride))| (t.clone(), size, stride)).collect(),
            indices_in_a,
        }
    }

    pub(super) fn result_shape(&self) -> Vec<usize> {
        let after = self.before + self.indexed.len();
        let mut s = self.src.shape[..self.before].to_vec();
        s.extend(&self.replacement);
        s.extend(&self.src.shape[after..]);
        s
    }

    /// x read as the result (stride 0 on the replacement dims): torch's `restride_src`.
    pub(super) fn restrided(&self, shape: &[usize]) -> Operand {
        let after = self.before + self.indexed.len();
        let mut s = self.src.strides[..self.before].to_vec();
        s.extend(std::iter::repeat_n(0, self.replacement.len()));
        s.extend(&self.src.strides[after..]);
        Operand { shape: shape.to_vec(), strides: s }
    }

    /// Each index tensor reshaped to `[1]*before + replacement + [1]*after` (torch's
    /// `reshape_indexer`), as the iterator receives it.
    pub(super) fn index_operands(&self, shape: &[usize]) -> Vec<Operand> {
        let mut view_shape = vec![1usize; self.before];
        view_shape.extend(&self.replacement);
        view_shape.resize(shape.len(), 1);
        self.indices
            .iter()
            .map(|t| {
                let strides = t.layout.view_strides(&view_shape).unwrap_or_else(|| contiguous_strides(&view_shape).to_vec());
                Operand { shape: view_shape.clone(), strides }
            })
            .collect()
    }

    /// For each index position (row-major over `replacement`), the offset of the element it
    /// names relative to x's offset; raises torch's error for the first out-of-range index in
    /// torch's iteration order.
    pub(super) fn source_offsets(&self, perm: &[usize]) -> Result<Vec<isize>> {
        let values: Vec<Vec<i64>> = self.indices.iter().map(|t| t.to_vec::<i64>()).collect::<Result<_>>()?;
        let in_range = |j: usize, v: i64| {
            let size = self.indexed[j].0 as i64;
            v >= -size && v < size
        };
        let all_ok = values.iter().enumerate().all(|(j, vs)| vs.iter().all(|&v| in_range(j, v)));
        if !all_ok {
            let values: Vec<Option<Vec<i64>>> = values.into_iter().map(Some).collect();
            return Err(self.first_out_of_range(&values, perm));
        }
        let n: usize = self.replacement.iter().product();
        let mut offsets = vec![0isize; n];
        for (j, vs) in values.iter().enumerate() {
            let (size, stride) = self.indexed[j];
            for (o, &v) in offsets.iter_mut().zip(vs) {
                let v = if v < 0 { v + size as i64 } else { v };
                *o += v as isize * stride;
            }
        }
        Ok(offsets)
    }

    /// Checks the integer indices as `source_offsets` does (torch's error for the first
    /// out-of-range one), reading only them on the host: a mask's columns are in range by
    /// construction and stay where they are (for `IndexTable`).
    pub(super) fn check_integer_indices(&self, perm: &[usize]) -> Result<()> {
        let values: Vec<Option<Vec<i64>>> = self
            .indices
            .iter()
            .zip(&self.from_mask)
            .map(|(t, &m)| if m { Ok(None) } else { t.to_vec::<i64>().map(Some) })
            .collect::<Result<_>>()?;
        let in_range = |j: usize, v: i64| {
            let size = self.indexed[j].0 as i64;
            v >= -size && v < size
        };
        let all_ok = values.iter().enumerate().all(|(j, vs)| vs.iter().flatten().all(|&v| in_range(j, v)));
        if all_ok {
            return Ok(());
        }
        Err(self.first_out_of_range(&values, perm))
    }

    /// The error torch's kernel raises: positions in its iteration order, dims in order (a
    /// `None` entry, a mask's column, is never out of range).
    fn first_out_of_range(&self, values: &[Option<Vec<i64>>], perm: &[usize]) -> Error {
        let r = self.replacement.len();
        let rm = contiguous_strides(&self.replacement);
        // Replacement dims from outermost to innermost as the iterator walks them.
        let order: Vec<usize> =
            perm.iter().rev().filter(|&&d| d >= self.before && d < self.before + r).map(|&d| d - self.before).collect();
        let mut coord = vec![0usize; r];
        loop {
            let p: isize = order.iter().map(|&d| coord[d] as isize * rm[d]).sum();
            for (j, vs) in values.iter().enumerate() {
                let Some(vs) = vs else { continue };
                let v = vs[p as usize];
                let size = self.indexed[j].0 as i64;
                if !(v >= -size && v < size) {
                    return Error::Index(format!("index {} is out of bounds for dimension {} with size {}", v, j, size));
                }
            }
            // Advance the odometer, innermost dim of `order` fastest.
            let mut k = order.len();
            loop {
                if k == 0 {
                    // Unreachable: some value was out of range.
                    return Error::Runtime("index out of range".into());
                }
                k -= 1;
                coord[order[k]] += 1;
                if coord[order[k]] < self.replacement[order[k]] {
                    break;
                }
                coord[order[k]] = 0;
            }
        }
    }
}

/// Replaces each bool mask by the index tensors of its nonzero coordinates (torch's
/// `expandTensors`), checking the mask against the dims it covers.
/// Also says which entries are such columns.
fn expand_masks(x: &Layout, indices: &[Option<Tensor>]) -> Result<(Vec<Option<Tensor>>, Vec<bool>)> {
    let mut out: Vec<Option<Tensor>> = Vec::with_capacity(indices.len());
    let mut masked = Vec::with_capacity(indices.len());
    for idx in indices {
        match idx {
            Some(mask) if mask.dtype() == DType::Bool => {
                check_mask(x, mask, out.len())?;
                let nz = nonzero(mask)?;
                for j in 0..mask.ndim() {
                    out.push(Some(nz.view_as_layout(nz.layout.select(1, j as i64)?)));
                    masked.push(true);
                }
            }
            other => {
                out.push(other.clone());
                masked.push(false);
            }
        }
    }
    Ok((out, masked))
}

/// A mask must match the sizes of the dims it covers, starting at `first`.
pub(super) fn check_mask(x: &Layout, mask: &Tensor, first: usize) -> Result<()> {
    for j in 0..mask.ndim() {
        let src = first + j;
        let size = x.shape[wrap_dim(src as i64, x.ndim())?];
        if mask.shape()[j] != size {
            return Err(Error::Index(format!(
                "The shape of the mask {} at index {} does not match the shape of the indexed tensor {} at index {}",
                fmt_shape(mask.shape()),
                j,
                fmt_shape(&x.shape),
                src
            )));
        }
    }
    Ok(())
}

/// Broadcasts the index tensors together (torch's `expand_outplace`).
fn broadcast_indices(list: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
    let shapes: Vec<&[usize]> = list.iter().flatten().map(|t| t.shape()).collect();
    let target = broadcast_all(&shapes).map_err(|_| {
        let parts: Vec<String> = shapes.iter().map(|s| fmt_shape(s)).collect();
        Error::Index(format!("shape mismatch: indexing tensors could not be broadcast together with shapes {}", parts.join(", ")))
    })?;
    let sizes: Vec<i64> = target.iter().map(|&d| d as i64).collect();
    list.into_iter()
        .map(|t| match t {
            Some(t) if t.shape() != target.as_slice() => Ok(Some(t.view_as_layout(t.layout.expand(&sizes)?))),
            other => Ok(other),
        })
        .collect()
}

/// True when the defined indices are adjacent (torch's `hasContiguousSubspace`).
fn adjacent(list: &[Option<Tensor>]) -> bool {
    let first = list.iter().position(Option::is_some);
    let last = list.iter().rposition(Option::is_some);
    match (first, last) {
        (Some(f), Some(l)) => list[f..=l].iter().all(Option::is_some),
        _ => true,
    }
}

/// Offsets of the row-major positions of `shape` under `strides`.
pub(super) fn row_major_offsets(shape: &[usize], strides: &[isize]) -> Vec<isize> {
    let mut out = vec![0isize];
    for (&s, &st) in shape.iter().zip(strides) {
        out = out.iter().flat_map(|&o| (0..s as isize).map(move |i| o + i * st)).collect();
    }
    out
}
