//! Ops: each file holds one family, and within it each op's shape/dtype rules, its kernel
//! call and its in-place variant side by side (DESIGN invariant 8). Backward formulas and save
//! sets join each op here in the autograd issue. The big families are folders: `mod.rs` holds
//! what the family shares and re-exports its ops, each other file one op's whole story.

pub mod advanced;
pub mod binary;
pub mod conv;
pub mod copy;
pub mod creation;
pub mod cross;
pub mod cum_extreme;
pub mod logit;
pub mod diag;
pub mod cuda_kernels;
pub mod einsum;
pub mod embedding;
pub mod for_autograd;
pub mod formulas;
pub mod fused;
pub mod gather;
pub mod histograms;
pub mod index;
pub mod iter_layout;
pub mod join;
pub mod lanes;
pub mod linalg;
pub mod loss;
pub mod mask;
pub mod mask_scatter;
pub mod nan_to_num;
pub mod norm;
pub mod pad;
pub mod pool;
pub mod reduce;
pub mod scan;
pub mod searchsorted;
pub mod sgn;
pub mod shape_ops;
pub mod sort;
pub mod unary;
pub mod unique;
pub mod views;
pub mod write;
pub mod optim;

use crate::dtype::{Operand, Scalar};
use crate::tensor::Tensor;

/// Strides that read `t` as if it had `shape` (trailing-aligned; broadcast dims get stride 0).
/// The caller has checked that `t.shape()` broadcasts to `shape`.
pub fn broadcast_strides(t: &Tensor, shape: &[usize]) -> Vec<isize> {
    let n = shape.len();
    let k = t.ndim();
    let mut out = vec![0isize; n];
    for i in 0..k {
        let d = n - k + i;
        out[d] = if t.shape()[i] == 1 && shape[d] != 1 { 0 } else { t.strides()[i] };
    }
    out
}

/// An argument of an elementwise op: a tensor or a Python number.
#[derive(Debug, Clone)]
pub enum Arg {
    Tensor(Tensor),
    Scalar(Scalar),
}

impl Arg {
    /// The tensor, if this argument is one.
    pub fn tensor(&self) -> Option<&Tensor> {
        match self {
            Arg::Tensor(t) => Some(t),
            Arg::Scalar(_) => None,
        }
    }

    /// How this argument takes part in type promotion.
    pub fn promotion(&self) -> Operand {
        match self {
            Arg::Tensor(t) if t.ndim() == 0 => Operand::ZeroDim(t.dtype()),
            Arg::Tensor(t) => Operand::Dimensioned(t.dtype()),
            Arg::Scalar(s) => Operand::Wrapped(s.wrapped_dtype()),
        }
    }

    pub fn shape(&self) -> &[usize] {
        match self {
            Arg::Tensor(t) => t.shape(),
            Arg::Scalar(_) => &[],
        }
    }

    /// The argument as a tensor of `dtype` (numbers become 0-d tensors).
    pub fn as_tensor(&self, dtype: crate::dtype::DType) -> crate::error::Result<Tensor> {
        match self {
            Arg::Tensor(t) => copy::cast_input(t, dtype),
            Arg::Scalar(s) => Tensor::scalar(*s, dtype),
        }
    }
}
