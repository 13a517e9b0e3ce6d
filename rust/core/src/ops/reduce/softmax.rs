//! `softmax` / `log_softmax` along one dim (the input cast to `dtype=` first), and
//! SoftmaxBackward0 / LogSoftmaxBackward0, which save the result.

use crate::ops::formulas as fm;
use crate::autograd::Recorder;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::ops::copy::{cast_input, contiguous_raw};
use crate::ops::unary::UnaryOp;
use crate::shape::wrap_dim;
use crate::tensor::Tensor;
use crate::dispatch_float;
use super::sum;

/// `softmax(dim, dtype=)` / `log_softmax` (`log`): the input is cast to `dtype` first; the
/// result is row-major like torch's.
pub fn softmax_raw(x: &Tensor, dim: i64, dtype: Option<DType>, log: bool) -> Result<Tensor> {
    let w = wrap_dim(dim, x.ndim())?;
    let x = match dtype {
        Some(d) => cast_input(x, d)?,
        None => x.clone(),
    };
    let out = Tensor::empty_on(x.shape(), x.dtype(), x.device())?;
    if x.numel() == 0 {
        return Ok(out);
    }
    if !x.dtype().is_floating() {
        let lastdim = x.ndim() == 0 || w == x.ndim() - 1;
        return Err(Error::NotImplemented(format!(
            "\"{}softmax{}_kernel_impl\" not implemented for '{}'",
            if log { "log_" } else { "" },
            if lastdim { "_lastdim" } else { "" },
            x.dtype().scalar_type_name()
        )));
    }
    let src = contiguous_raw(&x)?;
    crate::device::backend_for(&[&src])?.softmax(&out, &src, w, log)?;
    Ok(out)
}

/// The CPU side of `Backend::softmax`: `src` and `dst` contiguous, same shape, float.
pub(crate) fn softmax_cpu_kernel(dst: &Tensor, src: &Tensor, dim: usize, log: bool) -> Result<()> {
    let shape = src.shape();
    if src.numel() != dst.numel() || dst.dtype() != src.dtype() || !src.is_contiguous() || !dst.is_contiguous() || (dim >= shape.len() && !shape.is_empty()) {
        return Err(Error::Runtime("softmax: the op layer passed mismatched tensors".into()));
    }
    let (outer, n, inner) = if shape.is_empty() {
        (1, 1, 1)
    } else {
        (shape[..dim].iter().product(), shape[dim], shape[dim + 1..].iter().product())
    };
    dispatch_float!(src.dtype(), T => {
        // SAFETY: src is contiguous with outer*n*inner elements from data_ptr; dst has as many
        // (checked above), is fresh memory, so they do not overlap.
        unsafe { crate::kernels::softmax::softmax::<T>(src.data_ptr::<T>(), dst.data_ptr::<T>(), outer, n, inner, log) }
    }, _ => return Err(Error::Runtime("softmax: expected a floating point tensor".into())));
    Ok(())
}

/// Differentiable `softmax`/`log_softmax` (SoftmaxBackward0 / LogSoftmaxBackward0, saving the
/// result). With `dtype=` the input is cast first, as torch does (ToCopyBackward0 before it).
pub fn softmax(x: &Tensor, dim: i64, dtype: Option<DType>, log: bool) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    let xx = match dtype {
        Some(d) if d != x.dtype() && crate::autograd::should_record(&[Some(x)]) => {
            wrap_dim(dim, x.ndim())?;
            crate::ops::copy::to_dtype(x, d)?
        }
        _ => x.clone(),
    };
    let out = if xx.same_tensor(x) { softmax_raw(x, dim, dtype, log)? } else { softmax_raw(&xx, dim, None, log)? };
    if !out.dtype().is_floating() {
        return Ok(out);
    }
    let Some(mut rec) = Recorder::new(&[Some(&xx)])? else { return Ok(out) };
    rec.value("dim", dim);
    rec.save_output("result", &out, 0);
    let wd = wrap_dim(dim, out.ndim())?;
    let d = [wd as i64];
    let name = if log { "LogSoftmaxBackward0" } else { "SoftmaxBackward0" };
    rec.finish(name, &[&out], Box::new(move |ctx| {
        let (g, r) = (ctx.grad(), ctx.saved(0));
        if let Some(gi) = fused_backward(g, r, wd, log)? {
            return Ok(vec![Some(gi)]);
        }
        let gi = if log {
            fm::sub(g, &fm::mul(&fm::un(UnaryOp::Exp, r)?, &sum(g, Some(&d), true, None)?)?)?
        } else {
            fm::mul(r, &fm::sub(g, &sum(&fm::mul(g, r)?, Some(&d), true, None)?)?)?
        };
        Ok(vec![Some(gi)])
    }))?;
    Ok(out)
}

/// The backward in one kernel pass where the device has one (`Backend::softmax_backward`) and
/// no graph of the backward is being recorded; `None` runs the composite formula (the CPU's).
fn fused_backward(g: &Tensor, r: &Tensor, dim: usize, log: bool) -> Result<Option<Tensor>> {
    let plain = g.dtype() == r.dtype() && g.shape() == r.shape() && g.numel() > 0;
    if !plain || crate::autograd::should_record(&[Some(g), Some(r)]) {
        return Ok(None);
    }
    let backend = crate::device::backend_for(&[g, r])?;
    let gi = Tensor::empty_on(g.shape(), g.dtype(), backend.device())?;
    Ok(backend.softmax_backward(&gi, g, r, dim, log)?.then_some(gi))
}

#[cfg(test)]
mod grad_tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    #[test]
    fn softmax_and_log_softmax_gradients() {
        let w = leaf(vec![0., (2.0f64).ln()], &[2]);
        let s = softmax(&w, 0, None, false).unwrap();
        assert_eq!(node_name(&s), "SoftmaxBackward0");
        backward(&s, Some(vals(vec![1., 0.], &[2])));
        // d s0 / dx = s0 (e0 - s): [s0 - s0^2, -s0 s1] with s = [1/3, 2/3]
        assert!(close(&grad(&w), &[2.0 / 9.0, -2.0 / 9.0]));
        let w = leaf(vec![0., (2.0f64).ln()], &[2]);
        let s = softmax(&w, 0, None, true).unwrap();
        assert_eq!(node_name(&s), "LogSoftmaxBackward0");
        backward(&s, Some(vals(vec![1., 0.], &[2])));
        assert!(close(&grad(&w), &[2.0 / 3.0, -2.0 / 3.0]));
    }

}
