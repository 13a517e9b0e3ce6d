//! Gathering and scattering along a dim: `gather`, `scatter(_)`, `scatter_add(_)`,
//! `index_select`, `index_add(_)`, and through a flat view `take` and `put(_)` (`masked_select`
//! lives with the other mask ops in `mask.rs`).
//!
//! Every index is checked before anything is written, so a bad index raises torch's error
//! and leaves the destination untouched (torch may have written part of it by then). The
//! checks run in torch's order, because that order decides which message a mistake gets.
//!
//! This file holds the checks and kernel calls the ops share and how their nodes are recorded.
//! Each op sits with its adjoint, which is its backward: `gather_scatter.rs` (gather, scatter,
//! scatter_add), `index_select.rs` (index_select, index_add) and `take_put.rs`.

use crate::autograd::Formula;
use crate::device::backend_for;
use crate::autograd::Recorder;
use crate::dtype::{DType, Scalar};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::kernels::gather as kernel;
use crate::kernels::Arg;
use crate::layout::Layout;
use crate::ops::copy::{cast_input, contiguous_copy, contiguous_raw};
use crate::ops::write::check_no_internal_overlap;
use crate::shape::wrap_dim;
use crate::tensor::Tensor;

mod gather_scatter;
mod index_fill_copy;
mod index_select;
mod take_put;

pub use gather_scatter::{gather, gather_raw, scatter, scatter_add, scatter_add_raw, scatter_raw, Reduce, Source};
pub(crate) use gather_scatter::{gather_in_bounds, scatter_in_bounds};
pub use index_fill_copy::{index_copy, index_copy_raw, index_fill, index_fill_raw, FillValue};
pub use index_select::{index_add, index_add_raw, index_select, index_select_raw};
pub use take_put::{put, put_raw, take, take_raw};

fn is_index_dtype(t: &Tensor) -> bool {
    matches!(t.dtype(), DType::Int64 | DType::Int32)
}

/// torch's `ensure_nonempty_dim`/`_size`/strides: a 0-d tensor counts as 1-D of size 1.
fn ne_dim(t: &Tensor) -> usize {
    t.ndim().max(1)
}

/// `ensure_nonempty_size(t, d)`; `t.size(d)` raises for a dim `t` lacks, as in torch.
fn ne_size(t: &Tensor, d: usize) -> Result<usize> {
    if t.ndim() == 0 {
        return Ok(1);
    }
    Ok(t.shape()[wrap_dim(d as i64, t.ndim())?])
}

fn ne_layout(t: &Tensor) -> (Vec<usize>, Vec<isize>) {
    if t.ndim() == 0 {
        (vec![1], vec![1])
    } else {
        (t.shape().to_vec(), t.strides().to_vec())
    }
}

/// Index values as a contiguous int64 tensor (int32 indices are widened).
fn index_i64(index: &Tensor) -> crate::error::Result<Tensor> {
    contiguous_raw(&cast_input(index, DType::Int64)?)
}

/// The in-place checks torch makes on a written `self` before any index is looked at.
fn check_inplace(dst: &Tensor, reads: &[&Tensor]) -> Result<()> {
    check_no_internal_overlap(dst)?;
    reads.iter().try_for_each(|r| crate::ops::write::assert_no_overlap(dst, r))
}

/// A read operand the kernel may use while writing `dst`: a private copy when it shares
/// memory with `dst` at all (reads racing with writes would be unsound).
fn private(dst: &Tensor, read: &Tensor) -> crate::error::Result<Tensor> {
    if read.same_storage(dst) && read.numel() > 0 && dst.numel() > 0 {
        contiguous_copy(read, read.dtype())
    } else {
        Ok(read.clone())
    }
}

/// The first index (in order) outside `[0, size)`.
fn first_bad(idx: &[i64], size: usize) -> Option<i64> {
    idx.iter().copied().find(|&v| v < 0 || v as u64 >= size as u64)
}

fn out_of_bounds(v: i64, dim: usize, size: usize) -> Error {
    Error::Runtime(format!("index {} is out of bounds for dimension {} with size {}", v, dim, size))
}

/// The destination of an op with an in-place variant: `x` itself, or a contiguous copy of it.
fn destination(x: &Tensor, in_place: bool) -> crate::error::Result<Tensor> {
    if in_place {
        Ok(x.clone())
    } else {
        contiguous_copy(x, x.dtype())
    }
}

