//! `mm`, `mv`, `dot` and `bmm`: torch's checks and error texts, the product, and
//! MmBackward0 / MvBackward0 / DotBackward0 / BmmBackward0 (each operand saved only for the
//! other's gradient).

use crate::ops::formulas as fm;
use crate::autograd::Recorder;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::views;
use crate::tensor::Tensor;
use super::addmm::{colmajor, mat1_grad, mat2_grad};
use super::{cpp_name, crossed, not_implemented, product, save_crossed, Operand};

/// `mm(self, mat2)`: (m×k)·(k×n).
pub fn mm_raw(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.ndim() != 2 {
        return Err(Error::Runtime("self must be a matrix".into()));
    }
    if b.ndim() != 2 {
        return Err(Error::Runtime("mat2 must be a matrix".into()));
    }
    let (m, k, k2, n) = (a.shape()[0], a.shape()[1], b.shape()[0], b.shape()[1]);
    if k != k2 {
        return Err(Error::Runtime(format!(
            "mat1 and mat2 shapes cannot be multiplied ({}x{} and {}x{})",
            m, k, k2, n
        )));
    }
    if a.dtype() != b.dtype() {
        return Err(Error::Runtime(format!(
            "expected m1 and m2 to have the same dtype, but got: {} != {}",
            cpp_name(a.dtype()),
            cpp_name(b.dtype())
        )));
    }
    let (sa, sb) = (a.strides(), b.strides());
    product(&[m, n], &[], m, n, k, &Operand::matrix(a, sa[0], sa[1]), &Operand::matrix(b, sb[0], sb[1]), a.dtype())
}

/// `mv(self, vec)`: (m×k)·(k).
pub fn mv_raw(a: &Tensor, v: &Tensor) -> Result<Tensor> {
    if a.ndim() != 2 || v.ndim() != 1 {
        return Err(Error::Runtime(format!("vector + matrix @ vector expected, got 1, {}, {}", a.ndim(), v.ndim())));
    }
    let (m, k) = (a.shape()[0], a.shape()[1]);
    if k != v.shape()[0] {
        return Err(Error::Runtime(format!(
            "size mismatch, got input ({}), mat ({}x{}), vec ({})",
            m,
            m,
            k,
            v.shape()[0]
        )));
    }
    // torch's addmv builds its `input` with the vector's dtype, hence "vec, mat, and vec".
    if a.dtype() != v.dtype() {
        let (vn, an) = (v.dtype().scalar_type_name(), a.dtype().scalar_type_name());
        return Err(Error::Runtime(format!("addmv input tensors must have the same dtype, but got {}, {}, and {}", vn, an, vn)));
    }
    if a.dtype() == DType::Bool && a.numel() != 0 {
        return Err(not_implemented("addmv_impl_cpu", DType::Bool));
    }
    let sa = a.strides();
    // The vector is a k×1 column.
    product(&[m], &[], m, 1, k, &Operand::matrix(a, sa[0], sa[1]), &Operand::matrix(v, v.strides()[0], 0), a.dtype())
}

/// `dot(self, tensor)`: the inner product of two vectors, a 0-d tensor.
pub fn dot_raw(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.ndim() != 1 || b.ndim() != 1 {
        return Err(Error::Runtime(format!("1D tensors expected, but got {}D and {}D tensors", a.ndim(), b.ndim())));
    }
    if a.dtype() != b.dtype() {
        return Err(Error::Runtime(format!(
            "dot : expected both vectors to have same dtype, but found {} and {}",
            a.dtype().scalar_type_name(),
            b.dtype().scalar_type_name()
        )));
    }
    let (n, n2) = (a.numel(), b.numel());
    if n != n2 {
        return Err(Error::Runtime(format!(
            "inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, but got {} and {} elements respectively",
            n, n2, n, n2
        )));
    }
    if a.dtype() == DType::Bool {
        return Err(not_implemented("dot", DType::Bool));
    }
    // A 1×k row times a k×1 column.
    product(&[], &[], 1, 1, n, &Operand::matrix(a, 0, a.strides()[0]), &Operand::matrix(b, b.strides()[0], 0), a.dtype())
}

