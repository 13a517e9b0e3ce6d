//! `pad`: mode='constant' (torch's constant_pad_nd, ConstantPadNdBackward0) and 'reflect' /
//! 'replicate' of the last two dims (ReflectionPad2DBackward0 / ReplicationPad2DBackward0).
//!
//! `pad` lists (left, right) amounts from the last dim backwards; negative amounts crop. The
//! gradient of padding by `p` is padding the gradient by `-p` (cropping what was added, adding
//! zeros where the input was cropped), so the backward is this same op and differentiates again.
//! Constant padding is a fill and a copy (so it runs on every device); the index-map modes go
//! through the device's `Backend::pad2d` (CPU: kernels/pad.rs; CUDA: pad.cu).

use crate::autograd::Recorder;
use crate::dtype::Scalar;
use crate::error::{Error, Result};
use crate::ops::copy::copy_kernel;
use crate::ops::views::narrow_raw;
use crate::ops::conv::{fresh, read};
use crate::tensor::Tensor;
use std::sync::Arc;

/// Forward, no autograd: a tensor of `value` with the overlapping region copied from `x`.
pub fn constant_pad_raw(x: &Tensor, pad: &[i64], value: f64) -> Result<Tensor> {
    if pad.len() % 2 != 0 {
        return Err(Error::Runtime("Padding length must be divisible by 2".into()));
    }
    if pad.len() / 2 > x.ndim() {
        return Err(Error::Runtime(format!(
            "Padding length should be less than or equal to two times the input dimension but got padding length {} and input of dimension {}",
            pad.len(),
            x.ndim()
        )));
    }
    let nd = x.ndim();
    let mut shape = x.shape().to_vec();
    // torch crops first (a narrow per negative amount, left then right, leading dim first),
    // so a crop deeper than what is left fails even when padding would make up for it.
    for i in (0..pad.len() / 2).rev() {
        let (l, r) = (pad[2 * i], pad[2 * i + 1]);
        let d = nd - 1 - i;
        let mut cur = shape[d] as i64;
        for amount in [l, r] {
            if amount < 0 {
                cur += amount;
                if cur < 0 {
                    return Err(Error::Runtime("narrow(): length must be non-negative.".into()));
                }
            }
        }
        shape[d] = (cur + l.max(0) + r.max(0)) as usize;
    }
    let out = Tensor::full_on(&shape, Scalar::Float(value), x.dtype(), x.device())?;
    // The kept region: in the input, skip what negative pads crop; in the output, skip what
    // positive pads add.
    let (mut src, mut dst) = (x.clone(), out.clone());
    for (i, lr) in pad.chunks(2).enumerate() {
        let d = (nd - 1 - i) as i64;
        let size = x.shape()[d as usize] as i64;
        let kept = size - (-lr[0]).max(0) - (-lr[1]).max(0);
        if kept <= 0 {
            return Ok(out);
        }
        src = narrow_raw(&src, d, (-lr[0]).max(0), kept)?;
        dst = narrow_raw(&dst, d, lr[0].max(0), kept)?;
    }
    if src.numel() > 0 {
        copy_kernel(&dst, &src)?;
    }
    Ok(out)
}

/// Differentiable constant pad (ConstantPadNdBackward0).
pub fn constant_pad(x: &Tensor, pad: &[i64], value: f64) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    let out = constant_pad_raw(x, pad, value)?;
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok(out) };
    rec.value("pad", format!("{:?}", pad));
    let back: Vec<i64> = pad.iter().map(|p| -p).collect();
    rec.finish("ConstantPadNdBackward0", &[&out], Box::new(move |ctx| Ok(vec![Some(constant_pad(ctx.grad(), &back, 0.0)?)])))?;
    Ok(out)
}

// ----- reflect / replicate (last two dims) -----

/// `pad(mode='reflect'|'replicate')` of the last two dims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode2d {
    Reflect,
    Replicate,
}

