//! Sorting and selection along a dim: `sort` (and `argsort`), `topk`, `kthvalue`, `median`,
//! with SortBackward0, TopkBackward0, KthvalueBackward0, MedianBackward0 (of all elements:
//! ties share the gradient) and MedianBackward1 (along a dim).
//!
//! Checks come in torch's order (dim, empty reduction dim, k, dtype). Which index a tie returns
//! is torch's (see `kernels::sort`). Outputs are row-major, except sort's, which keep the
//! input's dense strides as torch's do. The element work crosses the device seam as one
//! `Backend::sort` call with a `SortOp` (in `run_rows`); the CPU's loops are `kernels::sort`
//! (`cpu_kernel` below), the GPU's `sort.cu` beside this file.

use crate::ops::formulas as fm;
use crate::autograd::Recorder;
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::kernels::sort::{kthvalue_rows, median_all_rows, median_rows, sort_rows, topk_rows, SortMethod};
use crate::ops::binary::BinaryOp;
use crate::ops::copy::{contiguous_copy, contiguous_raw, copy_kernel, empty_strided, preserved_layout, to_device_raw, to_dtype_raw};
use crate::ops::lanes::{from_rows, read, rows_of, rows_shape, write};
use crate::ops::reduce::{py_bool, py_ints, sum_raw};
use crate::ops::views;
use crate::shape::wrap_dim;
use crate::tensor::Tensor;

/// torch's `internal::GRAIN_SIZE`: an ascending `stable=False` sort of a 1-d integer tensor at
/// least this long is a radix sort in torch, which is stable.
const RADIX_MIN: usize = 32768;

fn size_along(x: &Tensor, dim: usize) -> usize {
    if x.ndim() == 0 { 1 } else { x.shape()[dim] }
}

/// The shape of a reduction along `dim` (kept as 1 with `keepdim`).
fn reduced(shape: &[usize], dim: usize, keepdim: bool) -> Vec<usize> {
    let mut s = shape.to_vec();
    if !s.is_empty() {
        if keepdim { s[dim] = 1 } else { s.remove(dim); }
    }
    s
}

/// torch's zero_numel_check_dims: reducing along an empty dim has no answer.
fn check_nonempty_dim(x: &Tensor, dim: usize, name: &str) -> Result<()> {
    if x.ndim() > 0 && x.shape()[dim] == 0 {
        return Err(Error::Index(format!("{}(): Expected reduction dim {} to have non-zero size.", name, dim)));
    }
    Ok(())
}

fn not_for_bool(kernel: &str) -> Error {
    Error::NotImplemented(format!("\"{}\" not implemented for 'Bool'", kernel))
}

/// A 0-d input: the value itself and index 0.
fn scalar_pick(x: &Tensor) -> Result<(Tensor, Tensor)> {
    Ok((contiguous_copy(x, x.dtype())?, Tensor::zeros_on(&[], DType::Int64, x.device())?))
}

/// `t` in a fresh tensor with `layout` (the layout of a new tensor like the input).
fn laid_out(t: Tensor, layout: &crate::layout::Layout) -> Result<Tensor> {
    if t.layout.strides == layout.strides {
        return Ok(t);
    }
    let out = empty_strided(layout, t.dtype(), t.device())?;
    copy_kernel(&out, &t)?;
    Ok(out)
}

/// What one `Backend::sort` call computes for every row of a contiguous `[rows, n]` operand
/// (`n >= 1`), into fresh contiguous `[rows, width]` values (the operand's dtype) and int64
/// indices (positions in the row). Ties and NaN placement are the CPU's (`kernels::sort`), on
/// every device: NaN ranks above every number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortOp {
    /// The whole row in order (`width = n`); `stable` keeps equal values in index order, else
    /// ties come out as libstdc++'s `std::sort` leaves them (torch's CPU `stable=False`).
    Sort { descending: bool, stable: bool },
    /// The `k` largest (or smallest) as torch's CPU topk finds them (`width = k`, `1 <= k <= n`).
    Topk { k: usize, largest: bool, sorted: bool },
    /// The `k`-th smallest (1-based) as ATen's quickselect picks it (`width = 1`).
    Kthvalue { k: usize },
    /// The lower median, ties by index, or the first NaN of a row that has one (`width = 1`).
    Median,
    /// `median()`'s pick (`width = 1`): the first NaN, else the element libstdc++'s
    /// `nth_element` leaves at `(n - 1) / 2` (it decides between -0.0 and 0.0, as in torch).
    MedianAll,
}

