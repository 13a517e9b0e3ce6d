//! 2-d pooling: `max_pool2d` (MaxPool2DWithIndicesBackward0), `avg_pool2d` (AvgPool2DBackward0),
//! `adaptive_avg_pool2d` (AdaptiveAvgPool2DBackward0, or a mean for a 1x1 output as torch).
//!
//! Inputs are (C, H, W) or (N, C, H, W): every leading plane is pooled independently. Each
//! pooling is linear in its input once the windows (or argmax indices) are fixed, so each
//! backward is a differentiable "scatter" op whose own backward is the pooling again. The
//! element work goes through the device's `Backend` (CPU: kernels/pool.rs; CUDA: pool.cu).

use crate::autograd::Recorder;
use crate::error::{Error, Result};
use crate::kernels::pool::{self as kernel, AvgWindows, Divisor, MaxGeometry};
use crate::ops::conv::{fresh, read};
use crate::ops::copy::contiguous_raw;
use crate::ops::{gather, reduce, views};
use crate::tensor::Tensor;
use crate::DType;

fn list(v: &[usize]) -> String {
    format!("[{}]", v.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "))
}

/// torch's pooling_output_shape for one dim, with its checks.
fn output_size(input: usize, k: i64, pad: i64, stride: i64, dilation: i64, ceil_mode: bool) -> Result<i64> {
    if stride == 0 {
        return Err(Error::Runtime("stride should not be zero".into()));
    }
    if pad < 0 {
        return Err(Error::Runtime(format!("pad must be non-negative, but got pad: {}", pad)));
    }
    if pad > ((k - 1) * dilation + 1) / 2 {
        return Err(Error::Runtime(format!("pad should be at most half of effective kernel size, but got pad={}, kernel_size={} and dilation={}", pad, k, dilation)));
    }
    let num = input as i64 + 2 * pad - dilation * (k - 1) - 1 + if ceil_mode { stride - 1 } else { 0 };
    let mut out = num.div_euclid(stride) + 1;
    if ceil_mode && (out - 1) * stride >= input as i64 + pad {
        out -= 1;
    }
    Ok(out)
}

/// Validated window parameters of one 2-d pooling (as usize), with the output size.
struct Pool2d {
    kernel: [usize; 2],
    stride: [usize; 2],
    padding: [usize; 2],
    dilation: [usize; 2],
    out: [usize; 2],
}

/// torch's output-size rules and pool2d_shape_check, in torch's order.
fn check_pool(x: &Tensor, kernel: &[i64; 2], stride: &[i64; 2], padding: &[i64; 2], dilation: &[i64; 2], ceil_mode: bool) -> Result<Pool2d> {
    let s = x.shape();
    let nd = s.len();
    let (h, w) = (s[nd - 2], s[nd - 1]);
    let oh = output_size(h, kernel[0], padding[0], stride[0], dilation[0], ceil_mode)?;
    let ow = output_size(w, kernel[1], padding[1], stride[1], dilation[1], ceil_mode)?;
    if kernel[0] <= 0 || kernel[1] <= 0 {
        return Err(Error::Runtime(format!("kernel size should be greater than zero, but got kH: {} kW: {}", kernel[0], kernel[1])));
    }
    if stride[0] <= 0 || stride[1] <= 0 {
        return Err(Error::Runtime(format!("stride should be greater than zero, but got dH: {} dW: {}", stride[0], stride[1])));
    }
    if dilation[0] <= 0 || dilation[1] <= 0 {
        return Err(Error::Runtime(format!("dilation should be greater than zero, but got dilationH: {} dilationW: {}", dilation[0], dilation[1])));
    }
    if !(nd == 3 || nd == 4) || s[nd - 3..].contains(&0) {
        return Err(Error::Runtime(format!("Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but got:{}", list(s))));
    }
    if kernel[1] / 2 < padding[1] || kernel[0] / 2 < padding[0] {
        return Err(Error::Runtime(format!(
            "pad should be smaller than or equal to half of kernel size, but got padW = {}, padH = {}, kW = {}, kH = {}",
            padding[1], padding[0], kernel[1], kernel[0]
        )));
    }
    if oh < 1 || ow < 1 {
        let c = s[nd - 3];
        return Err(Error::Runtime(format!("Given input size: ({}x{}x{}). Calculated output size: ({}x{}x{}). Output size is too small", c, h, w, c, oh, ow)));
    }
    let u = |v: &[i64; 2]| [v[0] as usize, v[1] as usize];
    Ok(Pool2d { kernel: u(kernel), stride: u(stride), padding: u(padding), dilation: u(dilation), out: [oh as usize, ow as usize] })
}

fn float_only(x: &Tensor, what: &str) -> Result<()> {
    if x.dtype().is_floating() {
        Ok(())
    } else {
        // torch pools integer tensors too; minigrad's pooling kernels are float-only.
        Err(Error::NotImplemented(format!("\"{}\" not implemented for '{}' in minigrad (float32 and float64 only)", what, x.dtype().scalar_type_name())))
    }
}

fn out_shape(x: &Tensor, out: [usize; 2]) -> Vec<usize> {
    let mut s = x.shape().to_vec();
    let nd = s.len();
    s[nd - 2] = out[0];
    s[nd - 1] = out[1];
    s
}

fn hw(x_shape: &[usize]) -> (usize, usize) {
    (x_shape[x_shape.len() - 2], x_shape[x_shape.len() - 1])
}

// ----- max_pool2d -----

/// The checks, output shape and geometry of a max pooling of `x`.
fn max_setup(x: &Tensor, kernel: &[i64; 2], stride: &[i64; 2], padding: &[i64; 2], dilation: &[i64; 2], ceil_mode: bool) -> Result<(Vec<usize>, MaxGeometry)> {
    if x.dtype().is_narrow() {
        // the conv/pool kernels take float32/float64 only (the widening wrapper passes them through)
        return Err(Error::NotImplemented(format!("\"{}\" not implemented for '{}' in minigrad (cast to float32 first)", "max_pool2d", x.dtype().scalar_type_name())));
    }
    if x.ndim() != 3 && x.ndim() != 4 {
        return Err(Error::Runtime("non-empty 3D or 4D (batch mode) tensor expected for input".into()));
    }
    let p = check_pool(x, kernel, stride, padding, dilation, ceil_mode)?;
    float_only(x, "max_pool2d")?;
    let (h, w) = hw(x.shape());
    let g = MaxGeometry { h, w, oh: p.out[0], ow: p.out[1], kernel: p.kernel, stride: p.stride, padding: p.padding, dilation: p.dilation };
    Ok((out_shape(x, p.out), g))
}

/// Max pooling forward, no autograd: (values, int64 indices into each H·W plane).
/// Also returns the geometry, which the backward needs.
pub fn max_pool2d_raw(x: &Tensor, kernel: &[i64; 2], stride: &[i64; 2], padding: &[i64; 2], dilation: &[i64; 2], ceil_mode: bool) -> Result<(Tensor, Tensor, MaxGeometry)> {
    let (shape, g) = max_setup(x, kernel, stride, padding, dilation, ceil_mode)?;
    let backend = crate::device::backend_for(&[x])?;
    let (out, idx) = (Tensor::empty_on(&shape, x.dtype(), x.device())?, Tensor::empty_on(&shape, DType::Int64, x.device())?);
    backend.max_pool2d(&out, &idx, &contiguous_raw(x)?, &g)?;
    Ok((out, idx, g))
}

/// `max_pool2d` when the caller does not want the indices (`return_indices=False`): where no
/// gradient is recorded either, only the values are computed (no int64 index per output);
/// otherwise it is `max_pool2d` (the node keeps the indices for backward).
pub fn max_pool2d_values(x: &Tensor, kernel: &[i64; 2], stride: &[i64; 2], padding: &[i64; 2], dilation: &[i64; 2], ceil_mode: bool) -> Result<Tensor> {
    if crate::autograd::should_record(&[Some(x)]) {
        return Ok(max_pool2d(x, kernel, stride, padding, dilation, ceil_mode)?.0);
    }
    let (shape, g) = max_setup(x, kernel, stride, padding, dilation, ceil_mode)?;
    let backend = crate::device::backend_for(&[x])?;
    let out = Tensor::empty_on(&shape, x.dtype(), x.device())?;
    backend.max_pool2d_values(&out, &contiguous_raw(x)?, &g)?;
    Ok(out)
}

/// The CPU backend's `max_pool2d_values`.
pub(crate) fn max_values_cpu_kernel(out: &Tensor, x: &Tensor, g: &MaxGeometry) {
    crate::dispatch_float!(x.dtype(), T => kernel::max_forward_values::<T>(read(x), g, fresh(out)), _ => unreachable!("checked float"));
}

/// The CPU backend's `max_pool2d`.
pub(crate) fn max_cpu_kernel(out: &Tensor, idx: &Tensor, x: &Tensor, g: &MaxGeometry) {
    crate::dispatch_float!(x.dtype(), T => kernel::max_forward::<T>(read(x), g, fresh(out), fresh(idx)), _ => unreachable!("checked float"));
}

/// The CPU backend's `max_pool2d_backward`.
pub(crate) fn max_backward_cpu_kernel(dx: &Tensor, grad: &Tensor, idx: &Tensor, g: &MaxGeometry) {
    crate::dispatch_float!(grad.dtype(), T => kernel::max_backward::<T>(read(grad), read(idx), g.h * g.w, g.oh * g.ow, fresh(dx)), _ => unreachable!("float grad"));
}

/// The CPU backend's average pooling (`adjoint`: its backward).
pub(crate) fn avg_cpu_kernel(out: &Tensor, t: &Tensor, win: &AvgWindows, adjoint: bool) {
    let shape = if adjoint { out.shape() } else { t.shape() };
    let (h, w) = hw(shape);
    if adjoint {
        crate::dispatch_float!(t.dtype(), T => kernel::avg_backward::<T>(read(t), h, w, win, fresh(out)), _ => unreachable!("float"));
    } else {
        crate::dispatch_float!(t.dtype(), T => kernel::avg_forward::<T>(read(t), h, w, win, fresh(out)), _ => unreachable!("float"));
    }
}

/// Differentiable max pooling (MaxPool2DWithIndicesBackward0, saving self and the indices).
pub fn max_pool2d(x: &Tensor, kernel: &[i64; 2], stride: &[i64; 2], padding: &[i64; 2], dilation: &[i64; 2], ceil_mode: bool) -> Result<(Tensor, Tensor)> {
    crate::autograd::precheck(&[Some(x)])?;
    let (out, idx, g) = max_pool2d_raw(x, kernel, stride, padding, dilation, ceil_mode)?;
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok((out, idx)) };
    rec.save("self", x)?;
    rec.save_output("result1", &idx, 1);
    rec.value("kernel_size", format!("{:?}", kernel));
    rec.value("stride", format!("{:?}", stride));
    rec.value("padding", format!("{:?}", padding));
    rec.value("dilation", format!("{:?}", dilation));
    rec.value("ceil_mode", if ceil_mode { "True" } else { "False" });
    rec.finish("MaxPool2DWithIndicesBackward0", &[&out, &idx], Box::new(move |ctx| {
        let (x, idx) = (ctx.saved(0), ctx.saved(1));
        Ok(vec![Some(max_pool2d_backward(ctx.grad(), idx, x.shape(), g)?)])
    }))?;
    Ok((out, idx))
}

