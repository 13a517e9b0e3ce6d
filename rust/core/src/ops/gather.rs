//! Gathering and scattering along a dim: `gather`, `scatter(_)`, `scatter_add(_)`,
//! `index_select`, `index_add(_)` (`masked_select` lives with the other mask ops in `mask.rs`).
//!
//! Every index is checked before anything is written, so a bad index raises torch's error
//! and leaves the destination untouched (torch may have written part of it by then). The
//! checks run in torch's order, because that order decides which message a mistake gets.

use crate::dtype::{DType, Scalar};
use crate::element::Element;
use crate::error::{fmt_shape, Error, Result};
use crate::kernels::gather as kernel;
use crate::kernels::Arg;
use crate::ops::copy::{cast_input, contiguous_raw, contiguous_copy};
use crate::ops::write::{check_no_internal_overlap, write};
use crate::shape::wrap_dim;
use crate::tensor::Tensor;

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

// ----- gather -----

/// `gather(self, dim, index)`: `out[i][j][k] = self[i][index[i][j][k]][k]` for dim 1.
pub fn gather_raw(x: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let d = wrap_dim(dim, x.ndim())?;
    if index.numel() == 0 {
        return Ok(Tensor::empty(index.shape(), x.dtype())?);
    }
    if !is_index_dtype(index) {
        return Err(Error::Runtime("gather(): Expected dtype int32/int64 for index".into()));
    }
    if ne_dim(x) != ne_dim(index) {
        return Err(Error::Runtime("Index tensor must have the same number of dimensions as input tensor".into()));
    }
    for k in (0..ne_dim(x)).filter(|&k| k != d) {
        if ne_size(index, k)? > ne_size(x, k)? {
            return Err(Error::Runtime(format!(
                "Size does not match at dimension {} expected index {} to be no larger than self {} apart from dimension {}",
                k,
                fmt_shape(index.shape()),
                fmt_shape(x.shape()),
                d
            )));
        }
    }
    let idx = index_i64(index)?;
    let size = ne_size(x, d)?;
    if let Some(v) = first_bad(&idx.to_vec::<i64>()?, size) {
        return Err(out_of_bounds(v, d, size));
    }
    let out = Tensor::empty(index.shape(), x.dtype())?;
    run_gather(&out, x, d, &idx, false);
    Ok(out)
}