/// `bmm(self, mat2)`: (B×m×k)·(B×k×n).
pub fn bmm_raw(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    if a.ndim() != 3 {
        return Err(Error::Runtime("batch1 must be a 3D tensor".into()));
    }
    if b.ndim() != 3 {
        return Err(Error::Runtime("batch2 must be a 3D tensor".into()));
    }
    let (sa, sb) = (a.strides(), b.strides());
    let (ta, tb) = (Operand { t: a, batch_strides: vec![sa[0]], rs: sa[1], cs: sa[2] }, Operand { t: b, batch_strides: vec![sb[0]], rs: sb[1], cs: sb[2] });
    let (count, m, k) = (a.shape()[0], a.shape()[1], a.shape()[2]);
    batched_product(&ta, &tb, &[count], count, m, k, b.shape()[0], b.shape()[1], b.shape()[2], &[count, m, b.shape()[2]])
}

/// The checks and product of torch's bmm on operands already arranged as (B×m×k)·(B2×k2×n).
/// As torch, the dtype is only checked when there is work: an empty or k = 0 product returns
/// mat2's dtype whatever self's is.
#[allow(clippy::too_many_arguments)]
pub(super) fn batched_product(a: &Operand, b: &Operand, batch: &[usize], count: usize, m: usize, k: usize, count2: usize, k2: usize, n: usize, out_shape: &[usize]) -> Result<Tensor> {
    if count2 != count || k2 != k {
        return Err(Error::Runtime(format!(
            "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
            count, k, count2, k2
        )));
    }
    let (da, db) = (a.t.dtype(), b.t.dtype());
    if count != 0 && m != 0 && n != 0 && k != 0 {
        if da == DType::Bool {
            return Err(not_implemented("bmm", da));
        }
        if da != db {
            return Err(Error::Runtime(format!(
                "expected scalar type {} but found {}",
                da.scalar_type_name(),
                db.scalar_type_name()
            )));
        }
    }
    product(out_shape, batch, m, n, k, a, b, db)
}

/// Differentiable `mm` (MmBackward0): `grad @ mat2.T` and `self.T @ grad`.
pub fn mm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(a), Some(b)])?;
    let out = mm_raw(a, b)?;
    let Some(mut rec) = rec else { return Ok(out) };
    save_crossed(&mut rec, "mat2", b, "self", a)?;
    let (ca, cb) = (colmajor(a), colmajor(b));
    rec.finish("MmBackward0", &[&out], Box::new(move |ctx| {
        let g = ctx.grad();
        let (mat2, this) = crossed(ctx);
        let ga = mat2.map(|m| mat1_grad(g, &m, ca)).transpose()?;
        let gb = this.map(|s| mat2_grad(g, &s, cb)).transpose()?;
        Ok(vec![ga, gb])
    }))?;
    Ok(out)
}

/// Differentiable `mv` (MvBackward0): `outer(grad, vec)` and `self.T @ grad`.
pub fn mv(a: &Tensor, v: &Tensor) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(a), Some(v)])?;
    let out = mv_raw(a, v)?;
    let Some(mut rec) = rec else { return Ok(out) };
    save_crossed(&mut rec, "vec", v, "self", a)?;
    rec.finish("MvBackward0", &[&out], Box::new(|ctx| {
        let g = ctx.grad();
        let (vec, this) = crossed(ctx);
        let ga = vec.map(|v| fm::mul(&views::unsqueeze(g, 1)?, &views::unsqueeze(&v, 0)?)).transpose()?;
        let gv = this.map(|s| mv(&views::t(&s)?, g)).transpose()?;
        Ok(vec![ga, gv])
    }))?;
    Ok(out)
}

