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
    let name = if log { "LogSoftmaxBackward0" } else { "SoftmaxBackward0" };
    rec.finish(name, &[&out], Box::new(move |ctx| Ok(vec![Some(backward_data(ctx.grad(), ctx.saved(0), wd, dim, log)?)])))?;
    Ok(out)
}

/// torch's `_softmax_backward_data(grad_output, output, dim)` (`_log_softmax_backward_data`
/// with `log`): the formula of SoftmaxBackward0 as one op of its own, so that the graph of a
/// backward pass (create_graph) holds torch's `SoftmaxBackwardDataBackward0` with the formulas
/// of derivatives.yaml; computed unrecorded (the fused kernel where it applies).
fn backward_data(g: &Tensor, r: &Tensor, wd: usize, dim: i64, log: bool) -> Result<Tensor> {
    crate::autograd::backward_op(&[Some(g), Some(r)], || backward_value(g, r, wd, log), |rec, out| {
        record_backward_data(rec, out, (g, r), (wd, dim), log)
    })
}

/// The `..BackwardDataBackward0` node around `backward_data`'s value `out`: torch's saved
/// grad_output and output, and derivatives.yaml's formulas.
fn record_backward_data(mut rec: Recorder, out: &Tensor, (g, r): (&Tensor, &Tensor), (wd, dim): (usize, i64), log: bool) -> Result<()> {
    rec.value("dim", dim);
    rec.save("grad_output", g)?;
    rec.save("output", r)?;
    let name = if log { "LogSoftmaxBackwardDataBackward0" } else { "SoftmaxBackwardDataBackward0" };
    rec.finish(name, &[out], Box::new(move |ctx| {
        let (gg, g, r) = (ctx.grad(), ctx.saved(0), ctx.saved(1));
        let d = [wd as i64];
        let rowsum = |t: &Tensor| sum(t, Some(&d), true, None);
        let d_grad = match (ctx.needs(0), log) {
            (false, _) => None,
            // grad - (grad * output.exp()).sum(dim, true)
            (true, true) => Some(fm::sub(gg, &rowsum(&fm::mul(gg, &fm::un(UnaryOp::Exp, r)?)?)?)?),
            (true, false) => Some(backward_data(gg, r, wd, dim, false)?),
        };
        let d_out = match (ctx.needs(1), log) {
            (false, _) => None,
            // -grad_output.sum(dim, true) * output.exp() * grad
            (true, true) => Some(fm::mul(&fm::mul(&fm::neg(&rowsum(g)?)?, &fm::un(UnaryOp::Exp, r)?)?, gg)?),
            // softmax_double_backward: grad_output * grad - (output * grad_output).sum(dim, true)
            // * grad - grad_output * (output * grad).sum(dim, true)
            (true, false) => {
                let a = fm::sub(&fm::mul(g, gg)?, &fm::mul(&rowsum(&fm::mul(r, g)?)?, gg)?)?;
                Some(fm::sub(&a, &fm::mul(g, &rowsum(&fm::mul(r, gg)?)?)?)?)
            }
        };
        Ok(vec![d_grad, d_out])
    }))?;
    Ok(())
}

/// SoftmaxBackward0's value: the fused kernel, or the composite formula.
fn backward_value(g: &Tensor, r: &Tensor, wd: usize, log: bool) -> Result<Tensor> {
    if let Some(gi) = fused_backward(g, r, wd, log)? {
        return Ok(gi);
    }
    let d = [wd as i64];
    if log {
        fm::sub(g, &fm::mul(&fm::un(UnaryOp::Exp, r)?, &sum(g, Some(&d), true, None)?)?)
    } else {
        fm::mul(r, &fm::sub(g, &sum(&fm::mul(g, r)?, Some(&d), true, None)?)?)
    }
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
