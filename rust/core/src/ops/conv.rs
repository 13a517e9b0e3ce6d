//! `conv2d`: torch's argument checks, the forward and the two gradients through the device's
//! `Backend` (CPU: Winograd or im2col + gemm, `kernels/conv`; CUDA: `conv.cu` + cuBLAS) and
//! the backward (ConvolutionBackward0).
//!
//! The convolution and its two gradients form a closed family of three bilinear ops:
//! `conv(x, w)`, `input_grad(g, w)` (shape of x) and `weight_grad(x, g)` (shape of w). Each
//! one's derivative in either argument is another member of the family, so every backward is
//! written with differentiable ops and derivatives of any order work; the two gradient ops
//! record as ConvolutionBackwardBackward0, torch's double-backward node.

use crate::autograd::Recorder;
use crate::dtype::DType;
use crate::element::Element;
use crate::error::{Error, Result};
use crate::kernels::conv::{self as kernel, winograd as wino, Geometry};
use crate::ops::copy::contiguous_raw;
use crate::ops::{reduce, views};
use crate::tensor::Tensor;

/// `padding=` of conv2d: explicit amounts or torch's strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Padding {
    Explicit(Vec<i64>),
    Same,
    Valid,
}

/// Validated hyper-parameters of one 2-d convolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conv2dParams {
    pub stride: [usize; 2],
    pub padding: [usize; 2],
    pub dilation: [usize; 2],
    pub groups: usize,
}

/// The elements of a contiguous tensor. The tensor must not be written while the slice lives
/// (inputs are only read by these ops; outputs are fresh).
pub(crate) fn read<T: Element>(t: &Tensor) -> &[T] {
    assert!(t.is_contiguous() && t.dtype() == T::DTYPE);
    if t.numel() == 0 {
        return &[];
    }
    // SAFETY: a contiguous non-empty tensor's numel elements start at data_ptr inside its
    // storage, which `t` keeps alive for the slice's lifetime.
    unsafe { std::slice::from_raw_parts(t.data_ptr::<T>() as *const T, t.numel()) }
}

/// The elements of a freshly allocated contiguous tensor, for the kernel to fill.
#[allow(clippy::mut_from_ref)]
pub(crate) fn fresh<T: Element>(t: &Tensor) -> &mut [T] {
    assert!(t.is_contiguous() && t.dtype() == T::DTYPE);
    if t.numel() == 0 {
        return &mut [];
    }
    // SAFETY: callers pass only tensors they just allocated (Tensor::empty/zeros) and have not
    // shared: no other handle reads or writes this memory while the slice lives.
    unsafe { std::slice::from_raw_parts_mut(t.data_ptr::<T>(), t.numel()) }
}

