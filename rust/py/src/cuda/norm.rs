//! batch_norm and layer_norm on the GPU, in the CPU kernel's arithmetic: statistics and the
//! normalised output in double, cast to the input's dtype at the end. batch_norm of float32 and
//! float64 runs norm.cu's kernels (a statistics launch and an elementwise one, each way; its
//! first-order backward likewise); the other dtypes, empty inputs and layer_norm are composed
//! from ops this backend already runs (double-precision reductions, elementwise arithmetic,
//! casts). The op layer has checked every argument.

use super::backend::Cuda;
use super::kernels::ty;
use super::launch::Params;
use super::reduce::addr;
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

/// Threads of a statistics block (`MG_BN_THREADS` in norm.cu): one block per channel.
const BN_THREADS: u32 = 256;

fn fused(x: &Tensor) -> bool {
    matches!(x.dtype(), DType::Float32 | DType::Float64) && x.numel() > 0
}

/// A 1-d per-channel tensor's address and element stride, (0, 0) when absent.
fn channel_arg(t: Option<&Tensor>) -> (u64, i64) {
    t.map_or((0, 0), |t| (addr(t), t.strides()[0] as i64))
}

impl Cuda {
    /// The grid of a statistics launch: a block per channel, up to the launch limit (the
    /// kernels walk the channels grid-stride beyond it).
    fn bn_grid(c: usize) -> u32 {
        c.clamp(1, 65535) as u32
    }

    /// Training or evaluation forward of a float32/float64 input with elements: (out, save_mean,
    /// save_invstd) from two launches, the running statistics updated by the first.
    #[allow(clippy::too_many_arguments)]
    fn batch_norm_fused(
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
        let (dt, c) = (x.dtype(), x.shape()[1]);
        let (n, s) = (x.shape()[0], x.shape()[2..].iter().product::<usize>());
        let x = self.contiguous(x)?;
        let t = ty(dt);
        let stat = Tensor::empty_on(&[2 * c], DType::Float64, self.device())?;
        let stats_len = if training { c } else { 0 };
        let (save_mean, save_invstd) = (Tensor::empty_on(&[stats_len], dt, self.device())?, Tensor::empty_on(&[stats_len], dt, self.device())?);
        let (rm, rv) = (channel_arg(running_mean), channel_arg(running_var));
        let mut p = Params::new();
        p.ptr(addr(&stat)).ptr(if training { addr(&save_mean) } else { 0 }).ptr(if training { addr(&save_invstd) } else { 0 });
        p.ptr(rm.0).i64(rm.1).ptr(rv.0).i64(rv.1).ptr(addr(&x)).i64(n as i64).i64(c as i64).i64(s as i64);
        p.f64(momentum).f64(eps).i32(i32::from(training));
        self.launch_on(&format!("mg_bn_stats<{t}>"), Self::bn_grid(c), BN_THREADS, c, &mut p)?;
        let (w, b) = (weight.map(|w| self.contiguous(w)).transpose()?, bias.map(|b| self.contiguous(b)).transpose()?);
        let out = Tensor::empty_on(x.shape(), dt, self.device())?;
        let mut p = Params::new();
        p.ptr(addr(&out)).ptr(addr(&x)).ptr(addr(&stat)).ptr(w.as_ref().map_or(0, addr)).ptr(b.as_ref().map_or(0, addr));
        p.i64(c as i64).i64(s as i64).i64(x.numel() as i64);
        self.launch(&format!("mg_bn_apply<{t}>"), x.numel(), &mut p)?;
        Ok((out, save_mean, save_invstd))
    }

    /// `Backend::batch_norm_backward` (training statistics, first order): two launches for a
    /// float32/float64 input with elements, None otherwise (the composite formula).
    pub(super) fn batch_norm_backward_impl(&self, g: &Tensor, x: &Tensor, weight: Option<&Tensor>, eps: f64) -> Result<Option<(Tensor, Tensor, Tensor)>> {
        if !fused(x) || x.ndim() < 2 || g.shape() != x.shape() || g.dtype() != x.dtype() || g.device() != x.device() {
            return Ok(None);
        }
        let (dt, c) = (x.dtype(), x.shape()[1]);
        let (n, s) = (x.shape()[0], x.shape()[2..].iter().product::<usize>());
        let (x, g) = (self.contiguous(x)?, self.contiguous(g)?);
        let t = ty(dt);
        let stat = Tensor::empty_on(&[4 * c], DType::Float64, self.device())?;
        let (gw, gb) = (Tensor::empty_on(&[c], dt, self.device())?, Tensor::empty_on(&[c], dt, self.device())?);
        let mut p = Params::new();
        p.ptr(addr(&stat)).ptr(addr(&gw)).ptr(addr(&gb)).ptr(addr(&x)).ptr(addr(&g));
        p.i64(n as i64).i64(c as i64).i64(s as i64).f64(eps);
        self.launch_on(&format!("mg_bn_backward_stats<{t}>"), Self::bn_grid(c), BN_THREADS, c, &mut p)?;
        let w = weight.map(|w| self.contiguous(w)).transpose()?;
        let gi = Tensor::empty_on(x.shape(), dt, self.device())?;
        let mut p = Params::new();
        p.ptr(addr(&gi)).ptr(addr(&x)).ptr(addr(&g)).ptr(addr(&stat)).ptr(w.as_ref().map_or(0, addr));
        p.i64(c as i64).i64(s as i64).i64(x.numel() as i64);
        self.launch(&format!("mg_bn_backward_apply<{t}>"), x.numel(), &mut p)?;
        Ok(Some((gi, gw, gb)))
    }

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
        if fused(x) {
            return self.batch_norm_fused(x, running_mean, running_var, weight, bias, training, momentum, eps);
        }
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
