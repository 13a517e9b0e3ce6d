//! `cross_entropy` as torch composes it: log_softmax then nll_loss, label smoothing, and
//! class-probability targets, from differentiable pieces (so the graph has torch's nodes).

use crate::ops::formulas as fm;
use crate::dtype::Scalar;
use crate::error::{fmt_shape, Error, Result};
use crate::ops::binary::{self, BinaryOp};
use crate::ops::reduce;
use crate::ops::{views, Arg};
use crate::tensor::Tensor;
use super::{nll_loss, num, Reduction};

/// `cross_entropy` as torch composes it: class-index targets go through log_softmax and
/// nll_loss (plus the smoothing term when `label_smoothing > 0`); a target shaped like the
/// input holds class probabilities.
pub fn cross_entropy(x: &Tensor, target: &Tensor, weight: Option<&Tensor>, r: Reduction, ignore_index: i64, label_smoothing: f64) -> Result<Tensor> {
    let class_dim: i64 = if x.ndim() == 1 { 0 } else { 1 };
    if x.shape() == target.shape() {
        if !target.dtype().is_floating() {
            return Err(Error::Runtime(format!("Expected floating point type for target with class probabilities, got {}", target.dtype().scalar_type_name())));
        }
        if ignore_index >= 0 {
            return Err(Error::Runtime("ignore_index is not supported for floating point target".into()));
        }
        check_smoothing(label_smoothing)?;
        let n_classes = class_count(x, class_dim)?;
        return cross_entropy_probs(x, target, weight, r, label_smoothing, class_dim, n_classes);
    }
    let n_classes = class_count(x, class_dim)?;
    let input = reduce::softmax(x, class_dim, Some(x.dtype()), true)?;
    if label_smoothing <= 0.0 {
        return nll_loss(&input, target, weight, r, ignore_index);
    }
    check_smoothing(label_smoothing)?;
    let nll = nll_loss(&input, target, weight, r, ignore_index)?;
    let ignore = fm::cmp(BinaryOp::Eq, target, &Arg::Scalar(Scalar::Int(ignore_index)))?;
    let weighted = match weight {
        Some(w) => fm::mul(&input, &class_view(w, input.ndim(), class_dim)?)?,
        None => input.clone(),
    };
    let smooth = fm::neg(&reduce::sum(&weighted, Some(&[class_dim]), false, None)?)?;
    let smooth = binary::masked_fill(&smooth, &ignore, &num(0.0), false)?;
    let ret = match r {
        Reduction::None => smooth,
        Reduction::Sum => reduce::sum(&smooth, None, false, None)?,
        Reduction::Mean => {
            let kept = fm::cmp(BinaryOp::Ne, target, &Arg::Scalar(Scalar::Int(ignore_index)))?;
            let denom = match weight {
                Some(w) => {
                    let picked = crate::ops::mask::masked_select_raw(target, &kept)?;
                    reduce::sum_raw(&crate::ops::gather::index_select_raw(w, 0, &picked)?, None, false, None)?
                }
                None => crate::ops::copy::to_dtype_raw(&reduce::sum_raw(&kept, None, false, None)?, x.dtype())?,
            };
            fm::div(&reduce::sum(&smooth, None, false, None)?, &denom)?
        }
    };
    let a = fm::mul_c(&nll, 1.0 - label_smoothing)?;
    let b = fm::mul_c(&ret, label_smoothing / n_classes as f64)?;
    fm::add(&a, &b)
}

/// The size of the class dim (torch's dim error for a 0-d input).
fn class_count(x: &Tensor, class_dim: i64) -> Result<usize> {
    let d = crate::shape::wrap_dim(class_dim, x.ndim())?;
    Ok(x.shape().get(d).copied().unwrap_or(1))
}

fn check_smoothing(ls: f64) -> Result<()> {
    if !(0.0..=1.0).contains(&ls) {
        return Err(Error::Runtime(format!("label_smoothing must be between 0.0 and 1.0. Got: {}", crate::error::fmt_g(ls))));
    }
    Ok(())
}

/// A per-class vector shaped to broadcast along `class_dim` of an `ndim` input.
fn class_view(w: &Tensor, ndim: usize, class_dim: i64) -> Result<Tensor> {
    let mut shape = vec![1i64; ndim];
    shape[class_dim as usize] = w.numel() as i64;
    views::view(w, &shape)
}

fn cross_entropy_probs(x: &Tensor, target: &Tensor, weight: Option<&Tensor>, r: Reduction, ls: f64, class_dim: i64, n_classes: usize) -> Result<Tensor> {
    if let Some(w) = weight {
        if w.ndim() != 1 || w.numel() != n_classes {
            return Err(Error::Runtime(format!(
                "cross_entropy: weight tensor should be defined either for all {} classes or no classes but got weight tensor of shape: {}",
                n_classes,
                fmt_shape(w.shape())
            )));
        }
    }
    let input = reduce::softmax(x, class_dim, Some(x.dtype()), true)?;
    let target = if ls > 0.0 { fm::add_s(&fm::mul_c(target, 1.0 - ls)?, ls / n_classes as f64)? } else { target.clone() };
    let mut prod = fm::mul(&input, &target)?;
    if let Some(w) = weight {
        prod = fm::mul(&prod, &class_view(w, input.ndim(), class_dim)?)?;
    }
    match r {
        Reduction::None => fm::neg(&reduce::sum(&prod, Some(&[class_dim]), false, None)?),
        Reduction::Sum => fm::neg(&reduce::sum(&prod, None, false, None)?),
        Reduction::Mean => {
            let total = reduce::sum(&prod, None, false, None)?;
            if input.numel() == 0 {
                // torch: -(...).sum().fill_(NAN); a factor of NaN stands in for the fill.
                return fm::neg(&fm::mul_c(&total, f64::NAN)?);
            }
            fm::div_c(&fm::neg(&total)?, (input.numel() / n_classes) as f64)
        }
    }
}