/// Raw max-pool gradient: `grad` added into zeros of `x_shape` at the argmax indices (`g`: the
/// forward's geometry).
pub fn max_pool2d_backward_raw(grad: &Tensor, idx: &Tensor, x_shape: &[usize], g: &MaxGeometry) -> Result<Tensor> {
    let backend = crate::device::backend_for(&[grad, idx])?;
    let dx = Tensor::empty_on(x_shape, grad.dtype(), grad.device())?;
    backend.max_pool2d_backward(&dx, &contiguous_raw(grad)?, &contiguous_raw(idx)?, g)?;
    Ok(dx)
}

/// Differentiable max-pool gradient (MaxPool2DWithIndicesBackwardBackward0): linear in `grad`,
/// its adjoint picks the upstream gradient at the indices (a gather over each flattened plane).
fn max_pool2d_backward(grad: &Tensor, idx: &Tensor, x_shape: &[usize], g: MaxGeometry) -> Result<Tensor> {
    let out = max_pool2d_backward_raw(grad, idx, x_shape, &g)?;
    let Some(mut rec) = Recorder::new(&[Some(grad)])? else { return Ok(out) };
    rec.save("indices", idx)?;
    let out_dims: Vec<i64> = grad.shape().iter().map(|&d| d as i64).collect();
    rec.finish("MaxPool2DWithIndicesBackwardBackward0", &[&out], Box::new(move |ctx| {
        let idx = ctx.saved(0);
        let nd = idx.ndim() as i64;
        let flat = views::flatten(ctx.grad(), nd - 2, nd - 1)?;
        let picked = gather::gather(&flat, -1, &views::flatten(idx, nd - 2, nd - 1)?)?;
        Ok(vec![Some(views::reshape(&picked, &out_dims)?)])
    }))?;
    Ok(out)
}

