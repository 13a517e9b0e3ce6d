//! Advanced indexing (torch's `index` and `index_put_`): integer and bool tensors as indices.
//!
//! Following torch's `make_info`/`AdvancedIndex`: masks become their `nonzero()` columns, the
//! index tensors broadcast together, and when they are not adjacent the indexed dims move to the
//! front. The result replaces the indexed dims by the broadcast index shape. Reading copies
//! (a gather into a fresh tensor); writing scatters through the one write path.

use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::kernels::index::{gather, scatter, Dim, Walk};
use crate::layout::Layout;
use crate::ops::binary::masked_fill_raw;
use crate::ops::copy::{contiguous_copy, copy_kernel, empty_with_layout};
use crate::ops::index::checked_convert;
use crate::ops::mask::nonzero;
use crate::ops::write::{write, Alias};
use crate::ops::iter_layout::{iter_layout, preserve_format, Operand};
use crate::ops::{broadcast_strides, Arg};
use crate::shape::{broadcast_all, contiguous_strides, wrap_dim};
use crate::tensor::Tensor;
use crate::version::VersionCounter;

/// What torch 2.13 raises when index_put_ runs with no index tensor at all.
const NO_INDEX_ASSERT: &str = "ntensor >= 3 INTERNAL ASSERT FAILED at \"/__w/pytorch/pytorch/aten/src/ATen/native/cpu/IndexKernelUtils.h\":8, please report a bug to PyTorch. ";

/// `x[indices]` (torch's `index`): `None` entries leave their dim alone.
pub fn index_raw(x: &Tensor, indices: &[Option<Tensor>]) -> Result<Tensor> {
    check_count(x, indices)?;
    let info = Info::new(x, indices)?;
    if info.indices.is_empty() {
        return Err(Error::Runtime(NO_INDEX_ASSERT.into()));
    }
    let shape = info.result_shape();
    // The output is allocated by torch's TensorIterator from x (restrided) and the indices.
    let mut operands = vec![info.restrided(&shape)];
    operands.extend(info.index_operands(&shape));
    let it = iter_layout(&shape, &operands);
    let out = empty_with_layout(&Layout { strides: it.strides, shape: shape.clone(), offset: 0 }, x.dtype())?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let targets = info.source_offsets(&it.perm)?;
    let r = info.replacement.len();
    let mut w = Walk { a_offset: 0, b_offset: info.src.offset as isize, ..Default::default() };
    for (d, &size) in shape[..info.before].iter().enumerate() {
        w.outer.push(Dim { size, a: out.strides()[d], b: info.src.strides[d] });
    }
    let repl_out = &out.strides()[info.before..info.before + r];
    w.positions = row_major_offsets(&info.replacement, repl_out).into_iter().zip(targets).collect();
    let after = info.before + info.indexed.len();
    for (i, d) in (info.before + r..shape.len()).enumerate() {
        w.inner.push(Dim { size: shape[d], a: out.strides()[d], b: info.src.strides[after + i] });
    }
    crate::dispatch!(x.dtype(), T => {
        // SAFETY: `out` is fresh with non-overlapping strides and `shape` elements; every source
        // offset comes from x's own layout with bounds-checked index values, so it lies inside
        // x's storage; out and x do not share memory.
        unsafe { gather::<T>(&w, out.base_ptr::<T>(), x.base_ptr::<T>()) }
    });
    Ok(out)
}

