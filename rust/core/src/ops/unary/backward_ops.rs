//! torch's activation backward ops (`tanh_backward`, `sigmoid_backward`, `threshold_backward`,
//! `leaky_relu_backward`, `elu_backward`, `gelu_backward`) as differentiable ops of their own.
//!
//! torch's first-order formula for `tanh` is not a chain of multiplies but one op,
//! `tanh_backward(grad, result)`, with its own entry in derivatives.yaml. So with
//! `create_graph=True` a gradient's `grad_fn` is `TanhBackwardBackward0` (inputs: the incoming
//! gradient and the saved result), and differentiating again runs that entry's formulas. For
//! `relu` it matters beyond names: `threshold_backward(grad, result, 0)` is differentiable in
//! `result` (its derivative is zero), so the gradient requires grad and a second `grad` call
//! returns zeros; a masked copy of `grad` would not require grad, and the second call would
//! raise "element 0 of tensors does not require grad".
//!
//! The value is the first-order backward the op always had (the fused kernel, or the composite
//! formula where the fused kernel does not apply), computed unrecorded; the node is recorded
//! around it.

use super::{elu_scalar, ParamUnary, UnaryOp};
use crate::autograd::Recorder;
use crate::error::Result;
use crate::ops::formulas::*;
use crate::tensor::Tensor;

/// One of torch's backward ops: the forward op whose derivative it is, and its parameters.
#[derive(Debug, Clone, Copy)]
pub(crate) enum BackwardOp {
    /// `tanh_backward(grad_output, output)`
    Tanh,
    /// `sigmoid_backward(grad_output, output)`
    Sigmoid,
    /// relu's `threshold_backward(grad_output, self = result, threshold = 0)`
    Threshold,
    /// `leaky_relu_backward(grad_output, self, negative_slope, self_is_result)`
    LeakyRelu(f64, bool),
    /// `elu_backward(grad_output, alpha, scale, input_scale, is_result, self_or_result)` (elu,
    /// selu and celu)
    Elu { alpha: f64, scale: f64, input_scale: f64, is_result: bool },
    /// `gelu_backward(grad_output, self, approximate)`; true: approximate = "tanh"
    Gelu(bool),
}

impl BackwardOp {
    /// The backward op behind `op`'s first-order formula, if torch has one.
    pub(crate) fn of(op: UnaryOp) -> Option<BackwardOp> {
        Some(match op {
            UnaryOp::Tanh => BackwardOp::Tanh,
            UnaryOp::Sigmoid => BackwardOp::Sigmoid,
            UnaryOp::Relu => BackwardOp::Threshold,
            UnaryOp::Gelu => BackwardOp::Gelu(false),
            UnaryOp::GeluTanh => BackwardOp::Gelu(true),
            _ => return None,
        })
    }

    fn node(self) -> &'static str {
        match self {
            BackwardOp::Tanh => "TanhBackwardBackward0",
            BackwardOp::Sigmoid => "SigmoidBackwardBackward0",
            BackwardOp::Threshold => "ThresholdBackwardBackward0",
            BackwardOp::LeakyRelu(..) => "LeakyReluBackwardBackward0",
            BackwardOp::Elu { .. } => "EluBackwardBackward0",
            BackwardOp::Gelu(_) => "GeluBackwardBackward0",
        }
    }

    /// `grad_output * op'(s)`, unrecorded.
    fn value(self, g: &Tensor, s: &Tensor) -> Result<Tensor> {
        match self {
            BackwardOp::Tanh => UnaryOp::Tanh.plain_backward(g, s),
            BackwardOp::Sigmoid => UnaryOp::Sigmoid.plain_backward(g, s),
            BackwardOp::Threshold => UnaryOp::Relu.plain_backward(g, s),
            BackwardOp::Gelu(false) => UnaryOp::Gelu.plain_backward(g, s),
            BackwardOp::Gelu(true) => UnaryOp::GeluTanh.plain_backward(g, s),
            BackwardOp::LeakyRelu(slope, of_result) => ParamUnary::LeakyRelu(slope).formula(g, s, of_result),
            BackwardOp::Elu { alpha, scale, input_scale, is_result } => ParamUnary::Elu { alpha, scale, input_scale }.formula(g, s, is_result),
        }
    }
}

/// `grad_output * op'(s)` (`s`: the saved input or result the first-order formula reads),
/// recorded as torch's `...BackwardBackward0` node when a graph of the backward is being built.
pub(crate) fn apply(op: BackwardOp, g: &Tensor, s: &Tensor) -> Result<Tensor> {
    crate::autograd::backward_op(&[Some(g), Some(s)], || op.value(g, s), |rec, out| record(op, rec, out, g, s))
}

