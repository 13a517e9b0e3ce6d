//! The CPU backend: each method calls the CPU kernel that lives beside its op (`ops::unary`,
//! `ops::binary`, `ops::copy`) or in the kernels crate. Memory comes from the caching allocator.

use super::{AvgWindows, Backend, BinaryMode, Bound, ConvGeometry, Device, FloatMap, MaxGeometry, RandomDist, ScatterOp, Walk};
use crate::dtype::{DType, Scalar};
use crate::error::Result;
use crate::ops::binary::BinaryOp;
use crate::kernels::unary::MathOp;
use crate::ops::reduce::Reduction;
use crate::ops::unary::UnaryOp;
use crate::storage::Storage;
use crate::tensor::Tensor;
use std::sync::Arc;

pub(super) struct Cpu;

impl Backend for Cpu {
    fn device(&self) -> Device {
        Device::Cpu
    }

    fn allocate(&self, nbytes: usize, dtype: DType, zeroed: bool) -> Result<Arc<Storage>> {
        Storage::new(nbytes, dtype, zeroed)
    }

    fn copy(&self, dst: &Tensor, src: &Tensor, src_strides: &[isize]) -> Result<()> {
        crate::ops::copy::cpu_kernel(dst, src, src_strides);
        Ok(())
    }

    fn fill(&self, dst: &Tensor, value: Scalar) -> Result<()> {
        crate::kernels::fill::fill(dst, value);
        Ok(())
    }

    fn unary(&self, op: UnaryOp, dst: &Tensor, src: &Tensor, in_place: bool) -> Result<()> {
        crate::ops::unary::cpu_kernel(op, dst, src, in_place);
        Ok(())
    }

    fn binary(&self, op: BinaryOp, dst: &Tensor, a: &Tensor, b: &Tensor, mode: BinaryMode, alpha: Option<f64>) -> Result<()> {
        crate::ops::binary::cpu_kernel(op, dst, a, b, mode, alpha);
        Ok(())
    }

    fn where_(&self, dst: &Tensor, cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
        crate::ops::binary::where_cpu_kernel(dst, cond, a, b);
        Ok(())
    }

    fn masked_fill(&self, dst: &Tensor, mask: &Tensor, value: Scalar) -> Result<()> {
        crate::ops::binary::masked_fill_cpu_kernel(dst, mask, value);
        Ok(())
    }

    fn clamp(&self, dst: &Tensor, src: &Tensor, lo: Bound<'_>, hi: Bound<'_>, in_place: bool) -> Result<()> {
        crate::ops::binary::clamp_cpu_kernel(dst, src, lo, hi, in_place);
        Ok(())
    }

    fn float_map(&self, map: FloatMap, dst: &Tensor, src: &Tensor, in_place: bool) -> Result<()> {
        crate::ops::unary::float_map_cpu_kernel(map, dst, src, in_place);
        Ok(())
    }

    fn fused_unary_backward(&self, op: MathOp, dst: &Tensor, g: &Tensor, s: &Tensor) -> Result<bool> {
        crate::ops::unary::fused_backward_cpu_kernel(op, dst, g, s);
        Ok(true)
    }

    fn reduce(&self, op: Reduction, values: Option<&Tensor>, indices: Option<&Tensor>, src: &Tensor, dims: &[usize]) -> Result<()> {
        crate::ops::reduce::cpu_kernel(op, values, indices, src, dims)
    }

    fn softmax(&self, dst: &Tensor, src: &Tensor, dim: usize, log: bool) -> Result<()> {
        crate::ops::reduce::softmax_cpu_kernel(dst, src, dim, log)
    }

    fn matmul(&self, dst: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
        crate::ops::linalg::matmul_cpu_kernel(dst, a, b)
    }

    fn random_fill(&self, dst: &Tensor, dist: RandomDist) -> Result<()> {
        crate::ops::creation::random_fill_cpu(dst, dist)
    }

    fn add_into(&self, dst: &Tensor, src: &Tensor) -> Result<()> {
        crate::kernels::add_into(dst, src)
    }

    fn conv2d(&self, out: &Tensor, x: &Tensor, w: &Tensor, bias: Option<&Tensor>, g: &ConvGeometry) -> Result<()> {
        crate::ops::conv::cpu_forward(out, x, w, bias, g)
    }

    fn conv2d_input_grad(&self, dx: &Tensor, grad: &Tensor, w: &Tensor, g: &ConvGeometry) -> Result<()> {
        crate::ops::conv::cpu_input_grad(dx, grad, w, g)
    }

    fn conv2d_weight_grad(&self, dw: &Tensor, x: &Tensor, grad: &Tensor, g: &ConvGeometry) -> Result<()> {
        crate::ops::conv::cpu_weight_grad(dw, x, grad, g)
    }

    fn max_pool2d(&self, out: &Tensor, indices: &Tensor, x: &Tensor, g: &MaxGeometry) -> Result<()> {
        crate::ops::pool::max_cpu_kernel(out, indices, x, g);
        Ok(())
    }

    fn max_pool2d_backward(&self, dx: &Tensor, grad: &Tensor, indices: &Tensor, g: &MaxGeometry) -> Result<()> {
        crate::ops::pool::max_backward_cpu_kernel(dx, grad, indices, g);
        Ok(())
    }