impl SortOp {
    /// torch's op name (for the NotImplementedError of a device without the kernel).
    pub fn name(self) -> &'static str {
        match self {
            SortOp::Sort { stable: true, .. } => "sort.stable",
            SortOp::Sort { .. } => "sort",
            SortOp::Topk { .. } => "topk",
            SortOp::Kthvalue { .. } => "kthvalue",
            SortOp::Median | SortOp::MedianAll => "median",
        }
    }
}

/// The CPU backend's `sort`: `kernels::sort` on the rows (`src`, `values` and `indices` are
/// contiguous CPU tensors of a wide dtype, as `Backend::sort` promises).
pub fn cpu_kernel(op: SortOp, values: &Tensor, indices: &Tensor, src: &Tensor) -> Result<()> {
    let n = src.shape().last().copied().unwrap_or(1);
    crate::dispatch!(src.dtype(), T => {
        // SAFETY: `src` is contiguous and only read; `values` and `indices` are fresh and
        // contiguous, `width` elements per row of `src`, and nobody else sees them yet.
        let (x, v, i) = unsafe { (read::<T>(src), write::<T>(values), write::<i64>(indices)) };
        match op {
            SortOp::Sort { descending, stable } => {
                let method = if stable { SortMethod::Stable } else { SortMethod::Introsort };
                sort_rows::<T>(x, n, descending, method, v, i)
            }
            SortOp::Topk { k, largest, sorted } => topk_rows::<T>(x, n, k, largest, sorted, v, i),
            SortOp::Kthvalue { k } => kthvalue_rows::<T>(x, n, k, v, i),
            SortOp::Median => median_rows::<T>(x, n, v, i),
            SortOp::MedianAll => median_all_rows::<T>(x, n, v, i),
        }
    });
    Ok(())
}

/// Runs `op` over the rows of `x` along `dim` on x's device: `width` results per row.
fn run_rows(x: &Tensor, dim: usize, width: usize, op: SortOp) -> Result<(Tensor, Tensor)> {
    let rows = rows_of(x, dim)?;
    let shape = rows_shape(x.shape(), dim, width);
    let (v, i) = (Tensor::empty_on(&shape, x.dtype(), x.device())?, Tensor::empty_on(&shape, DType::Int64, x.device())?);
    crate::device::backend_for(&[&rows])?.sort(op, &v, &i, &rows)?;
    Ok((from_rows(&v, x.ndim(), dim)?, from_rows(&i, x.ndim(), dim)?))
}

// ----- sort -----

/// `sort(dim, descending, stable)` without autograd: (values, indices).
pub fn sort_raw(x: &Tensor, dim: i64, descending: bool, stable: bool) -> Result<(Tensor, Tensor)> {
    let d = wrap_dim(dim, x.ndim())?;
    if x.ndim() == 0 {
        return scalar_pick(x);
    }
    let layout = preserved_layout(x);
    if x.numel() == 0 {
        return Ok((empty_strided(&layout, x.dtype(), x.device())?, empty_strided(&layout, DType::Int64, x.device())?));
    }
    let radix = x.ndim() == 1 && x.numel() >= RADIX_MIN && x.dtype().is_integral(false) && !descending;
    let n = x.shape()[d];
    let (v, i) = run_rows(x, d, n, SortOp::Sort { descending, stable: stable || radix })?;
    Ok((laid_out(v, &layout)?, laid_out(i, &layout)?))
}

