//! `addmm`: `beta·self + alpha·(mat1 @ mat2)` and AddmmBackward0.

use crate::ops::formulas as fm;
use crate::autograd::{Recorder, SavedValue};
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::ops::binary::{binary_raw, BinaryOp};
use crate::ops::views;
use crate::ops::Arg;
use crate::tensor::Tensor;
use super::{mm, mm_raw};

/// `addmm(self, mat1, mat2, beta, alpha)`: `beta·self + alpha·(mat1 @ mat2)`, `self`
/// broadcast to the (m×n) product; with beta 0 `self` is ignored (its NaNs too), as torch.
pub fn addmm_raw(this: &Tensor, mat1: &Tensor, mat2: &Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
    for (name, t) in [("mat1", mat1), ("mat2", mat2)] {
        if t.ndim() != 2 {
            return Err(Error::Runtime(format!("{} must be a matrix, got {}-D tensor", name, t.ndim())));
        }
    }
    let (m, k, k2, n) = (mat1.shape()[0], mat1.shape()[1], mat2.shape()[0], mat2.shape()[1]);
    if k != k2 {
        return Err(Error::Runtime(format!("mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})", m, k, k2, n)));
    }
    for (name, t) in [("self", this), ("mat1", mat1)] {
        if t.dtype() != mat2.dtype() {
            return Err(Error::Runtime(format!(
                "{} and mat2 must have the same dtype, but got {} and {}",
                name,
                t.dtype().scalar_type_name(),
                mat2.dtype().scalar_type_name()
            )));
        }
    }
    let expanded = views::expand_raw(this, &[m as i64, n as i64])?;
    if let Some(out) = bias_product(&expanded, mat1, mat2, beta, alpha)? {
        return Ok(out);
    }
    let product = mm_raw(mat1, mat2)?;
    if beta.to_f64() == 0.0 {
        return binary_raw(BinaryOp::Mul, &Arg::Tensor(product), &Arg::Scalar(alpha), None);
    }
    let scaled = if beta.to_f64() == 1.0 { expanded } else { binary_raw(BinaryOp::Mul, &Arg::Tensor(expanded), &Arg::Scalar(beta), None)? };
    binary_raw(BinaryOp::Add, &Arg::Tensor(scaled), &Arg::Tensor(product), Some(alpha))
}

/// `self + mat1 @ mat2` (beta = alpha = 1: a Linear layer) as one product accumulating into a
/// copy of the broadcast `self`, on a device that has the kernel; None where that does not
/// apply (another beta or alpha, a non-float dtype, an empty product).
fn bias_product(expanded: &Tensor, mat1: &Tensor, mat2: &Tensor, beta: Scalar, alpha: Scalar) -> Result<Option<Tensor>> {
    let dtype = mat2.dtype();
    if beta.to_f64() != 1.0 || alpha.to_f64() != 1.0 || !matches!(dtype, DType::Float32 | DType::Float64) || expanded.numel() == 0 || mat1.shape()[1] == 0 {
        return Ok(None);
    }
    let backend = crate::device::backend_for(&[expanded, mat1, mat2])?;
    let out = Tensor::empty_on(expanded.shape(), dtype, expanded.device())?;
    Ok(backend.matmul_bias(&out, expanded, mat1, mat2)?.then_some(out))
}

/// The gradients of a product's operands as torch's `mm_mat1_backward`/`mm_mat2_backward` make
/// them: an operand that was column-major (a transposed contiguous matrix, as a Linear layer's
/// `weight.t()`) gets its gradient column-major too, computed as the transposed product, so
/// the weight's `.grad` arrives contiguous (taken as is, not copied: torch's version 0).
/// `*_colmajor` is the operand's layout at forward time.
pub(super) fn mat1_grad(g: &Tensor, mat2: &Tensor, mat1_colmajor: bool) -> Result<Tensor> {
    if mat1_colmajor {
        return views::t(&mm(mat2, &views::t(g)?)?);
    }
    mm(g, &views::t(mat2)?)
}

pub(super) fn mat2_grad(g: &Tensor, mat1: &Tensor, mat2_colmajor: bool) -> Result<Tensor> {
    if mat2_colmajor {
        return views::t(&mm(&views::t(g)?, mat1)?);
    }
    mm(&views::t(mat1)?, g)
}

/// torch's test for the transposed gradient: strides `(1, rows)`.
pub(super) fn colmajor(t: &Tensor) -> bool {
    t.ndim() == 2 && t.strides()[0] == 1 && t.strides()[1] == t.shape()[0] as isize
}

/// Differentiable `addmm` (AddmmBackward0): `sum_to(beta·grad, self)`, `alpha·grad @ mat2.T`,
/// `alpha·mat1.T @ grad`; each matrix is saved only for the other's gradient.
pub fn addmm(this: &Tensor, mat1: &Tensor, mat2: &Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(this), Some(mat1), Some(mat2)])?;
    let out = addmm_raw(this, mat1, mat2, beta, alpha)?;
    let Some(mut rec) = rec else { return Ok(out) };
    save_operands(&mut rec, mat1, mat2)?;
    rec.value("alpha", fmt_scalar(alpha));
    rec.value("beta", fmt_scalar(beta));
    let self_shape = this.shape().to_vec();
    let (b, a) = (beta.to_f64(), alpha.to_f64());
    let (c1, c2) = (colmajor(mat1), colmajor(mat2));
    let scale = move |t: Tensor, s: f64| if s == 1.0 { Ok(t) } else { fm::mul_s(&t, s) };
    rec.finish("AddmmBackward0", &[&out], Box::new(move |ctx| {
        let g = ctx.grad();
        let mut saved = ctx.saved.iter().cloned();
        let mat1 = if ctx.needs(2) { saved.next() } else { None };
        let mat2 = if ctx.needs(1) { saved.next() } else { None };
        let gs = if ctx.needs(0) { Some(fm::sum_to(&scale(g.clone(), b)?, &self_shape)?) } else { None };
        let g1 = mat2.map(|m| scale(mat1_grad(g, &m, c1)?, a)).transpose()?;
        let g2 = mat1.map(|m| scale(mat2_grad(g, &m, c2)?, a)).transpose()?;
        Ok(vec![gs, g1, g2])
    }))?;
    Ok(out)
}