/// `out[pos] = x[pos with dim := idx[pos]]`, over `out`'s shape. `along_dim` reads a 1-D index
/// along `dim` only (index_select); otherwise `idx` has `out`'s shape.
fn run_gather(out: &Tensor, x: &Tensor, d: usize, idx: &Tensor, along_dim: bool) {
    let (shape, out_strides) = ne_layout(out);
    let (_, mut x_strides) = ne_layout(x);
    let x_dim_stride = x_strides[d];
    x_strides[d] = 0;
    let ix_strides = if along_dim { unit_along(shape.len(), d) } else { ne_layout(idx).1 };
    crate::dispatch!(x.dtype(), T => {
        // SAFETY: indices were checked against x's size along d and the other dims of the
        // iteration are no larger than x's; out is fresh memory shared with no input.
        unsafe {
            kernel::gather::<T>(
                &shape,
                Arg { base: out.base_ptr::<T>(), strides: &out_strides, offset: out.layout.offset },
                Arg { base: idx.base_ptr::<i64>(), strides: &ix_strides, offset: idx.layout.offset },
                Arg { base: x.base_ptr::<T>(), strides: &x_strides, offset: x.layout.offset },
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

// ----- scatter -----

/// What scatter writes: a tensor's elements or one number.
#[derive(Debug, Clone)]
pub enum Source {
    Tensor(Tensor),
    Value(Scalar),
}

/// The legacy `reduce=` of scatter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduce {
    Add,
    Multiply,
}

fn parse_reduce(reduce: Option<&str>) -> Result<Option<Reduce>> {
    match reduce {
        None => Ok(None),
        Some("add") => Ok(Some(Reduce::Add)),
        Some("multiply") => Ok(Some(Reduce::Multiply)),
        Some(_) => Err(Error::Runtime("reduce argument must be either add or multiply.".into())),
    }
}

/// torch's `scatter_shape_check`.
fn scatter_shape_check(x: &Tensor, d: usize, index: &Tensor, src: Option<&Tensor>) -> Result<()> {
    if index.numel() == 0 {
        return Ok(());
    }
    if ne_dim(x) != ne_dim(index) {
        return Err(Error::Runtime("Index tensor must have the same number of dimensions as self tensor".into()));
    }
    let nd = ne_dim(x);
    let mut wrong = false;
    for k in (0..nd).filter(|&k| k != d) {
        if ne_size(index, k)? > ne_size(x, k)? {
            wrong = true;
            break;
        }
    }
    if let (false, Some(s)) = (wrong, src) {
        for k in 0..nd {
            if ne_size(index, k)? > ne_size(s, k)? {
                wrong = true;
                break;
            }
        }
    }
    let base = format!(
        "Expected index {} to be no larger than self {} apart from dimension {}",
        fmt_shape(index.shape()),
        fmt_shape(x.shape()),
        d
    );
    match src {
        Some(s) => {
            if ne_dim(s) != ne_dim(index) {
                return Err(Error::Runtime("Index tensor must have the same number of dimensions as src tensor".into()));
            }
            if wrong {
                return Err(Error::Runtime(format!("{} and to be no larger size than src {}", base, fmt_shape(s.shape()))));
            }
        }
        None if wrong => return Err(Error::Runtime(base)),
        None => {}
    }
    Ok(())
}

/// `scatter(self, dim, index, src|value, reduce=None)`; in place when `in_place`.
pub fn scatter_raw(x: &Tensor, dim: i64, index: &Tensor, src: &Source, reduce: Option<&str>, in_place: bool) -> Result<Tensor> {
    let d = wrap_dim(dim, x.ndim())?;
    let src_t = match src {
        Source::Tensor(t) => Some(t),
        Source::Value(_) => None,
    };
    if index.numel() != 0 && !is_index_dtype(index) {
        return Err(Error::Runtime("scatter(): Expected dtype int32/int64 for index".into()));
    }
    if src_t.is_some_and(|s| s.dtype() != x.dtype()) {
        return Err(Error::Runtime("scatter(): Expected self.dtype to be equal to src.dtype".into()));
    }
    scatter_shape_check(x, d, index, src_t)?;
    if in_place {
        let mut reads = vec![index];
        reads.extend(src_t);
        check_inplace(x, &reads)?;
    }
    let reduce = parse_reduce(reduce)?;
    scatter_into(x, d, index, src, reduce, in_place)
}

/// `scatter_add(self, dim, index, src)`; in place when `in_place`.
pub fn scatter_add_raw(x: &Tensor, dim: i64, index: &Tensor, src: &Tensor, in_place: bool) -> Result<Tensor> {
    scatter_raw(x, dim, index, &Source::Tensor(src.clone()), Some("add"), in_place)
}

/// The write half of scatter, after every shape/dtype check has passed.
fn scatter_into(x: &Tensor, d: usize, index: &Tensor, src: &Source, reduce: Option<Reduce>, in_place: bool) -> Result<Tensor> {
    let dst = destination(x, in_place)?;
    let idx = if index.numel() == 0 { None } else { Some(index_i64(index)?) };
    if let Some(idx) = &idx {
        let size = ne_size(x, d)?;
        if let Some(v) = first_bad(&idx.to_vec::<i64>()?, size) {
            return Err(out_of_bounds(v, d, size));
        }
    }
    let src_t = match src {
        Source::Tensor(t) => t.clone(),
        Source::Value(v) => Tensor::scalar(*v, x.dtype())?,
    };
    let body = |dst: &Tensor| -> Result<()> {
        let Some(idx) = &idx else { return Ok(()) };
        let (idx, src_t) = (private(dst, idx)?, private(dst, &src_t)?);
        let (shape, ix_strides) = ne_layout(&idx);
        let src_strides = match src {
            Source::Tensor(_) => ne_layout(&src_t).1,
            Source::Value(_) => vec![0; shape.len()],
        };
        run_scatter(dst, d, &shape, &idx, &ix_strides, &src_t, &src_strides, reduce, None);
        Ok(())
    };
    if in_place {
        write(&dst, &[], |_| body(&dst))?;
    } else {
        body(&dst)?;
    }
    Ok(dst)
}

/// Runs the scatter kernel over `shape` with `f` chosen by `reduce` (and `alpha`, for
/// index_add, which scales each source element first).
#[allow(clippy::too_many_arguments)]
fn run_scatter(dst: &Tensor, d: usize, shape: &[usize], idx: &Tensor, ix_strides: &[isize], src: &Tensor, src_strides: &[isize], reduce: Option<Reduce>, alpha: Option<Scalar>) {
    let (_, mut dst_strides) = ne_layout(dst);
    let dst_dim_stride = dst_strides[d];
    dst_strides[d] = 0;
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
                    Arg { base: idx.base_ptr::<i64>(), strides: ix_strides, offset: idx.layout.offset },
                    Arg { base: src.base_ptr::<$T>(), strides: src_strides, offset: src.layout.offset },
                    $f,
                )
            }
        };
    }
    macro_rules! numeric {
        ($T:ty, $add:expr, $mul:expr) => {{
            let a: $T = <$T>::from_scalar(alpha.unwrap_or(Scalar::Int(1)));
            match (reduce, alpha.is_some()) {
                (None, _) => go!($T, |_, s| s),
                (Some(Reduce::Add), false) => go!($T, move |o, s| $add(o, s)),
                (Some(Reduce::Add), true) => go!($T, move |o, s| $add(o, $mul(s, a))),
                (Some(Reduce::Multiply), _) => go!($T, move |o, s| $mul(o, s)),
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
    }
}

// ----- index_select / index_add -----

/// `index_select(self, dim, index)`: slices of `self` along `dim`, picked by a 1-D index.
pub fn index_select_raw(x: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let d = wrap_dim(dim, x.ndim())?;
    let numel = index.numel();
    if index.ndim() > 1 {
        return Err(Error::Index("index_select(): Index is supposed to be a vector".into()));
    }
    if x.ndim() == 0 && numel != 1 {
        return Err(Error::Runtime(format!("index_select(): Index to scalar can have only 1 value, got {} value(s)", numel)));
    }
    if !is_index_dtype(index) {
        return Err(Error::Runtime("index_select(): Expected dtype int32 or int64 for index".into()));
    }
    let mut shape = x.shape().to_vec();
    if x.ndim() > 0 {
        shape[d] = numel;
    }
    let out = Tensor::empty(&shape, x.dtype())?;
    if numel == 0 {
        return Ok(out);
    }
    let idx = index_i64(index)?;
    let vals = idx.to_vec::<i64>()?;
    // torch's CPU kernel has three paths with their own messages; each is reproduced.
    let range_error = |v: i64, size: usize| Error::Runtime(format!("INDICES element is out of DATA bounds, id={} axis_dim={}", v, size));
    let index_error = || Error::Index("index out of range in self".into());
    if x.ndim() > 1 {
        let size = x.shape()[d];
        if x.numel() == 0 {
            if size == 0 {
                return Err(Error::Runtime("index_select(): self indexing axis dim should be positive".into()));
            }
            return match first_bad(&vals, size) {
                Some(v) => Err(range_error(v, size)),
                None => Ok(out),
            };
        }
        if let Some(v) = first_bad(&vals, size) {
            return Err(if d == 1 { range_error(v, size) } else { index_error() });
        }
    } else if first_bad(&vals, x.numel()).is_some() {
        return Err(index_error());
    }
    run_gather(&out, x, d, &idx, true);
    Ok(out)
}

/// `index_add(self, dim, index, source, alpha=1)`: `self[index[i]] += alpha * source[i]` along
/// `dim`; in place when `in_place`.
pub fn index_add_raw(x: &Tensor, dim: i64, index: &Tensor, source: &Tensor, alpha: Scalar, in_place: bool) -> Result<Tensor> {
    let d = wrap_dim(dim, x.ndim())?;
    let numel = index.numel();
    if index.ndim() > 1 {
        return Err(Error::Index(format!(
            "index_add_(): Index is supposed to be a vector, but got dim: {} with type: {} and size: {}",
            index.ndim(),
            index.dtype().scalar_type_name(),
            fmt_shape(index.shape())
        )));
    }
    if !is_index_dtype(index) {
        return Err(Error::Runtime(format!(
            "index_add_(): Expected dtype int32/int64 for index but got: {}",
            index.dtype().scalar_type_name()
        )));
    }
    if x.dtype() != source.dtype() {
        return Err(Error::Runtime(format!(
            "index_add_(): self ({}) and source ({}) must have the same scalar type",
            x.dtype().scalar_type_name(),
            source.dtype().scalar_type_name()
        )));
    }
    if !(d == 0 || d < source.ndim()) {
        return Err(Error::Runtime(format!(
            "index_add_(): Indexing dim {} is out of bounds of the source tensor with dim {}",
            d,
            source.ndim()
        )));
    }
    let src_len = if source.ndim() == 0 { 1 } else { source.shape()[d] };
    if numel != src_len {
        if source.ndim() == 0 {
            // torch formats source.size(dim) into the message, which itself raises here.
            return Err(Error::Index("Dimension specified as 0 but tensor has no dimensions".into()));
        }
        return Err(Error::Runtime(format!(
            "index_add_(): Number of indices ({}) should be equal to source.size(dim): ({}), for dim: {}",
            numel, src_len, d
        )));
    }
    let (mut xs, mut ss) = (x.shape().to_vec(), source.shape().to_vec());
    if x.ndim() != 0 && source.ndim() != 0 {
        xs.remove(d);
        ss.remove(d);
    }
    if xs != ss {
        return Err(Error::Runtime(format!(
            "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = {} source.shape = {}",
            fmt_shape(x.shape()),
            fmt_shape(source.shape())
        )));
    }
    if in_place {
        check_inplace(x, &[index, source])?;
    }
    let dst = destination(x, in_place)?;
    let idx = index_i64(index)?;
    let vals = idx.to_vec::<i64>()?;
    let skip = x.ndim() > 1 && (numel == 0 || x.numel() == 0);
    if !skip {
        if x.ndim() > 1 {
            let size = x.shape()[d];
            if let Some(v) = first_bad(&vals, size) {
                // torch routes alpha = 1 with int64 indices on the first and last dims through
                // scatter_add (its message), everything else through a loop with another one.
                let alpha_one = matches!(alpha, Scalar::Int(1)) || alpha == Scalar::Float(1.0);
                let via_scatter = (d == 0 || d == x.ndim() - 1) && index.dtype() == DType::Int64 && alpha_one;
                return Err(if via_scatter { out_of_bounds(v, d, size) } else { Error::Index("index out of range in self".into()) });
            }
        } else if first_bad(&vals, x.numel()).is_some() {
            return Err(Error::Index("index out of range in self".into()));
        }
    }
    let body = |dst: &Tensor| -> Result<()> {
        if skip || numel == 0 {
            return Ok(());
        }
        let (idx, source) = (private(dst, &idx)?, private(dst, source)?);
        let (shape, src_strides) = ne_layout(&source);
        let ix_strides = unit_along(shape.len(), d);
        run_scatter(dst, d, &shape, &idx, &ix_strides, &source, &src_strides, Some(Reduce::Add), Some(alpha));
        Ok(())
    };
    if in_place {
        write(&dst, &[], |_| body(&dst))?;
    } else {
        body(&dst)?;
    }
    Ok(dst)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::views;

    fn ar(n: usize, shape: &[usize]) -> Tensor {
        Tensor::from_vec((0..n).map(|v| v as f32).collect::<Vec<_>>(), shape).unwrap()
    }
    fn ix(v: Vec<i64>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape).unwrap()
    }

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

    #[test]
    fn scatter_variants_and_version_bumps() {
        let x = Tensor::zeros(&[2, 3], DType::Int64).unwrap();
        let index = ix(vec![2, 2, 0, 1], &[2, 2]);
        let src = ix(vec![1, 10, 100, 1000], &[2, 2]);
        let r = scatter_add_raw(&x, 1, &index, &src, false).unwrap();
        assert_eq!(r.to_vec::<i64>().unwrap(), vec![0, 0, 11, 100, 1000, 0]);
        assert_eq!(x.version(), 0);
        scatter_raw(&x, 1, &index, &Source::Value(Scalar::Int(5)), None, true).unwrap();
        assert_eq!(x.to_vec::<i64>().unwrap(), vec![0, 0, 5, 5, 5, 0]);
        assert_eq!(x.version(), 1);
        // A bad index raises and writes nothing, bumps nothing.
        let bad = ix(vec![0, 3], &[1, 2]);
        assert!(scatter_raw(&x, 1, &bad, &Source::Value(Scalar::Int(9)), None, true).is_err());
        assert_eq!((x.to_vec::<i64>().unwrap(), x.version()), (vec![0, 0, 5, 5, 5, 0], 1));
    }

    #[test]
    fn index_add_with_alpha_and_duplicates() {
        let x = Tensor::zeros(&[3, 2], DType::Float64).unwrap();
        let src = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
        let r = index_add_raw(&x, 0, &ix(vec![1, 1], &[2]), &src, Scalar::Float(0.5), false).unwrap();
        assert_eq!(r.to_vec::<f64>().unwrap(), vec![0.0, 0.0, 2.0, 3.0, 0.0, 0.0]);
    }

    #[test]
    fn self_aliasing_sources_are_refused_like_torch() {
        let x = ar(6, &[6]);
        let part = views::narrow_raw(&x, 0, 1, 2).unwrap();
        let e = scatter_raw(&x, 0, &ix(vec![0, 1], &[2]), &Source::Tensor(part), None, true).unwrap_err();
        assert_eq!(e.to_string(), crate::ops::write::PARTIAL_OVERLAP);
    }
}

// ----- autograd: saves and backward formulas (derivatives.yaml) -----

use crate::autograd::formulas as fm;
use crate::autograd::node::{Ctx, Formula};
use crate::autograd::Recorder;
use crate::ops::reduce::{py_bool, py_number};

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

/// Differentiable `gather` (GatherBackward0: saves self and index; the gradient is
/// scatter-added into zeros shaped like self).
pub fn gather(x: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(x)])?;
    let out = gather_raw(x, dim, index)?;
    let Some(mut rec) = rec else { return Ok(out) };
    rec.value("dim", dim);
    rec.value("sparse_grad", py_bool(false));
    rec.save("self", x)?;
    rec.save("index", index)?;
    let shape = x.shape().to_vec();
    rec.finish("GatherBackward0", &[&out], Box::new(move |ctx| {
        let g = ctx.grad();
        Ok(vec![Some(scatter_add(&fm::zeros(&shape, g.dtype())?, dim, ctx.saved(1), g, false)?)])
    }))?;
    Ok(out)
}