fn list(v: &[usize]) -> String {
    format!("[{}]", v.iter().map(|d| d.to_string()).collect::<Vec<_>>().join(", "))
}

/// Source index along one dim for each output index (`left` may be negative: a crop).
fn sources(size: usize, left: i64, out: usize, mode: Mode2d) -> Vec<usize> {
    let n = size as i64;
    (0..out as i64)
        .map(|i| {
            let p = i - left;
            let s = match mode {
                Mode2d::Reflect => if p < 0 { -p } else if p >= n { 2 * (n - 1) - p } else { p },
                Mode2d::Replicate => p.clamp(0, n - 1),
            };
            s as usize
        })
        .collect()
}

/// torch's checks of reflection_pad2d / replication_pad2d; returns (rows, cols) source maps.
fn pad2d_maps(x: &Tensor, pad: &[i64], mode: Mode2d) -> Result<(Vec<usize>, Vec<usize>)> {
    let s = x.shape();
    let nd = s.len();
    if !(nd == 3 || nd == 4) || s[nd - 3..].contains(&0) {
        return Err(Error::Runtime(format!(
            "Expected 3D or 4D (batch mode) tensor with possibly 0 batch size and other non-zero dimensions for input, but got: {}",
            list(s)
        )));
    }
    let (h, w) = (s[nd - 2] as i64, s[nd - 1] as i64);
    let (l, r, t, b) = (pad[0], pad[1], pad[2], pad[3]);
    if mode == Mode2d::Reflect {
        if l >= w || r >= w {
            return Err(Error::Runtime(format!(
                "Argument #4: Padding size should be less than the corresponding input dimension, but got: padding ({}, {}) at dimension {} of input {}",
                l, r, nd - 1, list(s)
            )));
        }
        if t >= h || b >= h {
            return Err(Error::Runtime(format!(
                "Argument #6: Padding size should be less than the corresponding input dimension, but got: padding ({}, {}) at dimension {} of input {}",
                t, b, nd - 2, list(s)
            )));
        }
    }
    let (oh, ow) = (h + t + b, w + l + r);
    if oh < 1 || ow < 1 || -t >= h || -b >= h || -l >= w || -r >= w {
        return Err(Error::Runtime(format!("input (H: {}, W: {}) is too small. Calculated output H: {} W: {}", h, w, oh, ow)));
    }
    Ok((sources(h as usize, t, oh as usize, mode), sources(w as usize, l, ow as usize, mode)))
}

fn pad2d_apply(t: &Tensor, x_shape: &[usize], maps: &(Vec<usize>, Vec<usize>), adjoint: bool) -> crate::error::Result<Tensor> {
    let backend = crate::device::backend_for(&[t])?;
    let nd = x_shape.len();
    let tc = crate::ops::copy::contiguous_raw(t)?;
    if adjoint {
        let dx = Tensor::empty_on(x_shape, t.dtype(), t.device())?;
        backend.pad2d_backward(&dx, &tc, &maps.0, &maps.1)?;
        Ok(dx)
    } else {
        let mut s = x_shape.to_vec();
        s[nd - 2] = maps.0.len();
        s[nd - 1] = maps.1.len();
        let out = Tensor::empty_on(&s, t.dtype(), t.device())?;
        backend.pad2d(&out, &tc, &maps.0, &maps.1)?;
        Ok(out)
    }
}

/// The CPU backend's `pad2d` (`adjoint`: `pad2d_backward`): `src` is read, `dst` is the fresh
/// result.
pub(crate) fn cpu_kernel(dst: &Tensor, src: &Tensor, rows: &[usize], cols: &[usize], adjoint: bool) {
    let in_shape = if adjoint { dst.shape() } else { src.shape() };
    let nd = in_shape.len();
    let (h, w) = (in_shape[nd - 2], in_shape[nd - 1]);
    if adjoint {
        crate::dispatch_float!(src.dtype(), T => crate::kernels::pad::scatter2d::<T>(read(src), w, h * w, rows, cols, fresh(dst)), _ => unreachable!("float"));
    } else {
        crate::dispatch_float!(src.dtype(), T => crate::kernels::pad::gather2d::<T>(read(src), w, h * w, rows, cols, fresh(dst)), _ => unreachable!("float"));
    }
}