/// torch's value_selecting_reduction_backward: the gradient goes to the selected positions.
fn value_selecting_backward(g: &Tensor, dim: usize, indices: &Tensor, shape: &[usize], keepdim: bool) -> Result<Tensor> {
    if shape.is_empty() {
        return Ok(g.clone());
    }
    let (g, idx) = if keepdim {
        (g.clone(), indices.clone())
    } else {
        (views::unsqueeze(g, dim as i64)?, views::unsqueeze_raw(indices, dim as i64)?)
    };
    let z = fm::zeros(shape, g.dtype(), g.device())?;
    crate::ops::gather::scatter(&z, dim as i64, &idx, &crate::ops::gather::Source::Tensor(g), None, false)
}

/// Records a (values, indices) op whose backward routes the gradient to the indices.
fn record_selection(name: &'static str, x: &Tensor, values: &Tensor, indices: &Tensor, dim: i64, keepdim: Option<bool>) -> Result<()> {
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok(()) };
    rec.value("dim", dim);
    if let Some(k) = keepdim {
        rec.value("keepdim", py_bool(k));
    }
    rec.value("self_sym_sizes", py_ints(x.shape()));
    // indices have no grad_fn: saved like an input, so torch's version message names no node
    rec.save("indices", indices)?;
    let (shape, wd) = (x.shape().to_vec(), wrap_dim(dim, x.ndim())?);
    let keep = keepdim.unwrap_or(true);
    rec.finish(name, &[values, indices], Box::new(move |ctx| {
        Ok(vec![Some(value_selecting_backward(ctx.grad(), wd, ctx.saved(0), &shape, keep)?)])
    }))?;
    Ok(())
}

/// Differentiable `sort`: SortBackward0, or SortBackward1 for torch's `sort.stable` overload
/// (the one called with `stable=`, given as `Some`).
pub fn sort(x: &Tensor, dim: i64, descending: bool, stable: Option<bool>) -> Result<(Tensor, Tensor)> {
    crate::autograd::precheck(&[Some(x)])?;
    let (v, i) = sort_raw(x, dim, descending, stable.unwrap_or(false))?;
    let node = if stable.is_some() { "SortBackward1" } else { "SortBackward0" };
    record_selection(node, x, &v, &i, dim, None)?;
    Ok((v, i))
}

// ----- topk -----

/// `topk(k, dim, largest, sorted)` without autograd.
pub fn topk_raw(x: &Tensor, k: i64, dim: i64, largest: bool, sorted: bool) -> Result<(Tensor, Tensor)> {
    let d = wrap_dim(dim, x.ndim())?;
    if k < 0 || k as u64 > size_along(x, d) as u64 {
        return Err(Error::Runtime("selected index k out of range".into()));
    }
    if x.dtype() == DType::Bool {
        return Err(Error::Runtime("topk does not support bool dtypes on CPU".into()));
    }
    if x.ndim() == 0 {
        return scalar_pick(x);
    }
    let k = k as usize;
    let mut shape = x.shape().to_vec();
    shape[d] = k;
    if k == 0 || x.numel() == 0 {
        return Ok((Tensor::empty_on(&shape, x.dtype(), x.device())?, Tensor::empty_on(&shape, DType::Int64, x.device())?));
    }
    run_rows(x, d, k, SortOp::Topk { k, largest, sorted })
}

/// Differentiable `topk` (TopkBackward0).
pub fn topk(x: &Tensor, k: i64, dim: i64, largest: bool, sorted: bool) -> Result<(Tensor, Tensor)> {
    crate::autograd::precheck(&[Some(x)])?;
    let (v, i) = topk_raw(x, k, dim, largest, sorted)?;
    record_selection("TopkBackward0", x, &v, &i, dim, None)?;
    Ok((v, i))
}

// ----- kthvalue and median along a dim -----

