//! Matrix products: `mm`, `bmm`, `mv`, `dot`, and `matmul`, which dispatches between them by
//! rank exactly as torch's `_matmul_impl` does (the path decides which error text a mistake
//! gets, so it is followed step for step). Operands are read in place through their strides;
//! outputs are fresh contiguous tensors.
//!
//! This file holds the product loop every op ends in and the save helpers of their nodes;
//! `products.rs` has mm, mv, dot and bmm, `matmul.rs` the rank dispatch (plain, and with
//! differentiable pieces so the graph has torch's nodes), `addmm.rs` addmm. Each keeps its
//! forward, backward formula and saves together.

use crate::autograd::Recorder;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::kernels::matmul::{batched, product_add, Strides};
use crate::layout::Layout;
use crate::tensor::Tensor;

mod addmm;
mod kron;
mod matmul;
mod products;

pub use addmm::{addmm, addmm_, addmm_raw};
pub use kron::kron;
pub use matmul::{matmul, matmul_raw};
pub use products::{bmm, bmm_raw, dot, dot_raw, mm, mm_raw, mv, mv_raw};

/// torch's `_unsafe_view`: the same memory under a new shape (refused as `view` refuses it),
/// not a view in the graph; UnsafeViewBackward0 reshapes the gradient back. (torch also gives
/// it a version counter of its own; here it shares `t`'s, so a later in-place change of `t` is
/// caught at backward instead of silently read: docs/divergences.md.)
fn unsafe_view(t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    let dims: Vec<i64> = shape.iter().map(|&d| d as i64).collect();
    let out = Tensor { layout: t.layout.view(&dims)?, ..t.fresh_handle() };
    if let Some(mut rec) = Recorder::new(&[Some(t)])? {
        rec.value("self_sym_sizes", crate::ops::reduce::py_ints(t.shape()));
        let back: Vec<i64> = t.shape().iter().map(|&d| d as i64).collect();
        rec.finish("UnsafeViewBackward0", &[&out], Box::new(move |ctx| Ok(vec![Some(crate::ops::views::reshape(ctx.grad(), &back)?)])))?;
    }
    Ok(out)
}

/// C++ type names, as torch's mm prints them ("float != double").
fn cpp_name(d: DType) -> &'static str {
    match d {
        DType::Bool => "bool",
        DType::Int32 => "int",
        DType::Int64 => "long int",
        DType::Float32 => "float",
        DType::Float64 => "double",
        DType::Float16 => "c10::Half",
        DType::BFloat16 => "c10::BFloat16",
        DType::UInt8 => "unsigned char",
        DType::Int8 => "signed char",
        DType::Int16 => "short int",
    }
}

use crate::error::not_implemented_for as not_implemented;

/// One operand of a product, read in place: batch strides aligned with the output's batch
/// shape (0 where broadcast), then row and column strides of each matrix.
struct Operand<'a> {
    t: &'a Tensor,
    batch_strides: Vec<isize>,
    rs: isize,
    cs: isize,
}

impl<'a> Operand<'a> {
    /// A plain matrix (or a vector viewed as one row/column through `rs`/`cs`).
    fn matrix(t: &'a Tensor, rs: isize, cs: isize) -> Operand<'a> {
        Operand { t, batch_strides: vec![], rs, cs }
    }
}

impl Operand<'_> {
    /// The operand as the `(batch.., rows, cols)` tensor the device's `matmul` reads: `None`
    /// when its layout already is that (use the tensor itself), else a view of its storage with
    /// the operand's strides.
    fn as_batch_matrix(&self, batch: &[usize], rows: usize, cols: usize) -> Option<Tensor> {
        if is_batch_matrix(self.t, batch, rows, cols, &self.batch_strides, self.rs, self.cs) {
            return None;
        }
        let mut shape = batch.to_vec();
        shape.extend([rows, cols]);
        let mut strides = self.batch_strides.clone();
        strides.extend([self.rs, self.cs]);
        Some(kernel_view(self.t, Layout { shape: shape.into(), strides: strides.into(), offset: self.t.layout.offset }))
    }
}

/// `t`'s memory seen through `layout`, for the backend only: the same storage, version counter
/// and autograd handle, without a view's bookkeeping (it is never returned to a caller). Cheap:
/// mv and dot make two per call.
fn kernel_view(t: &Tensor, layout: Layout) -> Tensor {
    Tensor { storage: t.storage.clone(), layout, version: t.version.clone(), meta: t.meta.clone(), stale_size0: false }
}

