//! `matmul`: torch's `_matmul_impl` rank dispatch, step for step (fold a batch into rows, or
//! broadcast the batch and bmm). With an operand that requires grad it is followed with
//! differentiable pieces, so the graph has torch's nodes (SqueezeBackward4,
//! UnsafeViewBackward0, CloneBackward0, ExpandBackward0).

use crate::autograd::Recorder;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::views;
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;
use super::{bmm, dot, dot_raw, mm, mm_raw, mv, mv_raw, unsafe_view, Operand};
use super::products::batched_product;

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
    let strides = t.layout.view_strides(shape).unwrap_or_else(|| crate::shape::contiguous_strides(shape).to_vec());
    Tensor { layout: Layout { shape: shape.into(), strides: strides.into(), offset: t.layout.offset }, ..t }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::linalg::test_util::t;

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