/// How `Backend::scatter` combines a destination element with an incoming one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScatterOp {
    /// `dst = src` (scatter).
    Assign,
    /// `dst += src` (scatter_add, scatter(reduce="add")).
    Add,
    /// `dst *= src` (scatter(reduce="multiply")).
    Multiply,
    /// `dst += alpha * src` (index_add).
    AddScaled(Scalar),
}

/// `t`'s memory seen with another shape and strides (same offset): a kernel operand, not a
/// user-visible view (it shares `t`'s autograd metadata).
fn relaid(t: &Tensor, shape: Vec<usize>, strides: Vec<isize>) -> Tensor {
    Tensor { layout: Layout { shape: shape.into(), strides: strides.into(), offset: t.layout.offset }, ..t.clone() }
}

/// A 0-d operand as torch's gather kernels see it: 1-D of size 1.
fn ne_view(t: &Tensor) -> Tensor {
    let (shape, strides) = ne_layout(t);
    relaid(t, shape, strides)
}

/// `out[pos] = x[pos with dim := idx[pos]]`, over `out`'s shape, on the operands' device.
/// `along_dim` reads a 1-D index along `dim` only (index_select); otherwise `idx` has `out`'s
/// shape.
fn run_gather(out: &Tensor, x: &Tensor, d: usize, idx: &Tensor, along_dim: bool) -> Result<()> {
    let backend = backend_for(&[out, x, idx])?;
    let (out, x) = (ne_view(out), ne_view(x));
    let idx = if along_dim { relaid(idx, out.shape().to_vec(), unit_along(out.ndim(), d)) } else { ne_view(idx) };
    backend.gather(&out, &x, d, &idx)
}

/// The CPU side of `Backend::gather` (its contract there).
pub(crate) fn gather_cpu_kernel(dst: &Tensor, src: &Tensor, d: usize, index: &Tensor) {
    let mut x_strides = src.strides().to_vec();
    let x_dim_stride = x_strides[d];
    x_strides[d] = 0;
    crate::dispatch_all!(src.dtype(), T => {
        // SAFETY: indices were checked against src's size along d and the other dims of the
        // iteration are no larger than src's; dst is fresh memory shared with no input.
        unsafe {
            kernel::gather::<T>(
                dst.shape(),
                Arg { base: dst.base_ptr::<T>(), strides: dst.strides(), offset: dst.layout.offset },
                Arg { base: index.base_ptr::<i64>(), strides: index.strides(), offset: index.layout.offset },
                Arg { base: src.base_ptr::<T>(), strides: &x_strides, offset: src.layout.offset },
                x_dim_stride,
            )
        }
    });
}

/// Strides that read a 1-D contiguous index along `dim` of an `ndim`-D iteration.
fn unit_along(ndim: usize, dim: usize) -> Vec<isize> {
    let mut s = vec![0isize; ndim];
    s[dim] = 1;
    s
}

/// Scatters `src` into `dst` along `d` over `shape` (the index's iteration shape, read through
/// `ix_strides` / `src_strides`), combined as `reduce` (and `alpha`, for index_add, which scales
/// each source element first), on the operands' device.
#[allow(clippy::too_many_arguments)]
fn run_scatter(dst: &Tensor, d: usize, shape: &[usize], idx: &Tensor, ix_strides: &[isize], src: &Tensor, src_strides: &[isize], reduce: Option<Reduce>, alpha: Option<Scalar>) -> Result<()> {
    let backend = backend_for(&[dst, idx, src])?;
    let op = match (reduce, alpha) {
        (None, _) => ScatterOp::Assign,
        (Some(Reduce::Add), None) => ScatterOp::Add,
        (Some(Reduce::Add), Some(a)) => ScatterOp::AddScaled(a),
        (Some(Reduce::Multiply), _) => ScatterOp::Multiply,
    };
    let idx = relaid(idx, shape.to_vec(), ix_strides.to_vec());
    let src = relaid(src, shape.to_vec(), src_strides.to_vec());
    backend.scatter(&ne_view(dst), d, &idx, &src, op)
}

