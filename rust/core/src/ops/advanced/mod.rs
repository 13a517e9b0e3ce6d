//! Advanced indexing (torch's `index` and `index_put_`): integer and bool tensors as indices.
//!
//! Following torch's `make_info`/`AdvancedIndex`: masks become their `nonzero()` columns, the
//! index tensors broadcast together, and when they are not adjacent the indexed dims move to the
//! front. The result replaces the indexed dims by the broadcast index shape. Reading copies
//! (a gather into a fresh tensor); writing scatters through the one write path.
//!
//! This file holds what both directions share; `info.rs` builds the `AdvancedIndex` (masks,
//! broadcasting, where the indexed dims go, bounds checks), `index.rs` reads (`index`,
//! IndexBackward0) and `index_put.rs` writes (`index_put_` / `index_put`, IndexPutBackward0).

use crate::autograd::Recorder;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::copy::copy_kernel;
use crate::kernels::index::Walk;
use crate::ops::iter_layout::preserve_format;
use crate::tensor::Tensor;

mod index;
mod index_put;
mod info;
mod mask_index;

pub use index::{index, index_raw};
pub use index_put::{index_put, index_put_, index_put_inplace_raw, index_put_raw};
pub(crate) use mask_index::{mask_ranks_cpu_kernel, masked_put_cpu_kernel, masked_take_cpu_kernel};

/// What torch 2.13 raises when index_put_ runs with no index tensor at all.
const NO_INDEX_ASSERT: &str = "ntensor >= 3 INTERNAL ASSERT FAILED at \"/__w/pytorch/pytorch/aten/src/ATen/native/cpu/IndexKernelUtils.h\":8, please report a bug to PyTorch. ";

/// A copy of x in torch's preserve format (`clone()`, `.to(dtype)`).
fn copy_preserving(x: &Tensor, dtype: DType) -> crate::error::Result<Tensor> {
    let out = crate::ops::copy::empty_strided(&preserve_format(&x.layout), dtype, x.device())?;
    copy_kernel(&out, x)?;
    Ok(out)
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

/// The CPU side of `Backend::index_gather` (its contract there).
pub(crate) fn index_gather_cpu_kernel(dst: &Tensor, src: &Tensor, w: &Walk) {
    crate::dispatch_all!(src.dtype(), T => {
        // SAFETY: `dst` is fresh with non-overlapping strides; every source offset comes from
        // src's own layout with bounds-checked index values, so it lies inside src's storage;
        // dst and src do not share memory.
        unsafe { crate::kernels::index::gather::<T>(w, dst.base_ptr::<T>(), src.base_ptr::<T>()) }
    });
}

/// The CPU side of `Backend::index_scatter` (its contract there).
pub(crate) fn index_scatter_cpu_kernel(dst: &Tensor, values: &Tensor, w: &Walk, accumulate: bool) {
    crate::dispatch_all!(dst.dtype(), T => {
        // SAFETY: destination offsets come from dst's layout with bounds-checked indices; dst
        // has no internal overlap (checked by `write`), so outer elements own disjoint memory;
        // values do not overlap dst (checked by the op, or a private copy).
        unsafe { crate::kernels::index::scatter::<T>(w, dst.base_ptr::<T>(), values.base_ptr::<T>(), accumulate) }
    });
}

// ----- autograd: saves and backward formulas (derivatives.yaml) -----

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

/// Builders shared by the tests of the advanced-indexing files.
#[cfg(test)]
mod test_util {
    use super::*;

    pub(super) fn arange(shape: &[usize]) -> Tensor {
        let n: usize = shape.iter().product();
        Tensor::from_vec((0..n).map(|v| v as f32).collect::<Vec<_>>(), shape).unwrap()
    }

    pub(super) fn longs(v: &[i64]) -> Tensor {
        Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap()
    }
}

#[cfg(test)]
mod grad_tests {
    use super::*;
    use super::test_util::longs;
    use crate::ops::reduce::testing::*;

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
