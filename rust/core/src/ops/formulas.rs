//! Small differentiable building blocks that backward formulas are written in.
//!
//! Formulas use the same differentiable ops users call, so with `create_graph=True` the
//! backward pass itself is recorded and can be differentiated again (R55).

use crate::dtype::{DType, Scalar};
use crate::error::Result;
use crate::ops::binary::{self, BinaryOp};
use crate::ops::unary::{self, UnaryOp};
use crate::ops::{copy, reduce, views, Arg};
use crate::tensor::Tensor;

fn t(x: &Tensor) -> Arg {
    Arg::Tensor(x.clone())
}
fn s(v: f64) -> Arg {
    Arg::Scalar(Scalar::Float(v))
}

pub fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary::binary(BinaryOp::Add, &t(a), &t(b), None)
}
pub fn sub(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary::binary(BinaryOp::Sub, &t(a), &t(b), None)
}
pub fn mul(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary::binary(BinaryOp::Mul, &t(a), &t(b), None)
}
pub fn div(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary::binary(BinaryOp::Div, &t(a), &t(b), None)
}
pub fn mul_s(a: &Tensor, v: f64) -> Result<Tensor> {
    binary::binary(BinaryOp::Mul, &t(a), &s(v), None)
}
/// `a * v`, `a / v`, `a + v`, `a - v` as torch's C++ formulas write them (`Tensor op Scalar`):
/// the Scalar overloads, recorded as MulBackward1 / DivBackward1 / AddBackward1 / SubBackward1,
/// where the Python operator (`mul_s`, `add_s`: a wrapped number) records MulBackward0 / AddBackward0. The
/// number is applied in the tensor's dtype, as the 0-d wrapped number of `mul_s` is.
pub fn mul_c(a: &Tensor, v: f64) -> Result<Tensor> {
    scalar_overload(a, v, BinaryOp::Mul)
}
pub fn div_c(a: &Tensor, v: f64) -> Result<Tensor> {
    scalar_overload(a, v, BinaryOp::Div)
}
pub fn add_c(a: &Tensor, v: f64) -> Result<Tensor> {
    scalar_overload(a, v, BinaryOp::Add)
}
pub fn sub_c(a: &Tensor, v: f64) -> Result<Tensor> {
    scalar_overload(a, v, BinaryOp::Sub)
}

fn scalar_overload(a: &Tensor, v: f64, op: BinaryOp) -> Result<Tensor> {
    let out = binary::binary_raw(op, &t(a), &s(v), None)?;
    let Some(mut rec) = crate::autograd::Recorder::new(&[Some(a)])? else { return Ok(out) };
    let name = match op {
        BinaryOp::Mul => "MulBackward1",
        BinaryOp::Div => "DivBackward1",
        BinaryOp::Sub => "SubBackward1",
        _ => "AddBackward1",
    };
    if matches!(op, BinaryOp::Mul | BinaryOp::Div) {
        rec.value("other", crate::ops::reduce::py_number(Scalar::Float(v)));
    }
    // torch: grad * other, grad / other (Scalar overloads again), grad for add and sub
    rec.finish(name, &[&out], Box::new(move |ctx| {
        let g = ctx.grad();
        Ok(vec![Some(match op {
            BinaryOp::Mul => mul_c(g, v)?,
            BinaryOp::Div => div_c(g, v)?,
            _ => g.clone(),
        })])
    }))?;
    Ok(out)
}
pub fn add_s(a: &Tensor, v: f64) -> Result<Tensor> {
    binary::binary(BinaryOp::Add, &t(a), &s(v), None)
}
/// `v - a`
pub fn rsub_s(a: &Tensor, v: f64) -> Result<Tensor> {
    binary::binary(BinaryOp::Sub, &s(v), &t(a), None)
}
/// `v - a` as torch's C++ formulas write it (`Scalar - Tensor`: a tensor filled with `v`, then
/// `sub_(a)`): SubBackward0 in a recorded graph, where Python's `v - a` (`rsub_s`) is RsubBackward1.
pub fn filled_minus(v: f64, a: &Tensor) -> Result<Tensor> {
    sub(&add_c(&zeros_like(a)?, v)?, a)
}
pub fn pow_s(a: &Tensor, v: f64) -> Result<Tensor> {
    binary::binary(BinaryOp::Pow, &t(a), &s(v), None)
}
pub fn neg(a: &Tensor) -> Result<Tensor> {
    unary::unary(UnaryOp::Neg, a)
}
pub fn un(op: UnaryOp, a: &Tensor) -> Result<Tensor> {
    unary::unary(op, a)
}
/// `where(cond, a, b)` with tensor branches.
pub fn where_t(cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary::where_(cond, &t(a), &t(b))
}
/// `a` where `cond` is false, 0 where it is true.
pub fn zero_where(a: &Tensor, cond: &Tensor) -> Result<Tensor> {
    binary::masked_fill(a, cond, &Arg::Scalar(Scalar::Float(0.0)), false)
}

/// A comparison as a bool mask (not differentiable, so computed raw).
pub fn cmp(op: BinaryOp, a: &Tensor, b: &Arg) -> Result<Tensor> {
    binary::binary_raw(op, &t(a), b, None)
}
pub fn cmp_s(op: BinaryOp, a: &Tensor, v: f64) -> Result<Tensor> {
    cmp(op, a, &s(v))
}

pub fn zeros(shape: &[usize], dtype: DType, device: crate::device::Device) -> crate::error::Result<Tensor> {
    copy::zeros_raw(shape, dtype, device)
}
pub fn zeros_like(a: &Tensor) -> crate::error::Result<Tensor> {
    copy::zeros_raw(a.shape(), a.dtype(), a.device())
}

pub fn cast(a: &Tensor, dtype: DType) -> Result<Tensor> {
    copy::to_dtype(a, dtype)
}

/// Sums a gradient back to the shape of a broadcast input (torch's `sum_to`): leading dims,
/// then dims that were 1 in `shape`.
pub fn sum_to(g: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if g.shape() == shape {
        return Ok(g.clone());
    }
    // torch's `sum_to` node for node (graphs of the backward show them): a 0-d target is
    // `g.sum()`; otherwise one keepdim sum, and a view only when leading dims go
    if shape.is_empty() {
        return reduce::sum(g, None, false, None);
    }
    let lead = g.ndim() - shape.len();
    let mut dims: Vec<i64> = (0..lead as i64).collect();
    for (i, &d) in shape.iter().enumerate() {
        if d == 1 && g.shape()[lead + i] != 1 {
            dims.push((lead + i) as i64);
        }
    }
    let r = if dims.is_empty() { g.clone() } else { reduce::sum(g, Some(&dims), true, None)? };
    if lead == 0 {
        return Ok(r);
    }
    let target: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    views::view(&r, &target).or_else(|_| views::reshape(&r, &target))
}

/// Expands `g` back over reduced dims (`keepdim=False` dims are re-inserted first).
pub fn expand_back(g: &Tensor, shape: &[usize], dims: &[usize], keepdim: bool) -> Result<Tensor> {
    let mut g = g.clone();
    if !keepdim {
        let mut sorted = dims.to_vec();
        sorted.sort_unstable();
        for d in sorted {
            g = views::unsqueeze(&g, d as i64)?;
        }
    }
    let target: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    views::expand(&g, &target)
}
