//! `take` and `put` / `put_`: a tensor read and written as if it were 1-D, in its logical
//! (row-major) order whatever its strides, at positions given by an int64 index of any shape
//! (negative positions count from the end). Each is the other's backward: TakeBackward0 puts
//! the gradient into zeros with `accumulate=True`; PutBackward0 takes the source's gradient at
//! the index (and, without `accumulate`, puts zeros there in self's).
//!
//! The elements move through the gather/scatter kernels along dim 0 of a flat view: the input
//! itself when it is contiguous, else a contiguous copy (put writes that copy back).

use crate::autograd::Recorder;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::copy::{clone_raw, contiguous_copy, contiguous_raw, copy_kernel};
use crate::ops::formulas as fm;
use crate::ops::views;
use crate::ops::write::write;
use crate::tensor::Tensor;
use super::{check_inplace, finish, private, recorder, relaid, run_gather, run_scatter, Reduce};

/// `t`'s elements as a 1-D operand (`t` must be contiguous).
fn flat(t: &Tensor) -> Tensor {
    relaid(t, vec![t.numel()], vec![1])
}

/// An int64 index as positions into `numel` elements, negatives wrapped, each checked in
/// order before anything is read or written.
fn positions(index: &Tensor, numel: usize) -> Result<Tensor> {
    let mut picks = contiguous_raw(index)?.to_vec::<i64>()?;
    for p in picks.iter_mut() {
        let n = numel as i64;
        if *p >= n || *p < -n {
            return Err(Error::Index(format!("out of range: tried to access index {} on a tensor of {} elements.", p, numel)));
        }
        if *p < 0 {
            *p += n;
        }
    }
    let n = picks.len();
    crate::ops::copy::to_device_raw(&Tensor::from_vec(picks, &[n])?, index.device())
}

/// `take(self, index)`: self's elements at `index`, shaped like it (a fresh contiguous tensor).
pub fn take_raw(x: &Tensor, index: &Tensor) -> Result<Tensor> {
    if index.dtype() != DType::Int64 {
        return Err(Error::Runtime(format!("take(): Expected a long tensor for index, but got {}", index.dtype().scalar_type_name())));
    }
    if x.numel() == 0 && index.numel() != 0 {
        return Err(Error::Index("take(): tried to take from an empty tensor".into()));
    }
    let out = Tensor::empty_on(index.shape(), x.dtype(), x.device())?;
    if index.numel() == 0 {
        return Ok(out);
    }
    let picks = positions(index, x.numel())?;
    run_gather(&flat(&out), &flat(&contiguous_raw(x)?), 0, &picks, true)?;
    Ok(out)
}

/// `put_(self, index, source, accumulate)` (in place when `in_place`; else torch's
/// `self.clone().put_(...)`, so its messages say `put_()` too), unrecorded. Without
/// `accumulate` the last of repeated positions wins (the CPU writes in index order).
pub fn put_raw(x: &Tensor, index: &Tensor, source: &Tensor, accumulate: bool, in_place: bool) -> Result<Tensor> {
    if index.dtype() != DType::Int64 {
        return Err(Error::Runtime(format!("put_(): Expected a long tensor for index, but got {}", index.dtype().scalar_type_name())));
    }
    if x.dtype() != source.dtype() {
        return Err(Error::Runtime(format!(
            "put_(): self and source expected to have the same dtype, but got self.dtype = {} and source.dtype = {}",
            x.dtype().scalar_type_name(),
            source.dtype().scalar_type_name()
        )));
    }
    if source.numel() != index.numel() {
        return Err(Error::Index(format!(
            "put_(): Expected source and index to have the same number of elements, but got source.numel() = {}, index.numel() = {}",
            source.numel(),
            index.numel()
        )));
    }
    if x.numel() == 0 && index.numel() != 0 {
        return Err(Error::Index("put_(): Tried to put elements into an empty tensor".into()));
    }
    let dst = if in_place {
        check_inplace(x, &[index, source])?;
        x.clone()
    } else {
        clone_raw(x)?
    };
    if index.numel() == 0 {
        if in_place {
            write(&dst, &[], |_| Ok(()))?; // torch's put_ returns early, but the call still counts as a write
        }
        return Ok(dst);
    }
    let picks = positions(index, x.numel())?;
    let reduce = accumulate.then_some(Reduce::Add);
    let body = |dst: &Tensor| -> Result<()> {
        let src = contiguous_raw(&private(dst, source)?)?;
        let n = src.numel();
        let into = |target: &Tensor| run_scatter(&flat(target), 0, &[n], &picks, &[1], &flat(&src), &[1], reduce, None);
        if dst.is_contiguous() {
            into(dst)
        } else {
            let tmp = contiguous_copy(dst, dst.dtype())?;
            into(&tmp)?;
            copy_kernel(dst, &tmp)
        }
    };
    if in_place {
        write(&dst, &[source], |_| body(&dst))?;
    } else {
        body(&dst)?;
    }
    Ok(dst)
}

