//! `sgn` / `sgn_`: for real tensors torch's sgn is `sign` (same kernel, same dtypes), with its
//! own node, SgnBackward0, which saves self and result and gives a zero gradient for real
//! inputs (its formula only does work for complex ones).

use crate::ops::formulas as fm;
use crate::autograd::Recorder;
use crate::error::Result;
use crate::ops::unary::{unary_inplace_raw, unary_raw, UnaryOp};
use crate::tensor::Tensor;

fn zero_gradient() -> crate::autograd::Formula {
    Box::new(|ctx| Ok(vec![Some(fm::zeros_like(ctx.grad())?)]))
}

/// Differentiable `sgn(x)`.
pub fn sgn(x: &Tensor) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    let out = unary_raw(UnaryOp::Sign, x)?;
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok(out) };
    rec.save("self", x)?;
    rec.save_output("result", &out, 0);
    rec.finish("SgnBackward0", &[&out], zero_gradient())?;
    Ok(out)
}

/// Differentiable `x.sgn_()`: self is saved as it was before the write (a copy), the result
/// is x itself.
pub fn sgn_(x: &Tensor) -> Result<()> {
    let _blame = crate::autograd::blame::op("sgn_");
    let rec = Recorder::inplace(x, &[])?;
    let old = if rec.is_some() { Some(crate::ops::copy::clone(x)?) } else { None };
    unary_inplace_raw(UnaryOp::Sign, x)?;
    let (Some(mut rec), Some(old)) = (rec, old) else { return Ok(()) };
    rec.save("self", &old)?;
    rec.save_output("result", x, 0);
    rec.finish_inplace("SgnBackward0", x, zero_gradient())
}