// ----- avg_pool2d -----

fn avg_windows(x_shape: &[usize], p: &Pool2d, count_include_pad: bool, divisor_override: Option<i64>) -> AvgWindows {
    let (h, w) = hw(x_shape);
    AvgWindows {
        rows: kernel::strided_spans(h, p.out[0], p.kernel[0], p.stride[0], p.padding[0]),
        cols: kernel::strided_spans(w, p.out[1], p.kernel[1], p.stride[1], p.padding[1]),
        divisor: match divisor_override {
            Some(d) => Divisor::Override(d as f64),
            None if count_include_pad => Divisor::Padded,
            None => Divisor::Covered,
        },
    }
}

/// The shared average-pooling step: forward (`adjoint` false, `t` is the input) or its adjoint
/// (the gradient for an input of `x_shape`).
fn avg_apply(t: &Tensor, x_shape: &[usize], out_hw: [usize; 2], win: &AvgWindows, adjoint: bool) -> crate::error::Result<Tensor> {
    let backend = crate::device::backend_for(&[t])?;
    let tc = contiguous_raw(t)?;
    if adjoint {
        let dx = Tensor::empty_on(x_shape, t.dtype(), t.device())?;
        backend.avg_pool2d_backward(&dx, &tc, win)?;
        Ok(dx)
    } else {
        let mut s = x_shape.to_vec();
        let nd = s.len();
        s[nd - 2] = out_hw[0];
        s[nd - 1] = out_hw[1];
        let out = Tensor::empty_on(&s, t.dtype(), t.device())?;
        backend.avg_pool2d(&out, &tc, win)?;
        Ok(out)
    }
}

