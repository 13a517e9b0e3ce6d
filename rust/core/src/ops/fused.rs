//! Pointwise ops of three operands: `addcmul`, `addcdiv`, `lerp` (each with its in-place `_`
//! variant), composed of the binary ops in the order torch's CPU kernels compute them
//! (`self + (value * t1) * t2`, `self + (value * t1) / t2`; lerp's two formulas split at
//! |weight| = 0.5), recorded as one node each: AddcmulBackward0, AddcdivBackward0,
//! LerpBackward0 (number weight) / LerpBackward1 (tensor weight).
//!
//! Types: addcmul/addcdiv promote their three tensors (torch's ternary TensorIterator), with
//! `value` taken in that type; lerp wants one floating dtype for all its tensors.

use crate::ops::formulas as fm;
use crate::autograd::Recorder;
use crate::dtype::{check_castable, result_type, DType, Operand, Scalar};
use crate::error::{Error, Result};
use crate::ops::binary::{binary_raw, where_raw, BinaryOp};
use crate::ops::copy::{cast_input, cast_layout, copy_inplace_raw, copy_kernel, empty_with_layout, iterator_layout};
use crate::ops::reduce::py_number;
use crate::ops::unary::{unary_raw, UnaryOp};
use crate::ops::write::{assert_no_partial_overlap, check_no_internal_overlap};
use crate::ops::Arg;
use crate::shape::{broadcast_shapes, check_inplace_shape};
use crate::tensor::Tensor;

fn t(x: &Tensor) -> Arg {
    Arg::Tensor(x.clone())
}

fn operand(x: &Tensor) -> Operand {
    if x.ndim() == 0 { Operand::ZeroDim(x.dtype()) } else { Operand::Dimensioned(x.dtype()) }
}

/// `r` laid out as torch's TensorIterator lays out the result over `inputs` (cast to `dtype`).
fn iterator_result(r: Tensor, inputs: &[&Tensor], dtype: DType) -> Result<Tensor> {
    let layouts: Vec<_> = inputs.iter().map(|x| cast_layout(x, dtype)).collect();
    let refs: Vec<_> = layouts.iter().collect();
    let layout = iterator_layout(r.shape(), &refs);
    if layout.strides == r.layout.strides {
        return Ok(r);
    }
    let out = empty_with_layout(&layout, r.dtype(), r.device())?;
    copy_kernel(&out, &r)?;
    Ok(out)
}

/// Checks an in-place write of a result shaped `shape` and typed `dtype` into `x`, in torch's
/// order: overlap, then shape, then the cast.
fn check_inplace(x: &Tensor, others: &[&Tensor], shape: &[usize], dtype: DType) -> Result<()> {
    check_no_internal_overlap(x)?;
    for o in others {
        assert_no_partial_overlap(x, o)?;
    }
    check_inplace_shape(x.shape(), shape)?;
    check_castable(dtype, x.dtype())
}

// ----- addcmul / addcdiv -----

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Addc {
    Mul,
    Div,
}

impl Addc {
    fn node(self) -> &'static str {
        match self {
            Addc::Mul => "AddcmulBackward0",
            Addc::Div => "AddcdivBackward0",
        }
    }
}

const INT_ADDCDIV: &str = "Integer division with addcdiv is no longer supported, and in a future  release addcdiv will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all dtypes.";

/// `value` as the kernel sees it in `dtype` (torch's `value.to<scalar_t>()`: truncated for ints).
fn value_as(value: Scalar, dtype: DType) -> Scalar {
    if dtype.is_floating() { Scalar::Float(value.to_f64()) } else { Scalar::Int(value.to_f64().trunc() as i64) }
}

/// The checks and the common dtype and shape of addcmul/addcdiv.
fn addc_setup(op: Addc, x: &Tensor, t1: &Tensor, t2: &Tensor) -> Result<(DType, Vec<usize>)> {
    if op == Addc::Div && t1.dtype().is_integral(true) && t2.dtype().is_integral(true) {
        return Err(Error::Runtime(INT_ADDCDIV.into()));
    }
    let shape = broadcast_shapes(&broadcast_shapes(x.shape(), t1.shape())?, t2.shape())?;
    Ok((result_type(&[operand(x), operand(t1), operand(t2)]), shape))
}