fn list(v: &[usize]) -> String {
    format!("[{}]", v.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "))
}

fn ilist(v: &[i64]) -> String {
    format!("[{}]", v.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "))
}

fn pair(v: &[i64]) -> [usize; 2] {
    [v[0] as usize, v[1] as usize]
}

/// torch's checks of conv2d's arguments (their order included), for a 4-d input.
fn check(x: &Tensor, w: &Tensor, b: Option<&Tensor>, stride: &[i64], padding: &[i64], dilation: &[i64], groups: i64) -> Result<Conv2dParams> {
    let dim = w.ndim() as i64 - 2;
    if dim < 1 {
        return Err(Error::Runtime("weight should have at least three dimensions".into()));
    }
    for (name, v) in [("stride", stride), ("padding", padding), ("dilation", dilation)] {
        if v.len() as i64 != dim {
            return Err(Error::Runtime(format!(
                "expected {} to be a single integer value or a list of {} values to match the convolution dimensions, but got {}={}",
                name, dim, name, ilist(v)
            )));
        }
    }
    if padding.iter().any(|&p| p < 0) {
        return Err(Error::Runtime("negative padding is not supported".into()));
    }
    if stride.iter().any(|&s| s <= 0) {
        return Err(Error::Runtime("non-positive stride is not supported".into()));
    }
    if dilation.iter().any(|&d| d <= 0) {
        return Err(Error::Runtime("non-positive dilation is not supported".into()));
    }
    if groups <= 0 {
        return Err(Error::Runtime("non-positive groups is not supported".into()));
    }
    let (xs, ws) = (x.shape(), w.shape());
    let g = groups as usize;
    if ws[0] < g {
        return Err(Error::Runtime(format!("Given groups={}, expected weight to be at least {} at dimension 0, but got weight of size {} instead", g, g, list(ws))));
    }
    if ws[0] % g != 0 {
        return Err(Error::Runtime(format!("Given groups={}, expected weight to be divisible by {} at dimension 0, but got weight of size [{}] instead", g, g, list(ws))));
    }
    if xs[1] != ws[1] * g {
        return Err(Error::Runtime(format!(
            "Given groups={}, weight of size {}, expected input{} to have {} channels, but got {} channels instead",
            g,
            list(ws),
            list(xs),
            ws[1] * g,
            xs[1]
        )));
    }
    if let Some(b) = b {
        if b.ndim() != 1 || b.shape()[0] != ws[0] {
            return Err(Error::Runtime(format!(
                "Given weight of size {}, expected bias to be 1-dimensional with {} elements, but got bias of size {} instead",
                list(ws),
                ws[0],
                list(b.shape())
            )));
        }
    }
    if ws[2] == 0 || ws[3] == 0 {
        // torch fails inside oneDNN here; minigrad says what is wrong.
        return Err(Error::Runtime(format!("conv2d: weight of size {} has an empty kernel", list(ws))));
    }
    let padded = [xs[2] + 2 * padding[0] as usize, xs[3] + 2 * padding[1] as usize];
    let kernel = [(ws[2].max(1) - 1) * dilation[0] as usize + 1, (ws[3].max(1) - 1) * dilation[1] as usize + 1];
    if padded[0] < kernel[0] || padded[1] < kernel[1] {
        return Err(Error::Runtime(format!(
            "Calculated padded input size per channel: ({} x {}). Kernel size: ({} x {}). Kernel size can't be greater than actual input size",
            padded[0], padded[1], kernel[0], kernel[1]
        )));
    }
    check_dtypes(x, w, b)?;
    Ok(Conv2dParams { stride: pair(stride), padding: pair(padding), dilation: pair(dilation), groups: g })
}

fn check_dtypes(x: &Tensor, w: &Tensor, b: Option<&Tensor>) -> Result<()> {
    if x.dtype() != w.dtype() {
        if x.dtype() == DType::Float64 {
            return Err(Error::Runtime(format!("expected scalar type Double but found {}", w.dtype().scalar_type_name())));
        }
        return Err(Error::Runtime(format!(
            "Input type (torch.{}) and weight type (torch.{}) should be the same or input should be a MKLDNN tensor and weight is a dense tensor",
            x.dtype().legacy_tensor_name(),
            w.dtype().legacy_tensor_name()
        )));
    }
    if let Some(b) = b {
        if b.dtype() != x.dtype() {
            return Err(Error::Runtime(format!("Input type ({}) and bias type ({}) should be the same", x.dtype().type_meta_name(), b.dtype().type_meta_name())));
        }
    }
    if !x.dtype().is_floating() {
        // torch has integer convolutions on CPU; minigrad's kernels are float-only.
        return Err(Error::NotImplemented(format!("\"conv2d\" not implemented for '{}' in minigrad (float32 and float64 only)", x.dtype().scalar_type_name())));
    }
    Ok(())
}

fn geometry(xs: &[usize], ws: &[usize], p: &Conv2dParams) -> Geometry {
    let out = |d: usize| (xs[2 + d] + 2 * p.padding[d] - p.dilation[d] * (ws[2 + d] - 1) - 1) / p.stride[d] + 1;
    Geometry {
        n: xs[0],
        c_in: xs[1],
        h: xs[2],
        w: xs[3],
        c_out: ws[0],
        kh: ws[2],
        kw: ws[3],
        oh: out(0),
        ow: out(1),
        stride: p.stride,
        padding: p.padding,
        dilation: p.dilation,
        groups: p.groups,
    }
}

/// Forward of a checked 4-d convolution, no autograd: the device's `Backend::conv2d`.
pub fn conv2d_raw(x: &Tensor, w: &Tensor, b: Option<&Tensor>, p: &Conv2dParams) -> Result<Tensor> {
    if x.dtype().is_narrow() {
        // the conv/pool kernels take float32/float64 only (the widening wrapper passes them through)
        return Err(Error::NotImplemented(format!("\"{}\" not implemented for '{}' in minigrad (cast to float32 first)", "conv2d", x.dtype().scalar_type_name())));
    }
    let backend = crate::device::backend_for(&[Some(x), Some(w), b].into_iter().flatten().collect::<Vec<_>>())?;
    let g = geometry(x.shape(), w.shape(), p);
    let out = Tensor::empty_on(&[g.n, g.c_out, g.oh, g.ow], x.dtype(), x.device())?;
    let (x, w, b) = (contiguous_raw(x)?, contiguous_raw(w)?, b.map(contiguous_raw).transpose()?);
    backend.conv2d(&out, &x, &w, b.as_ref(), &g)?;
    Ok(out)
}

/// Input gradient (a transposed convolution of `grad` with `w`) for an input of `x_shape`.
pub fn conv2d_input_grad_raw(grad: &Tensor, w: &Tensor, x_shape: &[usize], p: &Conv2dParams) -> Result<Tensor> {
    let backend = crate::device::backend_for(&[grad, w])?;
    let g = geometry(x_shape, w.shape(), p);
    let dx = Tensor::empty_on(x_shape, grad.dtype(), grad.device())?;
    let (grad, w) = (contiguous_raw(grad)?, contiguous_raw(w)?);
    backend.conv2d_input_grad(&dx, &grad, &w, &g)?;
    Ok(dx)
}

/// Weight gradient for a weight of `w_shape`.
pub fn conv2d_weight_grad_raw(x: &Tensor, grad: &Tensor, w_shape: &[usize], p: &Conv2dParams) -> Result<Tensor> {
    let backend = crate::device::backend_for(&[x, grad])?;
    let g = geometry(x.shape(), w_shape, p);
    let dw = Tensor::empty_on(w_shape, x.dtype(), x.device())?;
    let (x, grad) = (contiguous_raw(x)?, contiguous_raw(grad)?);
    backend.conv2d_weight_grad(&dw, &x, &grad, &g)?;
    Ok(dw)
}

/// The CPU backend's `conv2d`: Winograd F(2x2, 3x3) for 3x3 stride-1 ungrouped convolutions
/// with a few channels (kernels/conv/winograd.rs), else im2col + gemm (kernels/conv.rs). The
/// gradients choose the same way.
pub(crate) fn cpu_forward(out: &Tensor, x: &Tensor, w: &Tensor, b: Option<&Tensor>, g: &Geometry) -> Result<()> {
    if wino::suits(g) {
        return crate::dispatch_float!(x.dtype(), T => wino::forward::<T>(read(x), read(w), b.map(|b| read::<T>(b)), fresh(out), g), _ => unreachable!("checked float"));
    }
    crate::dispatch_float!(x.dtype(), T => kernel::forward::<T>(read(x), read(w), b.map(|b| read::<T>(b)), fresh(out), g), _ => unreachable!("checked float"))
}

/// The CPU backend's `conv2d_input_grad`.
pub(crate) fn cpu_input_grad(dx: &Tensor, grad: &Tensor, w: &Tensor, g: &Geometry) -> Result<()> {
    if wino::suits_input_grad(g) {
        return crate::dispatch_float!(grad.dtype(), T => wino::grad_input::<T>(read(grad), read(w), fresh(dx), g), _ => unreachable!("checked float"));
    }
    crate::dispatch_float!(grad.dtype(), T => kernel::grad_input::<T>(read(grad), read(w), fresh(dx), g), _ => unreachable!("checked float"))
}

/// The CPU backend's `conv2d_weight_grad`.
pub(crate) fn cpu_weight_grad(dw: &Tensor, x: &Tensor, grad: &Tensor, g: &Geometry) -> Result<()> {
    if wino::suits(g) {
        return crate::dispatch_float!(x.dtype(), T => wino::grad_weight::<T>(read(x), read(grad), fresh(dw), g), _ => unreachable!("checked float"));
    }
    crate::dispatch_float!(x.dtype(), T => kernel::grad_weight::<T>(read(x), read(grad), fresh(dw), g), _ => unreachable!("checked float"))
}

/// Differentiable 4-d convolution (ConvolutionBackward0). Saves input and weight, as torch.
fn conv2d_4d(x: &Tensor, w: &Tensor, b: Option<&Tensor>, p: Conv2dParams) -> Result<Tensor> {
    let out = conv2d_raw(x, w, b, &p)?;
    let Some(mut rec) = Recorder::new(&[Some(x), Some(w), b])? else { return Ok(out) };
    rec.save("input", x)?;
    rec.save("weight", w)?;
    rec.value("stride", format!("({}, {})", p.stride[0], p.stride[1]));
    rec.value("padding", format!("({}, {})", p.padding[0], p.padding[1]));
    rec.value("dilation", format!("({}, {})", p.dilation[0], p.dilation[1]));
    rec.value("groups", p.groups);
    rec.finish("ConvolutionBackward0", &[&out], Box::new(move |ctx| {
        let (x, w, g) = (ctx.saved(0), ctx.saved(1), ctx.grad());
        // A gradient outside the graph (no create_graph) is made contiguous once here, not by
        // each of the two products: after `y.sum().backward()` it is a scalar expanded to y's
        // shape, and the 32x3x32x32 bench conv's fwd+bwd spent ~1 ms of 3.8 on the second copy
        // (two threads). Inside the graph the products keep torch's graph.
        let contiguous;
        let g = if g.requires_grad() || g.is_contiguous() || (!ctx.needs(0) && !ctx.needs(1)) {
            g
        } else {
            contiguous = dense(g)?;
            &contiguous
        };
        let gx = if ctx.needs(0) { Some(input_grad(g, w, x.shape(), p)?) } else { None };
        let gw = if ctx.needs(1) { Some(weight_grad(x, g, w.shape(), p)?) } else { None };
        let gb = if ctx.needs(2) { Some(reduce::sum(g, Some(&[0, 2, 3]), false, None)?) } else { None };
        Ok(vec![gx, gw, gb])
    }))?;
    Ok(out)
}

/// `g` (outside the graph) as a contiguous tensor. A scalar broadcast to every element (all
/// strides 0: the gradient of `y.sum()`) is filled rather than copied: the strided copy of
/// 32·32·32·32 such elements took 289 us on one thread (torch's 47), a fill a few tens.
fn dense(g: &Tensor) -> Result<Tensor> {
    if g.device().is_cpu() && g.numel() > 1 && g.strides().iter().all(|&s| s == 0) {
        let one = views::as_strided_raw(g, &[], &[], None)?;
        return Tensor::full_on(g.shape(), one.item()?, g.dtype(), g.device());
    }
    contiguous_raw(g)
}

/// Differentiable input gradient: linear in `grad` (adjoint: conv with w) and in `w`
/// (adjoint: the weight gradient of the upstream gradient against `grad`).
fn input_grad(grad: &Tensor, w: &Tensor, x_shape: &[usize], p: Conv2dParams) -> Result<Tensor> {
    let out = conv2d_input_grad_raw(grad, w, x_shape, &p)?;
    let Some(mut rec) = Recorder::new(&[Some(grad), Some(w)])? else { return Ok(out) };
    rec.save("grad_output", grad)?;
    rec.save("weight", w)?;
    rec.finish("ConvolutionBackwardBackward0", &[&out], Box::new(move |ctx| {
        let (g, w, h) = (ctx.saved(0), ctx.saved(1), ctx.grad());
        let d_grad = if ctx.needs(0) { Some(conv2d_4d(h, w, None, p)?) } else { None };
        let d_w = if ctx.needs(1) { Some(weight_grad(h, g, w.shape(), p)?) } else { None };
        Ok(vec![d_grad, d_w])
    }))?;
    Ok(out)
}

/// Differentiable weight gradient: linear in `x` (adjoint: input gradient of `grad` against the
/// upstream gradient) and in `grad` (adjoint: conv of x with the upstream gradient).
fn weight_grad(x: &Tensor, grad: &Tensor, w_shape: &[usize], p: Conv2dParams) -> Result<Tensor> {
    let out = conv2d_weight_grad_raw(x, grad, w_shape, &p)?;
    let Some(mut rec) = Recorder::new(&[Some(x), Some(grad)])? else { return Ok(out) };
    rec.save("input", x)?;
    rec.save("grad_output", grad)?;
    rec.finish("ConvolutionBackwardBackward0", &[&out], Box::new(move |ctx| {
        let (x, g, h) = (ctx.saved(0), ctx.saved(1), ctx.grad());
        let d_x = if ctx.needs(0) { Some(input_grad(g, h, x.shape(), p)?) } else { None };
        let d_grad = if ctx.needs(1) { Some(conv2d_4d(x, h, None, p)?) } else { None };
        Ok(vec![d_x, d_grad])
    }))?;
    Ok(out)
}

/// `torch.nn.functional.conv2d`: batched (N, C, H, W) or unbatched (C, H, W) input; padding
/// as amounts or 'same'/'valid'. Unbatched input runs as a batch of one and is squeezed back,
/// as torch does (SqueezeBackward1 on top).
#[allow(clippy::too_many_arguments)]
pub fn conv2d(x: &Tensor, w: &Tensor, b: Option<&Tensor>, stride: &[i64], padding: &Padding, dilation: &[i64], groups: i64) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x), Some(w), b])?;
    if x.ndim() != 3 && x.ndim() != 4 {
        return Err(Error::Runtime(format!("Expected 3D (unbatched) or 4D (batched) input to conv2d, but got input of size: {}", list(x.shape()))));
    }
    let batched = x.ndim() == 4;
    let x4 = if batched { x.clone() } else { views::unsqueeze(x, 0)? };
    let (x4, pad) = match padding {
        Padding::Explicit(p) => (x4, p.clone()),
        Padding::Valid => (x4, vec![0; stride.len()]),
        Padding::Same => same_padding(&x4, w, stride, dilation)?,
    };
    if x4.ndim() != w.ndim() {
        // Raised by the list-length check against the weight's dims.
        check(&x4, w, b, stride, &pad, dilation, groups)?;
        return Err(Error::Runtime(format!("Expected {}-dimensional input for {}-dimensional weight {}, but got {}-dimensional input of size {} instead", w.ndim(), w.ndim(), list(w.shape()), x4.ndim(), list(x4.shape()))));
    }
    let p = check(&x4, w, b, stride, &pad, dilation, groups)?;
    let out = conv2d_4d(&x4, w, b, p)?;
    if batched {
        Ok(out)
    } else {
        views::squeeze_dim(&out, 0)
    }
}