/// ScatterBackward0 / ScatterBackward1: self gets the gradient with the written positions
/// zeroed; a tensor src gets the gradient gathered from them.
fn scatter_formula(dim: i64, ctx: &Ctx) -> Result<Vec<Option<Tensor>>> {
    let (g, index) = (ctx.grad(), ctx.saved(0));
    let mut grads = vec![if ctx.needs(0) { Some(scatter(g, dim, index, &Source::Value(ZERO), None, false)?) } else { None }];
    if ctx.needs.len() > 1 {
        grads.push(if ctx.needs(1) { Some(gather(g, dim, index)?) } else { None });
    }
    Ok(grads)
}

/// Differentiable `scatter` / `scatter_`: ScatterBackward0 with a src tensor, ScatterBackward1
/// with a number; with `reduce=` torch has no derivative (a NotImplemented node that raises).
pub fn scatter(x: &Tensor, dim: i64, index: &Tensor, src: &Source, reduce: Option<&str>, in_place: bool) -> Result<Tensor> {
    let _blame = in_place.then(|| crate::autograd::blame::op("scatter_"));
    let src_t = match src {
        Source::Tensor(t) => Some(t),
        Source::Value(_) => None,
    };
    let operands: Vec<Option<&Tensor>> = src_t.into_iter().map(Some).collect();
    let rec = recorder(x, &operands, in_place)?;
    let out = scatter_raw(x, dim, index, src, reduce, in_place)?;
    let Some(mut rec) = rec else { return Ok(out) };
    let target = if in_place { x } else { &out };
    if reduce.is_some() {
        let formula: Formula = Box::new(|_| Err(Error::Runtime("derivative for aten::scatter is not implemented".into())));
        finish(rec, "torch::autograd::NotImplemented", target, in_place, formula)?;
        return Ok(out);
    }
    rec.value("dim", dim);
    rec.save("index", index)?;
    let name = if src_t.is_some() { "ScatterBackward0" } else { "ScatterBackward1" };
    finish(rec, name, target, in_place, Box::new(move |ctx| scatter_formula(dim, ctx)))?;
    Ok(out)
}