fn addc_compute(op: Addc, x: &Tensor, t1: &Tensor, t2: &Tensor, value: Scalar, dtype: DType) -> Result<Tensor> {
    if dtype == DType::Bool {
        return Err(Error::NotImplemented("\"addcmul_cpu_out\" not implemented for 'Bool'".into()));
    }
    let scaled = binary_raw(BinaryOp::Mul, &t(&cast_input(t1, dtype)?), &Arg::Scalar(value_as(value, dtype)), None)?;
    let combine = if op == Addc::Mul { BinaryOp::Mul } else { BinaryOp::Div };
    let term = binary_raw(combine, &t(&scaled), &t(&cast_input(t2, dtype)?), None)?;
    binary_raw(BinaryOp::Add, &t(&cast_input(x, dtype)?), &t(&term), None)
}

/// `addcmul(self, t1, t2, value=)` / `addcdiv` without autograd.
pub fn addc_raw(op: Addc, x: &Tensor, t1: &Tensor, t2: &Tensor, value: Scalar) -> Result<Tensor> {
    let (dtype, _) = addc_setup(op, x, t1, t2)?;
    let r = addc_compute(op, x, t1, t2, value, dtype)?;
    iterator_result(r, &[x, t1, t2], dtype)
}

/// `self.addcmul_(t1, t2, value=)` / `addcdiv_` without autograd (through the write path).
pub fn addc_inplace_raw(op: Addc, x: &Tensor, t1: &Tensor, t2: &Tensor, value: Scalar) -> Result<()> {
    let (dtype, shape) = addc_setup(op, x, t1, t2)?;
    check_inplace(x, &[t1, t2], &shape, dtype)?;
    let r = addc_compute(op, x, t1, t2, value, dtype)?;
    copy_inplace_raw(x, &r)
}

/// The gradients of addcmul/addcdiv (derivatives.yaml): self gets `grad`; for addcmul
/// `t1: grad * t2 * value`, `t2: grad * t1 * value`; for addcdiv `t1: grad * (value / t2)`,
/// `t2: -grad * (value * t1 / (t2 * t2))`.
fn addc_formula(op: Addc, value: f64) -> crate::autograd::Formula {
    Box::new(move |ctx| {
        let g = ctx.grad();
        let mut saved = ctx.saved.iter();
        // saved in this order: tensor1 (when t2 needs it), tensor2 (when t1 or t2 needs it)
        let t1 = if ctx.needs(2) { saved.next() } else { None };
        let t2 = if ctx.needs(1) || (op == Addc::Div && ctx.needs(2)) { saved.next() } else { None };
        let gx = ctx.needs(0).then(|| g.clone());
        let (g1, g2) = match op {
            Addc::Mul => (
                t2.map(|t2| fm::mul(g, &fm::mul_s(t2, value)?)).transpose()?,
                t1.map(|t1| fm::mul(g, &fm::mul_s(t1, value)?)).transpose()?,
            ),
            Addc::Div => {
                let g1 = match (ctx.needs(1), t2) {
                    (true, Some(t2)) => Some(fm::mul(g, &fm::div(&scalar_like(value, t2)?, t2)?)?),
                    _ => None,
                };
                let g2 = match (t1, t2) {
                    (Some(t1), Some(t2)) => Some(fm::mul(&fm::neg(g)?, &fm::div(&fm::mul_s(t1, value)?, &fm::mul(t2, t2)?)?)?),
                    _ => None,
                };
                (g1, g2)
            }
        };
        Ok(vec![gx, g1, g2])
    })
}

/// `value` as a 0-d tensor of `like`'s dtype (the numerator of `value / t2`).
fn scalar_like(value: f64, like: &Tensor) -> Result<Tensor> {
    Tensor::scalar(Scalar::Float(value), like.dtype())
}

fn addc_save(op: Addc, rec: &mut Recorder, t1: &Tensor, t2: &Tensor, value: Scalar) -> Result<()> {
    if rec.needs(2) {
        rec.save("tensor1", t1)?;
    }
    if rec.needs(1) || (op == Addc::Div && rec.needs(2)) {
        rec.save("tensor2", t2)?;
    }
    rec.value("value", py_number(value));
    Ok(())
}

