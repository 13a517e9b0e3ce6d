//! Losses of `nn.functional`: mse_loss (MseLossBackward0), l1_loss (composed, as torch does),
//! nll_loss (NllLossBackward0 / NllLoss2DBackward0), cross_entropy (LogSoftmax then NllLoss,
//! label smoothing and class-probability targets composed as torch composes them),
//! binary_cross_entropy (BinaryCrossEntropyBackward0), binary_cross_entropy_with_logits
//! (BinaryCrossEntropyWithLogitsBackward0), smooth_l1_loss (SmoothL1LossBackward0) and
//! huber_loss (HuberLossBackward0).
//!
//! Forward kernels accumulate in f64 in a fixed order. Backward formulas are written with
//! differentiable ops, so double backward works (through composed nodes).
//!
//! This file holds `reduction=` and the helpers the losses share; each loss keeps its forward,
//! backward formula and saves in its own file: `mse_l1.rs`, `nll.rs`, `cross_entropy.rs`,
//! `bce.rs` (binary_cross_entropy, with and without logits) and `smooth_l1.rs` (with huber).

use crate::dtype::{DType, Scalar};
use crate::error::{fmt_shape, Error, Result};
use crate::ops::binary::{self, BinaryOp};
use crate::ops::norm::from_f64s;
use crate::ops::{views, Arg};
use crate::tensor::Tensor;

mod bce;
mod cross_entropy;
mod mse_l1;
mod nll;
mod smooth_l1;

pub use bce::{binary_cross_entropy, binary_cross_entropy_with_logits};
pub use cross_entropy::cross_entropy;
pub use mse_l1::{l1_loss, mse_loss};
pub use nll::nll_loss;
pub use smooth_l1::{robust_loss, Robust};

/// `reduction=`: torch's enum values (none 0, mean 1, sum 2), as `_saved_reduction` shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reduction {
    None = 0,
    Mean = 1,
    Sum = 2,
}

impl Reduction {
    pub fn parse(s: &str) -> Result<Reduction> {
        match s {
            "none" => Ok(Reduction::None),
            "mean" => Ok(Reduction::Mean),
            "sum" => Ok(Reduction::Sum),
            other => Err(Error::Value(format!("{} is not a valid value for reduction", other))),
        }
    }
}

/// Python's repr of a shape as minigrad prints it in these messages: `minigrad.Size([2, 3])`.
pub fn torch_size(shape: &[usize]) -> String {
    format!("minigrad.Size({})", fmt_shape(shape))
}

/// Reduces f64 element losses in order: the output tensor of `dtype`.
/// The loss tensor on `device` (the inputs'): the values are summed on the host in float64, in
/// a fixed order, then placed where torch's loss would be.
fn reduce_values(v: Vec<f64>, shape: &[usize], r: Reduction, dtype: DType, device: crate::device::Device) -> Result<Tensor> {
    let out = match r {
        Reduction::None => from_f64s(v, shape, dtype),
        Reduction::Sum => from_f64s(vec![v.iter().sum()], &[], dtype),
        Reduction::Mean => from_f64s(vec![v.iter().sum::<f64>() / v.len() as f64], &[], dtype),
    }?;
    if device.is_cpu() {
        Ok(out)
    } else {
        crate::ops::copy::to_device_raw(&out, device)
    }
}

/// The gradient of a reduced loss spread over elements: `g / n` for mean, `g` otherwise.
fn spread(g: &Tensor, r: Reduction, n: usize) -> Result<Tensor> {
    match r {
        Reduction::Mean => binary::binary(BinaryOp::Div, &Arg::Tensor(g.clone()), &Arg::Scalar(Scalar::Int(n as i64)), None),
        _ => Ok(g.clone()),
    }
}

/// `t` expanded (differentiably) to `shape` when it differs.
fn expand_to(t: &Tensor, shape: &[usize]) -> Result<Tensor> {
    if t.shape() == shape {
        return Ok(t.clone());
    }
    views::expand(t, &shape.iter().map(|&d| d as i64).collect::<Vec<_>>())
}

