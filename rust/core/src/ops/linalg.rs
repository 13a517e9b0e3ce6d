//! Matrix products: `mm`, `bmm`, `mv`, `dot`, and `matmul`, which dispatches between them by
//! rank exactly as torch's `_matmul_impl` does (the path decides which error text a mistake
//! gets, so it is followed step for step). Operands are read in place through their strides;
//! outputs are fresh contiguous tensors.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::matmul::{batched, Strides};
use crate::layout::Layout;
use crate::ops::views;
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;
use crate::dtype::Scalar;
use crate::ops::binary::{binary_raw, BinaryOp};
use crate::ops::Arg;

/// C++ type names, as torch's mm prints them ("float != double").
fn cpp_name(d: DType) -> &'static str {
    match d {
        DType::Bool => "bool",
        DType::Int32 => "int",
        DType::Int64 => "long int",
        DType::Float32 => "float",
        DType::Float64 => "double",
    }
}

fn not_implemented(kernel: &str, d: DType) -> Error {
    Error::NotImplemented(format!("\"{}\" not implemented for '{}'", kernel, d.scalar_type_name()))
}

/// One operand of a product, read in place: batch strides aligned with the output's batch
/// shape (0 where broadcast), then row and column strides of each matrix.
struct Operand<'a> {
    t: &'a Tensor,
    batch_strides: Vec<isize>,
    rs: isize,
    cs: isize,
}

