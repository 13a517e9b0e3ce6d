//! `linalg.vector_norm` (which `Tensor.norm` uses for numeric orders): torch's checks in its
//! order, one reducer per kind of order, and LinalgVectorNormBackward0 (saves self and result).

use crate::autograd::Recorder;
use crate::dtype::{DType, Scalar};
use crate::error::fmt_g;
use crate::error::{Error, Result};
use crate::ops::binary::BinaryOp;
use crate::ops::unary::{unary_raw, UnaryOp};
use crate::shape::wrap_dim;
use crate::tensor::Tensor;
use super::{as_i64, dim_mask, float_mask, launch, new_out, py_bool, py_number, py_opt_ints, reduced_dims, reduced_numel, reduced_shape, sum_raw, tensor_arg, unsqueeze_dims, zero_at, DimCheck, ReduceOp, Reduction};

/// `linalg.vector_norm(x, ord, dim, keepdim, dtype=)`, which `Tensor.norm` uses for numeric
/// orders and for 'fro' over at most two dims.
pub fn vector_norm_raw(x: &Tensor, ord: f64, dims: Option<&[i64]>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let name = ReduceOp::Norm.name();
    // torch's order: input dtype, orders without an identity on empty input, dtype=, dims.
    if !x.dtype().is_floating() {
        return Err(Error::Runtime(format!(
            "{}: Expected a floating point or complex tensor as input. Got {}",
            name,
            x.dtype().scalar_type_name()
        )));
    }
    if x.numel() == 0 && (ord < 0.0 || ord == f64::INFINITY) {
        match dims {
            Some(ds) if !ds.is_empty() => {
                for &d in ds {
                    if x.shape()[wrap_dim(d, x.ndim())?] == 0 {
                        return Err(Error::Runtime(format!(
                            "{} cannot compute the {} norm on the dimension {}because this dimension is empty and the operation does not have an identity",
                            name,
                            fmt_g(ord),
                            d
                        )));
                    }
                }
            }
            _ => {
                return Err(Error::Runtime(format!(
                    "{} cannot compute the {} norm on an empty tensor because the operation does not have an identity",
                    name,
                    fmt_g(ord)
                )))
            }
        }
    }
    if let Some(d) = dtype {
        if !d.is_floating() {
            return Err(Error::Runtime(format!("{}: dtype should be floating point or complex, but got {}", name, d.scalar_type_name())));
        }
        if d < x.dtype() {
            return Err(Error::Runtime(format!(
                "{}: the dtype of the input ({}) should be convertible without narrowing to the specified dtype ({})",
                name,
                x.dtype().scalar_type_name(),
                d.scalar_type_name()
            )));
        }
    }
    let mask = dim_mask(dims, x.ndim(), true, DimCheck::InTurn)?;
    let out_dtype = dtype.unwrap_or(x.dtype());
    let out_shape = reduced_shape(x.shape(), &mask, keepdim);
    // torch checks the size of each named dim, and a 0-d tensor has none to check: with an
    // explicit dim it runs the reduction (the 2-norm of a 0-d 1e-200 underflows to 0 there).
    let zero_d_with_dims = x.ndim() == 0 && dims.is_some_and(|ds| !ds.is_empty());
    if ord != 0.0 && x.numel() > 0 && reduced_numel(x.shape(), &mask) == 1 && !zero_d_with_dims {
        // Each output reduces one element: torch returns |x| without running the reduction, so
        // a square that would underflow (the 2-norm of 1e-200) is not lost. Order 0 still counts.
        let a = crate::ops::copy::contiguous_raw(&crate::ops::copy::to_dtype_raw(&unary_raw(UnaryOp::Abs, x)?, out_dtype)?)?;
        return Ok(Tensor::from_storage(a.storage, crate::layout::Layout::contiguous(&out_shape)));
    }
    let out = new_out(x, &out_shape, out_dtype)?;
    launch(Reduction::Norm { p: ord }, Some(&out), None, x, &mask)?;
    Ok(out)
}