/// torch's 'same': total padding d·(k-1) per dim, half on each side; an odd remainder goes on
/// the right through an explicit zero pad of the input (torch warns about that copy).
fn same_padding(x: &Tensor, w: &Tensor, stride: &[i64], dilation: &[i64]) -> Result<(Tensor, Vec<i64>)> {
    if stride.iter().any(|&s| s != 1) {
        return Err(Error::Runtime("padding='same' is not supported for strided convolutions".into()));
    }
    let dims = w.ndim().saturating_sub(2);
    if dilation.len() != dims {
        return Ok((x.clone(), vec![0; dims]));
    }
    let mut left = vec![0i64; dims];
    let mut extra = vec![0i64; 2 * dims];
    for i in 0..dims {
        let total = dilation[i] * (w.shape()[2 + i] as i64 - 1);
        left[i] = total / 2;
        extra[2 * (dims - 1 - i) + 1] = total - 2 * left[i];
    }
    if extra.iter().all(|&e| e == 0) {
        return Ok((x.clone(), left));
    }
    crate::autograd::mode::push_warning("Using padding='same' with even kernel lengths and odd dilation may require a zero-padded copy of the input be created".to_string());
    Ok((crate::ops::pad::constant_pad(x, &extra, 0.0)?, left))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    fn p(stride: [usize; 2], padding: [usize; 2], dilation: [usize; 2], groups: usize) -> Conv2dParams {
        Conv2dParams { stride, padding, dilation, groups }
    }

    #[test]
    fn names_and_errors() {
        let x = rand_leaf(&[1, 2, 4, 4], 1);
        let w = rand_leaf(&[2, 2, 3, 3], 2);
        let y = conv2d(&x, &w, None, &[1, 1], &Padding::Explicit(vec![0, 0]), &[1, 1], 1).unwrap();
        assert_eq!(node_name(&y), "ConvolutionBackward0");
        let e = conv2d(&x, &w, None, &[1, 1], &Padding::Explicit(vec![0, 0]), &[1, 1], 2).unwrap_err();
        assert_eq!(e.to_string(), "Given groups=2, weight of size [2, 2, 3, 3], expected input[1, 2, 4, 4] to have 4 channels, but got 2 channels instead");
        let g = grad_graph(&y, &[&x, &w]);
        assert_eq!(node_name(&g[0]), "ConvolutionBackwardBackward0");
    }

    #[test]
    fn gradcheck_first_and_second_order() {
        for (params, groups_in) in [(p([1, 1], [1, 0], [1, 1], 1), 2), (p([2, 1], [0, 1], [1, 2], 2), 2)] {
            let x = rand_leaf(&[2, groups_in, 5, 4], 3);
            let w = rand_leaf(&[2, groups_in / params.groups, 2, 2], 4);
            let b = rand_leaf(&[2], 5);
            let f = move |t: &[Tensor]| conv2d_4d(&t[0], &t[1], Some(&t[2]), params);
            gradcheck("conv2d", &f, &[x, w, b], true);
        }
    }
}
