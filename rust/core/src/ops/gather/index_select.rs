//! `index_select` and `index_add` (in place or not): slices along a dim picked by a 1-D index,
//! and each other's backward (IndexSelectBackward0 index-adds the gradient into zeros,
//! IndexAddBackward0 index-selects it for the source).

use crate::ops::formulas as fm;
use crate::autograd::Recorder;
use crate::dtype::{DType, Scalar};
use crate::error::{fmt_shape, Error, Result};
use crate::ops::reduce::py_number;
use crate::ops::write::write;
use crate::shape::wrap_dim;
use crate::tensor::Tensor;
use super::{check_inplace, destination, finish, first_bad, index_i64, is_index_dtype, ne_layout, out_of_bounds, private, recorder, run_gather, run_scatter, unit_along, Reduce};

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
    let out = Tensor::empty_on(&shape, x.dtype(), x.device())?;
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
    run_gather(&out, x, d, &idx, true)?;
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
        run_scatter(dst, d, &shape, &idx, &ix_strides, &source, &src_strides, Some(Reduce::Add), Some(alpha))
    };
    if in_place {
        write(&dst, &[], |_| body(&dst))?;
    } else {
        body(&dst)?;
    }
    Ok(dst)
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
        Ok(vec![Some(index_add(&fm::zeros(&shape, g.dtype(), g.device())?, dim, ctx.saved(0), g, Scalar::Int(1), false)?)])
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
mod tests {
    use super::*;
    use crate::ops::gather::test_util::ix;

    #[test]
    fn index_add_with_alpha_and_duplicates() {
        let x = Tensor::zeros(&[3, 2], DType::Float64).unwrap();
        let src = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2]).unwrap();
        let r = index_add_raw(&x, 0, &ix(vec![1, 1], &[2]), &src, Scalar::Float(0.5), false).unwrap();
        assert_eq!(r.to_vec::<f64>().unwrap(), vec![0.0, 0.0, 2.0, 3.0, 0.0, 0.0]);
    }
}

#[cfg(test)]
mod grad_tests {
    use super::*;
    use crate::ops::gather::test_util::ix;
    use crate::ops::reduce::testing::*;

    #[test]
    fn index_select_accumulates_repeats() {
        let x = leaf(vec![1., 2., 3., 4., 5., 6.], &[3, 2]);
        let out = index_select(&x, 0, &ix(vec![2, 2, 0], &[3])).unwrap();
        assert_eq!(node_name(&out), "IndexSelectBackward0");
        backward(&out, Some(vals(vec![1., 2., 3., 4., 5., 6.], &[3, 2])));
        assert_eq!(grad(&x), vec![5., 6., 0., 0., 4., 6.]);
    }
}
