//! Ops that move elements without computing: `flip`, `roll`, `tril`/`triu` (and `tril_`/
//! `triu_`), `repeat`, `tile`. Each is composed of existing raw ops (index_select, narrow and
//! cat, where, expand and a copy), so it runs wherever those run, and records one node with
//! torch's name and backward: FlipBackward0, RollBackward0, TrilBackward0/TriuBackward0,
//! RepeatBackward0 (tile is repeat, as in torch).
//!
//! Result layouts follow torch: flip keeps the input's (dense) strides, the others are
//! row-major.

use crate::autograd::Recorder;
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::binary::where_raw;
use crate::ops::copy::{contiguous_copy, contiguous_raw, copy_inplace_raw, copy_kernel, empty_strided, preserved_layout};
use crate::ops::gather::index_select_raw;
use crate::ops::join::cat_raw;
use crate::ops::reduce::{py_ints, sum};
use crate::ops::views::{self, expand_raw, narrow_raw, reshape_raw};
use crate::ops::Arg;
use crate::shape::{wrap_dim, wrap_dims};
use crate::tensor::Tensor;

/// `t` copied into a fresh tensor laid out as `layout` (unless it already is).
fn into_layout(t: Tensor, layout: &Layout) -> Result<Tensor> {
    if t.layout.strides == layout.strides && t.layout.offset == 0 {
        return Ok(t);
    }
    let out = empty_strided(layout, t.dtype(), t.device())?;
    copy_kernel(&out, &t)?;
    Ok(out)
}

/// A row-major result that is nobody's view.
fn row_major(t: Tensor) -> Result<Tensor> {
    if t.is_contiguous() && !t.is_view() {
        Ok(t)
    } else {
        contiguous_copy(&t, t.dtype())
    }
}

fn as_i64(d: &[usize]) -> Vec<i64> {
    d.iter().map(|&v| v as i64).collect()
}

// ----- flip -----

/// `flip(dims)`: each listed dim reversed (repeats refused); torch's output keeps the input's
/// dense strides (`empty_like(self, preserve_format)`).
pub fn flip_raw(x: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let wrapped = wrap_dims(dims, x.ndim())?;
    let mut out = x.clone();
    for &d in &wrapped {
        let n = if x.ndim() == 0 { 1 } else { x.shape()[d] };
        if n > 1 {
            let reversed = crate::ops::copy::to_device_raw(&Tensor::from_vec((0..n as i64).rev().collect::<Vec<_>>(), &[n])?, x.device())?;
            out = index_select_raw(&out, d as i64, &reversed)?;
        }
    }
    let layout = preserved_layout(x);
    if out.same_storage(x) {
        let copy = empty_strided(&layout, x.dtype(), x.device())?;
        copy_kernel(&copy, x)?;
        return Ok(copy);
    }
    into_layout(out, &layout)
}

/// Differentiable `flip` (FlipBackward0: the gradient flipped back).
pub fn flip(x: &Tensor, dims: &[i64]) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    let out = flip_raw(x, dims)?;
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok(out) };
    rec.value("dims", py_ints(dims));
    let d = dims.to_vec();
    rec.finish("FlipBackward0", &[&out], Box::new(move |ctx| Ok(vec![Some(flip(ctx.grad(), &d)?)])))?;
    Ok(out)
}

// ----- rot90 -----

/// `rot90(k, dims)` without a graph: torch's checks in its order, then its steps (k taken
/// modulo 4): `flip(dims[1])` transposed for k = 1, `flip(dims)` for 2, `flip(dims[0])`
/// transposed for 3, a contiguous copy for 0. A transposed result is the fresh flip's memory
/// with swapped strides (torch's `transpose_` of it), not a view of the input.
pub fn rot90_raw(x: &Tensor, k: i64, dims: &[i64]) -> Result<Tensor> {
    let total = x.ndim() as i64;
    if dims.len() != 2 {
        return Err(Error::Runtime(format!("expected total rotation dims == 2, but got dims = {}", dims.len())));
    }
    if total < 2 {
        return Err(Error::Runtime(format!("expected total dims >= 2, but got total dims = {}", total)));
    }
    wrap_dim(dims[0], x.ndim())?;
    wrap_dim(dims[1], x.ndim())?;
    if dims[0] == dims[1] || (dims[0] - dims[1]).abs() == total {
        return Err(Error::Runtime(format!(
            "expected rotation dims to be different, but got dim0 = {} and dim1 = {}",
            dims[0], dims[1]
        )));
    }
    // torch's `transpose_` of the fresh flip: the same memory with two strides swapped, a tensor
    // of its own (not a view: nothing else holds that memory)
    let transposed = |t: Tensor| -> Result<Tensor> {
        let layout = t.layout.transpose(dims[0], dims[1])?;
        Ok(Tensor::from_storage(t.storage.clone(), layout))
    };
    match k.rem_euclid(4) {
        1 => transposed(flip_raw(x, &dims[1..])?),
        2 => flip_raw(x, dims),
        3 => transposed(flip_raw(x, &dims[..1])?),
        _ => contiguous_copy(x, x.dtype()),
    }
}