/// Differentiable `scatter_add` / `scatter_add_` (ScatterAddBackward0): self gets the
/// gradient, src the gradient gathered from the written positions.
pub fn scatter_add(x: &Tensor, dim: i64, index: &Tensor, src: &Tensor, in_place: bool) -> Result<Tensor> {
    let _blame = in_place.then(|| crate::autograd::blame::op("scatter_add_"));
    let rec = recorder(x, &[Some(src)], in_place)?;
    let out = scatter_add_raw(x, dim, index, src, in_place)?;
    let Some(mut rec) = rec else { return Ok(out) };
    rec.value("dim", dim);
    rec.save("index", index)?;
    let target = if in_place { x } else { &out };
    finish(rec, "ScatterAddBackward0", target, in_place, Box::new(move |ctx| {
        let g = ctx.grad();
        let gs = if ctx.needs(1) { Some(gather(g, dim, ctx.saved(0))?) } else { None };
        Ok(vec![ctx.needs(0).then(|| g.clone()), gs])
    }))?;
    Ok(out)
}

/// Differentiable `index_select` (IndexSelectBackward0: the gradient index-added into zeros).
pub fn index_select(x: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(x)])?;
    let out = index_select_raw(x, dim, index)?;
    let Some(mut rec) = rec else { return Ok(out) };
    rec.value("dim", dim);
    rec.value("self_sym_sizes", crate::ops::reduce::py_ints(x.shape()));
    rec.save("index", index)?;
    let shape = x.shape().to_vec();
    rec.finish("IndexSelectBackward0", &[&out], Box::new(move |ctx| {
        let g = ctx.grad();
        Ok(vec![Some(index_add(&fm::zeros(&shape, g.dtype())?, dim, ctx.saved(0), g, Scalar::Int(1), false)?)])
    }))?;
    Ok(out)
}