/// Differentiable `addcmul` / `addcdiv`.
pub fn addc(op: Addc, x: &Tensor, t1: &Tensor, t2: &Tensor, value: Scalar) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x), Some(t1), Some(t2)])?;
    let out = addc_raw(op, x, t1, t2, value)?;
    let Some(mut rec) = Recorder::new(&[Some(x), Some(t1), Some(t2)])? else { return Ok(out) };
    addc_save(op, &mut rec, t1, t2, value)?;
    rec.finish(op.node(), &[&out], addc_formula(op, value.to_f64()))?;
    Ok(out)
}

/// Differentiable `self.addcmul_(t1, t2, value=)` / `addcdiv_`.
pub fn addc_(op: Addc, x: &Tensor, t1: &Tensor, t2: &Tensor, value: Scalar) -> Result<()> {
    let _blame = crate::autograd::blame::op(if op == Addc::Mul { "addcmul_" } else { "addcdiv_" });
    let rec = Recorder::inplace(x, &[Some(t1), Some(t2)])?;
    let rec = match rec {
        Some(mut rec) => {
            addc_save(op, &mut rec, t1, t2, value)?;
            Some(rec)
        }
        None => None,
    };
    addc_inplace_raw(op, x, t1, t2, value)?;
    match rec {
        Some(rec) => rec.finish_inplace(op.node(), x, addc_formula(op, value.to_f64())),
        None => Ok(()),
    }
}

// ----- lerp -----

/// lerp's weight: a number (LerpBackward0) or a tensor (LerpBackward1).
fn check_same_dtype(x: &Tensor, other: &Tensor, what: &str) -> Result<()> {
    if x.dtype() != other.dtype() {
        return Err(Error::Runtime(format!(
            "expected dtype {} for `{}` but got dtype {}",
            x.dtype().type_meta_name(),
            what,
            other.dtype().type_meta_name()
        )));
    }
    Ok(())
}

/// lerp's checks in torch's order (dtypes, shapes, then the kernel's dtype): its shape and the
/// dtype it computes in. `end` must have self's dtype; so must a tensor weight, unless it is 0-d:
/// then the three are promoted together (a 0-d float64 weight of 0-d float32 tensors gives
/// float64).
fn lerp_setup(x: &Tensor, end: &Tensor, weight: &Arg) -> Result<(Vec<usize>, DType)> {
    check_same_dtype(x, end, "end")?;
    let mut dtype = x.dtype();
    if let Arg::Tensor(w) = weight {
        if w.ndim() == 0 {
            dtype = result_type(&[operand(x), operand(end), operand(w)]);
        } else {
            check_same_dtype(x, w, "weight")?;
        }
    }
    let mut shape = broadcast_shapes(x.shape(), end.shape())?;
    if let Arg::Tensor(w) = weight {
        shape = broadcast_shapes(&shape, w.shape())?;
    }
    if !dtype.is_floating() {
        let kernel = if matches!(weight, Arg::Tensor(_)) { "lerp_kernel_tensor" } else { "lerp_kernel_scalar" };
        return Err(Error::NotImplemented(format!("\"{}\" not implemented for '{}'", kernel, dtype.scalar_type_name())));
    }
    Ok((shape, dtype))
}

/// torch's lerp in `dtype`: `self + w * (end - self)` where |w| < 0.5, else
/// `end - (end - self) * (1 - w)` (the second keeps lerp exact at w = 1).
fn lerp_compute(x: &Tensor, end: &Tensor, weight: &Arg, dtype: DType) -> Result<Tensor> {
    let (x, end) = (cast_input(x, dtype)?, cast_input(end, dtype)?);
    let diff = binary_raw(BinaryOp::Sub, &t(&end), &t(&x), None)?;
    match weight {
        Arg::Scalar(w) => {
            // the weight as the kernel sees it: rounded to the compute dtype
            let w = if dtype == DType::Float32 { w.to_f64() as f32 as f64 } else { w.to_f64() };
            if w.abs() < 0.5 {
                let step = binary_raw(BinaryOp::Mul, &t(&diff), &Arg::Scalar(Scalar::Float(w)), None)?;
                binary_raw(BinaryOp::Add, &t(&x), &t(&step), None)
            } else {
                let step = binary_raw(BinaryOp::Mul, &t(&diff), &Arg::Scalar(Scalar::Float(1.0 - w)), None)?;
                binary_raw(BinaryOp::Sub, &t(&end), &t(&step), None)
            }
        }
        Arg::Tensor(w) => {
            let w = cast_input(w, dtype)?;
            let small = binary_raw(BinaryOp::Lt, &t(&unary_raw(UnaryOp::Abs, &w)?), &Arg::Scalar(Scalar::Float(0.5)), None)?;
            let near = binary_raw(BinaryOp::Add, &t(&x), &t(&binary_raw(BinaryOp::Mul, &t(&w), &t(&diff), None)?), None)?;
            let one_minus = binary_raw(BinaryOp::Sub, &Arg::Scalar(Scalar::Float(1.0)), &t(&w), None)?;
            let far = binary_raw(BinaryOp::Sub, &t(&end), &t(&binary_raw(BinaryOp::Mul, &t(&diff), &t(&one_minus), None)?), None)?;
            where_raw(&small, &t(&near), &t(&far))
        }
    }
}