/// `kthvalue(k, dim, keepdim)` without autograd (k counts from 1).
pub fn kthvalue_raw(x: &Tensor, k: i64, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let d = wrap_dim(dim, x.ndim())?;
    check_nonempty_dim(x, d, "kthvalue")?;
    if k < 1 || k as u64 > size_along(x, d) as u64 {
        return Err(Error::Runtime(format!("kthvalue(): selected number k out of range for dimension {}", d)));
    }
    if x.ndim() == 0 {
        return scalar_pick(x); // before the kernel's dtype dispatch, as in torch
    }
    if x.dtype() == DType::Bool {
        return Err(not_for_bool("kthvalue_cpu"));
    }
    select_along(x, d, keepdim, SortOp::Kthvalue { k: k as usize })
}

/// `median(dim, keepdim)` without autograd: the lower median and its index.
pub fn median_dim_raw(x: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let d = wrap_dim(dim, x.ndim())?;
    check_nonempty_dim(x, d, "median")?;
    if x.dtype() == DType::Bool {
        return Err(not_for_bool("median_out"));
    }
    select_along(x, d, keepdim, SortOp::Median)
}

/// One value per row along `dim`, shaped as a reduction (keepdim or not).
fn select_along(x: &Tensor, d: usize, keepdim: bool, op: SortOp) -> Result<(Tensor, Tensor)> {
    if x.ndim() == 0 {
        return scalar_pick(x);
    }
    let shape = reduced(x.shape(), d, keepdim);
    if x.numel() == 0 {
        return Ok((Tensor::empty_on(&shape, x.dtype(), x.device())?, Tensor::empty_on(&shape, DType::Int64, x.device())?));
    }
    let (v, i) = run_rows(x, d, 1, op)?;
    let target: Vec<i64> = shape.iter().map(|&s| s as i64).collect();
    Ok((views::reshape_raw(&v, &target)?.fresh_handle(), views::reshape_raw(&i, &target)?.fresh_handle()))
}

/// Differentiable `kthvalue` (KthvalueBackward0).
pub fn kthvalue(x: &Tensor, k: i64, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    crate::autograd::precheck(&[Some(x)])?;
    let (mut v, mut i) = kthvalue_raw(x, k, dim, keepdim)?;
    if x.ndim() == 1 && !keepdim {
        // as max(dim): see `Tensor::stale_size0`
        (v.stale_size0, i.stale_size0) = (true, true);
    }
    record_selection("KthvalueBackward0", x, &v, &i, dim, Some(keepdim))?;
    Ok((v, i))
}

/// Differentiable `median(dim)` (MedianBackward1).
pub fn median_dim(x: &Tensor, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    crate::autograd::precheck(&[Some(x)])?;
    let (v, i) = median_dim_raw(x, dim, keepdim)?;
    record_selection("MedianBackward1", x, &v, &i, dim, Some(keepdim))?;
    Ok((v, i))
}

// ----- median of all elements -----

/// `median()` without autograd: a 0-d lower median (NaN, cast to the dtype, when empty).
pub fn median_raw(x: &Tensor) -> Result<Tensor> {
    if x.numel() == 0 {
        let nan = to_dtype_raw(&Tensor::scalar(Scalar::Float(f64::NAN), DType::Float64)?, x.dtype())?;
        return to_device_raw(&nan, x.device());
    }
    if x.dtype() == DType::Bool {
        return Err(not_for_bool("median_cpu"));
    }
    // one row of every element: its lower median (the first NaN, if any)
    let flat = views::reshape_raw(&contiguous_raw(x)?, &[1, x.numel() as i64])?;
    let (v, _) = run_rows(&flat, 1, 1, SortOp::MedianAll)?;
    Ok(views::reshape_raw(&v, &[])?.fresh_handle())
}