/// Differentiable `index_add` / `index_add_` (IndexAddBackward0): self gets the gradient,
/// source `alpha * grad.index_select(dim, index)` (index and source are saved for it).
pub fn index_add(x: &Tensor, dim: i64, index: &Tensor, source: &Tensor, alpha: Scalar, in_place: bool) -> Result<Tensor> {
    let _blame = in_place.then(|| crate::autograd::blame::op("index_add_"));
    let rec = recorder(x, &[Some(source)], in_place)?;
    let out = index_add_raw(x, dim, index, source, alpha, in_place)?;
    let Some(mut rec) = rec else { return Ok(out) };
    rec.value("alpha", py_number(alpha));
    rec.value("dim", dim);
    rec.value("source_dim", source.ndim());
    if rec.needs(1) {
        rec.save("index", index)?;
        rec.save("source", source)?;
    }
    let target = if in_place { x } else { &out };
    let src_shape: Vec<i64> = source.shape().iter().map(|&d| d as i64).collect();
    let one = matches!(alpha, Scalar::Int(1)) || alpha == Scalar::Float(1.0) || alpha == Scalar::Bool(true);
    finish(rec, "IndexAddBackward0", target, in_place, Box::new(move |ctx| {
        let g = ctx.grad();
        let gs = if ctx.needs(1) {
            let mut s = index_select(g, dim, ctx.saved(0))?;
            if s.shape().iter().map(|&d| d as i64).ne(src_shape.iter().copied()) {
                s = crate::ops::views::reshape(&s, &src_shape)?;
            }
            Some(if one { s } else { fm::mul_s(&s, alpha.to_f64())? })
        } else {
            None
        };
        Ok(vec![ctx.needs(0).then(|| g.clone()), gs])
    }))?;
    Ok(out)
}