/// `lerp(self, end, weight)` without autograd.
pub fn lerp_raw(x: &Tensor, end: &Tensor, weight: &Arg) -> Result<Tensor> {
    let (_, dtype) = lerp_setup(x, end, weight)?;
    let r = lerp_compute(x, end, weight, dtype)?;
    match weight {
        Arg::Tensor(w) => iterator_result(r, &[x, end, w], dtype),
        Arg::Scalar(_) => iterator_result(r, &[x, end], dtype),
    }
}

/// `self.lerp_(end, weight)` without autograd (through the write path).
pub fn lerp_inplace_raw(x: &Tensor, end: &Tensor, weight: &Arg) -> Result<()> {
    let (shape, dtype) = lerp_setup(x, end, weight)?;
    let others: Vec<&Tensor> = [Some(end), weight.tensor()].into_iter().flatten().collect();
    check_inplace(x, &others, &shape, dtype)?;
    let r = lerp_compute(x, end, weight, dtype)?;
    copy_inplace_raw(x, &r)
}

/// Saves what lerp's formulas read: for a tensor weight, the weight (for self and end) and
/// self and end (for the weight); `old_self` is self before an in-place write.
fn lerp_save(rec: &mut Recorder, old_self: &Tensor, end: &Tensor, weight: &Arg) -> Result<()> {
    match weight {
        Arg::Scalar(w) => rec.value("weight", py_number(*w)),
        Arg::Tensor(w) => {
            if rec.needs(0) || rec.needs(1) {
                rec.save("weight", w)?;
            }
            if rec.needs(2) {
                rec.save("end", end)?;
                rec.save("self", old_self)?;
            }
        }
    }
    Ok(())
}

fn lerp_node(weight: &Arg) -> &'static str {
    if matches!(weight, Arg::Tensor(_)) { "LerpBackward1" } else { "LerpBackward0" }
}

/// lerp's gradients: `self: grad * (1 - weight)`, `end: grad * weight`,
/// `weight: grad * (end - self)`.
fn lerp_formula(weight: &Arg) -> crate::autograd::Formula {
    let number = match weight {
        Arg::Scalar(w) => Some(w.to_f64()),
        Arg::Tensor(_) => None,
    };
    Box::new(move |ctx| {
        let g = ctx.grad();
        if let Some(w) = number {
            let gx = ctx.needs(0).then(|| fm::mul_s(g, 1.0 - w)).transpose()?;
            let ge = ctx.needs(1).then(|| fm::mul_s(g, w)).transpose()?;
            return Ok(vec![gx, ge]);
        }
        let mut saved = ctx.saved.iter();
        let w = if ctx.needs(0) || ctx.needs(1) { saved.next() } else { None };
        let (end, x) = if ctx.needs(2) { (saved.next(), saved.next()) } else { (None, None) };
        let gx = match (ctx.needs(0), w) {
            (true, Some(w)) => Some(fm::mul(g, &fm::rsub_s(w, 1.0)?)?),
            _ => None,
        };
        let ge = match (ctx.needs(1), w) {
            (true, Some(w)) => Some(fm::mul(g, w)?),
            _ => None,
        };
        let gw = match (end, x) {
            (Some(end), Some(x)) => Some(fm::mul(g, &fm::sub(end, x)?)?),
            _ => None,
        };
        Ok(vec![gx, ge, gw])
    })
}

