//! `x[indices]` (torch's `index`): a gather into a fresh tensor laid out as torch's
//! TensorIterator lays it out, and IndexBackward0 (saves the indices; the gradient is
//! accumulated into zeros at the indexed positions).

use crate::autograd::Recorder;
use crate::error::{Error, Result};
use crate::kernels::index::{Dim, Walk};
use crate::layout::Layout;
use crate::ops::copy::empty_with_layout;
use crate::ops::iter_layout::iter_layout;
use crate::tensor::Tensor;
use super::{check_count, index_put, save_indices, saved_indices, NO_INDEX_ASSERT};
use super::info::{check_mask, row_major_offsets, Info};
use crate::dtype::DType;

/// `x[indices]` (torch's `index`): `None` entries leave their dim alone.
pub fn index_raw(x: &Tensor, indices: &[Option<Tensor>]) -> Result<Tensor> {
    check_count(x, indices)?;
    if let Some(out) = leading_mask(x, indices)? {
        return Ok(out);
    }
    if let Some((first, mask)) = super::mask_index::single_mask(indices) {
        return super::mask_index::take(x, first, mask);
    }
    let info = Info::new(x, indices)?;
    if info.indices.is_empty() {
        return Err(Error::Runtime(NO_INDEX_ASSERT.into()));
    }
    let shape = info.result_shape();
    // The output is allocated by torch's TensorIterator from x (restrided) and the indices.
    let mut operands = vec![info.restrided(&shape)];
    operands.extend(info.index_operands(&shape));
    let it = iter_layout(&shape, &operands);
    let out = empty_with_layout(&Layout { strides: it.strides.into(), shape: shape[..].into(), offset: 0 }, x.dtype(), x.device())?;
    if out.numel() == 0 {
        return Ok(out);
    }
    let r = info.replacement.len();
    let mut w = Walk { a_offset: 0, b_offset: info.src.offset as isize, ..Default::default() };
    for (d, &size) in shape[..info.before].iter().enumerate() {
        w.outer.push(Dim { size, a: out.strides()[d], b: info.src.strides[d] });
    }
    let repl_out = &out.strides()[info.before..info.before + r];
    let after = info.before + info.indexed.len();
    for (i, d) in (info.before + r..shape.len()).enumerate() {
        w.inner.push(Dim { size: shape[d], a: out.strides()[d], b: info.src.strides[after + i] });
    }
    let backend = crate::device::backend_for(&[&out, x])?;
    if !x.device().is_cpu() {
        // only the integer indices are read here (torch's errors); the table is made on the device
        info.check_integer_indices(&it.perm)?;
        if backend.index_gather_table(&out, x, &w, &info.table(repl_out, false))? {
            return Ok(out);
        }
    }
    let targets = info.source_offsets(&it.perm)?;
    w.positions = row_major_offsets(&info.replacement, repl_out).into_iter().zip(targets).collect();
    backend.index_gather(&out, x, &w)?;
    Ok(out)
}

/// `x[mask]` with one bool mask over x's leading dims, x contiguous (or the mask covering every
/// dim): the kept elements in row-major order are exactly the picked rows, so the result is
/// `masked_select` of x with the mask broadcast over the trailing dims, seen as
/// `(n, *trailing)` -- torch's layout for these cases (contiguous). No index value is read on
/// the host: on a device the compaction runs there and only the count comes back. `None` when
/// the general path applies (its checks and errors are the same for these indices).
fn leading_mask(x: &Tensor, indices: &[Option<Tensor>]) -> Result<Option<Tensor>> {
    let [Some(mask)] = indices else { return Ok(None) };
    let k = mask.ndim();
    if mask.dtype() != DType::Bool || k == 0 || k > x.ndim() {
        return Ok(None);
    }
    let trailing = x.shape()[k..].to_vec();
    if trailing.contains(&0) || (!trailing.is_empty() && !x.is_contiguous()) {
        return Ok(None);
    }
    check_mask(&x.layout, mask, 0)?;
    // torch takes a CPU mask for a tensor on another device: it moves (as in Info::new)
    let mask = crate::ops::copy::to_device_raw(mask, x.device())?;
    let mut layout = mask.layout.clone();
    layout.shape.extend_from_slice(&trailing);
    layout.strides.extend(trailing.iter().map(|_| 0isize));
    let flat = crate::ops::mask::masked_select_raw(x, &mask.view_as_layout(layout))?;
    if flat.numel() == 0 {
        // Nothing picked: torch's empty result keeps the general path's strides (0 for the
        // size-1 dims after the picked one: (0, 1, 2) from (1, 1, 2) has strides (2, 0, 1)).
        return Ok(None);
    }
    let inner: usize = trailing.iter().product();
    let mut shape = vec![flat.numel() / inner];
    shape.extend_from_slice(&trailing);
    let strides = crate::shape::contiguous_strides(&shape);
    Ok(Some(Tensor { layout: Layout { shape: shape.into(), strides: strides.into(), offset: 0 }, ..flat }))
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
        Ok(vec![Some(index_put(&crate::ops::formulas::zeros(&shape, g.dtype(), g.device())?, &indices, g, true)?)])
    }))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::ops::advanced::test_util::{arange, longs};

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
}

#[cfg(test)]
mod grad_tests {
    use super::*;
    use crate::ops::advanced::test_util::longs;
    use crate::ops::reduce::testing::*;

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
}