/// `x.index_put_(indices, values, accumulate)`: one write, one version bump.
pub fn index_put_inplace_raw(x: &Tensor, indices: &[Option<Tensor>], values: &Tensor, accumulate: bool) -> Result<()> {
    check_count(x, indices)?;
    // torch answers a single-mask write of one value with masked_fill_ (other rules apply).
    if !accumulate && values.numel() == 1 {
        match masked_fill_mask(x, indices)? {
            MaskFill::Mask(mask) => return masked_fill_write(x, &mask, values),
            MaskFill::NoIndex => return Err(Error::Runtime("sym_strides() called on an undefined Tensor".into())),
            MaskFill::No => {}
        }
    }
    check_no_overlap(x, values, false)?;
    for i in indices.iter().flatten() {
        check_no_overlap(x, i, false)?;
    }
    let info = Info::new(x, indices)?;
    let shape = info.result_shape();
    if !expandable(values.shape(), &shape) {
        return Err(Error::Runtime(format!(
            "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
            fmt_shape(values.shape()),
            fmt_shape(&shape)
        )));
    }
    if values.dtype() != x.dtype() {
        return Err(Error::Runtime(format!(
            "Index put requires the source and destination dtypes match, got {} for the destination and {} for the source.",
            x.dtype().scalar_type_name(),
            values.dtype().scalar_type_name()
        )));
    }
    if info.indices.is_empty() {
        return Err(Error::Runtime(NO_INDEX_ASSERT.into()));
    }
    // torch's loop runs over x (restrided, as the output), the values and the indices.
    let mut operands = vec![info.restrided(&shape), Operand { shape: values.shape().to_vec(), strides: values.strides().to_vec() }];
    operands.extend(info.index_operands(&shape));
    let it = iter_layout(&shape, &operands);
    // Every index is checked before anything is written (torch may write a prefix first).
    let targets = if shape.iter().product::<usize>() == 0 { vec![] } else { info.source_offsets(&it.perm)? };
    write(x, &[values], |reads| {
        let (v, alias) = &reads[0];
        // Values that are the destination's own elements are read from a copy.
        let v = if *alias == Alias::Same { contiguous_copy(v, v.dtype())? } else { v.clone() };
        let vs = broadcast_strides(&v, &shape);
        let r = info.replacement.len();
        let mut w = Walk { a_offset: info.src.offset as isize, b_offset: v.layout.offset as isize, ..Default::default() };
        for (d, &size) in shape[..info.before].iter().enumerate() {
            w.outer.push(Dim { size, a: info.src.strides[d], b: vs[d] });
        }
        let repl_values = row_major_offsets(&info.replacement, &vs[info.before..info.before + r]);
        w.positions = targets.iter().copied().zip(repl_values).collect();
        let after = info.before + info.indexed.len();
        for (i, d) in (info.before + r..shape.len()).enumerate() {
            w.inner.push(Dim { size: shape[d], a: info.src.strides[after + i], b: vs[d] });
        }
        crate::dispatch!(x.dtype(), T => {
            // SAFETY: destination offsets come from x's layout with bounds-checked indices;
            // x has no internal overlap (checked by `write`), so outer elements own disjoint
            // memory; v does not overlap x (checked above, or a private copy).
            unsafe { scatter::<T>(&w, x.base_ptr::<T>(), v.base_ptr::<T>(), accumulate) }
        });
        Ok(())
    })
}

/// `index_put` (out of place): a preserve-format clone of x, written, with a fresh counter.
pub fn index_put_raw(x: &Tensor, indices: &[Option<Tensor>], values: &Tensor, accumulate: bool) -> Result<Tensor> {
    let out = copy_preserving(x, x.dtype())?;
    index_put_inplace_raw(&out, indices, values, accumulate)?;
    Ok(Tensor { version: VersionCounter::new(), ..out })
}

/// A copy of x in torch's preserve format (`clone()`, `.to(dtype)`).
fn copy_preserving(x: &Tensor, dtype: DType) -> crate::error::Result<Tensor> {
    let out = crate::ops::copy::empty_strided(&preserve_format(&x.layout), dtype)?;
    copy_kernel(&out, x);
    Ok(out)
}

/// Index values as int64 (torch's `.to(kLong)`, which keeps the layout).
fn to_long(t: &Tensor) -> Result<Tensor> {
    if t.dtype() == DType::Int64 {
        Ok(t.clone())
    } else {
        copy_preserving(t, DType::Int64)
    }
}

fn check_count(x: &Tensor, indices: &[Option<Tensor>]) -> Result<()> {
    if indices.len() > x.ndim() {
        return Err(Error::Index(format!(
            "too many indices for tensor of dimension {} (got {})",
            x.ndim(),
            indices.len()
        )));
    }
    Ok(())
}

/// torch's `AdvancedIndex` (built by `make_info`).
struct Info {
    /// x's layout, indexed dims moved to the front when they were not adjacent.
    src: Layout,
    /// Non-indexed dims before the indexed ones.
    before: usize,
    /// (size, stride) of each indexed dim, in order.
    indexed: Vec<(usize, isize)>,
    /// The broadcast shape of the index tensors; it replaces the indexed dims in the result.
    replacement: Vec<usize>,
    /// The int64 index tensors, broadcast to `replacement`.
    indices: Vec<Tensor>,
}