    fn avg_pool2d(&self, out: &Tensor, x: &Tensor, win: &AvgWindows) -> Result<()> {
        crate::ops::pool::avg_cpu_kernel(out, x, win, false);
        Ok(())
    }

    fn avg_pool2d_backward(&self, dx: &Tensor, grad: &Tensor, win: &AvgWindows) -> Result<()> {
        crate::ops::pool::avg_cpu_kernel(dx, grad, win, true);
        Ok(())
    }

    fn pad2d(&self, out: &Tensor, x: &Tensor, rows: &[usize], cols: &[usize]) -> Result<()> {
        crate::ops::pad::cpu_kernel(out, x, rows, cols, false);
        Ok(())
    }

    fn pad2d_backward(&self, dx: &Tensor, grad: &Tensor, rows: &[usize], cols: &[usize]) -> Result<()> {
        crate::ops::pad::cpu_kernel(dx, grad, rows, cols, true);
        Ok(())
    }

    fn batch_norm(
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
        crate::ops::norm::batch_norm_cpu(x, running_mean, running_var, weight, bias, training, momentum, eps)
    }

    fn layer_norm(&self, x: &Tensor, normalized_shape: &[usize], weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64) -> Result<(Tensor, Tensor, Tensor)> {
        crate::ops::norm::layer_norm_cpu(x, normalized_shape, weight, bias, eps)
    }

    fn transfer(&self, host: &Tensor, device: &Tensor, to_host: bool) -> Result<()> {
        // Host to host: a plain copy of contiguous bytes.
        let (dst, src) = if to_host { (host, device) } else { (device, host) };
        let n = src.numel() * src.dtype().size();
        // SAFETY: both are contiguous tensors of the same dtype and numel inside their storages,
        // and distinct allocations (the caller made one of them fresh).
        unsafe { std::ptr::copy_nonoverlapping(src.storage.as_ptr().add(src.layout.offset * src.dtype().size()), dst.storage.as_ptr().add(dst.layout.offset * dst.dtype().size()), n) };
        Ok(())
    }

    fn gather(&self, dst: &Tensor, src: &Tensor, dim: usize, index: &Tensor) -> Result<()> {
        crate::ops::gather::gather_cpu_kernel(dst, src, dim, index);
        Ok(())
    }

    fn scatter(&self, dst: &Tensor, dim: usize, index: &Tensor, src: &Tensor, op: ScatterOp) -> Result<()> {
        crate::ops::gather::scatter_cpu_kernel(dst, dim, index, src, op);
        Ok(())
    }

    fn index_gather(&self, dst: &Tensor, src: &Tensor, walk: &Walk) -> Result<()> {
        crate::ops::advanced::index_gather_cpu_kernel(dst, src, walk);
        Ok(())
    }

    fn index_scatter(&self, dst: &Tensor, values: &Tensor, walk: &Walk, accumulate: bool) -> Result<()> {
        crate::ops::advanced::index_scatter_cpu_kernel(dst, values, walk, accumulate);
        Ok(())
    }

    fn nonzero(&self, src: &Tensor) -> Result<Tensor> {
        crate::ops::mask::nonzero_cpu_kernel(src)
    }

    fn masked_select(&self, src: &Tensor, mask: &Tensor) -> Result<Tensor> {
        crate::ops::mask::masked_select_cpu_kernel(src, mask)
    }

    fn optim_step(&self, rule: crate::ops::optim::Rule, slots: &[crate::ops::optim::Slot]) -> Result<()> {
        crate::ops::optim::cpu_kernel(rule, slots)
    }

    fn batch_norm_backward(&self, g: &Tensor, x: &Tensor, weight: Option<&Tensor>, eps: f64) -> Result<Option<(Tensor, Tensor, Tensor)>> {
        crate::ops::norm::batch_norm_backward_cpu(g, x, weight, eps)
    }

    fn sort(&self, op: super::SortOp, values: &Tensor, indices: &Tensor, src: &Tensor) -> Result<()> {
        crate::ops::sort::cpu_kernel(op, values, indices, src)
    }

    fn scan(&self, op: super::ScanOp, dst: &Tensor, src: &Tensor, acc: DType) -> Result<()> {
        crate::ops::scan::cpu_kernel(op, dst, src, acc)
    }

    fn max_pool2d_values(&self, out: &Tensor, x: &Tensor, g: &MaxGeometry) -> Result<()> {
        crate::ops::pool::max_values_cpu_kernel(out, x, g);
        Ok(())
    }

    fn mask_ranks(&self, mask: &Tensor) -> Result<(Tensor, usize)> {
        crate::ops::advanced::mask_ranks_cpu_kernel(mask)
    }

    fn masked_put(&self, dst: &Tensor, first: usize, ranks: &Tensor, values: &Tensor, accumulate: bool) -> Result<()> {
        crate::ops::advanced::masked_put_cpu_kernel(dst, first, ranks, values, accumulate)
    }

    fn masked_take(&self, dst: &Tensor, src: &Tensor, first: usize, ranks: &Tensor) -> Result<()> {
        crate::ops::advanced::masked_take_cpu_kernel(dst, src, first, ranks)
    }

    fn matmul_bias(&self, dst: &Tensor, bias: &Tensor, a: &Tensor, b: &Tensor) -> Result<bool> {
        crate::ops::linalg::matmul_bias_cpu_kernel(dst, bias, a, b)
    }
}