/// Differentiable `take` (TakeBackward0, saving self and index).
pub fn take(x: &Tensor, index: &Tensor) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(x)])?;
    let out = take_raw(x, index)?;
    let Some(mut rec) = rec else { return Ok(out) };
    rec.save("index", index)?;
    rec.save("self", x)?;
    let shape = x.shape().to_vec();
    rec.finish("TakeBackward0", &[&out], Box::new(move |ctx| {
        let g = ctx.grad();
        let zeros = fm::zeros(&shape, g.dtype(), g.device())?;
        Ok(vec![Some(put(&zeros, ctx.saved(0), g, true, false)?)])
    }))?;
    Ok(out)
}

/// Differentiable `put` / `put_` (PutBackward0, saving accumulate, index and source): self's
/// gradient is the incoming one (with zeros put at the index unless accumulating), source's
/// is the incoming one taken at the index, shaped like source.
pub fn put(x: &Tensor, index: &Tensor, source: &Tensor, accumulate: bool, in_place: bool) -> Result<Tensor> {
    let _blame = in_place.then(|| crate::autograd::blame::op("put_"));
    let rec = recorder(x, &[Some(source)], in_place)?;
    let out = put_raw(x, index, source, accumulate, in_place)?;
    let Some(mut rec) = rec else { return Ok(out) };
    rec.value("accumulate", if accumulate { "True" } else { "False" });
    rec.save("index", index)?;
    rec.save("source", source)?;
    let src_shape: Vec<i64> = source.shape().iter().map(|&d| d as i64).collect();
    let target = if in_place { x } else { &out };
    finish(rec, "PutBackward0", target, in_place, Box::new(move |ctx| {
        let (g, index, source) = (ctx.grad(), ctx.saved(0), ctx.saved(1));
        let gx = if !ctx.needs(0) {
            None
        } else if accumulate {
            Some(g.clone())
        } else {
            Some(put(g, index, &fm::zeros_like(source)?, false, false)?)
        };
        let gs = if ctx.needs(1) { Some(views::reshape(&take(g, index)?, &src_shape)?) } else { None };
        Ok(vec![gx, gs])
    }))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use super::super::test_util::{ar, ix};
    use crate::ops::reduce::testing::*;

    #[test]
    fn take_reads_the_logical_order_and_wraps_negatives() {
        let x = views::t_raw(&ar(6, &[2, 3])).unwrap(); // [[0, 3], [1, 4], [2, 5]]
        let got = take_raw(&x, &ix(vec![1, -1, 0, 2], &[2, 2])).unwrap();
        assert_eq!((got.shape().to_vec(), got.to_vec::<f32>().unwrap()), (vec![2, 2], vec![3., 5., 0., 1.]));
        let e = take_raw(&x, &ix(vec![6], &[1])).unwrap_err();
        assert_eq!((matches!(e, Error::Index(_)), e.to_string()), (true, "out of range: tried to access index 6 on a tensor of 6 elements.".into()));
    }

    #[test]
    fn put_writes_through_strides_and_accumulates() {
        let x = views::t_raw(&ar(6, &[2, 3])).unwrap().fresh_handle();
        put_raw(&x, &ix(vec![1, 1], &[2]), &Tensor::from_vec(vec![7f32, 8.], &[2]).unwrap(), true, true).unwrap();
        assert_eq!(x.to_vec::<f32>().unwrap(), vec![0., 18., 1., 4., 2., 5.]);
        let y = put_raw(&x, &ix(vec![0, 0], &[2]), &Tensor::from_vec(vec![7f32, 8.], &[2]).unwrap(), false, false).unwrap();
        assert_eq!(y.to_vec::<f32>().unwrap()[0], 8.); // the last of repeated positions wins
    }

    #[test]
    fn take_and_put_pass_gradcheck() {
        let x = rand_leaf(&[3, 4], 3);
        let s = rand_leaf(&[2, 2], 4);
        let i = ix(vec![0, 5, 5, -1], &[2, 2]);
        gradcheck("take", &|t| take(&t[0], &i), &[x.clone()], true);
        // without accumulate a repeated position keeps only its last source element, which
        // torch's formula (and so this one) ignores: checked on distinct positions
        let distinct = ix(vec![0, 5, 7, -1], &[2, 2]);
        gradcheck("put", &|t| put(&t[0], &distinct, &t[1], false, false), &[x.clone(), s.clone()], true);
        gradcheck("put accumulate", &|t| put(&t[0], &i, &t[1], true, false), &[x.clone(), s.clone()], true);
        assert_eq!(node_name(&take(&x, &i).unwrap()), "TakeBackward0");
    }
}