/// The CPU side of `Backend::scatter` (its contract there).
pub(crate) fn scatter_cpu_kernel(dst: &Tensor, d: usize, idx: &Tensor, src: &Tensor, op: ScatterOp) {
    let mut dst_strides = dst.strides().to_vec();
    let dst_dim_stride = dst_strides[d];
    dst_strides[d] = 0;
    let shape = idx.shape();
    macro_rules! go {
        ($T:ty, $f:expr) => {
            // SAFETY: indices were checked against dst's size along d; every other dim of the
            // iteration is no larger than dst's and src's; reads are private (no overlap with
            // dst) and dst has no internal overlap (fresh, or checked by the write path).
            unsafe {
                kernel::scatter::<$T>(
                    shape,
                    d,
                    Arg { base: dst.base_ptr::<$T>(), strides: &dst_strides, offset: dst.layout.offset },
                    dst_dim_stride,
                    Arg { base: idx.base_ptr::<i64>(), strides: idx.strides(), offset: idx.layout.offset },
                    Arg { base: src.base_ptr::<$T>(), strides: src.strides(), offset: src.layout.offset },
                    $f,
                )
            }
        };
    }
    macro_rules! numeric {
        ($T:ty, $add:expr, $mul:expr) => {{
            match op {
                ScatterOp::Assign => go!($T, |_, s| s),
                ScatterOp::Add => go!($T, move |o, s| $add(o, s)),
                ScatterOp::AddScaled(alpha) => {
                    let a: $T = <$T>::from_scalar(alpha);
                    go!($T, move |o, s| $add(o, $mul(s, a)))
                }
                ScatterOp::Multiply => go!($T, move |o, s| $mul(o, s)),
            }
        }};
    }
    match dst.dtype() {
        DType::Float32 => numeric!(f32, |x: f32, y: f32| x + y, |x: f32, y: f32| x * y),
        DType::Float64 => numeric!(f64, |x: f64, y: f64| x + y, |x: f64, y: f64| x * y),
        DType::Int64 => numeric!(i64, i64::wrapping_add, i64::wrapping_mul),
        DType::Int32 => numeric!(i32, i32::wrapping_add, i32::wrapping_mul),
        // torch's bool arithmetic: + is or, * is and.
        DType::Bool => numeric!(bool, |x: bool, y: bool| x | y, |x: bool, y: bool| x & y),
        // narrow dtypes: each step rounds (or wraps) into the storage type, as torch's kernel
        DType::UInt8 => numeric!(u8, u8::wrapping_add, u8::wrapping_mul),
        DType::Int8 => numeric!(i8, i8::wrapping_add, i8::wrapping_mul),
        DType::Int16 => numeric!(i16, i16::wrapping_add, i16::wrapping_mul),
        DType::Float16 => {
            use crate::element::f16;
            numeric!(f16, |x: f16, y: f16| f16::from_f32(x.to_f32() + y.to_f32()), |x: f16, y: f16| f16::from_f32(x.to_f32() * y.to_f32()))
        }
        DType::BFloat16 => {
            use crate::element::bf16;
            numeric!(bf16, |x: bf16, y: bf16| bf16::from_f32(x.to_f32() + y.to_f32()), |x: bf16, y: bf16| bf16::from_f32(x.to_f32() * y.to_f32()))
        }
    }
}

const ZERO: Scalar = Scalar::Float(0.0);

/// Records an out-of-place op, or finishes an in-place one (`rec` came from
/// `Recorder::inplace` before the write).
fn finish(rec: Recorder, name: &'static str, out: &Tensor, in_place: bool, formula: Formula) -> Result<()> {
    if in_place {
        rec.finish_inplace(name, out, formula)
    } else {
        rec.finish(name, &[out], formula)?;
        Ok(())
    }
}

/// The recorder for an op with an in-place variant (in place: torch's checks run first).
fn recorder(x: &Tensor, operands: &[Option<&Tensor>], in_place: bool) -> Result<Option<Recorder>> {
    if in_place {
        Recorder::inplace(x, operands)
    } else {
        let mut all = vec![Some(x)];
        all.extend_from_slice(operands);
        Recorder::new(&all)
    }
}

/// Builders shared by the tests of the gather files.
#[cfg(test)]
mod test_util {
    use super::*;

    pub(super) fn ar(n: usize, shape: &[usize]) -> Tensor {
        Tensor::from_vec((0..n).map(|v| v as f32).collect::<Vec<_>>(), shape).unwrap()
    }
    pub(super) fn ix(v: Vec<i64>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape).unwrap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use super::test_util::*;
    use crate::ops::views;

    #[test]
    fn gather_and_index_select_read_the_named_positions() {
        let x = ar(12, &[3, 4]);
        let g = gather_raw(&x, 1, &ix(vec![0, 1, 2, 0], &[2, 2])).unwrap();
        assert_eq!(g.to_vec::<f32>().unwrap(), vec![0., 1., 6., 4.]);
        let xt = views::t_raw(&x).unwrap(); // [4,3], strides (1,4)
        let s = index_select_raw(&xt, 0, &ix(vec![3, 0], &[2])).unwrap();
        assert_eq!(s.to_vec::<f32>().unwrap(), vec![3., 7., 11., 0., 4., 8.]);
        let e = index_select_raw(&x, 0, &ix(vec![3], &[1])).unwrap_err();
        assert_eq!((matches!(e, Error::Index(_)), e.to_string()), (true, "index out of range in self".into()));
        let e = gather_raw(&x, 1, &ix(vec![4], &[1, 1])).unwrap_err();
        assert_eq!(e.to_string(), "index 4 is out of bounds for dimension 1 with size 4");
    }
}

