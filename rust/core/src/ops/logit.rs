//! `logit(x, eps=None)` = log(x / (1 - x)) and its in-place form (LogitBackward0, saving self
//! and eps).
//!
//! torch's kernel, element by element in the tensor's float dtype: with `eps >= 0`, x is first
//! clamped as `x < eps ? eps : (x > 1 - eps ? 1 - eps : x)` (with eps > 1/2 values below eps go
//! to eps, the others to 1 - eps; NaN passes), then `log(x / (1 - x))` (inf at 1). A negative
//! eps clamps nothing (but is still saved). Integers and bool compute in float32.
//!
//! torch runs a scalar loop for the elements past its last pair of whole vectors (all of a
//! float32 tensor under 32 elements with AVX-512), and that loop's gradient differs from the
//! vector loop's: `dy * inf` at ±0 (the vector loop divides, so -0.0 flips the sign) and NaN for
//! a NaN input with eps (the vector loop's mask gives 0). minigrad gives the vector loop's
//! answer at every position (docs/divergences.md).
//!
//! Its derivative comes in two forms, chosen by grad mode when the backward runs, as torch's
//! `GradMode::is_enabled() ? infinitely_differentiable_logit_backward : logit_backward`:
//! * without create_graph, `logit_backward`'s vectorised kernel: `dy / (x (1 - x))` where
//!   `lo <= x <= hi`, else 0 (eps >= 0: the dtype's clamp bounds) or NaN (eps < 0 or None:
//!   lo = 0, hi = 1);
//! * with it, the recorded `where(x >= lo & x <= hi, grad / (x * (1 - x)), 0 or NaN)` with the
//!   bounds as C++ doubles (`eps`, `1.0 - eps`; 0 and 1 without eps), differentiable again. The
//!   two differ where torch's do: a negative eps (the kernel ignores it, the formula does not).
//!
//! Each step is an existing elementwise op, so every device and float dtype works.

use crate::autograd::Recorder;
use crate::dtype::{DType, Scalar};
use crate::error::Result;
use crate::ops::binary::{binary_raw, where_raw, BinaryOp};
use crate::dtype::check_castable;
use crate::ops::copy::{copy_kernel, to_dtype_raw};
use crate::ops::formulas as fm;
use crate::ops::unary::{unary_raw, UnaryOp};
use crate::ops::write::{check_no_internal_overlap, write};
use crate::ops::Arg;
use crate::tensor::Tensor;

fn num(v: f64) -> Arg {
    Arg::Scalar(Scalar::Float(v))
}

fn t(x: &Tensor) -> Arg {
    Arg::Tensor(x.clone())
}

/// `v` as the element type computes it (torch's `scalar_t(eps)`): float32 for float32 and the
/// half types (whose ops compute in float32 here), float64 for float64.
fn in_dtype(v: f64, dtype: DType) -> f64 {
    if dtype == DType::Float64 {
        v
    } else {
        f64::from(v as f32)
    }
}

/// The clamp bounds (lo, hi) of a non-negative eps, each rounded to the dtype as torch's
/// `scalar_t(1) - eps` is.
fn bounds(eps: f64, dtype: DType) -> (f64, f64) {
    let lo = in_dtype(eps, dtype);
    (lo, in_dtype(1.0 - lo, dtype))
}

/// `logit` without a graph: a new float tensor.
pub fn logit_raw(x: &Tensor, eps: Option<f64>) -> Result<Tensor> {
    let dtype = UnaryOp::Log.result_dtype(x.dtype())?; // ints and bool to float32, as log
    let x = if x.dtype() == dtype { x.clone() } else { to_dtype_raw(x, dtype)? };
    let v = match eps {
        Some(e) if e >= 0.0 => {
            let (lo, hi) = bounds(e, dtype);
            // x < lo ? lo : (x > hi ? hi : x), NaN kept (where's comparisons are false for NaN)
            let upper = where_raw(&binary_raw(BinaryOp::Gt, &t(&x), &num(hi), None)?, &num(hi), &t(&x))?;
            where_raw(&binary_raw(BinaryOp::Lt, &t(&x), &num(lo), None)?, &num(lo), &t(&upper))?
        }
        _ => x,
    };
    let one_minus = binary_raw(BinaryOp::Sub, &num(1.0), &t(&v), None)?;
    let log = unary_raw(UnaryOp::Log, &binary_raw(BinaryOp::Div, &t(&v), &t(&one_minus), None)?)?;
    let is_one = binary_raw(BinaryOp::Eq, &t(&v), &num(1.0), None)?;
    crate::ops::binary::masked_fill_raw(&log, &is_one, &num(f64::INFINITY), true)
}