/// torch's norm_backward for `linalg.vector_norm` (ord 0 has no gradient; a zero norm gives
/// zero gradient for ord 2 and ord > 1).
fn norm_backward(g: &Tensor, x: &Tensor, r: &Tensor, ord: f64, rd: &[usize], keepdim: bool) -> Result<Option<Tensor>> {
    use crate::ops::formulas::*;
    let (g, r) = if !keepdim && x.ndim() != 0 { (unsqueeze_dims(g, rd, false)?, unsqueeze_dims(r, rd, false)?) } else { (g.clone(), r.clone()) };
    let sgn = || un(UnaryOp::Sign, x);
    let r_zero = || cmp_s(BinaryOp::Eq, &r, 0.0);
    Ok(Some(if ord == 0.0 {
        return Ok(None);
    } else if ord == 1.0 {
        mul(&sgn()?, &g)?
    } else if ord == 2.0 {
        mul(&g, &zero_at(&div(x, &r)?, &r_zero()?)?)?
    } else if ord.is_infinite() {
        let a = unary_raw(UnaryOp::Abs, x)?;
        let hit = cmp(BinaryOp::LogicalOr, &cmp(BinaryOp::Eq, &a, &tensor_arg(&r))?, &tensor_arg(&cmp(BinaryOp::Ne, &a, &tensor_arg(&a))?))?;
        let mask = float_mask(&hit, g.dtype())?;
        let count = sum_raw(&mask, Some(&as_i64(rd)), true, None)?;
        mul(&sgn()?, &mul(&div(&g, &count)?, &mask)?)?
    } else if ord < 1.0 {
        let a = un(UnaryOp::Abs, x)?;
        let scaled = mul(&sgn()?, &zero_at(&pow_s(&a, ord - 1.0)?, &cmp_s(BinaryOp::Eq, x, 0.0)?)?)?;
        mul(&mul(&scaled, &g)?, &pow_s(&r, 1.0 - ord)?)?
    } else {
        let a = un(UnaryOp::Abs, x)?;
        let scaled = if ord < 2.0 { mul(&sgn()?, &pow_s(&a, ord - 1.0)?)? } else { mul(x, &pow_s(&a, ord - 2.0)?)? };
        let scale = zero_at(&div(&g, &pow_s(&r, ord - 1.0)?)?, &r_zero()?)?;
        mul(&scaled, &scale)?
    }))
}

/// Differentiable `linalg.vector_norm` (LinalgVectorNormBackward0: saves self and result).
pub fn vector_norm(x: &Tensor, ord: f64, dims: Option<&[i64]>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(x)])?;
    let out = vector_norm_raw(x, ord, dims, keepdim, dtype)?;
    let Some(mut rec) = rec else { return Ok(out) };
    rec.value("dim", py_opt_ints(dims));
    rec.value("keepdim", py_bool(keepdim));
    rec.value("ord", py_number(if ord.fract() == 0.0 && ord.is_finite() { Scalar::Int(ord as i64) } else { Scalar::Float(ord) }));
    rec.save("self", x)?;
    rec.save_output("result", &out, 0);
    let rd = reduced_dims(x.ndim(), dims, DimCheck::InTurn)?;
    rec.finish("LinalgVectorNormBackward0", &[&out], Box::new(move |ctx| Ok(vec![norm_backward(ctx.grad(), ctx.saved(0), ctx.saved(1), ord, &rd, keepdim)?])))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn g_format() {
        assert_eq!(fmt_g(-1.0), "-1");
        assert_eq!(fmt_g(-0.5), "-0.5");
        assert_eq!(fmt_g(-1e-7), "-1e-07");
        assert_eq!(fmt_g(-1.2345678), "-1.23457");
        assert_eq!(fmt_g(-1e8), "-1e+08");
        assert_eq!(fmt_g(f64::NEG_INFINITY), "-inf");
        assert_eq!(fmt_g(123456.0), "123456");
        assert_eq!(fmt_g(1234567.0), "1.23457e+06");
    }
}

#[cfg(test)]
mod grad_tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    #[test]
    fn vector_norm_gradients() {
        let y = leaf(vec![3., -4., 0.], &[3]);
        let n = vector_norm(&y, 2.0, None, false, None).unwrap();
        assert_eq!(node_name(&n), "LinalgVectorNormBackward0");
        backward(&n, None);
        assert!(close(&grad(&y), &[0.6, -0.8, 0.]));
        y.set_grad(None);
        backward(&vector_norm(&y, 1.0, None, false, None).unwrap(), None);
        assert_eq!(grad(&y), vec![1., -1., 0.]);
        y.set_grad(None);
        backward(&vector_norm(&y, f64::INFINITY, None, false, None).unwrap(), None);
        assert_eq!(grad(&y), vec![0., -1., 0.]);
        y.set_grad(None);
        backward(&vector_norm(&y, 3.0, None, false, None).unwrap(), None);
        let n3 = (27.0f64 + 64.0).cbrt();
        assert!(close(&grad(&y), &[9.0 / (n3 * n3), -16.0 / (n3 * n3), 0.]));
        // A zero norm gives a zero gradient.
        let z = leaf(vec![0., 0.], &[2]);
        backward(&vector_norm(&z, 2.0, None, false, None).unwrap(), None);
        assert_eq!(grad(&z), vec![0., 0.]);
    }

}