/// Whether `t` already is the `(batch.., rows, cols)` matrix with these strides. This runs on
/// every product, small ones included: element loops (a slice `==` calls memcmp, which cost
/// 0.2 µs per 8x8 product here).
fn is_batch_matrix(t: &Tensor, batch: &[usize], rows: usize, cols: usize, batch_strides: &[isize], rs: isize, cs: isize) -> bool {
    let (shape, strides, nb) = (t.shape(), t.strides(), batch.len());
    shape.len() == nb + 2
        && batch_strides.len() == nb
        && (shape[nb], shape[nb + 1], strides[nb], strides[nb + 1]) == (rows, cols, rs, cs)
        && same(&shape[..nb], batch)
        && same(&strides[..nb], batch_strides)
}

fn same<T: PartialEq>(a: &[T], b: &[T]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x == y)
}

/// `out[batch..] = a[batch..] @ b[batch..]` into a new contiguous tensor of `out_shape`
/// (whose numel is batch·m·n), on the operands' device. Zeros when k is 0, as torch.
#[allow(clippy::too_many_arguments)]
fn product(out_shape: &[usize], batch: &[usize], m: usize, n: usize, k: usize, a: &Operand, b: &Operand, dtype: DType) -> Result<Tensor> {
    let device = crate::device::common_device(&[a.t, b.t])?;
    let count: usize = batch.iter().product();
    if count == 0 || m == 0 || n == 0 {
        return Ok(Tensor::empty_on(out_shape, dtype, device)?);
    }
    if k == 0 {
        return Ok(Tensor::zeros_on(out_shape, dtype, device)?);
    }
    if dtype == DType::Bool {
        return Err(not_implemented("addmm_impl_cpu_", dtype));
    }
    let out = Tensor::empty_on(out_shape, dtype, device)?;
    // mv and dot write a vector or a scalar: the same memory seen as (m, n) matrices.
    let dst_view = (out_shape.len() != batch.len() + 2).then(|| {
        let mut dst_shape = batch.to_vec();
        dst_shape.extend([m, n]);
        kernel_view(&out, Layout::contiguous(&dst_shape))
    });
    let (av, bv) = (a.as_batch_matrix(batch, m, k), b.as_batch_matrix(batch, k, n));
    let (dst, av, bv) = (dst_view.as_ref().unwrap_or(&out), av.as_ref().unwrap_or(a.t), bv.as_ref().unwrap_or(b.t));
    crate::device::backend_for(&[dst, av, bv])?.matmul(dst, av, bv)?;
    Ok(out)
}

