//! `x.masked_scatter_(mask, source)` and `masked_scatter`: the true elements of the mask
//! (broadcast to x), in row-major order, take the first `n` elements of `source` (any shape,
//! read in row-major order). One write through the write path, through the mask's ranks
//! (`Backend::mask_ranks` / `masked_put`: on cuda only the count comes back to the host).
//! MaskedScatterBackward0 (derivatives.yaml): self gets `grad.masked_fill(mask, 0)`, source
//! `grad.masked_select(mask)` padded with zeros to source's size.

use crate::autograd::Recorder;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::ops::copy::{contiguous_copy, contiguous_raw};
use crate::ops::write::{write, Alias};
use crate::shape::broadcast_shapes;
use crate::tensor::Tensor;
use crate::version::VersionCounter;

/// torch's checks, in torch's order, and the mask broadcast to x's shape (0-d seen as `[1]`).
fn checked_mask(x: &Tensor, mask: &Tensor, source: &Tensor) -> Result<Tensor> {
    if source.dtype() != x.dtype() {
        return Err(Error::Runtime(format!(
            "masked_scatter: expected self and source to have same dtypes but got{} and {}",
            x.dtype().scalar_type_name(),
            source.dtype().scalar_type_name()
        )));
    }
    if mask.dtype() != DType::Bool {
        return Err(Error::Runtime(format!(
            "masked_scatter_ only supports boolean masks, but got mask with dtype {}",
            mask.dtype().scalar_type_name()
        )));
    }
    let sizes: Vec<i64> = x.shape().iter().map(|&d| d as i64).collect();
    let m = mask.view_as_layout(mask.layout.expand(&sizes)?);
    let m = crate::ops::copy::to_device_raw(&m, x.device())?;
    contiguous_raw(&m)
}

/// `x.masked_scatter_(mask, source)` without autograd: one write, one version bump.
pub fn masked_scatter_inplace_raw(x: &Tensor, mask: &Tensor, source: &Tensor) -> Result<()> {
    let m = checked_mask(x, mask, source)?;
    // The ranks want at least one dim: a 0-d x and its mask are seen as `[1]`.
    let (dst, m) = if x.ndim() == 0 {
        let one = |t: &Tensor| Tensor { layout: Layout { shape: smallvec::smallvec![1], strides: smallvec::smallvec![1], offset: t.layout.offset }, ..t.clone() };
        (one(x), one(&m))
    } else {
        (x.clone(), m)
    };
    let (ranks, n) = crate::device::backend_for(&[&m])?.mask_ranks(&m)?;
    if source.numel() < n {
        return Err(Error::Runtime("Number of elements of source < number of ones in mask".into()));
    }
    write(x, &[source], |reads| {
        let (s, alias) = &reads[0];
        // A source sharing x's memory is read from a copy (so is any non-contiguous one).
        let s = if *alias == Alias::Same || !s.is_contiguous() { contiguous_copy(s, s.dtype())? } else { s.clone() };
        if n == 0 {
            return Ok(());
        }
        let flat = s.view_as_layout(Layout { shape: smallvec::smallvec![n], strides: smallvec::smallvec![1], offset: s.layout.offset });
        crate::device::backend_for(&[&dst, &flat])?.masked_put(&dst, 0, &ranks, &flat, false)
    })
}

/// MaskedScatterBackward0's formula.
fn formula(ctx: &crate::autograd::Ctx, source_shape: &[usize]) -> Result<Vec<Option<Tensor>>> {
    let (g, mask) = (ctx.grad(), ctx.saved(0));
    let gx = if ctx.needs(0) { Some(crate::ops::formulas::zero_where(g, mask)?) } else { None };
    let gs = if ctx.needs(2) {
        let picked = crate::ops::mask::masked_select(g, mask)?;
        let total: usize = source_shape.iter().product();
        let picked = if total > picked.numel() {
            let fill = crate::ops::formulas::zeros(&[total - picked.numel()], g.dtype(), g.device())?;
            crate::ops::join::cat(&[picked, fill], 0)?
        } else {
            picked
        };
        let sizes: Vec<i64> = source_shape.iter().map(|&d| d as i64).collect();
        Some(crate::ops::views::view(&picked, &sizes)?)
    } else {
        None
    };
    Ok(vec![gx, None, gs])
}

/// Differentiable `x.masked_scatter_(mask, source)` (MaskedScatterBackward0, in place).
pub fn masked_scatter_(x: &Tensor, mask: &Tensor, source: &Tensor) -> Result<()> {
    let _blame = crate::autograd::blame::op("masked_scatter_");
    let rec = Recorder::inplace(x, &[None, Some(source)])?;
    masked_scatter_inplace_raw(x, mask, source)?;
    let Some(mut rec) = rec else { return Ok(()) };
    rec.save("mask", mask)?;
    rec.value("source_sym_sizes", crate::ops::reduce::py_ints(source.shape()));
    let shape = source.shape().to_vec();
    rec.finish_inplace("MaskedScatterBackward0", x, Box::new(move |ctx| formula(ctx, &shape)))
}

/// Differentiable `masked_scatter` (out of place): x and the mask broadcast together, x is
/// cloned contiguous (a fresh version counter) and written. The engine-side formula sums
/// self's gradient back to its shape.
pub fn masked_scatter(x: &Tensor, mask: &Tensor, source: &Tensor) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(x), None, Some(source)])?;
    let shape = broadcast_shapes(mask.shape(), x.shape())?;
    let sizes: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    let m = mask.view_as_layout(mask.layout.expand(&sizes)?);
    let out = contiguous_copy(&x.view_as_layout(x.layout.expand(&sizes)?), x.dtype())?;
    let out = Tensor { version: VersionCounter::new(), ..out };
    masked_scatter_inplace_raw(&out, &m, source)?;
    let Some(mut rec) = rec else { return Ok(out) };
    rec.save("mask", mask)?;
    rec.value("source_sym_sizes", crate::ops::reduce::py_ints(source.shape()));
    let shape = source.shape().to_vec();
    let x_shape = x.shape().to_vec();
    rec.finish(
        "MaskedScatterBackward0",
        &[&out],
        Box::new(move |ctx| {
            let mut g = formula(ctx, &shape)?;
            if let Some(gx) = g[0].take() {
                g[0] = Some(crate::ops::formulas::sum_to(&gx, &x_shape)?);
            }
            Ok(g)
        }),
    )?;
    Ok(out)
}