/// Differentiable `rot90` (Rot90Backward0 saving k and dims: the gradient rotated back).
pub fn rot90(x: &Tensor, k: i64, dims: &[i64]) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    let out = rot90_raw(x, k, dims)?;
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok(out) };
    rec.values(vec![("dims", crate::autograd::SavedValue::Ints(dims.iter().copied().collect())), ("k", crate::autograd::SavedValue::Int(k))]);
    let d = dims.to_vec();
    rec.finish("Rot90Backward0", &[&out], Box::new(move |ctx| Ok(vec![Some(rot90(ctx.grad(), k.wrapping_neg(), &d)?)])))?;
    Ok(out)
}

// ----- roll -----

/// One dim rolled by `shift`: the last `shift` elements move to the front (torch's roll_cpu).
fn roll_one(x: &Tensor, shift: i64, dim: i64) -> Result<Tensor> {
    if x.numel() == 0 {
        return contiguous_copy(x, x.dtype());
    }
    if x.ndim() == 0 {
        return Err(Error::Index(format!("Dimension specified as {} but tensor has no dimensions", dim)));
    }
    let d = wrap_dim(dim, x.ndim())?;
    let size = x.shape()[d] as i128;
    let mut start = (size - shift as i128) % size;
    if start < 0 {
        start += size;
    }
    let (start, size) = (start as i64, size as i64);
    let rolled = cat_raw(&[narrow_raw(x, d as i64, start, size - start)?, narrow_raw(x, d as i64, 0, start)?], d as i64)?;
    row_major(rolled)
}

/// `roll(shifts, dims)`: several dims are rolled one after the other; with no dims and one
/// shift the flattened tensor is rolled.
pub fn roll_raw(x: &Tensor, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
    if shifts.len() == 1 && dims.len() == 1 {
        return roll_one(x, shifts[0], dims[0]);
    }
    if shifts.is_empty() {
        return Err(Error::Runtime("`shifts` required".into()));
    }
    if dims.is_empty() && shifts.len() == 1 {
        let flat = reshape_raw(&contiguous_raw(x)?, &[x.numel() as i64])?;
        let rolled = roll_one(&flat, shifts[0], 0)?;
        return row_major(reshape_raw(&rolled, &as_i64(x.shape()))?);
    }
    if shifts.len() != dims.len() {
        return Err(Error::Runtime(format!("shifts and dimensions must align. shifts: {}, dims:{}", shifts.len(), dims.len())));
    }
    let mut out = x.clone();
    for (&s, &d) in shifts.iter().zip(dims) {
        out = roll_one(&out, s, d)?;
    }
    Ok(out)
}

/// Differentiable `roll` (RollBackward0: the gradient rolled back, dims in reverse order).
pub fn roll(x: &Tensor, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    let out = roll_raw(x, shifts, dims)?;
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok(out) };
    rec.value("dims", py_ints(dims));
    rec.value("shifts", py_ints(shifts));
    let back_shifts: Vec<i64> = shifts.iter().rev().map(|s| s.wrapping_neg()).collect();
    let back_dims: Vec<i64> = dims.iter().rev().copied().collect();
    rec.finish("RollBackward0", &[&out], Box::new(move |ctx| Ok(vec![Some(roll(ctx.grad(), &back_shifts, &back_dims)?)])))?;
    Ok(out)
}

// ----- tril / triu -----

fn zero_of(dtype: DType) -> Scalar {
    match dtype {
        DType::Bool => Scalar::Bool(false),
        d if d.is_floating() => Scalar::Float(0.0),
        _ => Scalar::Int(0),
    }
}

