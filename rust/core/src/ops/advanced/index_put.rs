//! `x.index_put_(indices, values, accumulate)` and `index_put`: one write through the write
//! path (a single-mask write of one value is masked_fill_, as in torch), and IndexPutBackward0.

use crate::autograd::Recorder;
use crate::dtype::DType;
use crate::error::{fmt_shape, Error, Result};
use crate::kernels::index::{Dim, Walk};
use crate::ops::binary::masked_fill_raw;
use crate::ops::copy::contiguous_copy;
use crate::ops::index::checked_convert;
use crate::ops::iter_layout::{iter_layout, Operand};
use crate::ops::write::{write, Alias};
use crate::ops::{broadcast_strides, Arg};
use crate::tensor::Tensor;
use crate::version::VersionCounter;
use super::{check_count, copy_preserving, index, save_indices, saved_indices, NO_INDEX_ASSERT};
use super::info::{check_mask, row_major_offsets, Info};

/// `x.index_put_(indices, values, accumulate)`: one write, one version bump.
pub fn index_put_inplace_raw(x: &Tensor, indices: &[Option<Tensor>], values: &Tensor, accumulate: bool) -> Result<()> {
    check_count(x, indices)?;
    // torch answers a single-mask write of one value held on the CPU with masked_fill_ (other
    // rules apply; torch's canDispatchToMaskedFill).
    if !accumulate && values.numel() == 1 && values.device().is_cpu() {
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
    if let Some((first, mask)) = super::mask_index::single_mask(indices) {
        return super::mask_index::put(x, first, mask, values, accumulate);
    }
    let info = Info::new(x, indices)?;
    let shape = info.result_shape();
    check_values(x, values, &shape)?;
    if info.indices.is_empty() {
        return Err(Error::Runtime(NO_INDEX_ASSERT.into()));
    }
    // torch's loop runs over x (restrided, as the output), the values and the indices.
    let mut operands = vec![info.restrided(&shape), Operand { shape: values.shape().to_vec(), strides: values.strides().to_vec() }];
    operands.extend(info.index_operands(&shape));
    let it = iter_layout(&shape, &operands);
    // Every index is checked before anything is written (torch may write a prefix first).
    // On a device only the integer indices are read here and the table is made there.
    let on_device = !x.device().is_cpu();
    let empty = shape.iter().product::<usize>() == 0;
    let targets = if empty {
        vec![]
    } else if on_device {
        info.check_integer_indices(&it.perm)?;
        vec![]
    } else {
        info.source_offsets(&it.perm)?
    };
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
        let after = info.before + info.indexed.len();
        for (i, d) in (info.before + r..shape.len()).enumerate() {
            w.inner.push(Dim { size: shape[d], a: info.src.strides[after + i], b: vs[d] });
        }
        let backend = crate::device::backend_for(&[x, &v])?;
        let repl_vs = &vs[info.before..info.before + r];
        if on_device && !empty && backend.index_scatter_table(x, &v, &w, &info.table(repl_vs, true), accumulate)? {
            return Ok(());
        }
        let targets = if on_device && !empty { info.source_offsets(&it.perm)? } else { targets.clone() };
        w.positions = targets.iter().copied().zip(row_major_offsets(&info.replacement, repl_vs)).collect();
        backend.index_scatter(x, &v, &w, accumulate)?;
        Ok(())
    })
}

/// `index_put` (out of place): a preserve-format clone of x, written, with a fresh counter.
pub fn index_put_raw(x: &Tensor, indices: &[Option<Tensor>], values: &Tensor, accumulate: bool) -> Result<Tensor> {
    let out = copy_preserving(x, x.dtype())?;
    index_put_inplace_raw(&out, indices, values, accumulate)?;
    Ok(Tensor { version: VersionCounter::new(), ..out })
}

/// torch's index_put_ checks on the values: they broadcast to the indexed result's `shape` and
/// have x's dtype.
pub(super) fn check_values(x: &Tensor, values: &Tensor, shape: &[usize]) -> Result<()> {
    if !expandable(values.shape(), shape) {
        return Err(Error::Runtime(format!(
            "shape mismatch: value tensor of shape {} cannot be broadcast to indexing result of shape {}",
            fmt_shape(values.shape()),
            fmt_shape(shape)
        )));
    }
    if values.dtype() != x.dtype() {
        return Err(Error::Runtime(format!(
            "Index put requires the source and destination dtypes match, got {} for the destination and {} for the source.",
            x.dtype().scalar_type_name(),
            values.dtype().scalar_type_name()
        )));
    }
    Ok(())
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
    // torch takes a CPU mask for a tensor on another device (indices may live on the CPU).
    let mask = crate::ops::copy::to_device_raw(&mask, x.device())?;
    masked_fill_raw(x, &mask, &Arg::Scalar(v), true).map(|_| ())
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
    crate::ops::formulas::sum_to(&g, shape)
}

/// IndexPutBackward0: self gets the gradient (with the written positions zeroed unless
/// accumulating), values get the gradient read at the indices, summed to their shape.
fn index_put_formula(ctx: &crate::autograd::Ctx, present: &[bool], accumulate: bool, values_shape: &[usize]) -> Result<Vec<Option<Tensor>>> {
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
mod tests {
    use super::*;
    use crate::dtype::Scalar;
    use crate::ops::advanced::test_util::{arange, longs};

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

#[cfg(test)]
mod grad_tests {
    use super::*;
    use crate::ops::advanced::test_util::longs;
    use crate::ops::reduce::testing::*;

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
}