/// Differentiable `lerp(self, end, weight)`.
pub fn lerp(x: &Tensor, end: &Tensor, weight: &Arg) -> Result<Tensor> {
    let inputs = [Some(x), Some(end), weight.tensor()];
    let inputs = if weight.tensor().is_some() { &inputs[..] } else { &inputs[..2] };
    crate::autograd::precheck(inputs)?;
    let out = lerp_raw(x, end, weight)?;
    let Some(mut rec) = Recorder::new(inputs)? else { return Ok(out) };
    lerp_save(&mut rec, x, end, weight)?;
    rec.finish(lerp_node(weight), &[&out], lerp_formula(weight))?;
    Ok(out)
}

/// Differentiable `self.lerp_(end, weight)`: the weight's gradient reads self before the write
/// (a copy, as torch's `self.clone()`).
pub fn lerp_(x: &Tensor, end: &Tensor, weight: &Arg) -> Result<()> {
    let _blame = crate::autograd::blame::op("lerp_");
    let operands = [Some(end), weight.tensor()];
    let operands = if weight.tensor().is_some() { &operands[..] } else { &operands[..1] };
    let rec = Recorder::inplace(x, operands)?;
    let rec = match rec {
        Some(mut rec) => {
            let old = if rec.needs(2) { crate::ops::copy::clone(x)? } else { x.clone() };
            lerp_save(&mut rec, &old, end, weight)?;
            Some(rec)
        }
        None => None,
    };
    lerp_inplace_raw(x, end, weight)?;
    match rec {
        Some(rec) => rec.finish_inplace(lerp_node(weight), x, lerp_formula(weight)),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    #[test]
    fn values_and_dtypes() {
        let i = Tensor::from_vec(vec![1i64, 2, 3, 4], &[2, 2]).unwrap();
        let r = addc_raw(Addc::Mul, &i, &i, &i, Scalar::Float(0.5)).unwrap();
        assert_eq!((r.dtype(), r.to_vec::<i64>().unwrap()), (DType::Int64, vec![1, 2, 3, 4]));
        assert!(addc_raw(Addc::Div, &i, &i, &i, Scalar::Int(1)).unwrap_err().to_string().starts_with("Integer division with addcdiv"));
        let f = Tensor::from_vec(vec![1f32, 2., 3., 4.], &[2, 2]).unwrap();
        assert_eq!(addc_raw(Addc::Div, &f, &f, &f, Scalar::Int(2)).unwrap().to_vec::<f32>().unwrap(), vec![3., 4., 5., 6.]);
        let e = Tensor::from_vec(vec![10f32, -5., 7., 0.], &[2, 2]).unwrap();
        let l = lerp_raw(&f, &e, &Arg::Scalar(Scalar::Float(1.0))).unwrap();
        assert_eq!(l.to_vec::<f32>().unwrap(), vec![10., -5., 7., 0.]);
        assert_eq!(
            lerp_raw(&f, &i, &Arg::Scalar(Scalar::Float(0.5))).unwrap_err().to_string(),
            "expected dtype float for `end` but got dtype long int"
        );
    }

    #[test]
    fn fused_ops_pass_gradcheck() {
        let (a, b, c) = (rand_leaf(&[2, 3], 21), rand_leaf(&[3], 22), leaf(vec![1.5, -2.0, 0.75], &[3]));
        gradcheck("addcmul", &|t| addc(Addc::Mul, &t[0], &t[1], &t[2], Scalar::Float(0.5)), &[a.clone(), b.clone(), c.clone()], true);
        gradcheck("addcdiv", &|t| addc(Addc::Div, &t[0], &t[1], &t[2], Scalar::Int(-2)), &[a.clone(), b.clone(), c.clone()], true);
        gradcheck("lerp number", &|t| lerp(&t[0], &t[1], &Arg::Scalar(Scalar::Float(0.7))), &[a.clone(), b.clone()], true);
        gradcheck("lerp tensor", &|t| lerp(&t[0], &t[1], &Arg::Tensor(t[2].clone())), &[a.clone(), b.clone(), c.clone()], true);
        assert_eq!(node_name(&lerp(&a, &b, &Arg::Tensor(c.clone())).unwrap()), "LerpBackward1");
    }
}