/// Differentiable `self.addmm_(mat1, mat2, beta, alpha)`: the product must have self's shape
/// (torch: "Bad in-place call"); the result goes in through the write path; the node is
/// AddmmBackward0 with out-of-place addmm's saves.
pub fn addmm_(this: &Tensor, mat1: &Tensor, mat2: &Tensor, beta: Scalar, alpha: Scalar) -> Result<()> {
    let _blame = crate::autograd::blame::op("addmm_");
    let rec = Recorder::inplace(this, &[Some(mat1), Some(mat2)])?;
    let out = addmm_raw(this, mat1, mat2, beta, alpha)?;
    if out.shape() != this.shape() {
        return Err(Error::Runtime(format!(
            "Bad in-place call: input tensor size {} and output tensor size {} should match",
            crate::error::fmt_shape(this.shape()),
            crate::error::fmt_shape(out.shape())
        )));
    }
    crate::ops::copy::copy_inplace_raw(this, &out)?;
    let Some(mut rec) = rec else { return Ok(()) };
    save_operands(&mut rec, mat1, mat2)?;
    rec.value("alpha", fmt_scalar(alpha));
    rec.value("beta", fmt_scalar(beta));
    let (b, a) = (beta.to_f64(), alpha.to_f64());
    let (c1, c2) = (colmajor(mat1), colmajor(mat2));
    let scale = move |t: Tensor, s: f64| if s == 1.0 { Ok(t) } else { fm::mul_s(&t, s) };
    rec.finish_inplace("AddmmBackward0", this, Box::new(move |ctx| {
        let g = ctx.grad();
        let mut saved = ctx.saved.iter().cloned();
        let mat1 = if ctx.needs(2) { saved.next() } else { None };
        let mat2 = if ctx.needs(1) { saved.next() } else { None };
        let gs = if ctx.needs(0) { Some(scale(g.clone(), b)?) } else { None };
        let g1 = mat2.map(|m| scale(mat1_grad(g, &m, c1)?, a)).transpose()?;
        let g2 = mat1.map(|m| scale(mat2_grad(g, &m, c2)?, a)).transpose()?;
        Ok(vec![gs, g1, g2])
    }))
}

/// What torch's AddmmBackward0 keeps of the two matrices: each one for the other's gradient
/// (None when that gradient is not needed), both shapes, and the strides of those whose own
/// gradient is needed (`()` otherwise).
/// Typed values (no text per call: every recorded Linear forward comes through here).
fn save_operands(rec: &mut Recorder, mat1: &Tensor, mat2: &Tensor) -> Result<()> {
    let operands = [
        ("mat1", "mat1_sym_sizes", "mat1_sym_strides", mat1, rec.needs(2), rec.needs(1)),
        ("mat2", "mat2_sym_sizes", "mat2_sym_strides", mat2, rec.needs(1), rec.needs(2)),
    ];
    for (name, sizes, strides, m, other_needs, own_needs) in operands {
        if other_needs {
            rec.save(name, m)?;
        } else {
            rec.not_saved(name);
        }
        let own_strides = if own_needs { m.layout.strides.iter().map(|&s| s as i64).collect() } else { Default::default() };
        rec.values(vec![(sizes, SavedValue::sizes(m.shape())), (strides, SavedValue::Ints(own_strides))]);
    }
    Ok(())
}

/// A scalar as Python prints it (`1`, `0.5`, `True`).
fn fmt_scalar(s: Scalar) -> String {
    match s {
        Scalar::Bool(b) => if b { "True".into() } else { "False".into() },
        Scalar::Int(i) => i.to_string(),
        Scalar::Float(f) => format!("{:?}", f),
    }
}

#[cfg(test)]
mod grad_tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    #[test]
    fn addmm_passes_gradcheck_and_sums_self_back() {
        let f: &dyn Fn(&[Tensor]) -> Result<Tensor> = &|t| addmm(&t[0], &t[1], &t[2], Scalar::Float(0.5), Scalar::Float(2.0));
        let (s, a, b) = (rand_leaf(&[3], 60), rand_leaf(&[2, 4], 61), rand_leaf(&[4, 3], 62));
        assert_eq!(node_name(&f(&[s.clone(), a.clone(), b.clone()]).unwrap()), "AddmmBackward0");
        gradcheck("addmm", f, &[s, a, b], true);
        let err = addmm_raw(&vals(values(2, 63), &[2]), &vals(values(8, 64), &[2, 4]), &vals(values(12, 65), &[4, 3]), Scalar::Int(1), Scalar::Int(1));
        assert!(err.unwrap_err().to_string().contains("The expanded size"));
    }
}