/// A linear pooling step recorded with its adjoint as backward: `name` for the forward
/// direction, `back_name` for the adjoint, alternating at each order of differentiation.
fn avg_linear(t: &Tensor, x_shape: Vec<usize>, out_hw: [usize; 2], win: std::sync::Arc<AvgWindows>, adjoint: bool, names: [&'static str; 2]) -> Result<Tensor> {
    let out = avg_apply(t, &x_shape, out_hw, &win, adjoint)?;
    let Some(mut rec) = Recorder::new(&[Some(t)])? else { return Ok(out) };
    if !adjoint {
        // torch's pooling nodes save their input (so modifying it in place breaks backward).
        rec.save("self", t)?;
    }
    let name = if adjoint { names[1] } else { names[0] };
    rec.finish(name, &[&out], Box::new(move |ctx| Ok(vec![Some(avg_linear(ctx.grad(), x_shape.clone(), out_hw, win.clone(), !adjoint, names)?)])))?;
    Ok(out)
}

/// `avg_pool2d` (AvgPool2DBackward0; its backward records AvgPool2DBackwardBackward0).
#[allow(clippy::too_many_arguments)]
pub fn avg_pool2d(x: &Tensor, kernel: &[i64; 2], stride: &[i64; 2], padding: &[i64; 2], ceil_mode: bool, count_include_pad: bool, divisor_override: Option<i64>) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    if x.dtype().is_narrow() {
        // the conv/pool kernels take float32/float64 only (the widening wrapper passes them through)
        return Err(Error::NotImplemented(format!("\"{}\" not implemented for '{}' in minigrad (cast to float32 first)", "avg_pool2d", x.dtype().scalar_type_name())));
    }
    if divisor_override == Some(0) {
        return Err(Error::Runtime("divisor must be not zero".into()));
    }
    if x.ndim() < 3 {
        return Err(Error::Index(format!("Dimension out of range (expected to be in range of [-{}, {}], but got -3)", x.ndim().max(1), x.ndim().max(1) - 1)));
    }
    let p = check_pool(x, kernel, stride, padding, &[1, 1], ceil_mode)?;
    float_only(x, "avg_pool2d")?;
    let win = std::sync::Arc::new(avg_windows(x.shape(), &p, count_include_pad, divisor_override));
    avg_linear(x, x.shape().to_vec(), p.out, win, false, ["AvgPool2DBackward0", "AvgPool2DBackwardBackward0"])
}