/// The CPU side of `Backend::matmul` (its contract: `(B.., m, k) @ (B.., k, n)` into a fresh
/// `dst`, one dtype, every size at least 1): one gemm (or integer loop) per batch entry,
/// operands read in place through their strides.
pub(crate) fn matmul_cpu_kernel(dst: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
    let nd = dst.ndim();
    let bad = || Error::Runtime("matmul: the op layer passed mismatched operands".into());
    if nd < 2 || a.ndim() != nd || b.ndim() != nd || a.dtype() != dst.dtype() || b.dtype() != dst.dtype() {
        return Err(bad());
    }
    let (m, n, k) = (dst.shape()[nd - 2], dst.shape()[nd - 1], a.shape()[nd - 1]);
    let batch = &dst.shape()[..nd - 2];
    if !same(&a.shape()[..nd - 2], batch) || !same(&b.shape()[..nd - 2], batch) || a.shape()[nd - 2] != m || b.shape()[nd - 2] != k || b.shape()[nd - 1] != n {
        return Err(bad());
    }
    let count: usize = batch.iter().product();
    if count == 0 || m == 0 || n == 0 || k == 0 {
        return Err(bad());
    }
    let (ds, as_, bs) = (dst.strides(), a.strides(), b.strides());
    // Offsets of each batch entry, walking the batch shape in row-major order.
    let mut offsets = Vec::with_capacity(count);
    let mut idx = vec![0usize; batch.len()];
    for _ in 0..count {
        let mut o = [dst.layout.offset as isize, a.layout.offset as isize, b.layout.offset as isize];
        for (d, &i) in idx.iter().enumerate() {
            o[0] += i as isize * ds[d];
            o[1] += i as isize * as_[d];
            o[2] += i as isize * bs[d];
        }
        offsets.push(o);
        for d in (0..batch.len()).rev() {
            idx[d] += 1;
            if idx[d] < batch[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    let s = Strides { dst_rs: ds[nd - 2], dst_cs: ds[nd - 1], a_rs: as_[nd - 2], a_cs: as_[nd - 1], b_rs: bs[nd - 2], b_cs: bs[nd - 1] };
    macro_rules! go {
        ($T:ty) => {
            // SAFETY: every operand address is an element of a valid layout (strides and offsets
            // come from the operands' own layouts, broadcast dims read with stride 0); `dst` is
            // fresh memory (the contract) that no input shares, and each batch entry writes its
            // own distinct (m, n) block of it.
            unsafe { batched::<$T>(m, n, k, dst.base_ptr::<$T>(), a.base_ptr::<$T>(), b.base_ptr::<$T>(), s, &offsets) }
        };
    }
    match dst.dtype() {
        DType::Float32 => go!(f32),
        DType::Float64 => go!(f64),
        DType::Int64 => go!(i64),
        DType::Int32 => go!(i32),
        DType::Bool => return Err(not_implemented("addmm_impl_cpu_", DType::Bool)),
        d => crate::element::narrow_in_compute_kernel(d),
    }
    Ok(())
}

/// The CPU side of `Backend::matmul_bias`: the bias copied into `dst`, then one gemm adding
/// `a @ b` into it (a and b read through their strides); false, with nothing written, for
/// anything but 2-D float operands of matching shapes.
pub(crate) fn matmul_bias_cpu_kernel(dst: &Tensor, bias: &Tensor, a: &Tensor, b: &Tensor) -> Result<bool> {
    let dtype = dst.dtype();
    let dtypes_ok = [bias, a, b].iter().all(|t| t.dtype() == dtype) && matches!(dtype, DType::Float32 | DType::Float64);
    if dst.ndim() != 2 || a.ndim() != 2 || b.ndim() != 2 || !dtypes_ok || !dst.is_contiguous() || bias.shape() != dst.shape() {
        return Ok(false);
    }
    let (m, n, k) = (dst.shape()[0], dst.shape()[1], a.shape()[1]);
    if a.shape()[0] != m || b.shape()[0] != k || b.shape()[1] != n || m == 0 || n == 0 || k == 0 {
        return Ok(false);
    }
    crate::ops::copy::copy_kernel(dst, bias)?;
    let (ds, as_, bs) = (dst.strides(), a.strides(), b.strides());
    let s = Strides { dst_rs: ds[0], dst_cs: ds[1], a_rs: as_[0], a_cs: as_[1], b_rs: bs[0], b_cs: bs[1] };
    macro_rules! go {
        ($T:ty) => {
            // SAFETY: a and b are read through their own layouts (every addressed element lies in
            // their storage); dst is the caller's fresh, initialised, contiguous (m, n) output,
            // which shares memory with neither input.
            unsafe { product_add::<$T>(m, n, k, dst.data_ptr::<$T>(), a.data_ptr::<$T>() as *const $T, b.data_ptr::<$T>() as *const $T, s) }
        };
    }
    if dtype == DType::Float32 {
        go!(f32)
    } else {
        go!(f64)
    }
    Ok(true)
}

// ----- autograd: saves and backward formulas (derivatives.yaml) -----

/// Saves `first` under `first_name` when input 0 needs a gradient and `second` when input 1
/// does (torch saves each operand only for the other's gradient, R13).
fn save_crossed(rec: &mut Recorder, first_name: &'static str, first: &Tensor, second_name: &'static str, second: &Tensor) -> Result<()> {
    if rec.needs(0) {
        rec.save(first_name, first)?;
    }
    if rec.needs(1) {
        rec.save(second_name, second)?;
    }
    Ok(())
}

/// The saved operands in `save_crossed`'s order: (for input 0's gradient, for input 1's).
fn crossed(ctx: &crate::autograd::Ctx) -> (Option<Tensor>, Option<Tensor>) {
    let mut it = ctx.saved.iter().cloned();
    let a = if ctx.needs(0) { it.next() } else { None };
    let b = if ctx.needs(1) { it.next() } else { None };
    (a, b)
}

/// Builders shared by the tests of the product files.
#[cfg(test)]
mod test_util {
    use super::*;

    pub(super) fn t(v: Vec<f32>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape).unwrap()
    }
}
