//! `masked_fill(mask, value)` / `masked_fill_` and MaskedFillBackward0/1 (saves the mask).

use crate::bail;
use crate::dtype::DType;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::kernels::elementwise::zip_inplace;
use crate::kernels::Arg as K;
use crate::kernels::TensorArg;
use crate::dtype::Scalar;
use crate::ops::copy::{check_no_partial_overlap, copy_kernel};
use crate::ops::{broadcast_strides, Arg};
use crate::shape::{broadcast_shapes, check_inplace_shape};
use crate::tensor::Tensor;
use super::not;

/// `masked_fill(mask, value)`; in place writes through the write path.
pub fn masked_fill_raw(x: &Tensor, mask: &Tensor, value: &Arg, in_place: bool) -> Result<Tensor> {
    let v = match value {
        Arg::Scalar(s) => *s,
        Arg::Tensor(t) => {
            if t.ndim() != 0 {
                return Err(Error::Runtime(format!(
                    "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with {} dimension(s).",
                    t.ndim()
                )));
            }
            t.item()?
        }
    };
    if mask.dtype() != DType::Bool {
        bail!(Runtime, "masked_fill_ only supports boolean masks, but got mask with dtype {}", mask.dtype().type_meta_name());
    }
    let target = if in_place {
        check_no_partial_overlap(x, mask)?;
        let shape = broadcast_shapes(x.shape(), mask.shape())?;
        check_inplace_shape(x.shape(), &shape)?;
        x.clone()
    } else {
        let shape = broadcast_shapes(x.shape(), mask.shape())?;
        let out = Tensor::empty_on(&shape, x.dtype(), x.device())?;
        copy_kernel(&out, x)?;
        out
    };
    let body = |dst: &Tensor, m: &Tensor| crate::device::backend_for(&[dst, m])?.masked_fill(dst, m, v);
    if in_place {
        // torch fills an expanded tensor too (deprecated, with a warning); the kernel's plan
        // writes self-overlapping destinations serially.
        if target.layout.has_internal_overlap() {
            crate::autograd::mode::push_warning("Use of masked_fill_ on expanded tensors is deprecated. Please clone() the tensor before performing this operation. This also applies to advanced indexing e.g. tensor[mask] = scalar".into());
        }
        crate::ops::write::write_overlapping(&target, &[mask], |reads| body(&target, &reads[0].0))?;
    } else {
        body(&target, mask)?;
    }
    Ok(target)
}

/// Differentiable `masked_fill(mask, value)`: MaskedFillBackward0 for a number (saves the mask),
/// MaskedFillBackward1 for a 0-d tensor value (which also gets a gradient).
pub fn masked_fill(x: &Tensor, mask: &Tensor, value: &Arg, in_place: bool) -> Result<Tensor> {
    if !in_place {
        crate::autograd::precheck(&[Some(x), value.tensor()])?;
    }
    let value_t = value.tensor();
    let node = if value_t.is_some() { "MaskedFillBackward1" } else { "MaskedFillBackward0" };
    let x_shape = x.shape().to_vec();
    let formula = move |ctx: &crate::autograd::Ctx| -> Result<Vec<Option<Tensor>>> {
        use crate::ops::formulas::*;
        let (g, m) = (ctx.grad(), ctx.saved(0));
        let gx = if ctx.needs(0) { Some(sum_to(&zero_where(g, m)?, &x_shape)?) } else { None };
        let mut out = vec![gx, None];
        if ctx.needs.len() > 2 {
            out.push(if ctx.needs(2) { Some(crate::ops::reduce::sum(&zero_where(g, &not(m)?)?, None, false, None)?) } else { None });
        }
        Ok(out)
    };
    let inputs = [Some(x), None, value_t];
    let inputs: &[Option<&Tensor>] = if value_t.is_some() { &inputs } else { &inputs[..2] };
    if !in_place {
        let out = masked_fill_raw(x, mask, value, false)?;
        if let Some(mut rec) = crate::autograd::Recorder::new(inputs)? {
            rec.save("mask", mask)?;
            rec.finish(node, &[&out], Box::new(formula))?;
        }
        return Ok(out);
    }
    let _blame = crate::autograd::blame::op("masked_fill_");
    let rec = crate::autograd::Recorder::inplace(x, &inputs[1..])?;
    masked_fill_raw(x, mask, value, true)?;
    if let Some(mut rec) = rec {
        rec.save("mask", mask)?;
        rec.finish_inplace(node, x, Box::new(formula))?;
    }
    Ok(x.clone())
}

/// The CPU backend's `masked_fill`.
pub(crate) fn cpu_kernel(dst: &Tensor, m: &Tensor, v: Scalar) {
    let sm = broadcast_strides(m, dst.shape());
    crate::dispatch!(dst.dtype(), T => {
        let fill = T::from_scalar(v);
        // SAFETY: dst is fresh or passed the write path; a self-overlapping dst (expanded) is
        // written serially by the kernel's plan; the mask is only read.
        unsafe { zip_inplace::<T, bool>(dst.shape(), K::of(dst), K::broadcast(m, &sm), move |x, c| if c { fill } else { x }) }
    })
}