// ----- adaptive_avg_pool2d -----

/// `adaptive_avg_pool2d(output_size)`: (AdaptiveAvgPool2DBackward0); a 1x1 output is a mean
/// over the last two dims, as torch computes it (MeanBackward1).
pub fn adaptive_avg_pool2d(x: &Tensor, output_size: &[i64]) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    if output_size.len() != 2 {
        return Err(Error::Runtime("adaptive_avg_pool2d: output_size must be 2".into()));
    }
    if output_size.iter().any(|&o| o < 0) {
        return Err(Error::Runtime(format!(
            "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but received {{{}, {}}}",
            output_size[0], output_size[1]
        )));
    }
    let s = x.shape();
    if s.len() != 3 && s.len() != 4 {
        return Err(Error::Runtime(format!("adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {}", list(s))));
    }
    for d in s.len() - 2..s.len() {
        if s[d] == 0 {
            return Err(Error::Runtime(format!(
                "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch dimensions, but input has sizes {} with dimension {} being empty",
                list(s),
                d
            )));
        }
    }
    if output_size == [1, 1] {
        return reduce::mean(x, Some(&[-1, -2]), true, None);
    }
    float_only(x, "adaptive_avg_pool2d")?;
    let (h, w) = hw(s);
    let out = [output_size[0] as usize, output_size[1] as usize];
    let win = std::sync::Arc::new(AvgWindows { rows: kernel::adaptive_spans(h, out[0]), cols: kernel::adaptive_spans(w, out[1]), divisor: Divisor::Covered });
    avg_linear(x, s.to_vec(), out, win, false, ["AdaptiveAvgPool2DBackward0", "AdaptiveAvgPool2DBackwardBackward0"])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    #[test]
    fn gradcheck_pools() {
        let x = rand_leaf(&[2, 2, 5, 6], 1);
        let f = |t: &[Tensor]| Ok(max_pool2d(&t[0], &[2, 3], &[2, 2], &[1, 1], &[1, 1], true)?.0);
        gradcheck("max_pool2d", &f, &[x.clone()], true);
        let f = |t: &[Tensor]| avg_pool2d(&t[0], &[3, 2], &[2, 1], &[1, 0], true, false, None);
        gradcheck("avg_pool2d", &f, &[x.clone()], true);
        let f = |t: &[Tensor]| adaptive_avg_pool2d(&t[0], &[3, 4]);
        gradcheck("adaptive_avg_pool2d", &f, &[x.clone()], true);
        let (y, _) = max_pool2d(&x, &[2, 2], &[2, 2], &[0, 0], &[1, 1], false).unwrap();
        assert_eq!(node_name(&y), "MaxPool2DWithIndicesBackward0");
        assert_eq!(node_name(&adaptive_avg_pool2d(&x, &[1, 1]).unwrap()), "MeanBackward1");
    }

    #[test]
    fn output_size_rules() {
        assert_eq!(output_size(5, 2, 0, 2, 1, true).unwrap(), 3);
        assert_eq!(output_size(5, 2, 1, 2, 1, true).unwrap(), 3);
        assert_eq!(output_size(5, 3, 2, 1, 1, false).unwrap_err().to_string(), "pad should be at most half of effective kernel size, but got pad=2, kernel_size=3 and dilation=1");
    }
}
