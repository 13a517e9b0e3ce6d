//! `pad(mode='constant')` (torch's constant_pad_nd, ConstantPadNdBackward0).
//!
//! `pad` lists (left, right) amounts from the last dim backwards; negative amounts crop. The
//! gradient of padding by `p` is padding the gradient by `-p` (cropping what was added, adding
//! zeros where the input was cropped), so the backward is this same op and differentiates again.

use crate::autograd::Recorder;
use crate::dtype::Scalar;
use crate::error::{Error, Result};
use crate::ops::copy::copy_kernel;
use crate::ops::views::narrow_raw;
use crate::tensor::Tensor;

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
    for (i, lr) in pad.chunks(2).enumerate() {
        let d = nd - 1 - i;
        let size = shape[d] as i64 + lr[0] + lr[1];
        if size < 0 {
            return Err(Error::Runtime("narrow(): length must be non-negative.".into()));
        }
        shape[d] = size as usize;
    }
    let out = Tensor::full(&shape, Scalar::Float(value), x.dtype());
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
        copy_kernel(&dst, &src);
    }
    Ok(out)
}

/// Differentiable constant pad (ConstantPadNdBackward0).
pub fn constant_pad(x: &Tensor, pad: &[i64], value: f64) -> Result<Tensor> {
    crate::autograd::record::precheck(&[Some(x)])?;
    let out = constant_pad_raw(x, pad, value)?;
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok(out) };
    rec.value("pad", format!("{:?}", pad));
    let back: Vec<i64> = pad.iter().map(|p| -p).collect();
    rec.finish("ConstantPadNdBackward0", &[&out], Box::new(move |ctx| Ok(vec![Some(constant_pad(ctx.grad(), &back, 0.0)?)])))?;
    Ok(out)
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
        assert_eq!(y.to_vec::<f64>(), vec![9., 1., 2., 9., 4., 5., 9., 9., 9.]);
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
}