/// Differentiable `median()` (MedianBackward0: the gradient is shared by the elements equal to
/// the median, or by the NaNs when it is NaN — torch's evenly_distribute_backward).
pub fn median(x: &Tensor) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    let out = median_raw(x)?;
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok(out) };
    rec.save("self", x)?;
    rec.save_output("result", &out, 0);
    rec.finish("MedianBackward0", &[&out], Box::new(move |ctx| {
        let (g, x, r) = (ctx.grad(), ctx.saved(0), ctx.saved(1));
        let mask = if r.item()?.to_f64().is_nan() {
            fm::cmp(BinaryOp::Ne, x, &crate::ops::Arg::Tensor(x.clone()))?
        } else {
            fm::cmp(BinaryOp::Eq, x, &crate::ops::Arg::Tensor(r.clone()))?
        };
        let mask = to_dtype_raw(&mask, g.dtype())?;
        let count = sum_raw(&mask, None, false, None)?;
        Ok(vec![Some(fm::mul(&mask, &fm::div(g, &count)?)?)])
    }))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    #[test]
    fn checks_in_torchs_order() {
        let b = Tensor::from_vec(vec![true, false, true, true], &[2, 2]).unwrap();
        assert_eq!(topk_raw(&b, 5, -1, true, true).unwrap_err().to_string(), "selected index k out of range");
        assert_eq!(topk_raw(&b, 1, -1, true, true).unwrap_err().to_string(), "topk does not support bool dtypes on CPU");
        assert!(matches!(kthvalue_raw(&b, 5, -1, false), Err(Error::Runtime(_))));
        assert!(matches!(kthvalue_raw(&b, 1, -1, false), Err(Error::NotImplemented(_))));
        let e = Tensor::zeros(&[2, 0], DType::Float32).unwrap();
        assert_eq!(median_dim_raw(&e, -1, false).unwrap_err().to_string(), "median(): Expected reduction dim 1 to have non-zero size.");
        assert_eq!(median_dim_raw(&e, 0, false).unwrap().0.shape(), &[0]);
        assert!(median_raw(&Tensor::zeros(&[0], DType::Float32).unwrap()).unwrap().item().unwrap().to_f64().is_nan());
        assert_eq!(median_raw(&Tensor::zeros(&[0], DType::Int64).unwrap()).unwrap().item().unwrap().to_i64(), i64::MIN);
    }

    #[test]
    fn values_and_indices() {
        let x = Tensor::from_vec(vec![3f32, 1., 2., 0., 5., 4.], &[2, 3]).unwrap();
        let (v, i) = sort_raw(&x, 0, true, false).unwrap();
        assert_eq!((v.to_vec::<f32>().unwrap(), i.to_vec::<i64>().unwrap()), (vec![3., 5., 4., 0., 1., 2.], vec![0, 1, 1, 1, 0, 0]));
        let (v, i) = topk_raw(&x, 2, 1, false, true).unwrap();
        assert_eq!((v.to_vec::<f32>().unwrap(), i.to_vec::<i64>().unwrap()), (vec![1., 2., 0., 4.], vec![1, 2, 0, 2]));
        let (v, i) = kthvalue_raw(&x, 2, 0, true).unwrap();
        assert_eq!((v.shape().to_vec(), v.to_vec::<f32>().unwrap(), i.to_vec::<i64>().unwrap()), (vec![1, 3], vec![3., 5., 4.], vec![0, 1, 1]));
        assert_eq!(median_raw(&x).unwrap().item().unwrap().to_f64(), 2.0);
    }

    #[test]
    fn selections_pass_gradcheck() {
        let x = rand_leaf(&[3, 4], 11);
        gradcheck("sort", &|t| Ok(sort(&t[0], 0, false, Some(true))?.0), &[x.clone()], true);
        gradcheck("topk", &|t| Ok(topk(&t[0], 2, -1, true, true)?.0), &[x.clone()], true);
        gradcheck("kthvalue", &|t| Ok(kthvalue(&t[0], 2, 1, false)?.0), &[x.clone()], true);
        gradcheck("median dim", &|t| Ok(median_dim(&t[0], 0, true)?.0), &[x.clone()], true);
        gradcheck("median", &|t| median(&t[0]), &[x.clone()], true);
        assert_eq!(node_name(&sort(&x, 0, false, None).unwrap().0), "SortBackward0");
        assert_eq!(node_name(&sort(&x, 0, false, Some(false)).unwrap().0), "SortBackward1");
    }
}
