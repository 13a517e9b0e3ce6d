//! `logsumexp`: shifted by each output's max; LogsumexpBackward0 is `grad * exp(self - result)`.

use crate::autograd::formulas as fm;
use crate::autograd::Recorder;
use crate::dtype::DType;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::kernels::parallel::SendPtr;
use crate::kernels::reducers::{Extreme, LogSumExp};
use crate::ops::copy::cast_input;
use crate::ops::unary::UnaryOp;
use crate::tensor::Tensor;
use crate::dispatch_float;
use std::marker::PhantomData;
use super::{dim_mask, out_ptr, py_bool, py_ints, reduced_dims, reduced_shape, run, unsqueeze_dims, DimCheck};

/// `logsumexp(dim, keepdim)`: integer inputs compute in the default float dtype.
pub fn logsumexp_raw(x: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
    let x = if x.dtype().is_floating() { x.clone() } else { cast_input(x, DType::Float32)? };
    let mask = dim_mask(Some(dims), x.ndim(), true, DimCheck::WrapAllFirst)?;
    if dims.is_empty() && x.numel() != 0 && x.ndim() > 0 && !keepdim {
        // torch adds the kept-dim maxima ([1, ..., 1]) in place into the 0-d sum and fails.
        return Err(Error::Runtime(format!(
            "output with shape [] doesn't match the broadcast shape {}",
            crate::error::fmt_shape(&vec![1; x.ndim()])
        )));
    }
    let out = Tensor::empty(&reduced_shape(x.shape(), &mask, keepdim), x.dtype())?;
    let out_numel = out.numel();
    dispatch_float!(x.dtype(), T => {
        // Shift by each output's max, except where it is infinite (torch masks those to 0).
        let shifts: Vec<f64> = if x.numel() == 0 {
            crate::alloc::try_vec(out_numel, 0.0)?
        } else {
            let mut maxes = crate::alloc::try_vec(out_numel, T::zero())?;
            run(Extreme::<T, true> { out: SendPtr(maxes.as_mut_ptr()) }, &x, &mask);
            maxes.iter().map(|&m| if m.to_f64().is_infinite() { 0.0 } else { m.to_f64() }).collect()
        };
        let r = LogSumExp::<T, T> { shifts: &shifts, out: SendPtr(out_ptr::<T>(&out)), _t: PhantomData };
        run(r, &x, &mask);
    }, _ => unreachable!("cast to float above"));
    Ok(out)
}

/// Differentiable `logsumexp` (LogsumexpBackward0): `grad * exp(self - result)`.
pub fn logsumexp(x: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(x)])?;
    let out = logsumexp_raw(x, dims, keepdim)?;
    let Some(mut rec) = rec else { return Ok(out) };
    rec.value("dim", py_ints(dims));
    rec.value("keepdim", py_bool(keepdim));
    rec.save("self", x)?;
    rec.save_output("result", &out, 0);
    let rd = reduced_dims(x.ndim(), Some(dims), DimCheck::WrapAllFirst)?;
    rec.finish("LogsumexpBackward0", &[&out], Box::new(move |ctx| {
        let (x, r) = (ctx.saved(0), ctx.saved(1));
        let (g, r) = if x.ndim() != 0 { (unsqueeze_dims(ctx.grad(), &rd, keepdim)?, unsqueeze_dims(r, &rd, keepdim)?) } else { (ctx.grad().clone(), r.clone()) };
        Ok(vec![Some(fm::mul(&g, &fm::un(UnaryOp::Exp, &fm::sub(x, &r)?)?)?)])
    }))?;
    Ok(out)
}

#[cfg(test)]
mod grad_tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    #[test]
    fn logsumexp_gradient() {
        let w = leaf(vec![0., (2.0f64).ln()], &[2]);
        let l = logsumexp(&w, &[0], false).unwrap();
        assert_eq!(node_name(&l), "LogsumexpBackward0");
        backward(&l, None);
        assert!(close(&grad(&w), &[1.0 / 3.0, 2.0 / 3.0]));
    }

}
