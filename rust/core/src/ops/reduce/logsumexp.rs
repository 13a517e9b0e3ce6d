//! `logsumexp`: shifted by each output's max; LogsumexpBackward0 is `grad * exp(self - result)`.

use crate::ops::formulas as fm;
use crate::autograd::Recorder;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::copy::cast_input;
use crate::ops::unary::UnaryOp;
use crate::tensor::Tensor;
use super::{dim_mask, launch, new_out, py_bool, py_ints, reduced_dims, reduced_shape, unsqueeze_dims, DimCheck, Reduction};

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
    let out = new_out(&x, &reduced_shape(x.shape(), &mask, keepdim), x.dtype())?;
    launch(Reduction::LogSumExp, Some(&out), None, &x, &mask)?;
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