/// One direction of the index-map pad, recorded with the other direction as its backward.
fn pad2d_linear(t: &Tensor, x_shape: Vec<usize>, maps: Arc<(Vec<usize>, Vec<usize>)>, adjoint: bool, names: [&'static str; 2]) -> Result<Tensor> {
    let out = pad2d_apply(t, &x_shape, &maps, adjoint)?;
    let Some(mut rec) = Recorder::new(&[Some(t)])? else { return Ok(out) };
    if !adjoint {
        rec.save("self", t)?;
    }
    let name = if adjoint { names[1] } else { names[0] };
    rec.finish(name, &[&out], Box::new(move |ctx| Ok(vec![Some(pad2d_linear(ctx.grad(), x_shape.clone(), maps.clone(), !adjoint, names)?)])))?;
    Ok(out)
}

/// Differentiable reflection / replication padding of the last two dims (ReflectionPad2DBackward0
/// / ReplicationPad2DBackward0). `pad` is (left, right, top, bottom).
pub fn pad2d(x: &Tensor, pad: &[i64], mode: Mode2d) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    let maps = pad2d_maps(x, pad, mode)?;
    if !x.dtype().is_floating() {
        return Err(Error::NotImplemented(format!("\"{:?}_pad2d\" not implemented for '{}' in minigrad (float32 and float64 only)", mode, x.dtype().scalar_type_name())));
    }
    let names = match mode {
        Mode2d::Reflect => ["ReflectionPad2DBackward0", "ReflectionPad2DBackwardBackward0"],
        Mode2d::Replicate => ["ReplicationPad2DBackward0", "ReplicationPad2DBackwardBackward0"],
    };
    pad2d_linear(x, x.shape().to_vec(), Arc::new(maps), false, names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    #[test]
    fn pads_and_crops() {
        let x = vals((1..=6).map(|v| v as f64).collect(), &[2, 3]);
        let y = constant_pad_raw(&x, &[1, -1, 0, 1], 9.0).unwrap();
        assert_eq!(y.shape(), &[3, 3]);
        assert_eq!(y.to_vec::<f64>().unwrap(), vec![9., 1., 2., 9., 4., 5., 9., 9., 9.]);
        assert_eq!(constant_pad_raw(&x, &[-4, 0], 0.0).unwrap_err().to_string(), "narrow(): length must be non-negative.");
    }

    #[test]
    fn gradcheck_pad() {
        let x = rand_leaf(&[2, 3, 4], 1);
        let f = |t: &[Tensor]| constant_pad(&t[0], &[1, -2, 2, 0], 0.5);
        gradcheck("constant_pad", &f, &[x], true);
        let y = constant_pad(&rand_leaf(&[2, 2], 3), &[1, 1], 0.0).unwrap();
        assert_eq!(node_name(&y), "ConstantPadNdBackward0");
    }

    #[test]
    fn gradcheck_reflect_replicate() {
        for mode in [Mode2d::Reflect, Mode2d::Replicate] {
            let x = rand_leaf(&[2, 3, 4], 2);
            let f = move |t: &[Tensor]| pad2d(&t[0], &[2, -1, 1, 2], mode);
            gradcheck("pad2d", &f, &[x], true);
        }
        let y = pad2d(&rand_leaf(&[1, 2, 2], 3), &[1, 1, 1, 1], Mode2d::Reflect).unwrap();
        assert_eq!(node_name(&y), "ReflectionPad2DBackward0");
        assert_eq!(y.to_vec::<f64>().unwrap()[..4].len(), 4);
    }
}
