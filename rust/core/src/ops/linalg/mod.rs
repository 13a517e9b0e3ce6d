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
use crate::kernels::matmul::{batched, Strides};
use crate::tensor::Tensor;

mod addmm;
mod matmul;
mod products;

pub use addmm::{addmm, addmm_, addmm_raw};
pub use matmul::{matmul, matmul_raw};
pub use products::{bmm, bmm_raw, dot, dot_raw, mm, mm_raw, mv, mv_raw};

/// C++ type names, as torch's mm prints them ("float != double").
fn cpp_name(d: DType) -> &'static str {
    match d {
        DType::Bool => "bool",
        DType::Int32 => "int",
        DType::Int64 => "long int",
        DType::Float32 => "float",
        DType::Float64 => "double",
    }
}

fn not_implemented(kernel: &str, d: DType) -> Error {
    Error::NotImplemented(format!("\"{}\" not implemented for '{}'", kernel, d.scalar_type_name()))
}

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

/// `out[batch..] = a[batch..] @ b[batch..]` into a new contiguous tensor of `out_shape`
/// (whose numel is batch·m·n). Zeros when k is 0, as torch.
#[allow(clippy::too_many_arguments)]
fn product(out_shape: &[usize], batch: &[usize], m: usize, n: usize, k: usize, a: &Operand, b: &Operand, dtype: DType) -> Result<Tensor> {
    let count: usize = batch.iter().product();
    if count == 0 || m == 0 || n == 0 {
        return Ok(Tensor::empty(out_shape, dtype)?);
    }
    if k == 0 {
        return Ok(Tensor::zeros(out_shape, dtype)?);
    }
    let out = Tensor::empty(out_shape, dtype)?;
    // Offsets of each batch entry, walking the batch shape in row-major order.
    let mut offsets = Vec::with_capacity(count);
    let mut idx = vec![0usize; batch.len()];
    for e in 0..count {
        let (mut oa, mut ob) = (a.t.layout.offset as isize, b.t.layout.offset as isize);
        for (d, &i) in idx.iter().enumerate() {
            oa += i as isize * a.batch_strides[d];
            ob += i as isize * b.batch_strides[d];
        }
        offsets.push([(e * m * n) as isize, oa, ob]);
        for d in (0..batch.len()).rev() {
            idx[d] += 1;
            if idx[d] < batch[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    let s = Strides { dst_rs: n as isize, dst_cs: 1, a_rs: a.rs, a_cs: a.cs, b_rs: b.rs, b_cs: b.cs };
    macro_rules! go {
        ($T:ty) => {
            // SAFETY: every operand address is an element of a valid layout (strides and offsets
            // come from the operands' own layouts, broadcast dims read with stride 0); `out` is
            // fresh memory of count·m·n elements that no input shares, and entry e writes only
            // its own block [e·m·n, (e+1)·m·n).
            unsafe { batched::<$T>(m, n, k, out.base_ptr::<$T>(), a.t.base_ptr::<$T>(), b.t.base_ptr::<$T>(), s, &offsets) }
        };
    }
    match dtype {
        DType::Float32 => go!(f32),
        DType::Float64 => go!(f64),
        DType::Int64 => go!(i64),
        DType::Int32 => go!(i32),
        DType::Bool => return Err(not_implemented("addmm_impl_cpu_", dtype)),
    }
    Ok(out)
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
fn crossed(ctx: &crate::autograd::node::Ctx) -> (Option<Tensor>, Option<Tensor>) {
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