impl Info {
    fn new(x: &Tensor, indices: &[Option<Tensor>]) -> Result<Info> {
        for t in indices.iter().flatten() {
            if !matches!(t.dtype(), DType::Int64 | DType::Int32 | DType::Bool) {
                return Err(Error::Index("tensors used as indices must be long, int, byte or bool tensors".into()));
            }
        }
        let mut list = broadcast_indices(expand_masks(&x.layout, indices)?)?;
        let ndim = x.ndim();
        list.resize(ndim.max(list.len()), None);
        let mut src = x.layout.clone();
        if !adjacent(&list) {
            // Indexed dims first, in order, then the rest (torch's transposeToFront).
            // (Entries past x's dims are dropped here, as torch drops them.)
            let order: Vec<usize> =
                (0..ndim).filter(|&d| list[d].is_some()).chain((0..ndim).filter(|&d| list[d].is_none())).collect();
            src = src.permute(&order.iter().map(|&d| d as i64).collect::<Vec<_>>())?;
            list = order.iter().map(|&d| list[d].clone()).collect();
        }
        let before = list.iter().position(Option::is_some).unwrap_or(list.len());
        let mut indexed = Vec::new();
        let mut ints = Vec::new();
        for (d, t) in list.iter().enumerate() {
            if let Some(t) = t {
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
        Ok(Info { src, before, indexed, replacement, indices: ints })
    }

    fn result_shape(&self) -> Vec<usize> {
        let after = self.before + self.indexed.len();
        let mut s = self.src.shape[..self.before].to_vec();
        s.extend(&self.replacement);
        s.extend(&self.src.shape[after..]);
        s
    }

    /// x read as the result (stride 0 on the replacement dims): torch's `restride_src`.
    fn restrided(&self, shape: &[usize]) -> Operand {
        let after = self.before + self.indexed.len();
        let mut s = self.src.strides[..self.before].to_vec();
        s.extend(std::iter::repeat_n(0, self.replacement.len()));
        s.extend(&self.src.strides[after..]);
        Operand { shape: shape.to_vec(), strides: s }
    }

    /// Each index tensor reshaped to `[1]*before + replacement + [1]*after` (torch's
    /// `reshape_indexer`), as the iterator receives it.
    fn index_operands(&self, shape: &[usize]) -> Vec<Operand> {
        let mut view_shape = vec![1usize; self.before];
        view_shape.extend(&self.replacement);
        view_shape.resize(shape.len(), 1);
        self.indices
            .iter()
            .map(|t| {
                let strides = t.layout.view_strides(&view_shape).unwrap_or_else(|| contiguous_strides(&view_shape));
                Operand { shape: view_shape.clone(), strides }
            })
            .collect()
    }

    /// For each index position (row-major over `replacement`), the offset of the element it
    /// names relative to x's offset; raises torch's error for the first out-of-range index in
    /// torch's iteration order.
    fn source_offsets(&self, perm: &[usize]) -> Result<Vec<isize>> {
        let values: Vec<Vec<i64>> = self.indices.iter().map(|t| t.to_vec::<i64>()).collect::<Result<_>>()?;
        let in_range = |j: usize, v: i64| {
            let size = self.indexed[j].0 as i64;
            v >= -size && v < size
        };
        let all_ok = values.iter().enumerate().all(|(j, vs)| vs.iter().all(|&v| in_range(j, v)));
        if !all_ok {
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

    /// The error torch's kernel raises: positions in its iteration order, dims in order.
    fn first_out_of_range(&self, values: &[Vec<i64>], perm: &[usize]) -> Error {
        let r = self.replacement.len();
        let rm = contiguous_strides(&self.replacement);
        // Replacement dims from outermost to innermost as the iterator walks them.
        let order: Vec<usize> =
            perm.iter().rev().filter(|&&d| d >= self.before && d < self.before + r).map(|&d| d - self.before).collect();
        let mut coord = vec![0usize; r];
        loop {
            let p: isize = order.iter().map(|&d| coord[d] as isize * rm[d]).sum();
            for (j, vs) in values.iter().enumerate() {
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
fn expand_masks(x: &Layout, indices: &[Option<Tensor>]) -> Result<Vec<Option<Tensor>>> {
    let mut out: Vec<Option<Tensor>> = Vec::with_capacity(indices.len());
    for idx in indices {
        match idx {
            Some(mask) if mask.dtype() == DType::Bool => {
                check_mask(x, mask, out.len())?;
                let nz = nonzero(mask)?;
                for j in 0..mask.ndim() {
                    out.push(Some(nz.view_as_layout(nz.layout.select(1, j as i64)?)));
                }
            }
            other => out.push(other.clone()),
        }
    }
    Ok(out)
}

/// A mask must match the sizes of the dims it covers, starting at `first`.
fn check_mask(x: &Layout, mask: &Tensor, first: usize) -> Result<()> {
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
fn row_major_offsets(shape: &[usize], strides: &[isize]) -> Vec<isize> {
    let mut out = vec![0isize];
    for (&s, &st) in shape.iter().zip(strides) {
        out = out.iter().flat_map(|&o| (0..s as isize).map(move |i| o + i * st)).collect();
    }
    out
}

/// True when `from` broadcasts to `to` (torch's `is_expandable_to`).
fn expandable(from: &[usize], to: &[usize]) -> bool {
    from.len() <= to.len() && from.iter().rev().zip(to.iter().rev()).all(|(&f, &t)| f == t || f == 1)
}

/// torch's overlap test between a written tensor and one it reads: `full_ok` allows the very
/// same elements (masked_fill_'s mask, torch's partial check); index_put_ refuses them too.
fn check_no_overlap(dst: &Tensor, src: &Tensor, full_ok: bool) -> Result<()> {
    if full_ok {
        crate::ops::write::assert_no_partial_overlap(dst, src)
    } else {
        crate::ops::write::assert_no_overlap(dst, src)
    }
}

/// Whether index_put_ becomes masked_fill_ (torch's `canDispatchToMaskedFill`).
enum MaskFill {
    No,
    /// Every index was None (or there were none): torch fails on the missing mask.
    NoIndex,
    /// The mask, with trailing dims added so it broadcasts against x.
    Mask(Tensor),
}

fn masked_fill_mask(x: &Tensor, indices: &[Option<Tensor>]) -> Result<MaskFill> {
    let mut covered = 0usize;
    let mut mask: Option<Tensor> = None;
    for idx in indices {
        match idx {
            None => covered += 1,
            Some(t) if t.dtype() != DType::Bool || mask.is_some() => return Ok(MaskFill::No),
            Some(t) => {
                check_mask(&x.layout, t, covered)?;
                covered += t.ndim();
                mask = Some(t.clone());
            }
        }
    }
    let Some(mut m) = mask else { return Ok(MaskFill::NoIndex) };
    for _ in covered..x.ndim() {
        m = m.view_as_layout(m.layout.unsqueeze(m.ndim() as i64)?);
    }
    Ok(MaskFill::Mask(m))
}

/// The masked_fill_ branch of index_put_: the one value, converted with overflow checks.
fn masked_fill_write(x: &Tensor, mask: &Tensor, values: &Tensor) -> Result<()> {
    let v = checked_convert(values.item()?, x.dtype())?;
    check_no_overlap(x, mask, true)?;
    // A mask sharing x's memory is read from a copy (each element reads its own flag first,
    // so the result is the same).
    let mask = if mask.same_storage(x) { contiguous_copy(mask, DType::Bool)? } else { mask.clone() };
    masked_fill_raw(x, &mask, &Arg::Scalar(v), true).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::Scalar;

    fn arange(shape: &[usize]) -> Tensor {
        let n: usize = shape.iter().product();
        Tensor::from_vec((0..n).map(|v| v as f32).collect::<Vec<_>>(), shape).unwrap()
    }

    fn longs(v: &[i64]) -> Tensor {
        Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap()
    }

    #[test]
    fn adjacent_indices_replace_in_place() {
        let x = arange(&[2, 3, 4]);
        let r = index_raw(&x, &[None, Some(longs(&[2, 0])), Some(longs(&[1, 3]))]).unwrap();
        assert_eq!(r.shape(), &[2, 2]);
        assert_eq!(r.to_vec::<f32>().unwrap(), vec![9., 3., 21., 15.]);
    }

    #[test]
    fn separated_indices_go_first() {
        let x = arange(&[2, 3, 4]);
        let r = index_raw(&x, &[Some(longs(&[0, 1])), None, Some(longs(&[1, 0]))]).unwrap();
        assert_eq!(r.shape(), &[2, 3]);
        assert_eq!(r.to_vec::<f32>().unwrap(), vec![1., 5., 9., 12., 16., 20.]);
    }

    #[test]
    fn layout_follows_torch_iterator() {
        // x.transpose(0, 2)[[0, 1]] has strides (6, 1, 3) in torch.
        let x = arange(&[2, 3, 4]);
        let t = x.view_as_layout(x.layout.transpose(0, 2).unwrap());
        let r = index_raw(&t, &[Some(longs(&[0, 1]))]).unwrap();
        assert_eq!(r.strides(), &[6, 1, 3]);
        assert_eq!(r.to_vec::<f32>().unwrap(), vec![0., 12., 4., 16., 8., 20., 1., 13., 5., 17., 9., 21.]);
    }

    #[test]
    fn out_of_range_names_the_first_bad_index() {
        let x = arange(&[3, 4]);
        let e = index_raw(&x, &[Some(longs(&[1, 9, 7])), Some(longs(&[8, 2, 1]))]).unwrap_err();
        assert_eq!(e.to_string(), "index 8 is out of bounds for dimension 1 with size 4");
        let e = index_raw(&Tensor::zeros(&[0], DType::Float32).unwrap(), &[Some(longs(&[0]))]).unwrap_err();
        assert_eq!(e.to_string(), "index is out of bounds for dimension with size 0");
    }

    #[test]
    fn masks_and_shape_errors() {
        let x = arange(&[3, 4]);
        let m = Tensor::from_vec(vec![true, false, true], &[3]).unwrap();
        let r = index_raw(&x, &[Some(m)]).unwrap();
        assert_eq!(r.to_vec::<f32>().unwrap(), vec![0., 1., 2., 3., 8., 9., 10., 11.]);
        let bad = Tensor::from_vec(vec![true, false], &[2]).unwrap();
        let e = index_raw(&x, &[Some(bad)]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "The shape of the mask [2] at index 0 does not match the shape of the indexed tensor [3, 4] at index 0"
        );
        let e = index_raw(&x, &[Some(longs(&[0, 1])), Some(longs(&[0, 1, 2]))]).unwrap_err();
        assert_eq!(e.to_string(), "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]");
    }

    #[test]
    fn index_put_accumulates_in_order_and_bumps_once() {
        let x = Tensor::zeros(&[3], DType::Float32).unwrap();
        let v = Tensor::from_vec(vec![1f32, 2., 3.], &[3]).unwrap();
        index_put_inplace_raw(&x, &[Some(longs(&[0, 0, 2]))], &v, true).unwrap();
        assert_eq!(x.to_vec::<f32>().unwrap(), vec![3., 0., 3.]);
        assert_eq!(x.version(), 1);
        index_put_inplace_raw(&x, &[Some(longs(&[1, 1]))], &Tensor::from_vec(vec![5f32, 6.], &[2]).unwrap(), false).unwrap();
        assert_eq!(x.to_vec::<f32>().unwrap(), vec![3., 6., 3.]);
        let e = index_put_inplace_raw(&x, &[Some(longs(&[0]))], &longs(&[1]), false).unwrap_err();
        assert!(e.to_string().starts_with("Index put requires the source and destination dtypes match"));
        assert_eq!(x.version(), 2);
    }

    #[test]
    fn mask_write_uses_masked_fill_rules() {
        let x = Tensor::zeros(&[2, 2], DType::Int64).unwrap();
        let m = Tensor::from_vec(vec![true, false], &[2]).unwrap();
        index_put_inplace_raw(&x, &[Some(m.clone())], &Tensor::scalar(Scalar::Float(2.7), DType::Float32).unwrap(), false).unwrap();
        assert_eq!(x.to_vec::<i64>().unwrap(), vec![2, 2, 0, 0]);
        let e = index_put_inplace_raw(&x, &[Some(m)], &Tensor::scalar(Scalar::Float(1e30), DType::Float32).unwrap(), false).unwrap_err();
        assert_eq!(e.to_string(), "value cannot be converted to type int64_t without overflow");
    }

    #[test]
    fn overlapping_values_are_refused() {
        let x = arange(&[3, 4]);
        let row = x.view_as_layout(x.layout.select(0, 0).unwrap());
        let e = index_put_inplace_raw(&x, &[Some(longs(&[1]))], &row, false).unwrap_err();
        assert_eq!(e.to_string(), crate::ops::write::PARTIAL_OVERLAP);
    }
}

// ----- autograd: saves and backward formulas (derivatives.yaml) -----

use crate::autograd::Recorder;

/// Saves the index tensors (each under `indices`, as torch's `_saved_indices` list) and
/// returns which positions held one, to rebuild the list in the formula.
fn save_indices(rec: &mut Recorder, indices: &[Option<Tensor>]) -> Result<Vec<bool>> {
    for t in indices.iter().flatten() {
        rec.save("indices", t)?;
    }
    Ok(indices.iter().map(Option::is_some).collect())
}

/// The index list back from the saved tensors (they come first among `saved`).
fn saved_indices(saved: &[Tensor], present: &[bool]) -> Vec<Option<Tensor>> {
    let mut it = saved.iter();
    present.iter().map(|&p| if p { it.next().cloned() } else { None }).collect()
}

/// Sums a gradient to the shape of `values`, which broadcast to it (a one-element value of
/// any shape included: index_put_ then fills the mask with it).
fn sum_to_values(g: Tensor, shape: &[usize]) -> Result<Tensor> {
    if g.shape() == shape {
        return Ok(g);
    }
    if shape.len() > g.ndim() || shape.iter().product::<usize>() == 1 {
        let total = crate::ops::reduce::sum(&g, None, false, None)?;
        let sizes: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
        return crate::ops::views::reshape(&total, &sizes);
    }
    crate::autograd::formulas::sum_to(&g, shape)
}

/// IndexPutBackward0: self gets the gradient (with the written positions zeroed unless
/// accumulating), values get the gradient read at the indices, summed to their shape.
fn index_put_formula(ctx: &crate::autograd::node::Ctx, present: &[bool], accumulate: bool, values_shape: &[usize]) -> Result<Vec<Option<Tensor>>> {
    let g = ctx.grad();
    let indices = saved_indices(&ctx.saved, present);
    let gs = if !ctx.needs(0) {
        None
    } else if accumulate {
        Some(g.clone())
    } else {
        Some(index_put(g, &indices, &Tensor::zeros(&[], g.dtype())?, false)?)
    };
    let gv = if ctx.needs(1) { Some(sum_to_values(index(g, &indices)?, values_shape)?) } else { None };
    Ok(vec![gs, gv])
}

/// Differentiable `x[indices]` (IndexBackward0: saves the indices; the gradient is
/// accumulated into zeros shaped like x at the indexed positions).
pub fn index(x: &Tensor, indices: &[Option<Tensor>]) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(x)])?;
    let out = index_raw(x, indices)?;
    let Some(mut rec) = rec else { return Ok(out) };
    rec.value("self_sym_sizes", crate::ops::reduce::py_ints(x.shape()));
    let present = save_indices(&mut rec, indices)?;
    let shape = x.shape().to_vec();
    rec.finish("IndexBackward0", &[&out], Box::new(move |ctx| {
        let g = ctx.grad();
        let indices = saved_indices(&ctx.saved, &present);
        Ok(vec![Some(index_put(&Tensor::zeros(&shape, g.dtype())?, &indices, g, true)?)])
    }))?;
    Ok(out)
}

/// Differentiable `x.index_put_(indices, values, accumulate)` (IndexPutBackward0, in place).
pub fn index_put_(x: &Tensor, indices: &[Option<Tensor>], values: &Tensor, accumulate: bool) -> Result<()> {
    let _blame = crate::autograd::blame::op("index_put_");
    let rec = Recorder::inplace(x, &[Some(values)])?;
    index_put_inplace_raw(x, indices, values, accumulate)?;
    let Some(mut rec) = rec else { return Ok(()) };
    rec.value("accumulate", crate::ops::reduce::py_bool(accumulate));
    let present = save_indices(&mut rec, indices)?;
    let values_shape = values.shape().to_vec();
    rec.finish_inplace("IndexPutBackward0", x, Box::new(move |ctx| index_put_formula(ctx, &present, accumulate, &values_shape)))
}

/// Differentiable `x.index_put(indices, values, accumulate)` (IndexPutBackward0).
pub fn index_put(x: &Tensor, indices: &[Option<Tensor>], values: &Tensor, accumulate: bool) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(x), Some(values)])?;
    let out = index_put_raw(x, indices, values, accumulate)?;
    let Some(mut rec) = rec else { return Ok(out) };
    rec.value("accumulate", crate::ops::reduce::py_bool(accumulate));
    let present = save_indices(&mut rec, indices)?;
    let values_shape = values.shape().to_vec();
    rec.finish("IndexPutBackward0", &[&out], Box::new(move |ctx| index_put_formula(ctx, &present, accumulate, &values_shape)))?;
    Ok(out)
}

#[cfg(test)]
mod grad_tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    fn longs(v: &[i64]) -> Tensor {
        Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap()
    }

    #[test]
    fn index_accumulates_repeated_rows() {
        let x = leaf(vec![1., 2., 3., 4., 5., 6.], &[3, 2]);
        let out = index(&x, &[Some(longs(&[2, 0, 2]))]).unwrap();
        assert_eq!(node_name(&out), "IndexBackward0");
        backward(&out, Some(vals(vec![1., 2., 3., 4., 5., 6.], &[3, 2])));
        assert_eq!(grad(&x), vec![3., 4., 0., 0., 6., 8.]);
        // A mask on the second dim.
        let x = leaf(vec![1., 2., 3., 4.], &[2, 2]);
        let m = Tensor::from_vec(vec![false, true], &[2]).unwrap();
        let out = index(&x, &[None, Some(m)]).unwrap();
        backward(&out, Some(vals(vec![7., 8.], &[2, 1])));
        assert_eq!(grad(&x), vec![0., 7., 0., 8.]);
    }

    #[test]
    fn index_put_gradients() {
        let x = leaf(vec![1., 2., 3.], &[3]);
        let v = leaf(vec![5.], &[1]);
        let y = crate::ops::copy::clone(&x).unwrap();
        index_put_(&y, &[Some(longs(&[0, 2]))], &v, false).unwrap();
        assert_eq!(node_name(&y), "IndexPutBackward0");
        assert_eq!(y.to_vec::<f64>().unwrap(), vec![5., 2., 5.]);
        backward(&y, Some(vals(vec![1., 2., 3.], &[3])));
        assert_eq!(grad(&x), vec![0., 2., 0.]);
        assert_eq!(grad(&v), vec![4.]);

        let x = leaf(vec![1., 2., 3.], &[3]);
        let v = leaf(vec![5., 6.], &[2]);
        let out = index_put(&x, &[Some(longs(&[1, 1]))], &v, true).unwrap();
        assert_eq!(out.to_vec::<f64>().unwrap(), vec![1., 13., 3.]);
        backward(&out, Some(vals(vec![1., 2., 3.], &[3])));
        assert_eq!(grad(&x), vec![1., 2., 3.]);
        assert_eq!(grad(&v), vec![2., 2.]);
    }

    #[test]
    fn advanced_indexing_passes_gradcheck() {
        let i = longs(&[2, 0, 2]);
        let m = Tensor::from_vec(vec![true, false, true, true], &[4]).unwrap();
        let (i2, m2) = (i.clone(), m.clone());
        gradcheck("index", &move |t| index(&t[0], &[Some(i2.clone()), None, Some(longs(&[1, 1, 0]))]), &[rand_leaf(&[3, 2, 2], 1)], true);
        gradcheck("index mask", &move |t| index(&t[0], &[None, Some(m2.clone())]), &[rand_leaf(&[2, 4], 2)], true);
        let u = longs(&[2, 0]);
        let u2 = u.clone();
        gradcheck("index_put", &move |t| index_put(&t[0], &[Some(u2.clone())], &t[1], false), &[rand_leaf(&[3, 2], 3), rand_leaf(&[2], 4)], true);
        gradcheck("index_put acc", &move |t| index_put(&t[0], &[Some(i.clone())], &t[1], true), &[rand_leaf(&[3, 2], 5), rand_leaf(&[3, 2], 6)], true);
        gradcheck(
            "index_put_ mask",
            &move |t| {
                let y = crate::ops::copy::clone(&t[0])?;
                index_put_(&y, &[None, Some(m.clone())], &t[1], false)?;
                Ok(y)
            },
            &[rand_leaf(&[2, 4], 7), rand_leaf(&[1], 8)],
            true,
        );
    }
}