/// Which (row, col) positions of the last two dims `tril(diagonal)` / `triu(diagonal)` keep.
fn triangle_mask(rows: usize, cols: usize, diagonal: i64, upper: bool) -> Result<Tensor> {
    Tensor::from_fn(&[rows, cols], |i| {
        let (r, c) = ((i / cols.max(1)) as i128, (i % cols.max(1)) as i128);
        if upper { c - r >= diagonal as i128 } else { c - r <= diagonal as i128 }
    })
}

/// `tril(diagonal)` / `triu(diagonal)`: the other elements become zero (NaNs too).
pub fn tri_raw(x: &Tensor, diagonal: i64, upper: bool) -> Result<Tensor> {
    if x.ndim() < 2 {
        return Err(Error::Runtime(format!("{}: input tensor must have at least 2 dimensions", if upper { "triu" } else { "tril" })));
    }
    let n = x.ndim();
    let mask = crate::ops::copy::to_device_raw(&triangle_mask(x.shape()[n - 2], x.shape()[n - 1], diagonal, upper)?, x.device())?;
    row_major(where_raw(&mask, &Arg::Tensor(x.clone()), &Arg::Scalar(zero_of(x.dtype())))?)
}

fn tri_node(upper: bool) -> &'static str {
    if upper { "TriuBackward0" } else { "TrilBackward0" }
}

/// Differentiable `tril` / `triu` (TrilBackward0 / TriuBackward0: the gradient masked alike).
pub fn tri(x: &Tensor, diagonal: i64, upper: bool) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    let out = tri_raw(x, diagonal, upper)?;
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok(out) };
    rec.value("diagonal", diagonal);
    rec.finish(tri_node(upper), &[&out], Box::new(move |ctx| Ok(vec![Some(tri(ctx.grad(), diagonal, upper)?)])))?;
    Ok(out)
}

/// Differentiable `x.tril_(diagonal)` / `triu_`: the new values go in through the write path.
pub fn tri_(x: &Tensor, diagonal: i64, upper: bool) -> Result<()> {
    let _blame = crate::autograd::blame::op(if upper { "triu_" } else { "tril_" });
    let rec = Recorder::inplace(x, &[])?;
    let result = tri_raw(x, diagonal, upper)?;
    copy_inplace_raw(x, &result)?;
    let Some(mut rec) = rec else { return Ok(()) };
    rec.value("diagonal", diagonal);
    rec.finish_inplace(tri_node(upper), x, Box::new(move |ctx| Ok(vec![Some(tri(ctx.grad(), diagonal, upper)?)])))
}

// ----- repeat / tile -----

/// `repeat(repeats)`: leading dims are added as needed; dim i is repeated `repeats[i]` times.
pub fn repeat_raw(x: &Tensor, repeats: &[i64]) -> Result<Tensor> {
    if repeats.len() < x.ndim() {
        return Err(Error::Runtime("Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor".into()));
    }
    let lead = repeats.len() - x.ndim();
    let padded: Vec<i64> = std::iter::repeat_n(1, lead).chain(x.shape().iter().map(|&s| s as i64)).collect();
    let target: Vec<i64> = padded.iter().zip(repeats).map(|(&p, &r)| p.saturating_mul(r)).collect();
    if let Some(&neg) = target.iter().find(|&&t| t < 0) {
        return Err(Error::Runtime(format!(
            "Trying to create tensor with negative dimension {}: [{}]",
            neg,
            target.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ")
        )));
    }
    if target.contains(&0) {
        return Tensor::empty_on(&target.iter().map(|&t| t as usize).collect::<Vec<_>>(), x.dtype(), x.device());
    }
    // [p0, p1, ...] viewed as [1, p0, 1, p1, ...], expanded to [r0, p0, r1, p1, ...], copied.
    let base = reshape_raw(x, &padded)?;
    let mut interleaved = Vec::with_capacity(2 * padded.len());
    let mut expanded = Vec::with_capacity(2 * padded.len());
    for (&p, &r) in padded.iter().zip(repeats) {
        interleaved.extend([1, p]);
        expanded.extend([r, p]);
    }
    let spread = expand_raw(&reshape_raw(&base, &interleaved)?, &expanded)?;
    reshape_raw(&contiguous_copy(&spread, x.dtype())?, &target)
}

