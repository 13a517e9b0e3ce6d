//! What the autograd engine asks of the op layer: the one door from `autograd` down into `ops`
//! (tests/test_layering.py checks that autograd uses no other). The engine accumulates
//! gradients, copies, casts and reshapes them to their inputs' metadata, writes through the one
//! write path, and rebuilds the history of modified views; everything else it does is its own.
//! The other direction is as narrow: ops use only the items re-exported at `crate::autograd`'s
//! root (the `Recorder`, `Ctx`, `Formula`, the in-place checks) and its `blame` and `mode`.

use super::binary::{self, BinaryOp};
use super::Arg;
use crate::error::Result;
use crate::tensor::Tensor;

pub use super::copy::{clone, clone_raw, contiguous_raw, copy_, copy_kernel, empty_with_layout, fill_, preserved_layout, to_dtype, zeros_raw};
pub use super::formulas::sum_to;
pub use super::iter_layout::is_non_overlapping_and_dense;
pub use super::reduce::has_nan;
pub(crate) use super::reduce::py_ints;
pub use super::views::as_strided;
pub use super::write::write;

/// `a + b`, recorded when grad mode is on (gradient sums under `create_graph`).
pub fn add(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary::binary(BinaryOp::Add, &Arg::Tensor(a.clone()), &Arg::Tensor(b.clone()), None)
}

/// `a + b` never recorded (`retain_grad`'s running sum).
pub fn add_raw(a: &Tensor, b: &Tensor) -> Result<Tensor> {
    binary::binary_raw(BinaryOp::Add, &Arg::Tensor(a.clone()), &Arg::Tensor(b.clone()), None)
}

/// `dst += src` in place, through the write path (`.grad` accumulation without create_graph).
pub fn add_(dst: &Tensor, src: &Tensor) -> Result<()> {
    binary::binary_(BinaryOp::Add, dst, &Arg::Tensor(src.clone()), None)
}
