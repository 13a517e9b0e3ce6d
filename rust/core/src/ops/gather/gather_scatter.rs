//! `gather` and `scatter` / `scatter_add` (in place or not) along a dim: torch's checks in its
//! order, then the kernel; GatherBackward0 scatter-adds the gradient back, ScatterBackward0/1
//! and ScatterAddBackward0 gather it from the written positions.

use crate::ops::formulas as fm;
use crate::autograd::{Ctx, Formula};
use crate::autograd::Recorder;
use crate::dtype::Scalar;
use crate::error::{fmt_shape, Error, Result};
use crate::ops::reduce::py_bool;
use crate::ops::write::write;
use crate::shape::wrap_dim;
use crate::tensor::Tensor;
use super::{check_inplace, destination, finish, first_bad, index_i64, is_index_dtype, ne_dim, ne_layout, ne_size, out_of_bounds, private, recorder, run_gather, run_scatter, ZERO};

/// `gather(self, dim, index)`: `out[i][j][k] = self[i][index[i][j][k]][k]` for dim 1.
pub fn gather_raw(x: &Tensor, dim: i64, index: &Tensor) -> Result<Tensor> {
    let d = wrap_dim(dim, x.ndim())?;
    if index.numel() == 0 {
        return Tensor::empty_on(index.shape(), x.dtype(), x.device());
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
    let out = Tensor::empty_on(index.shape(), x.dtype(), x.device())?;
    run_gather(&out, x, d, &idx, false)?;
    Ok(out)
}

/// `gather` along `d` with an int64 `idx` the caller built in bounds and shaped as gather
/// requires (the loss kernels' class indices): no host read of the index, so on a GPU no wait
/// for the device.
pub(crate) fn gather_in_bounds(x: &Tensor, d: usize, idx: &Tensor) -> Result<Tensor> {
    let out = Tensor::empty_on(idx.shape(), x.dtype(), x.device())?;
    run_gather(&out, x, d, idx, false)?;
    Ok(out)
}

/// `dst.scatter_(d, idx, src)` for a fresh `dst` (no version bump, no overlap) and an int64
/// `idx` the caller built in bounds, with `src` shaped as `idx`: `gather_in_bounds`'s inverse.
pub(crate) fn scatter_in_bounds(dst: &Tensor, d: usize, idx: &Tensor, src: &Tensor) -> Result<()> {
    let (shape, ix_strides) = ne_layout(idx);
    run_scatter(dst, d, &shape, idx, &ix_strides, src, &ne_layout(src).1, None, None)
}

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
        Source::Value(v) => Tensor::full_on(&[], *v, x.dtype(), x.device())?,
    };
    let body = |dst: &Tensor| -> Result<()> {
        let Some(idx) = &idx else { return Ok(()) };
        let (idx, src_t) = (private(dst, idx)?, private(dst, &src_t)?);
        let (shape, ix_strides) = ne_layout(&idx);
        let src_strides = match src {
            Source::Tensor(_) => ne_layout(&src_t).1,
            Source::Value(_) => vec![0; shape.len()],
        };
        run_scatter(dst, d, &shape, &idx, &ix_strides, &src_t, &src_strides, reduce, None)
    };
    if in_place {
        write(&dst, &[], |_| body(&dst))?;
    } else {
        body(&dst)?;
    }
    Ok(dst)
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
        Ok(vec![Some(scatter_add(&fm::zeros(&shape, g.dtype(), g.device())?, dim, ctx.saved(1), g, false)?)])
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;
    use crate::ops::gather::test_util::*;
    use crate::ops::views;

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
    fn self_aliasing_sources_are_refused_like_torch() {
        let x = ar(6, &[6]);
        let part = views::narrow_raw(&x, 0, 1, 2).unwrap();
        let e = scatter_raw(&x, 0, &ix(vec![0, 1], &[2]), &Source::Tensor(part), None, true).unwrap_err();
        assert_eq!(e.to_string(), crate::ops::write::PARTIAL_OVERLAP);
    }
}

#[cfg(test)]
mod grad_tests {
    use super::*;
    use crate::ops::gather::test_util::ix;
    use crate::ops::reduce::testing::*;

    #[test]
    fn gather_accumulates_repeats() {
        let x = leaf(vec![1., 2., 3., 4., 5., 6.], &[2, 3]);
        let out = gather(&x, 1, &ix(vec![0, 0, 2, 1], &[2, 2])).unwrap();
        assert_eq!(node_name(&out), "GatherBackward0");
        backward(&out, Some(vals(vec![1., 2., 3., 4.], &[2, 2])));
        assert_eq!(grad(&x), vec![3., 0., 0., 0., 4., 3.]);
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
}
