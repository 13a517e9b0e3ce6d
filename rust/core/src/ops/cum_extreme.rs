//! `cummax` / `cummin` along a dim: the running maximum (minimum) and the index it came from.
//! torch's rule for each step is "the new element wins if it is NaN, or if the running value is
//! not NaN and the element is >= (<=) it", so ties and repeated NaNs take the later index, and a
//! NaN, once seen, stays. That rule combines two stretches (earlier, later) associatively, so the
//! scan is built from device ops in log2(n) doubling steps (Hillis-Steele): after step k each
//! position holds the result over the 2^k positions ending at it. O(n log n) elementwise work per
//! row, on any device, the same answer whatever the order of the work.
//!
//! CummaxBackward0 / CumminBackward0 save self, dim and the indices; the gradient is the incoming
//! one scatter-added into zeros at the indices (torch's `cummaxmin_backward`).

use crate::autograd::mode::GradModeGuard;
use crate::autograd::Recorder;
use crate::error::Result;
use crate::ops::binary::{binary_raw, where_raw, BinaryOp};
use crate::ops::copy::contiguous_copy;
use crate::ops::formulas as fm;
use crate::ops::gather::scatter_add;
use crate::ops::join::cat_raw;
use crate::ops::scan::positions_along;
use crate::ops::unary::{unary_raw, UnaryOp};
use crate::ops::views::narrow_raw;
use crate::ops::Arg;
use crate::shape::wrap_dim;
use crate::tensor::Tensor;

/// Whether the later stretch's value replaces the earlier one's (torch's step rule).
fn later_wins(earlier: &Tensor, later: &Tensor, is_max: bool) -> Result<Tensor> {
    let t = |x: &Tensor| Arg::Tensor(x.clone());
    let order = binary_raw(if is_max { BinaryOp::Ge } else { BinaryOp::Le }, &t(later), &t(earlier), None)?;
    if !earlier.dtype().is_floating() {
        return Ok(order);
    }
    let is_nan = |v: &Tensor| binary_raw(BinaryOp::Ne, &t(v), &t(v), None); // NaN is the one value != itself
    let (nan_later, nan_earlier) = (is_nan(later)?, is_nan(earlier)?);
    let settled = binary_raw(BinaryOp::LogicalAnd, &t(&unary_raw(UnaryOp::LogicalNot, &nan_earlier)?), &t(&order), None)?;
    binary_raw(BinaryOp::LogicalOr, &t(&nan_later), &t(&settled), None)
}

/// (values, indices) of the running extreme of `x` along wrapped `d`, without autograd.
pub fn cum_extreme_raw(x: &Tensor, dim: i64, is_max: bool) -> Result<(Tensor, Tensor)> {
    let d = wrap_dim(dim, x.ndim())?;
    let mut values = contiguous_copy(x, x.dtype())?;
    let mut indices = crate::ops::copy::to_device_raw(&positions_along(x.shape(), d)?, x.device())?;
    let n = if x.ndim() == 0 { 1 } else { x.shape()[d] as i64 };
    if x.numel() == 0 {
        return Ok((values, indices));
    }
    let (di, mut span) = (d as i64, 1i64);
    while span < n {
        let keep = n - span;
        let (ev, ei) = (narrow_raw(&values, di, 0, keep)?, narrow_raw(&indices, di, 0, keep)?);
        let (lv, li) = (narrow_raw(&values, di, span, keep)?, narrow_raw(&indices, di, span, keep)?);
        let wins = later_wins(&ev, &lv, is_max)?;
        let merged_v = where_raw(&wins, &Arg::Tensor(lv), &Arg::Tensor(ev))?;
        let merged_i = where_raw(&wins, &Arg::Tensor(li), &Arg::Tensor(ei))?;
        values = cat_raw(&[narrow_raw(&values, di, 0, span)?, merged_v], di)?;
        indices = cat_raw(&[narrow_raw(&indices, di, 0, span)?, merged_i], di)?;
        span *= 2;
    }
    Ok((values, indices))
}

/// Differentiable `cummax(dim)` / `cummin(dim)` (CummaxBackward0 / CumminBackward0).
pub fn cum_extreme(x: &Tensor, dim: i64, is_max: bool) -> Result<(Tensor, Tensor)> {
    crate::autograd::precheck(&[Some(x)])?;
    let (values, indices) = {
        let _off = GradModeGuard::new(false);
        cum_extreme_raw(x, dim, is_max)?
    };
    if !x.dtype().is_floating() {
        return Ok((values, indices));
    }
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok((values, indices)) };
    rec.value("dim", dim);
    rec.save("indices", &indices)?;
    rec.save("self", x)?;
    let (shape, dtype) = (x.shape().to_vec(), x.dtype());
    let name = if is_max { "CummaxBackward0" } else { "CumminBackward0" };
    let wd = wrap_dim(dim, x.ndim())? as i64;
    rec.finish(name, &[&values], Box::new(move |ctx| {
        let g = ctx.grad();
        if shape.iter().product::<usize>() == 0 {
            return Ok(vec![Some(fm::zeros(&shape, dtype, g.device())?)]);
        }
        let zeros = fm::zeros(&shape, g.dtype(), g.device())?;
        Ok(vec![Some(scatter_add(&zeros, wd, ctx.saved(0), g, false)?)])
    }))?;
    Ok((values, indices))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    #[test]
    fn later_ties_and_nans_win() {
        let x = Tensor::from_vec(vec![1f32, 3., 3., f32::NAN, 2., f32::NAN, 5.], &[7]).unwrap();
        let (v, i) = cum_extreme_raw(&x, 0, true).unwrap();
        assert_eq!(i.to_vec::<i64>().unwrap(), vec![0, 1, 2, 3, 3, 5, 5]);
        assert!(v.to_vec::<f32>().unwrap()[3..].iter().all(|v| v.is_nan()));
        let (_, i) = cum_extreme_raw(&Tensor::from_vec(vec![2i64, 2, 1, 3], &[4]).unwrap(), 0, false).unwrap();
        assert_eq!(i.to_vec::<i64>().unwrap(), vec![0, 1, 2, 2]);
    }

    #[test]
    fn cummax_passes_gradcheck() {
        let x = rand_leaf(&[3, 5], 9);
        for d in [0, 1] {
            gradcheck("cummax", &|t| Ok(cum_extreme(&t[0], d, true)?.0), &[x.clone()], true);
            gradcheck("cummin", &|t| Ok(cum_extreme(&t[0], d, false)?.0), &[x.clone()], true);
        }
    }
}
