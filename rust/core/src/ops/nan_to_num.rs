//! `nan_to_num` / `nan_to_num_` (NanToNumBackward0): NaN, +inf and -inf replaced by given
//! numbers (by default 0, the dtype's largest finite value and its lowest), each rounded to the
//! dtype as torch casts it (1e300 in float32 is inf); integer and bool tensors are copied as they
//! are. The gradient passes where the input was finite and is 0 elsewhere (derivatives.yaml:
//! `grad * at::isfinite(self)`), so the node saves self.

use crate::ops::formulas as fm;
use crate::autograd::Recorder;
use crate::dtype::{DType, Scalar};
use crate::element::{bf16, f16};
use crate::error::Result;
use crate::ops::binary::{binary_raw, BinaryOp};
use crate::ops::copy::copy_kernel;
use crate::ops::Arg;
use crate::tensor::Tensor;

/// What NaN, +inf and -inf become (None: the dtype's extremes).
#[derive(Clone, Copy, Debug)]
pub struct Replacements {
    pub nan: f64,
    pub posinf: Option<f64>,
    pub neginf: Option<f64>,
}

/// The largest finite value of a float dtype.
fn largest(dtype: DType) -> f64 {
    match dtype {
        DType::Float32 => f32::MAX as f64,
        DType::Float16 => f16::MAX.to_f64(),
        DType::BFloat16 => bf16::MAX.to_f64(),
        _ => f64::MAX,
    }
}

/// `x` with its NaN and infinities replaced, fresh (no version of its own yet, no graph).
fn replaced(x: &Tensor, r: Replacements) -> Result<Tensor> {
    let out = Tensor::empty_on(x.shape(), x.dtype(), x.device())?;
    copy_kernel(&out, x)?;
    if !x.dtype().is_floating() {
        return Ok(out);
    }
    let top = largest(x.dtype());
    let x_arg = Arg::Tensor(x.clone());
    let inf = |v: f64| Arg::Scalar(Scalar::Float(v));
    // every mask read from x before anything is written (in place, out may be x's copy)
    let fills = [
        (binary_raw(BinaryOp::Ne, &x_arg, &x_arg, None)?, r.nan),
        (binary_raw(BinaryOp::Eq, &x_arg, &inf(f64::INFINITY), None)?, r.posinf.unwrap_or(top)),
        (binary_raw(BinaryOp::Eq, &x_arg, &inf(f64::NEG_INFINITY), None)?, r.neginf.unwrap_or(-top)),
    ];
    let backend = crate::device::backend_for(&[&out, x])?;
    for (mask, value) in fills {
        backend.masked_fill(&out, &mask, Scalar::Float(value))?;
    }
    Ok(out)
}

fn finite_only() -> crate::autograd::Formula {
    Box::new(|ctx| {
        let x = ctx.saved(0);
        let xa = Arg::Tensor(x.clone());
        // isfinite: x == x (not NaN) and |x| != inf
        let not_nan = fm::cmp(BinaryOp::Eq, x, &xa)?;
        let not_inf = fm::cmp(BinaryOp::Ne, &fm::un(crate::ops::unary::UnaryOp::Abs, x)?, &Arg::Scalar(Scalar::Float(f64::INFINITY)))?;
        let finite = fm::cmp(BinaryOp::LogicalAnd, &not_nan, &Arg::Tensor(not_inf))?;
        Ok(vec![Some(fm::mul(ctx.grad(), &finite)?)])
    })
}

/// Differentiable `nan_to_num(x, nan, posinf, neginf)`.
pub fn nan_to_num(x: &Tensor, r: Replacements) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    let out = replaced(x, r)?;
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok(out) };
    rec.save("self", x)?;
    rec.finish("NanToNumBackward0", &[&out], finite_only())?;
    Ok(out)
}

/// Differentiable `x.nan_to_num_(nan, posinf, neginf)`: one write (one version bump); self is
/// saved as it was before it (a copy).
pub fn nan_to_num_(x: &Tensor, r: Replacements) -> Result<()> {
    let _blame = crate::autograd::blame::op("nan_to_num_");
    let rec = Recorder::inplace(x, &[])?;
    let old = if rec.is_some() { Some(crate::ops::copy::clone(x)?) } else { None };
    let new = replaced(x, r)?;
    crate::ops::write::write(x, &[&new], |reads| copy_kernel(x, &reads[0].0))?;
    let (Some(mut rec), Some(old)) = (rec, old) else { return Ok(()) };
    rec.save("self", &old)?;
    rec.finish_inplace("NanToNumBackward0", x, finite_only())
}