#[cfg(test)]
mod grad_tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    fn ix(v: Vec<i64>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape).unwrap()
    }

    #[test]
    fn gather_and_index_select_accumulate_repeats() {
        let x = leaf(vec![1., 2., 3., 4., 5., 6.], &[2, 3]);
        let out = gather(&x, 1, &ix(vec![0, 0, 2, 1], &[2, 2])).unwrap();
        assert_eq!(node_name(&out), "GatherBackward0");
        backward(&out, Some(vals(vec![1., 2., 3., 4.], &[2, 2])));
        assert_eq!(grad(&x), vec![3., 0., 0., 0., 4., 3.]);

        let x = leaf(vec![1., 2., 3., 4., 5., 6.], &[3, 2]);
        let out = index_select(&x, 0, &ix(vec![2, 2, 0], &[3])).unwrap();
        assert_eq!(node_name(&out), "IndexSelectBackward0");
        backward(&out, Some(vals(vec![1., 2., 3., 4., 5., 6.], &[3, 2])));
        assert_eq!(grad(&x), vec![5., 6., 0., 0., 4., 6.]);
    }

    #[test]
    fn scatter_zeroes_written_positions() {
        let x = leaf(vec![0.; 6], &[2, 3]);
        let src = leaf(vec![1., 2., 3., 4.], &[2, 2]);
        let index = ix(vec![2, 0, 1, 1], &[2, 2]);
        let out = scatter(&x, 1, &index, &Source::Tensor(src.clone()), None, false).unwrap();
        assert_eq!(node_name(&out), "ScatterBackward0");
        backward(&out, Some(vals(vec![1., 2., 3., 4., 5., 6.], &[2, 3])));
        assert_eq!(grad(&x), vec![0., 2., 0., 4., 0., 6.]);
        assert_eq!(grad(&src), vec![3., 1., 5., 5.]);

        let out = scatter(&x, 1, &index, &Source::Value(Scalar::Float(9.0)), None, false).unwrap();
        assert_eq!(node_name(&out), "ScatterBackward1");
        let out = scatter(&x, 1, &index, &Source::Tensor(src.clone()), Some("add"), false).unwrap();
        assert_eq!(node_name(&out), "torch::autograd::NotImplemented");
        let e = try_backward(&out).unwrap_err();
        assert_eq!(e.to_string(), "derivative for aten::scatter is not implemented");
    }

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