/// The mask `lo <= x <= hi` (false for NaN).
fn within(x: &Tensor, lo: f64, hi: f64) -> Result<Tensor> {
    let ge = binary_raw(BinaryOp::Ge, &t(x), &num(lo), None)?;
    let le = binary_raw(BinaryOp::Le, &t(x), &num(hi), None)?;
    binary_raw(BinaryOp::LogicalAnd, &t(&ge), &t(&le), None)
}

/// `dy / (x (1 - x))`, computed raw or recorded.
fn quotient(g: &Tensor, x: &Tensor, recorded: bool) -> Result<Tensor> {
    if recorded {
        return fm::div(g, &fm::mul(x, &fm::filled_minus(1.0, x)?)?);
    }
    let one_minus = binary_raw(BinaryOp::Sub, &num(1.0), &t(x), None)?;
    let denom = binary_raw(BinaryOp::Mul, &t(x), &t(&one_minus), None)?;
    binary_raw(BinaryOp::Div, &t(g), &t(&denom), None)
}

/// torch's `logit_backward` kernel (no graph): its vector loop's rule (see the module doc).
fn logit_backward_kernel(g: &Tensor, x: &Tensor, eps: Option<f64>) -> Result<Tensor> {
    let (lo, hi, outside) = match eps {
        Some(e) if e >= 0.0 => {
            let (lo, hi) = bounds(e, x.dtype());
            (lo, hi, 0.0)
        }
        _ => (0.0, 1.0, f64::NAN),
    };
    where_raw(&within(x, lo, hi)?, &t(&quotient(g, x, false)?), &num(outside))
}

/// torch's `infinitely_differentiable_logit_backward` (recorded: the backward of a create_graph
/// backward). Its bounds are C++ doubles: `eps` and `1.0 - eps` as given.
fn logit_backward_formula(g: &Tensor, x: &Tensor, eps: Option<f64>) -> Result<Tensor> {
    let (lo, hi, outside) = match eps {
        Some(e) => (e, 1.0 - e, 0.0),
        None => (0.0, 1.0, f64::NAN),
    };
    let inside = within(x, lo, hi)?;
    let fill = fm::zeros(&[], x.dtype(), x.device())?;
    if outside.is_nan() {
        crate::ops::copy::fill_inplace_raw(&fill, Scalar::Float(f64::NAN))?;
    }
    fm::where_t(&inside, &quotient(g, x, true)?, &fill)
}

fn backward(g: &Tensor, x: &Tensor, eps: Option<f64>) -> Result<Tensor> {
    if crate::autograd::mode::is_grad_enabled() {
        logit_backward_formula(g, x, eps)
    } else {
        logit_backward_kernel(g, x, eps)
    }
}

fn record_eps(rec: &mut Recorder, eps: Option<f64>) {
    match eps {
        Some(e) => rec.value("eps", crate::ops::reduce::py_number(Scalar::Float(e))),
        None => rec.value("eps", "None"),
    }
}

/// Differentiable `logit(x, eps)`.
pub fn logit(x: &Tensor, eps: Option<f64>) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    let out = logit_raw(x, eps)?;
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok(out) };
    rec.save("self", x)?;
    record_eps(&mut rec, eps);
    rec.finish("LogitBackward0", &[&out], Box::new(move |ctx| Ok(vec![Some(backward(ctx.grad(), ctx.saved(0), eps)?)])))?;
    Ok(out)
}

/// Differentiable `x.logit_(eps)`: the result written into x (a float tensor); the node saves a
/// clone of the old x, as torch's `self.clone()`.
pub fn logit_(x: &Tensor, eps: Option<f64>) -> Result<()> {
    let _blame = crate::autograd::blame::op("logit_");
    let dtype = UnaryOp::Log.result_dtype(x.dtype())?;
    check_no_internal_overlap(x)?;
    check_castable(dtype, x.dtype())?;
    let rec = Recorder::inplace(x, &[])?;
    let old = if rec.is_some() { Some(crate::ops::copy::clone(x)?) } else { None };
    let value = logit_raw(x, eps)?;
    write(x, &[x], |_| copy_kernel(x, &value))?;
    let Some(mut rec) = rec else { return Ok(()) };
    rec.save("self", old.as_ref().expect("cloned above"))?;
    record_eps(&mut rec, eps);
    rec.finish_inplace("LogitBackward0", x, Box::new(move |ctx| Ok(vec![Some(backward(ctx.grad(), ctx.saved(0), eps)?)])))
}
