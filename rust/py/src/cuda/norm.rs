//! batch_norm and layer_norm forwards on the GPU, composed from ops this backend already runs
//! (double-precision mean and variance reductions, elementwise arithmetic, casts), in the CPU
//! kernel's arithmetic: statistics and the normalised output in double, cast to the input's
//! dtype at the end. Not fused: a few more launches and a double copy of the input, where a
//! fused kernel is the known next step. The op layer has checked every argument.

use super::backend::Cuda;
use minigrad_core::device::Backend;
use minigrad_core::dtype::{DType, Scalar};
use minigrad_core::error::Result;
use minigrad_core::ops::binary::{binary_raw, BinaryOp};
use minigrad_core::ops::copy::{copy_kernel, to_dtype_raw};
use minigrad_core::ops::reduce::{mean_raw, var_raw};
use minigrad_core::ops::unary::{unary_raw, UnaryOp};
use minigrad_core::ops::{views, Arg};
use minigrad_core::tensor::Tensor;

fn op(o: BinaryOp, a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary_raw(o, &Arg::Tensor(a.clone()), &Arg::Tensor(b.clone()), None)
}

fn op_s(o: BinaryOp, a: &Tensor, s: f64) -> Result<Tensor> {
    binary_raw(o, &Arg::Tensor(a.clone()), &Arg::Scalar(Scalar::Float(s)), None)
}

/// `1 / sqrt(var + eps)`, rounded as the CPU's `1.0 / (v + eps).sqrt()`.
fn inv_std(var: &Tensor, eps: f64) -> Result<Tensor> {
    let s = unary_raw(UnaryOp::Sqrt, &op_s(BinaryOp::Add, var, eps)?)?;
    binary_raw(BinaryOp::Div, &Arg::Scalar(Scalar::Float(1.0)), &Arg::Tensor(s), None)
}

fn f64_view(t: &Tensor, shape: &[i64]) -> Result<Tensor> {
    views::reshape(&to_dtype_raw(t, DType::Float64)?, shape)
}

impl Cuda {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn batch_norm_impl(
        &self,
        x: &Tensor,
        running_mean: Option<&Tensor>,
        running_var: Option<&Tensor>,
        weight: Option<&Tensor>,
        bias: Option<&Tensor>,
        training: bool,
        momentum: f64,
        eps: f64,
    ) -> Result<(Tensor, Tensor, Tensor)> {
        let (dt, c, nd) = (x.dtype(), x.shape()[1], x.ndim());
        let dims: Vec<i64> = (0..nd as i64).filter(|&d| d != 1).collect();
        let mut per_c = vec![1i64; nd];
        per_c[1] = c as i64;
        let x64 = to_dtype_raw(x, DType::Float64)?;
        let (mean, invstd) = if training {
            if x.numel() == 0 {
                // no elements per channel: NaN statistics (0 / 0), as the CPU's
                let nan = Tensor::full_on(&per_c.iter().map(|&d| d as usize).collect::<Vec<_>>(), Scalar::Float(f64::NAN), DType::Float64, self.device())?;
                (nan.clone(), nan)
            } else {
                let mean = mean_raw(&x64, Some(&dims), true, None)?;
                let (var, _) = var_raw(&x64, Some(&dims), 0.0, true, false)?;
                (mean, inv_std(&var, eps)?)
            }
        } else {
            let rm = f64_view(running_mean.expect("checked by the op layer"), &per_c)?;
            let rv = f64_view(running_var.expect("checked by the op layer"), &per_c)?;
            (rm, inv_std(&rv, eps)?)
        };
        let scale = match weight {
            Some(w) => op(BinaryOp::Mul, &invstd, &f64_view(w, &per_c)?)?,
            None => invstd.clone(),
        };
        let mut y = op(BinaryOp::Mul, &op(BinaryOp::Sub, &x64, &mean)?, &scale)?;
        y = match bias {
            Some(b) => op(BinaryOp::Add, &y, &f64_view(b, &per_c)?)?,
            None => op_s(BinaryOp::Add, &y, 0.0)?,
        };
        let out = to_dtype_raw(&y, dt)?;
        if training && x.numel() > 0 {
            let update = |running: Option<&Tensor>, batch: &Tensor| -> Result<()> {
                if let Some(r) = running {
                    let old = f64_view(r, &[c as i64])?;
                    let new = op(BinaryOp::Add, &op_s(BinaryOp::Mul, &old, 1.0 - momentum)?, &op_s(BinaryOp::Mul, batch, momentum)?)?;
                    // torch updates running statistics inside its kernel: no version bump
                    copy_kernel(r, &to_dtype_raw(&new, r.dtype())?)?;
                }
                Ok(())
            };
            update(running_mean, &views::reshape(&mean, &[c as i64])?)?;
            if running_var.is_some() {
                let (unbiased, _) = var_raw(&x64, Some(&dims), 1.0, false, false)?;
                update(running_var, &unbiased)?;
            }
        }
        let (save_mean, save_invstd) = if training {
            (to_dtype_raw(&views::reshape(&mean, &[c as i64])?, dt)?, to_dtype_raw(&views::reshape(&invstd, &[c as i64])?, dt)?)
        } else {
            (Tensor::empty_on(&[0], dt, self.device())?, Tensor::empty_on(&[0], dt, self.device())?)
        };
        Ok((out, save_mean, save_invstd))
    }

    pub(super) fn layer_norm_impl(&self, x: &Tensor, normalized_shape: &[usize], weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64) -> Result<(Tensor, Tensor, Tensor)> {
        let (dt, nd, k) = (x.dtype(), x.ndim(), normalized_shape.len());
        let dims: Vec<i64> = ((nd - k) as i64..nd as i64).collect();
        let mut stat_shape = x.shape()[..nd - k].to_vec();
        stat_shape.extend(std::iter::repeat_n(1, k));
        let x64 = to_dtype_raw(x, DType::Float64)?;
        let (mean, rstd) = if normalized_shape.iter().product::<usize>() == 0 || x.numel() == 0 {
            // an empty row has no mean: NaN statistics, as torch
            let nan = Tensor::full_on(&stat_shape, Scalar::Float(f64::NAN), DType::Float64, self.device())?;
            (nan.clone(), nan)
        } else {
            let mean = mean_raw(&x64, Some(&dims), true, None)?;
            let (var, _) = var_raw(&x64, Some(&dims), 0.0, true, false)?;
            (mean, inv_std(&var, eps)?)
        };
        let mut y = op(BinaryOp::Mul, &op(BinaryOp::Sub, &x64, &mean)?, &rstd)?;
        if let Some(w) = weight {
            y = op(BinaryOp::Mul, &y, &to_dtype_raw(w, DType::Float64)?)?;
        }
        // `+ 0.0` without a bias too, as the CPU (it turns -0.0 into +0.0)
        y = match bias {
            Some(b) => op(BinaryOp::Add, &y, &to_dtype_raw(b, DType::Float64)?)?,
            None => op_s(BinaryOp::Add, &y, 0.0)?,
        };
        Ok((to_dtype_raw(&y, dt)?, to_dtype_raw(&mean, dt)?, to_dtype_raw(&rstd, dt)?))
    }
}
