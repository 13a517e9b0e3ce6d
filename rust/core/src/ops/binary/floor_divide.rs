//! `floor_divide` (`//`): `div(rounding_mode='floor')`'s values, but no derivative. torch has
//! none in derivatives.yaml, so its autograd fallback records a `torch::autograd::NotImplemented`
//! node (edges only to the inputs that require grad) whose backward raises "derivative for
//! aten::floor_divide is not implemented" (`aten::floor_divide_` for the in-place form).
//! `div(..., rounding_mode='floor')` keeps its DivBackward2 of zeros.

use super::arithmetic::{binary_inplace_raw, binary_raw};
use super::BinaryOp;
use crate::autograd::precheck;
use crate::autograd::Recorder;
use crate::error::{Error, Result};
use crate::ops::Arg;
use crate::tensor::Tensor;

/// The node name torch's fallback gives (`grad_fn.name()`).
pub const NOT_IMPLEMENTED_NODE: &str = "torch::autograd::NotImplemented";

fn not_implemented(op: &'static str) -> crate::autograd::Formula {
    Box::new(move |_| Err(Error::Runtime(format!("derivative for aten::{} is not implemented", op))))
}

/// Differentiable-looking `floor_divide(a, b)`: values of `div(a, b, rounding_mode='floor')`.
pub fn floor_divide(a: &Arg, b: &Arg) -> Result<Tensor> {
    precheck(&[a.tensor(), b.tensor()])?;
    let out = binary_raw(BinaryOp::DivFloor, a, b, None)?;
    // the fallback's edges: the tensor inputs that require grad, in order
    let wanting: Vec<Option<&Tensor>> = [a.tensor(), b.tensor()].into_iter().filter(|t| t.is_some_and(|t| t.requires_grad())).collect();
    if let Some(rec) = Recorder::new(&wanting)? {
        rec.finish(NOT_IMPLEMENTED_NODE, &[&out], not_implemented("floor_divide"))?;
    }
    Ok(out)
}

/// `a.floor_divide_(b)`: the in-place rules as any in-place op, then the fallback's node.
pub fn floor_divide_(a: &Tensor, b: &Arg) -> Result<()> {
    let _blame = crate::autograd::blame::op("floor_divide_");
    let rec = Recorder::inplace(a, &[b.tensor()])?;
    binary_inplace_raw(BinaryOp::DivFloor, a, b, None)?;
    if let Some(rec) = rec {
        // a plain (non-view) self that needs no grad gets no edge, as in torch's fallback
        let rec = if a.is_view() { rec } else { rec.without_unused_edges() };
        rec.finish_inplace(NOT_IMPLEMENTED_NODE, a, not_implemented("floor_divide_"))?;
    }
    Ok(())
}