impl<'a> Operand<'a> {
    /// A plain matrix (or a vector viewed as one row/column through `rs`/`cs`).
    fn matrix(t: &'a Tensor, rs: isize, cs: isize) -> Operand<'a> {
        Operand { t, batch_strides: vec![], rs, cs }
    }
}

/// `out[batch..] = a[batch..] @ b[batch..]` into a new contiguous tensor of `out_shape`
/// (whose numel is batch·m·n). Zeros when k is 0, as torch.
#[allow(clippy::too_many_arguments)]
fn product(out_shape: &[usize], batch: &[usize], m: usize, n: usize, k: usize, a: &Operand, b: &Operand, dtype: DType) -> Result<Tensor> {
    let count: usize = batch.iter().product();
    if count * m * n == 0 {
        return Ok(Tensor::empty(out_shape, dtype)?);
    }
    if k == 0 {
        return Ok(Tensor::zeros(out_shape, dtype)?);
    }
    let out = Tensor::empty(out_shape, dtype)?;
    // Offsets of each batch entry, walking the batch shape in row-major order.
    let mut offsets = Vec::with_capacity(count);
    let mut idx = vec![0usize; batch.len()];
    for e in 0..count {
        let (mut oa, mut ob) = (a.t.layout.offset as isize, b.t.layout.offset as isize);
        for (d, &i) in idx.iter().enumerate() {
            oa += i as isize * a.batch_strides[d];
            ob += i as isize * b.batch_strides[d];
        }
        offsets.push([(e * m * n) as isize, oa, ob]);
        for d in (0..batch.len()).rev() {
            idx[d] += 1;
            if idx[d] < batch[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    let s = Strides { dst_rs: n as isize, dst_cs: 1, a_rs: a.rs, a_cs: a.cs, b_rs: b.rs, b_cs: b.cs };
    macro_rules! go {
        ($T:ty) => {
            // SAFETY: every operand address is an element of a valid layout (strides and offsets
            // come from the operands' own layouts, broadcast dims read with stride 0); `out` is
            // fresh memory of count·m·n elements that no input shares, and entry e writes only
            // its own block [e·m·n, (e+1)·m·n).
            unsafe { batched::<$T>(m, n, k, out.base_ptr::<$T>(), a.t.base_ptr::<$T>(), b.t.base_ptr::<$T>(), s, &offsets) }
        };
    }
    match dtype {
        DType::Float32 => go!(f32),
        DType::Float64 => go!(f64),
        DType::Int64 => go!(i64),
        DType::Int32 => go!(i32),
        DType::Bool => return Err(not_implemented("addmm_impl_cpu_", dtype)),
    }
    Ok(out)
}

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
fn batched_product(a: &Operand, b: &Operand, batch: &[usize], count: usize, m: usize, k: usize, count2: usize, k2: usize, n: usize, out_shape: &[usize]) -> Result<Tensor> {
    if count2 != count || k2 != k {
        return Err(Error::Runtime(format!(
            "Expected size for first two dimensions of batch2 tensor to be: [{}, {}] but got: [{}, {}].",
            count, k, count2, k2
        )));
    }
    let (da, db) = (a.t.dtype(), b.t.dtype());
    if count * m * n != 0 && k != 0 {
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

/// torch's `should_fold`: fold a ≥3-D operand's batch into matrix rows (one mm/mv instead of
/// bmm) when the other is 1-D/2-D and either that other operand requires grad (so its
/// gradient is not built batched and then summed) or the fold needs no copy.
fn should_fold(t1: &Tensor, t2: &Tensor) -> Result<bool> {
    let t1_larger = t1.ndim() >= t2.ndim();
    let (big_ndim, small_ndim) = if t1_larger { (t1.ndim(), t2.ndim()) } else { (t2.ndim(), t1.ndim()) };
    if !(big_ndim >= 3 && small_ndim <= 2) {
        return Ok(false);
    }
    let small_requires_grad = if t1_larger { t2.requires_grad() } else { t1.requires_grad() };
    if small_requires_grad {
        return Ok(true);
    }
    if t1.ndim() == 2 {
        return Ok(false);
    }
    let big = if t1_larger { t1.clone() } else { mt(t2)? };
    if big.numel() == 0 {
        return Ok(true);
    }
    let (shape, strides) = (big.shape(), big.strides());
    Ok((0..big.ndim() - 2).all(|i| strides[i] == strides[i + 1] * shape[i + 1] as isize))
}

/// `x.mT`: swap the last two dims (a view; callers pass ≥2-D tensors).
fn mt(t: &Tensor) -> Result<Tensor> {
    let n = t.ndim() as i64;
    views::transpose_raw(t, n - 2, n - 1)
}

/// torch's `_unsafe_view` of a fresh contiguous result: a new shape over the same memory,
/// still the tensor's own (not a view).
fn reshaped(t: Tensor, shape: &[usize]) -> Tensor {
    let strides = t.layout.view_strides(shape).unwrap_or_else(|| crate::shape::contiguous_strides(shape));
    Tensor { layout: Layout { shape: shape.to_vec(), strides, offset: t.layout.offset }, ..t }
}

/// `matmul(self, other)` with torch's rank rules.
pub fn matmul_raw(t1: &Tensor, t2: &Tensor) -> Result<Tensor> {
    let (d1, d2) = (t1.ndim(), t2.ndim());
    if d1 == 0 || d2 == 0 {
        return Err(Error::Runtime(format!(
            "both arguments to matmul need to be at least 1D, but they are {}D and {}D",
            d1, d2
        )));
    }
    match (d1, d2) {
        (1, 1) => dot_raw(t1, t2),
        (2, 1) => mv_raw(t1, t2),
        (1, 2) => {
            let r = mm_raw(&views::unsqueeze_raw(t1, 0)?, t2)?;
            let n = r.shape()[1];
            // torch squeezes in place (`squeeze_(0)`), which counts as a write: version 1.
            let out = reshaped(r, &[n]);
            crate::ops::write::bump_metadata(&out);
            Ok(out)
        }
        (2, 2) => mm_raw(t1, t2),
        _ if should_fold(t1, t2)? => folded(t1, t2),
        _ => broadcast_batched(t1, t2),
    }
}

/// One ≥3-D operand folded to a matrix (a view), times a 1-D/2-D operand via mm or mv.
fn folded(t1: &Tensor, t2: &Tensor) -> Result<Tensor> {
    let transpose = t2.ndim() > t1.ndim();
    let big = if transpose { mt(t2)? } else { t1.clone() };
    let small = if !transpose { t2.clone() } else if t1.ndim() == 2 { views::t_raw(t1)? } else { t1.clone() };
    let sizes = big.shape();
    let mut out_shape: Vec<usize> = sizes[..sizes.len() - 1].to_vec();
    let rows: usize = out_shape.iter().product();
    let inner = sizes[sizes.len() - 1];
    // A view: should_fold checked that the batch dims merge (or that the tensor is empty).
    let folded = views::reshape_raw(&big, &[rows as i64, inner as i64])?;
    if small.ndim() == 2 {
        out_shape.push(small.shape()[1]);
        let out = reshaped(mm_raw(&folded, &small)?, &out_shape);
        // Only reachable with autograd (should_fold refuses 2-D @ ≥3-D otherwise).
        return Ok(if transpose { crate::ops::copy::contiguous_copy(&mt(&out)?, out.dtype())? } else { out });
    }
    Ok(reshaped(mv_raw(&folded, &small)?, &out_shape))
}

/// Broadcast batch dims, then bmm over the flattened batch (read in place, never expanded).
fn broadcast_batched(t1: &Tensor, t2: &Tensor) -> Result<Tensor> {
    let (d1, d2) = (t1.ndim(), t2.ndim());
    let (s1, s2) = (t1.shape(), t2.shape());
    let n = if d1 > 1 { s1[d1 - 2] } else { 1 };
    let m1 = s1[d1 - 1];
    let batch_a = &s1[..d1.saturating_sub(2)];
    let (m2, p) = if d2 > 1 { (s2[d2 - 2], s2[d2 - 1]) } else { (s2[0], 1) };
    let batch_b = &s2[..d2.saturating_sub(2)];
    let batch = broadcast_shapes(batch_a, batch_b)?;
    let count: usize = batch.iter().product();
    let mut out_shape = batch.clone();
    if d1 > 1 {
        out_shape.push(n);
    }
    if d2 > 1 {
        out_shape.push(p);
    }
    let a = batch_operand(t1, &batch, d1 == 1, false);
    let b = batch_operand(t2, &batch, false, d2 == 1);
    batched_product(&a, &b, &batch, count, n, m1, count, m2, p, &out_shape)
}

/// `t` as a batch of matrices aligned with `batch`: a 1-D left operand is one row, a 1-D right
/// operand one column.
fn batch_operand<'a>(t: &'a Tensor, batch: &[usize], row: bool, col: bool) -> Operand<'a> {
    let (shape, strides) = (t.shape(), t.strides());
    let nd = t.ndim();
    let (rs, cs) = if row {
        (0, strides[0])
    } else if col {
        (strides[0], 0)
    } else {
        (strides[nd - 2], strides[nd - 1])
    };
    // A vector has no batch dims; a matrix batch has all but its last two.
    let own = if row || col { 0 } else { nd - 2 };
    let mut batch_strides = vec![0isize; batch.len()];
    for i in 0..own {
        let d = batch.len() - own + i;
        batch_strides[d] = if shape[i] == 1 && batch[d] != 1 { 0 } else { strides[i] };
    }
    Operand { t, batch_strides, rs, cs }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: Vec<f32>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape).unwrap()
    }

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
    fn matmul_ranks_and_broadcasting() {
        let a = t((0..24).map(|v| v as f32).collect(), &[2, 3, 4]);
        let v = t(vec![1., 0., -1., 2.], &[4]);
        let r = matmul_raw(&a, &v).unwrap();
        assert_eq!(r.shape(), &[2, 3]);
        assert_eq!(r.to_vec::<f32>().unwrap(), vec![4., 12., 20., 28., 36., 44.]);
        // [2,1,3,4] @ [5,4,1] broadcasts to [2,5,3,1]
        let a4 = views::reshape_raw(&a, &[2, 1, 3, 4]).unwrap();
        let b = t((0..20).map(|v| v as f32).collect(), &[5, 4, 1]);
        let r = matmul_raw(&a4, &b).unwrap();
        assert_eq!(r.shape(), &[2, 5, 3, 1]);
        // entry (1, 2, 0, 0) = row a[1,0,:] . b[2,:,0]
        let want: f32 = (0..4).map(|p| (12 + p) as f32 * (8 + p) as f32).sum();
        assert_eq!(r.to_vec::<f32>().unwrap()[(5 + 2) * 3], want);
        assert_eq!(dot_raw(&v, &v).unwrap().to_vec::<f32>().unwrap(), vec![6.]);
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

// ----- autograd: saves and backward formulas (derivatives.yaml) -----

use crate::autograd::formulas as fm;
use crate::autograd::Recorder;

/// Saves `first` under `first_name` when input 0 needs a gradient and `second` when input 1
/// does (torch saves each operand only for the other's gradient, R13).
fn save_crossed(rec: &mut Recorder, first_name: &'static str, first: &Tensor, second_name: &'static str, second: &Tensor) -> Result<()> {
    if rec.needs(0) {
        rec.save(first_name, first)?;
    }
    if rec.needs(1) {
        rec.save(second_name, second)?;
    }
    Ok(())
}

/// The saved operands in `save_crossed`'s order: (for input 0's gradient, for input 1's).
fn crossed(ctx: &crate::autograd::node::Ctx) -> (Option<Tensor>, Option<Tensor>) {
    let mut it = ctx.saved.iter().cloned();
    let a = if ctx.needs(0) { it.next() } else { None };
    let b = if ctx.needs(1) { it.next() } else { None };
    (a, b)
}

/// Differentiable `mm` (MmBackward0): `grad @ mat2.T` and `self.T @ grad`.
pub fn mm(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(a), Some(b)])?;
    let out = mm_raw(a, b)?;
    let Some(mut rec) = rec else { return Ok(out) };
    save_crossed(&mut rec, "mat2", b, "self", a)?;
    rec.finish("MmBackward0", &[&out], Box::new(|ctx| {
        let g = ctx.grad();
        let (mat2, this) = crossed(ctx);
        let ga = mat2.map(|m| mm(g, &views::t(&m)?)).transpose()?;
        let gb = this.map(|s| mm(&views::t(&s)?, g)).transpose()?;
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

/// torch's `_unsafe_view` of a fresh product: the same memory under a new shape, not a view;
/// UnsafeViewBackward0 reshapes the gradient back.
fn unsafe_view(t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let out = reshaped(t.fresh_handle(), shape);
    if let Some(mut rec) = Recorder::new(&[Some(t)])? {
        rec.value("self_sym_sizes", crate::ops::reduce::py_ints(t.shape()));
        let back: Vec<i64> = t.shape().iter().map(|&d| d as i64).collect();
        rec.finish("UnsafeViewBackward0", &[&out], Box::new(move |ctx| Ok(vec![Some(views::reshape(ctx.grad(), &back)?)])))?;
    }
    Ok(out)
}

/// torch's in-place `squeeze_(0)` of the (1×n) product of a vector and a matrix: the product
/// itself, reshaped and bumped, with SqueezeBackward4 as its history.
fn squeeze0_in_place(r: &Tensor) -> Result<Tensor> {
    let layout = r.layout.squeeze(Some(&[0]))?;
    let out = Tensor { layout, ..r.fresh_handle() };
    crate::ops::write::bump_metadata(&out);
    if let Some(mut rec) = Recorder::new(&[Some(r)])? {
        rec.value("dim", 0);
        rec.finish("SqueezeBackward4", &[&out], Box::new(|ctx| Ok(vec![Some(views::unsqueeze(ctx.grad(), 0)?)])))?;
    }
    Ok(out)
}

/// Differentiable `matmul`: when an operand requires grad, torch's `_matmul_impl` is followed
/// with differentiable pieces (dot / mv / mm / bmm plus views), so the graph has torch's nodes:
/// 1-D·2-D ends in SqueezeBackward4, folded and batched products in UnsafeViewBackward0, a
/// 2-D·≥3-D fold in CloneBackward0; broadcast batch dims reach the inputs through
/// ExpandBackward0, which sums their gradients.
pub fn matmul(t1: &Tensor, t2: &Tensor) -> Result<Tensor> {
    if !(t1.requires_grad() || t2.requires_grad()) {
        return matmul_raw(t1, t2);
    }
    let (d1, d2) = (t1.ndim(), t2.ndim());
    if d1 == 0 || d2 == 0 {
        return matmul_raw(t1, t2);
    }
    match (d1, d2) {
        (1, 1) => dot(t1, t2),
        (2, 1) => mv(t1, t2),
        (1, 2) => squeeze0_in_place(&mm(&views::unsqueeze(t1, 0)?, t2)?),
        (2, 2) => mm(t1, t2),
        _ if should_fold(t1, t2)? => folded_grad(t1, t2),
        _ => batched_grad(t1, t2),
    }
}

/// The fold branch of `_matmul_impl` with differentiable pieces.
fn folded_grad(t1: &Tensor, t2: &Tensor) -> Result<Tensor> {
    let transpose = t2.ndim() > t1.ndim();
    let big = if transpose { views::transpose(t2, -2, -1)? } else { t1.clone() };
    let small = if !transpose { t2.clone() } else if t1.ndim() == 2 { views::t(t1)? } else { t1.clone() };
    let sizes = big.shape().to_vec();
    let mut out_shape: Vec<usize> = sizes[..sizes.len() - 1].to_vec();
    let rows: usize = out_shape.iter().product();
    let folded = views::reshape(&big, &[rows as i64, sizes[sizes.len() - 1] as i64])?;
    if small.ndim() == 2 {
        out_shape.push(small.shape()[1]);
        let out = unsafe_view(&mm(&folded, &small)?, &out_shape)?;
        return if transpose { crate::ops::copy::contiguous(&views::transpose(&out, -2, -1)?) } else { Ok(out) };
    }
    unsafe_view(&mv(&folded, &small)?, &out_shape)
}

/// The batched branch of `_matmul_impl`: expand both to the broadcast batch, flatten it, bmm.
fn batched_grad(t1: &Tensor, t2: &Tensor) -> Result<Tensor> {
    let (d1, d2) = (t1.ndim(), t2.ndim());
    let (s1, s2) = (t1.shape().to_vec(), t2.shape().to_vec());
    let n = if d1 > 1 { s1[d1 - 2] } else { 1 };
    let m1 = s1[d1 - 1];
    let b1 = &s1[..d1.saturating_sub(2)];
    let (m2, p) = if d2 > 1 { (s2[d2 - 2], s2[d2 - 1]) } else { (s2[0], 1) };
    let b2 = &s2[..d2.saturating_sub(2)];
    // A size-1 batch that would be broadcast goes through the fold instead (torch does this
    // for the gradient's sake).
    if d1 == 3 && d2 == 3 && b1[0] != b2[0] {
        if b1[0] == 1 && t1.requires_grad() {
            return matmul(&views::squeeze(t1, Some(&[0]))?, t2);
        }
        if b2[0] == 1 && t2.requires_grad() {
            return matmul(t1, &views::squeeze(t2, Some(&[0]))?);
        }
    }
    let batch = broadcast_shapes(b1, b2)?;
    let count: usize = batch.iter().product();
    let sizes = |tail: &[usize]| -> Vec<i64> { batch.iter().chain(tail).map(|&d| d as i64).collect() };
    let (c, n_, m1_, m2_, p_) = (count as i64, n as i64, m1 as i64, m2 as i64, p as i64);
    let a = views::reshape(&views::expand(t1, &sizes(&[n, m1]))?, &[c, n_, m1_])?;
    let b = if d2 == 1 {
        views::unsqueeze(&views::reshape(&views::expand(t2, &sizes(&[m2]))?, &[c, m2_])?, 2)?
    } else {
        views::reshape(&views::expand(t2, &sizes(&[m2, p]))?, &[c, m2_, p_])?
    };
    let mut out_shape = batch.clone();
    if d1 > 1 {
        out_shape.push(n);
    }
    if d2 > 1 {
        out_shape.push(p);
    }
    let r = bmm(&a, &b)?;
    let r = if d2 == 1 { views::squeeze(&r, Some(&[-1]))? } else { r };
    unsafe_view(&r, &out_shape)
}

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
    let product = mm_raw(mat1, mat2)?;
    if beta.to_f64() == 0.0 {
        return binary_raw(BinaryOp::Mul, &Arg::Tensor(product), &Arg::Scalar(alpha), None);
    }
    let scaled = if beta.to_f64() == 1.0 { expanded } else { binary_raw(BinaryOp::Mul, &Arg::Tensor(expanded), &Arg::Scalar(beta), None)? };
    binary_raw(BinaryOp::Add, &Arg::Tensor(scaled), &Arg::Tensor(product), Some(alpha))
}

/// Differentiable `addmm` (AddmmBackward0): `sum_to(beta·grad, self)`, `alpha·grad @ mat2.T`,
/// `alpha·mat1.T @ grad`; each matrix is saved only for the other's gradient.
pub fn addmm(this: &Tensor, mat1: &Tensor, mat2: &Tensor, beta: Scalar, alpha: Scalar) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(this), Some(mat1), Some(mat2)])?;
    let out = addmm_raw(this, mat1, mat2, beta, alpha)?;
    let Some(mut rec) = rec else { return Ok(out) };
    if rec.needs(2) {
        rec.save("mat1", mat1)?;
    }
    if rec.needs(1) {
        rec.save("mat2", mat2)?;
    }
    rec.value("alpha", fmt_scalar(alpha));
    rec.value("beta", fmt_scalar(beta));
    let self_shape = this.shape().to_vec();
    let (b, a) = (beta.to_f64(), alpha.to_f64());
    let scale = move |t: Tensor, s: f64| if s == 1.0 { Ok(t) } else { fm::mul_s(&t, s) };
    rec.finish("AddmmBackward0", &[&out], Box::new(move |ctx| {
        let g = ctx.grad();
        let mut saved = ctx.saved.iter().cloned();
        let mat1 = if ctx.needs(2) { saved.next() } else { None };
        let mat2 = if ctx.needs(1) { saved.next() } else { None };
        let gs = if ctx.needs(0) { Some(fm::sum_to(&scale(g.clone(), b)?, &self_shape)?) } else { None };
        let g1 = mat2.map(|m| scale(mm(g, &views::t(&m)?)?, a)).transpose()?;
        let g2 = mat1.map(|m| scale(mm(&views::t(&m)?, g)?, a)).transpose()?;
        Ok(vec![gs, g1, g2])
    }))?;
    Ok(out)
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
    fn products_pass_gradcheck_with_torchs_nodes() {
        let f: &dyn Fn(&[Tensor]) -> Result<Tensor> = &|t| matmul(&t[0], &t[1]);
        let cases: Vec<(&[usize], &[usize], &str)> = vec![
            (&[3, 4], &[4, 2], "MmBackward0"),
            (&[3, 4], &[4], "MvBackward0"),
            (&[4], &[4], "DotBackward0"),
            (&[4], &[4, 2], "SqueezeBackward4"),
            (&[2, 3, 4], &[4, 2], "UnsafeViewBackward0"),
            (&[2, 3, 4], &[4], "UnsafeViewBackward0"),
            (&[4], &[2, 4, 3], "UnsafeViewBackward0"),
            (&[3, 4], &[2, 4, 5], "CloneBackward0"),
            (&[2, 3, 4], &[2, 4, 5], "UnsafeViewBackward0"),
            (&[2, 1, 3, 4], &[5, 4, 2], "UnsafeViewBackward0"),
            (&[1, 3, 4], &[2, 4, 5], "CloneBackward0"),
            (&[2, 3, 4], &[1, 4, 5], "UnsafeViewBackward0"),
            (&[2, 2, 3], &[3], "UnsafeViewBackward0"),
            (&[3], &[2, 1, 3, 2], "UnsafeViewBackward0"),
        ];
        for (i, (sa, sb, name)) in cases.into_iter().enumerate() {
            let (a, b) = (rand_leaf(sa, 2 * i as u64), rand_leaf(sb, 2 * i as u64 + 1));
            let out = matmul(&a, &b).unwrap();
            assert_eq!(node_name(&out), name, "{:?} @ {:?}", sa, sb);
            let plain = matmul_raw(&vals(a.to_vec().unwrap(), sa), &vals(b.to_vec().unwrap(), sb)).unwrap();
            assert_eq!(out.shape(), plain.shape(), "{:?} @ {:?}", sa, sb);
            assert!(close(&out.to_vec::<f64>().unwrap(), &plain.to_vec::<f64>().unwrap()), "{:?} @ {:?}", sa, sb);
            gradcheck(&format!("matmul {:?} @ {:?}", sa, sb), f, &[a, b], true);
        }
        gradcheck("bmm", &|t| bmm(&t[0], &t[1]), &[rand_leaf(&[2, 3, 4], 50), rand_leaf(&[2, 4, 2], 51)], true);
        // Only one operand requiring grad: the other is a constant of the closure.
        let c = vals(values(8, 52), &[4, 2]);
        gradcheck("matmul one side", &move |t| matmul(&t[0], &c), &[rand_leaf(&[2, 3, 4], 53)], false);
    }

    #[test]
    fn addmm_passes_gradcheck_and_sums_self_back() {
        let f: &dyn Fn(&[Tensor]) -> Result<Tensor> = &|t| addmm(&t[0], &t[1], &t[2], Scalar::Float(0.5), Scalar::Float(2.0));
        let (s, a, b) = (rand_leaf(&[3], 60), rand_leaf(&[2, 4], 61), rand_leaf(&[4, 3], 62));
        assert_eq!(node_name(&f(&[s.clone(), a.clone(), b.clone()]).unwrap()), "AddmmBackward0");
        gradcheck("addmm", f, &[s, a, b], true);
        let err = addmm_raw(&vals(values(2, 63), &[2]), &vals(values(8, 64), &[2, 4]), &vals(values(12, 65), &[4, 3]), Scalar::Int(1), Scalar::Int(1));
        assert!(err.unwrap_err().to_string().contains("The expanded size"));
    }

    #[test]
    fn saves_follow_the_needed_gradients() {
        let a = rand_leaf(&[2, 3], 1);
        let b = vals(values(6, 2), &[3, 2]);
        let out = mm(&a, &b).unwrap();
        let node = out.grad_fn().unwrap().unwrap();
        let saved: Vec<&str> = node.body().saved().iter().map(|(n, _)| *n).collect();
        assert_eq!(saved, vec!["mat2"]);
        // 1-D @ 2-D squeezes in place: version 1, as torch.
        assert_eq!(matmul(&vals(vec![1., 2., 3.], &[3]), &b).unwrap().version(), 1);
        assert_eq!(matmul(&rand_leaf(&[3], 4), &b).unwrap().version(), 1);
    }
}