#[cfg(test)]
mod grad_tests {
    use super::*;
    use super::test_util::ix;
    use crate::ops::reduce::testing::*;

    #[test]
    fn in_place_variants_rebase_history() {
        let x = leaf(vec![1., 2., 3.], &[3]);
        let y = crate::ops::copy::clone(&x).unwrap();
        let src = leaf(vec![10., 20.], &[2]);
        let v0 = y.version();
        index_add(&y, 0, &ix(vec![2, 2], &[2]), &src, Scalar::Float(2.0), true).unwrap();
        assert_eq!(y.version(), v0 + 1);
        assert_eq!(node_name(&y), "IndexAddBackward0");
        assert_eq!(y.to_vec::<f64>().unwrap(), vec![1., 2., 63.]);
        backward(&y, Some(vals(vec![1., 2., 3.], &[3])));
        assert_eq!(grad(&x), vec![1., 2., 3.]);
        assert_eq!(grad(&src), vec![6., 6.]);

        let y = crate::ops::copy::clone(&x).unwrap();
        scatter_add(&y, 0, &ix(vec![0, 0], &[2]), &src, true).unwrap();
        assert_eq!(node_name(&y), "ScatterAddBackward0");
        // A leaf that requires grad cannot be written in place.
        let e = scatter(&x, 0, &ix(vec![0], &[1]), &Source::Value(ZERO), None, true).unwrap_err();
        assert_eq!(e.to_string(), "a leaf Variable that requires grad is being used in an in-place operation.");
    }

    #[test]
    fn gathers_pass_gradcheck() {
        let index = ix(vec![2, 0, 1, 1, 0, 3], &[2, 3]);
        let i2 = index.clone();
        gradcheck("gather", &move |t| gather(&t[0], 1, &i2), &[rand_leaf(&[2, 4], 1)], true);
        // Distinct positions per row (a repeated scatter position has no true derivative).
        let uniq = ix(vec![2, 0, 1, 3, 1, 0], &[2, 3]);
        let u = uniq.clone();
        gradcheck("scatter", &move |t| scatter(&t[0], 1, &u, &Source::Tensor(t[1].clone()), None, false), &[rand_leaf(&[2, 4], 2), rand_leaf(&[2, 3], 3)], true);
        let u = uniq.clone();
        gradcheck("scatter value", &move |t| scatter(&t[0], 1, &u, &Source::Value(Scalar::Float(0.5)), None, false), &[rand_leaf(&[2, 4], 4)], true);
        let u = uniq.clone();
        gradcheck(
            "scatter_",
            &move |t| {
                let y = crate::ops::copy::clone(&t[0])?;
                scatter(&y, 1, &u, &Source::Tensor(t[1].clone()), None, true)?;
                Ok(y)
            },
            &[rand_leaf(&[2, 4], 5), rand_leaf(&[2, 3], 6)],
            true,
        );
        let i2 = index.clone();
        gradcheck("scatter_add", &move |t| scatter_add(&t[0], 1, &i2, &t[1], false), &[rand_leaf(&[2, 4], 7), rand_leaf(&[2, 3], 8)], true);
        let sel = ix(vec![3, 0, 3], &[3]);
        let s2 = sel.clone();
        gradcheck("index_select", &move |t| index_select(&t[0], 1, &s2), &[rand_leaf(&[2, 4], 9)], true);
        let s2 = sel.clone();
        gradcheck("index_add", &move |t| index_add(&t[0], 1, &s2, &t[1], Scalar::Float(2.5), false), &[rand_leaf(&[2, 4], 10), rand_leaf(&[2, 3], 11)], true);
        let s2 = sel.clone();
        gradcheck(
            "index_add_",
            &move |t| {
                let y = crate::ops::copy::clone(&t[0])?;
                index_add(&y, 0, &ix(vec![1, 1], &[2]), &t[1], Scalar::Int(1), true)?;
                let _ = &s2;
                Ok(y)
            },
            &[rand_leaf(&[2, 4], 12), rand_leaf(&[2, 4], 13)],
            true,
        );
    }
}