fn num(v: f64) -> Arg {
    Arg::Scalar(Scalar::Float(v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    fn idx(v: Vec<i64>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape).unwrap()
    }

    #[test]
    fn losses_pass_gradcheck() {
        let reds = [Reduction::None, Reduction::Mean, Reduction::Sum];
        for r in reds {
            gradcheck("mse", &|t| mse_loss(&t[0], &t[1], r), &[rand_leaf(&[2, 3], 1), rand_leaf(&[2, 3], 2)], true);
            let target = idx(vec![0, 2, -100, 1], &[4]);
            let w = vals(vec![0.5, 2.0, 1.5], &[3]);
            gradcheck("nll", &|t| nll_loss(&t[0], &target, Some(&w), r, -100), &[rand_leaf(&[4, 3], 3)], true);
            let t3 = idx(vec![0, 2, 1, 1, 0, 2], &[2, 3]);
            gradcheck("nll 3d", &|t| nll_loss(&t[0], &t3, None, r, -100), &[rand_leaf(&[2, 3, 3], 4)], true);
            gradcheck("ce smooth", &|t| cross_entropy(&t[0], &target, Some(&w), r, -100, 0.2), &[rand_leaf(&[4, 3], 5)], true);
            gradcheck("ce probs", &|t| cross_entropy(&t[0], &t[1], None, r, -100, 0.1), &[rand_leaf(&[4, 3], 6), rand_leaf(&[4, 3], 7)], true);
            let p = || vals(vec![0.1, 0.5, 0.9, 0.3, 0.7, 0.2], &[2, 3]);
            let bw = vals(vec![1.0, 2.0, 0.5], &[3]);
            let leafed = |v: Tensor| leaf(v.to_vec::<f64>().unwrap(), v.shape());
            gradcheck("bce", &|t| binary_cross_entropy(&t[0], &t[1], Some(&bw), r), &[leafed(p()), leafed(vals(vec![0.2, 0.4, 0.6, 0.8, 0.5, 0.3], &[2, 3]))], true);
            let pw = vals(vec![3.0, 0.5, 1.0], &[3]);
            gradcheck("bce logits", &|t| binary_cross_entropy_with_logits(&t[0], &t[1], Some(&bw), Some(&pw), r), &[rand_leaf(&[2, 3], 8), leafed(p())], true);
        }
    }

    #[test]
    fn values_and_errors() {
        let x = vals(vec![-1.0, -2.0, -3.0, -4.0], &[2, 2]);
        let t = idx(vec![1, 0], &[2]);
        assert_eq!(nll_loss(&x, &t, None, Reduction::Mean, -100).unwrap().to_vec::<f64>().unwrap(), vec![2.5]);
        assert_eq!(nll_loss(&x, &idx(vec![2, 0], &[2]), None, Reduction::Sum, -100).unwrap_err().to_string(), "Target 2 is out of bounds.");
        assert!(nll_loss(&x, &idx(vec![-100, -100], &[2]), None, Reduction::Mean, -100).unwrap().to_vec::<f64>().unwrap()[0].is_nan());
        assert_eq!(Reduction::parse("avg").unwrap_err(), Error::Value("avg is not a valid value for reduction".into()));
        let p = vals(vec![0.0, 1.0], &[2]);
        let out = binary_cross_entropy(&p, &vals(vec![1.0, 0.0], &[2]), None, Reduction::Mean).unwrap();
        assert_eq!(out.to_vec::<f64>().unwrap(), vec![100.0], "logs clamp at -100");
        let big = vals(vec![1000.0, -1000.0], &[2]);
        let l = binary_cross_entropy_with_logits(&big, &vals(vec![1.0, 0.0], &[2]), None, None, Reduction::Sum).unwrap();
        assert_eq!(l.to_vec::<f64>().unwrap(), vec![0.0]);
    }
}