/// torch's repeat_backward: the gradient summed over the repeated copies of each dim.
fn repeat_backward(g: &Tensor, repeats: &[i64], input_shape: &[usize]) -> Result<Tensor> {
    if repeats.contains(&0) {
        return Tensor::zeros_on(input_shape, g.dtype(), g.device());
    }
    let mut g = g.clone();
    let lead = g.ndim() - input_shape.len();
    for _ in 0..lead {
        g = sum(&g, Some(&[0]), false, None)?;
    }
    let (mut grad_size, mut sum_dims) = (Vec::new(), Vec::new());
    for (d, &s) in input_shape.iter().enumerate() {
        let r = repeats[d + lead];
        if r != 1 {
            grad_size.push(r);
            sum_dims.push(grad_size.len() as i64 - 1);
        }
        grad_size.push(s as i64);
    }
    if sum_dims.is_empty() {
        return Ok(g);
    }
    sum(&views::reshape(&g, &grad_size)?, Some(&sum_dims), false, None)
}

/// Differentiable `repeat` (RepeatBackward0).
pub fn repeat(x: &Tensor, repeats: &[i64]) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    let out = repeat_raw(x, repeats)?;
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok(out) };
    rec.value("repeats", py_ints(repeats));
    rec.value("self_sym_sizes", py_ints(x.shape()));
    let (r, shape) = (repeats.to_vec(), x.shape().to_vec());
    rec.finish("RepeatBackward0", &[&out], Box::new(move |ctx| Ok(vec![Some(repeat_backward(ctx.grad(), &r, &shape)?)])))?;
    Ok(out)
}

/// `tile(dims)`: repeat, with `dims` padded by leading ones to the tensor's rank.
pub fn tile(x: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let pad = x.ndim().saturating_sub(dims.len());
    let reps: Vec<i64> = std::iter::repeat_n(1, pad).chain(dims.iter().copied()).collect();
    repeat(x, &reps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    fn f(v: &[f32], shape: &[usize]) -> Tensor {
        Tensor::from_vec(v.to_vec(), shape).unwrap()
    }

    #[test]
    fn values() {
        let x = f(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
        assert_eq!(flip_raw(&x, &[0, -1]).unwrap().to_vec::<f32>().unwrap(), vec![6., 5., 4., 3., 2., 1.]);
        assert_eq!(roll_raw(&x, &[1], &[]).unwrap().to_vec::<f32>().unwrap(), vec![6., 1., 2., 3., 4., 5.]);
        assert_eq!(roll_raw(&x, &[-1, 4], &[1, 0]).unwrap().to_vec::<f32>().unwrap(), vec![2., 3., 1., 5., 6., 4.]);
        assert_eq!(tri_raw(&x, 0, false).unwrap().to_vec::<f32>().unwrap(), vec![1., 0., 0., 4., 5., 0.]);
        assert_eq!(tri_raw(&x, 1, true).unwrap().to_vec::<f32>().unwrap(), vec![0., 2., 3., 0., 0., 6.]);
        let r = repeat_raw(&f(&[1., 2.], &[2]), &[2, 2]).unwrap();
        assert_eq!((r.shape().to_vec(), r.to_vec::<f32>().unwrap()), (vec![2, 4], vec![1., 2., 1., 2., 1., 2., 1., 2.]));
        assert_eq!(
            repeat_raw(&x, &[-1, 1]).unwrap_err().to_string(),
            "Trying to create tensor with negative dimension -2: [-2, 3]"
        );
        assert_eq!(flip_raw(&x, &[1, -1]).unwrap_err().to_string(), "dim 1 appears multiple times in the list of dims");
    }

    #[test]
    fn shape_ops_pass_gradcheck() {
        let x = rand_leaf(&[2, 3, 4], 9);
        gradcheck("flip", &|t| flip(&t[0], &[0, 2]), &[x.clone()], true);
        gradcheck("roll", &|t| roll(&t[0], &[1, -2], &[2, 0]), &[x.clone()], true);
        gradcheck("roll flat", &|t| roll(&t[0], &[5], &[]), &[x.clone()], true);
        gradcheck("tril", &|t| tri(&t[0], -1, false), &[x.clone()], true);
        gradcheck("triu", &|t| tri(&t[0], 1, true), &[x.clone()], true);
        gradcheck("repeat", &|t| repeat(&t[0], &[2, 1, 3, 1]), &[x.clone()], true);
        gradcheck("tile", &|t| tile(&t[0], &[2, 2]), &[x.clone()], true);
        assert_eq!(node_name(&tile(&x, &[2]).unwrap()), "RepeatBackward0");
    }
}
