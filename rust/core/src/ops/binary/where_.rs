//! `torch.where(cond, a, b)` and WhereBackward0 (saves only the condition).

use crate::dtype::{result_type, DType};
use crate::error::{Error, Result};
use crate::kernels::elementwise::zip3;
use crate::kernels::Arg as K;
use crate::kernels::TensorArg;
use crate::ops::{broadcast_strides, Arg};
use crate::shape::broadcast_all;
use crate::tensor::Tensor;
use super::output_like;

/// `torch.where(cond, a, b)`.
pub fn where_raw(cond: &Tensor, a: &Arg, b: &Arg) -> Result<Tensor> {
    if cond.dtype() != DType::Bool {
        return Err(Error::Runtime(format!(
            "where expected condition to be a boolean tensor, but got a tensor with dtype {}",
            cond.dtype().scalar_type_name()
        )));
    }
    let shape = broadcast_all(&[cond.shape(), a.shape(), b.shape()])?;
    let dtype = result_type(&[a.promotion(), b.promotion()]);
    let out = output_like(None, &shape, Some(cond), &[a, b], dtype, dtype)?;
    let (ta, tb) = (a.as_tensor(dtype)?, b.as_tensor(dtype)?);
    crate::device::backend_for(&[&out, cond, &ta, &tb])?.where_(&out, cond, &ta, &tb)?;
    Ok(out)
}

/// The CPU backend's `where_`.
pub(crate) fn cpu_kernel(out: &Tensor, cond: &Tensor, ta: &Tensor, tb: &Tensor) {
    let shape = out.shape();
    let (sc, sa, sb) = (broadcast_strides(cond, shape), broadcast_strides(ta, shape), broadcast_strides(tb, shape));
    crate::dispatch!(out.dtype(), T => {
        // SAFETY: out is fresh; inputs are read only.
        unsafe {
            zip3::<bool, T, T, T>(shape, K::of(out), K::broadcast(cond, &sc), K::broadcast(ta, &sa), K::broadcast(tb, &sb),
                |c, x, y| if c { x } else { y })
        }
    });
}

/// Differentiable `where(cond, a, b)`: WhereBackward0 saves only the condition.
pub fn where_(cond: &Tensor, a: &Arg, b: &Arg) -> Result<Tensor> {
    crate::autograd::precheck(&[a.tensor(), b.tensor()])?;
    let out = where_raw(cond, a, b)?;
    let Some(mut rec) = crate::autograd::Recorder::new(&[None, a.tensor(), b.tensor()])? else { return Ok(out) };
    rec.save("condition", cond)?;
    let (sa, sb) = (a.shape().to_vec(), b.shape().to_vec());
    rec.finish("WhereBackward0", &[&out], Box::new(move |ctx| {
        use crate::ops::formulas::*;
        let (g, c) = (ctx.grad(), ctx.saved(0));
        let ga = if ctx.needs(1) { Some(sum_to(&zero_where(g, &crate::ops::unary::unary_raw(crate::ops::unary::UnaryOp::LogicalNot, c)?)?, &sa)?) } else { None };
        let gb = if ctx.needs(2) { Some(sum_to(&zero_where(g, c)?, &sb)?) } else { None };
        Ok(vec![None, ga, gb])
    }))?;
    Ok(out)
}
