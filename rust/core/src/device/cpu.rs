//! The CPU backend: each method calls the CPU kernel that lives beside its op (`ops::unary`,
//! `ops::binary`, `ops::copy`) or in the kernels crate. Memory comes from the caching allocator.

use super::{Backend, BinaryMode, Bound, Device, RandomDist};
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

    fn transfer(&self, host: &Tensor, device: &Tensor, to_host: bool) -> Result<()> {
        // Host to host: a plain copy of contiguous bytes.
        let (dst, src) = if to_host { (host, device) } else { (device, host) };
        let n = src.numel() * src.dtype().size();
        // SAFETY: both are contiguous tensors of the same dtype and numel inside their storages,
        // and distinct allocations (the caller made one of them fresh).
        unsafe { std::ptr::copy_nonoverlapping(src.storage.as_ptr().add(src.layout.offset * src.dtype().size()), dst.storage.as_ptr().add(dst.layout.offset * dst.dtype().size()), n) };
        Ok(())
    }
}