/// Differentiable `dot` (DotBackward0): `grad * tensor` and `grad * self`.
pub fn dot(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(a), Some(b)])?;
    let out = dot_raw(a, b)?;
    let Some(mut rec) = rec else { return Ok(out) };
    save_crossed(&mut rec, "tensor", b, "self", a)?;
    rec.finish("DotBackward0", &[&out], Box::new(|ctx| {
        let g = ctx.grad();
        let (other, this) = crossed(ctx);
        Ok(vec![other.map(|o| fm::mul(g, &o)).transpose()?, this.map(|s| fm::mul(g, &s)).transpose()?])
    }))?;
    Ok(out)
}

/// Differentiable `bmm` (BmmBackward0): `grad @ mat2.mT` and `self.mT @ grad`.
pub fn bmm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(a), Some(b)])?;
    let out = bmm_raw(a, b)?;
    let Some(mut rec) = rec else { return Ok(out) };
    save_crossed(&mut rec, "mat2", b, "self", a)?;
    rec.finish("BmmBackward0", &[&out], Box::new(|ctx| {
        let g = ctx.grad();
        let (mat2, this) = crossed(ctx);
        let ga = mat2.map(|m| bmm(g, &views::transpose(&m, 1, 2)?)).transpose()?;
        let gb = this.map(|s| bmm(&views::transpose(&s, 1, 2)?, g)).transpose()?;
        Ok(vec![ga, gb])
    }))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::linalg::test_util::t;
    use crate::ops::linalg::matmul_raw;

    #[test]
    fn mm_of_transposed_views_matches_hand_computation() {
        let a = t(vec![1., 2., 3., 4., 5., 6.], &[2, 3]); // [[1,2,3],[4,5,6]]
        let at = views::t_raw(&a).unwrap(); // 3x2, strides (1, 3)
        let r = mm_raw(&at, &a).unwrap(); // (3x2)(2x3)
        assert_eq!(r.shape(), &[3, 3]);
        assert_eq!(r.to_vec::<f32>().unwrap(), vec![17., 22., 27., 22., 29., 36., 27., 36., 45.]);
        assert!(r.is_contiguous());
    }

    #[test]
    fn errors_and_empty_products() {
        let a = Tensor::zeros(&[2, 3], DType::Float32).unwrap();
        let b = Tensor::zeros(&[4, 5], DType::Float32).unwrap();
        assert_eq!(mm_raw(&a, &b).unwrap_err().to_string(), "mat1 and mat2 shapes cannot be multiplied (2x3 and 4x5)");
        let d = Tensor::zeros(&[3, 5], DType::Float64).unwrap();
        assert_eq!(mm_raw(&a, &d).unwrap_err().to_string(), "expected m1 and m2 to have the same dtype, but got: float != double");
        let e1 = Tensor::full(&[2, 0], crate::Scalar::Float(1.0), DType::Float32).unwrap();
        let e2 = Tensor::full(&[0, 3], crate::Scalar::Float(1.0), DType::Float32).unwrap();
        assert_eq!(mm_raw(&e1, &e2).unwrap().to_vec::<f32>().unwrap(), vec![0.0; 6]);
        let bools = Tensor::zeros(&[2, 2], DType::Bool).unwrap();
        assert!(matches!(mm_raw(&bools, &bools), Err(Error::NotImplemented(_))));
        let s = Tensor::scalar(crate::Scalar::Float(1.0), DType::Float32).unwrap();
        assert!(matmul_raw(&s, &a).is_err());
    }

    #[test]
    fn integer_matmul_on_expanded_operand() {
        let a = Tensor::from_vec(vec![1i64, 2, 3], &[3]).unwrap();
        let e = views::expand_raw(&views::unsqueeze_raw(&a, 0).unwrap(), &[2, 3]).unwrap(); // stride 0 rows
        let b = Tensor::from_vec(vec![1i64, 0, 0, 1, 1, 1], &[3, 2]).unwrap();
        assert_eq!(mm_raw(&e, &b).unwrap().to_vec::<i64>().unwrap(), vec![4, 5, 4, 5]);
    }
}