/// The node around `apply`'s value `out`: what torch saves, and derivatives.yaml's formulas.
fn record(op: BackwardOp, mut rec: Recorder, out: &Tensor, g: &Tensor, s: &Tensor) -> Result<()> {
    // torch's saved sets: tanh/sigmoid save grad_output and output; threshold and leaky_relu
    // only self (their derivative in self is zero); elu grad_output and self_or_result; gelu
    // grad_output and self.
    match op {
        BackwardOp::Tanh | BackwardOp::Sigmoid => {
            rec.save("grad_output", g)?;
            rec.save("output", s)?;
        }
        BackwardOp::Threshold => {
            rec.save("self", s)?;
            rec.value("threshold", 0);
        }
        BackwardOp::LeakyRelu(slope, _) => {
            rec.save("self", s)?;
            rec.value("negative_slope", crate::ops::reduce::py_number(crate::dtype::Scalar::Float(slope)));
        }
        BackwardOp::Elu { alpha, scale, input_scale, is_result } => {
            rec.save("grad_output", g)?;
            rec.save("self_or_result", s)?;
            rec.value("alpha", crate::ops::reduce::py_number(crate::dtype::Scalar::Float(alpha)));
            rec.value("input_scale", elu_scalar(input_scale));
            rec.value("is_result", if is_result { "True" } else { "False" });
            rec.value("scale", elu_scalar(scale));
        }
        BackwardOp::Gelu(tanh) => {
            rec.save("grad_output", g)?;
            rec.save("self", s)?;
            rec.value("approximate", if tanh { "tanh" } else { "none" });
        }
    }
    rec.finish(op.node(), &[out], Box::new(move |ctx| {
        let gg = ctx.grad();
        let (g, s) = match op {
            BackwardOp::Threshold | BackwardOp::LeakyRelu(..) => (None, ctx.saved(0)),
            _ => (Some(ctx.saved(0)), ctx.saved(1)),
        };
        // derivatives.yaml: grad_output gets the same backward op applied to the new gradient
        let d_grad = match (ctx.needs(0), op) {
            (false, _) => None,
            (true, BackwardOp::LeakyRelu(slope, _)) => Some(apply(BackwardOp::LeakyRelu(slope, false), gg, s)?),
            (true, _) => Some(apply(op, gg, s)?),
        };
        let d_s = if ctx.needs(1) { Some(second_derivative(op, gg, g, s)?) } else { None };
        Ok(vec![d_grad, d_s])
    }))?;
    Ok(())
}

/// The backward op's gradient in `s`, torch's formulas: `gg` the incoming gradient, `g` the saved
/// grad_output (None where torch saves none).
fn second_derivative(op: BackwardOp, gg: &Tensor, g: Option<&Tensor>, s: &Tensor) -> Result<Tensor> {
    let g = || g.expect("saved for this op");
    match op {
        // grad * (-2 * output * grad_output)
        BackwardOp::Tanh => mul(gg, &mul(&mul_c(s, -2.0)?, g())?),
        // grad * grad_output * (-2 * output + 1)
        BackwardOp::Sigmoid => mul(&mul(gg, g())?, &add_c(&mul_c(s, -2.0)?, 1.0)?),
        BackwardOp::Threshold | BackwardOp::LeakyRelu(..) => zeros_like(gg),
        // elu_double_backward: `grad * grad_output * input_scale` (a C++ Scalar, MulBackward1),
        // through elu_backward again when `s` is the input, masked to where `s < 0`
        BackwardOp::Elu { alpha, scale, input_scale, is_result } => {
            let negative = cast(&cmp_s(crate::ops::binary::BinaryOp::Lt, s, 0.0)?, gg.dtype())?;
            let scaled = mul_c(&mul(gg, g())?, input_scale)?;
            let d = if is_result { scaled } else { apply(BackwardOp::Elu { alpha, scale, input_scale, is_result: false }, &scaled, s)? };
            mul(&d, &negative)
        }
        BackwardOp::Gelu(tanh) => mul(&mul(gg, g())?, &gelu_second_derivative(s, tanh)?),
    }
}

/// gelu''(x). Exact gelu: d/dx (Phi(x) + x phi(x)) = phi(x) (2 - x^2). With the tanh
/// approximation gelu(x) = x (1 + tanh u) / 2, u = k (x + c x^3): (1 - tanh^2 u) (u' - x u'^2
/// tanh u + x u'' / 2), with u' = k (1 + 3 c x^2) and u'' = 6 k c x.
fn gelu_second_derivative(x: &Tensor, tanh: bool) -> Result<Tensor> {
    let x2 = mul(x, x)?;
    if !tanh {
        let pdf = mul_c(&un(UnaryOp::Exp, &mul_c(&x2, -0.5)?)?, 1.0 / (2.0 * std::f64::consts::PI).sqrt())?;
        return sub(&mul_c(&pdf, 2.0)?, &mul(&x2, &pdf)?);
    }
    let (k, c) = ((2.0 / std::f64::consts::PI).sqrt(), 0.044715);
    let u = mul_c(&add(x, &mul_c(&mul(&x2, x)?, c)?)?, k)?;
    let th = un(UnaryOp::Tanh, &u)?;
    let sech2 = rsub_s(&mul(&th, &th)?, 1.0)?;
    let du = mul_c(&add_c(&mul_c(&x2, 3.0 * c)?, 1.0)?, k)?;
    let ddu = mul_c(x, 6.0 * k * c)?;
    let inner = add(&sub(&du, &mul(&mul(x, &th)?, &mul(&du, &du)?)?)?, &mul_c(&mul(x, &ddu)?, 0.5)?)?;
    mul(&sech2, &inner)
}
