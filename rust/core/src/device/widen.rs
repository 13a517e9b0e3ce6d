//! Compute for the narrow dtypes (float16, bfloat16, uint8, int8, int16), for every device at once.
//!
//! Every backend is reached through `Widen`, which passes memory work (allocate, copy, fill,
//! transfer: native for every dtype) straight to the device and, when an operand of a compute
//! method has a narrow dtype, runs that method on copies in the operands' `opmath` dtype (float32
//! for half types, int64 for small integers) and rounds the result once into the real output.
//! That is how torch computes half on the CPU (`opmath_t`, float accumulation in reductions), and
//! for the small integers it is exact: their arithmetic is modular, and the narrowing store wraps.
//!
//! The result lands in `dst` through the device's own cast-copy, inside the op's single write, so
//! an in-place op on an int8 tensor still bumps its version once. Outputs that are already wide
//! (`x.sum(dtype=float32)`, comparison masks, argmax indices) are written directly.

use super::{AvgWindows, Backend, BinaryMode, Bound, ConvGeometry, Device, FloatMap, MaxGeometry, RandomDist, ScatterOp, Walk};
use crate::dtype::{DType, Scalar};
use crate::error::Result;
use crate::kernels::unary::MathOp;
use crate::ops::binary::BinaryOp;
use crate::ops::reduce::Reduction;
use crate::ops::unary::UnaryOp;
use crate::storage::Storage;
use crate::tensor::Tensor;
use std::sync::Arc;

pub(super) struct Widen(pub(super) &'static dyn Backend);

fn any_narrow(ts: &[&Tensor]) -> bool {
    ts.iter().any(|t| t.dtype().is_narrow())
}

/// `t` in its opmath dtype: itself when already wide, else a contiguous converted copy.
fn wide(t: &Tensor) -> Result<Tensor> {
    crate::ops::copy::cast_input(t, t.dtype().opmath())
}

/// Where the wide computation writes for output `dst`: `dst` itself when wide, else a fresh
/// contiguous tensor of its opmath dtype (stored back by `store`).
fn out(dst: &Tensor) -> Result<Tensor> {
    if dst.dtype().is_narrow() {
        Tensor::empty_on(dst.shape(), dst.dtype().opmath(), dst.device())
    } else {
        Ok(dst.clone())
    }
}

/// Rounds (or wraps) the wide result `tmp` into `dst` once, when they differ.
fn store(dst: &Tensor, tmp: &Tensor) -> Result<()> {
    if dst.dtype().is_narrow() {
        crate::ops::copy::copy_kernel(dst, tmp)?;
    }
    Ok(())
}

impl Backend for Widen {
    fn device(&self) -> Device {
        self.0.device()
    }

    fn allocate(&self, nbytes: usize, dtype: DType, zeroed: bool) -> Result<Arc<Storage>> {
        // every device stores the narrow dtypes natively (on CUDA: copy.cu's casts and fills,
        // gather.cu and index.cu instantiate them too)
        self.0.allocate(nbytes, dtype, zeroed)
    }

    fn copy(&self, dst: &Tensor, src: &Tensor, src_strides: &[isize]) -> Result<()> {
        self.0.copy(dst, src, src_strides)
    }

    fn fill(&self, dst: &Tensor, value: Scalar) -> Result<()> {
        self.0.fill(dst, value)
    }

    fn transfer(&self, host: &Tensor, device: &Tensor, to_host: bool) -> Result<()> {
        self.0.transfer(host, device, to_host)
    }

    fn unary(&self, op: UnaryOp, dst: &Tensor, src: &Tensor, in_place: bool) -> Result<()> {
        if !any_narrow(&[dst, src]) {
            return self.0.unary(op, dst, src, in_place);
        }
        let (s, o) = (wide(src)?, out(dst)?);
        self.0.unary(op, &o, &s, false)?;
        store(dst, &o)
    }

    fn binary(&self, op: BinaryOp, dst: &Tensor, a: &Tensor, b: &Tensor, mode: BinaryMode, alpha: Option<f64>) -> Result<()> {
        if !any_narrow(&[dst, a, b]) {
            return self.0.binary(op, dst, a, b, mode, alpha);
        }
        let (wa, wb, o) = (wide(a)?, wide(b)?, out(dst)?);
        self.0.binary(op, &o, &wa, &wb, BinaryMode::Fresh, alpha)?;
        store(dst, &o)
    }

    fn where_(&self, dst: &Tensor, cond: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
        if !any_narrow(&[dst, a, b]) {
            return self.0.where_(dst, cond, a, b);
        }
        let (wa, wb, o) = (wide(a)?, wide(b)?, out(dst)?);
        self.0.where_(&o, cond, &wa, &wb)?;
        store(dst, &o)
    }

    fn masked_fill(&self, dst: &Tensor, mask: &Tensor, value: Scalar) -> Result<()> {
        if !dst.dtype().is_narrow() {
            return self.0.masked_fill(dst, mask, value);
        }
        // the value is rounded into the storage type first, as torch converts it
        let v = Tensor::scalar(value, dst.dtype())?.item()?;
        let w = wide(dst)?;
        self.0.masked_fill(&w, mask, v)?;
        store(dst, &w)
    }

    fn clamp(&self, dst: &Tensor, src: &Tensor, lo: Bound<'_>, hi: Bound<'_>, in_place: bool) -> Result<()> {
        let bound_narrow = |b: &Bound<'_>| matches!(b, Bound::Tensor(t) if t.dtype().is_narrow());
        if !any_narrow(&[dst, src]) && !bound_narrow(&lo) && !bound_narrow(&hi) {
            return self.0.clamp(dst, src, lo, hi, in_place);
        }
        let widen_bound = |b: Bound<'_>| -> Result<Option<Tensor>> {
            match b {
                Bound::Tensor(t) => Ok(Some(wide(t)?)),
                _ => Ok(None),
            }
        };
        let (wl, wh) = (widen_bound(lo)?, widen_bound(hi)?);
        // a number bound is converted to the tensor's type first, as torch's clamp kernel does
        let round = |s: Scalar| -> Result<Scalar> { Tensor::scalar(s, src.dtype())?.item() };
        let settle = |w: &'_ Option<Tensor>, b: Bound<'_>| -> Result<Option<Scalar>> {
            Ok(match (w, b) {
                (None, Bound::Number(s)) => Some(round(s)?),
                _ => None,
            })
        };
        let (nl, nh) = (settle(&wl, lo)?, settle(&wh, hi)?);
        let lo2 = match (&wl, nl, lo) { (Some(t), _, _) => Bound::Tensor(t), (None, Some(s), _) => Bound::Number(s), (None, None, b) => b };
        let hi2 = match (&wh, nh, hi) { (Some(t), _, _) => Bound::Tensor(t), (None, Some(s), _) => Bound::Number(s), (None, None, b) => b };
        let (s, o) = (wide(src)?, out(dst)?);
        self.0.clamp(&o, &s, lo2, hi2, false)?;
        store(dst, &o)
    }

    fn float_map(&self, map: FloatMap, dst: &Tensor, src: &Tensor, in_place: bool) -> Result<()> {
        if !any_narrow(&[dst, src]) {
            return self.0.float_map(map, dst, src, in_place);
        }
        let (s, o) = (wide(src)?, out(dst)?);
        self.0.float_map(map, &o, &s, false)?;
        store(dst, &o)
    }

    fn fused_unary_backward(&self, op: MathOp, dst: &Tensor, g: &Tensor, s: &Tensor) -> Result<bool> {
        if any_narrow(&[dst, g, s]) {
            let (wg, ws, o) = (wide(g)?, wide(s)?, out(dst)?);
            if !self.0.fused_unary_backward(op, &o, &wg, &ws)? {
                return Ok(false);
            }
            store(dst, &o)?;
            return Ok(true);
        }
        self.0.fused_unary_backward(op, dst, g, s)
    }

    fn unary_backward(&self, op: UnaryOp, g: &Tensor, s: &Tensor, out: &dyn Fn() -> Result<Tensor>) -> Result<Option<Tensor>> {
        if any_narrow(&[g, s]) {
            return Ok(None); // the composite formula widens each step itself
        }
        self.0.unary_backward(op, g, s, out)
    }

    fn add_into(&self, dst: &Tensor, src: &Tensor) -> Result<()> {
        if !any_narrow(&[dst, src]) {
            return self.0.add_into(dst, src);
        }
        let (w, s) = (wide(dst)?, wide(src)?);
        self.0.add_into(&w, &s)?;
        store(dst, &w)
    }

    fn reduce(&self, op: Reduction, values: Option<&Tensor>, indices: Option<&Tensor>, src: &Tensor, dims: &[usize]) -> Result<()> {
        if !src.dtype().is_narrow() && !values.is_some_and(|v| v.dtype().is_narrow()) {
            return self.0.reduce(op, values, indices, src, dims);
        }
        let s = wide(src)?;
        let o = values.map(out).transpose()?;
        self.0.reduce(op, o.as_ref(), indices, &s, dims)?;
        match (values, &o) {
            (Some(v), Some(o)) => store(v, o),
            _ => Ok(()),
        }
    }

    fn softmax(&self, dst: &Tensor, src: &Tensor, dim: usize, log: bool) -> Result<()> {
        if !any_narrow(&[dst, src]) {
            return self.0.softmax(dst, src, dim, log);
        }
        let (s, o) = (wide(src)?, out(dst)?);
        self.0.softmax(&o, &s, dim, log)?;
        store(dst, &o)
    }

    fn softmax_backward(&self, grad_input: &Tensor, grad: &Tensor, result: &Tensor, dim: usize, log: bool) -> Result<bool> {
        if !any_narrow(&[grad_input, grad, result]) {
            return self.0.softmax_backward(grad_input, grad, result, dim, log);
        }
        let (g, r, o) = (wide(grad)?, wide(result)?, out(grad_input)?);
        if self.0.softmax_backward(&o, &g, &r, dim, log)? {
            store(grad_input, &o)?;
        } else {
            // no fused kernel (the CPU): the composite formula, still in float32 and rounded
            // once, as torch's half softmax backward computes
            store(grad_input, &softmax_backward_composite(&g, &r, dim, log)?)?;
        }
        Ok(true)
    }

    fn matmul(&self, dst: &Tensor, a: &Tensor, b: &Tensor) -> Result<()> {
        if !any_narrow(&[dst, a, b]) {
            return self.0.matmul(dst, a, b);
        }
        let (wa, wb, o) = (wide(a)?, wide(b)?, out(dst)?);
        self.0.matmul(&o, &wa, &wb)?;
        store(dst, &o)
    }

    fn random_fill(&self, dst: &Tensor, dist: RandomDist) -> Result<()> {
        if !dst.dtype().is_narrow() {
            return self.0.random_fill(dst, dist);
        }
        // drawn in float32 and rounded once into the half tensor
        let o = out(dst)?;
        self.0.random_fill(&o, dist)?;
        store(dst, &o)
    }

    // Data movement (and the per-step arithmetic of index_add and index_put_'s accumulate, which
    // rounds into the storage type as torch's loops do): native for every dtype, straight through.
    fn gather(&self, dst: &Tensor, src: &Tensor, dim: usize, index: &Tensor) -> Result<()> {
        self.0.gather(dst, src, dim, index)
    }

    fn scatter(&self, dst: &Tensor, dim: usize, index: &Tensor, src: &Tensor, op: ScatterOp) -> Result<()> {
        if dst.dtype().is_narrow() && dst.dtype().is_floating() && matches!(op, ScatterOp::Add | ScatterOp::Multiply) {
            // torch's scatter_add / scatter(reduce='multiply') / index_add (alpha 1) on half
            // types accumulate each element in float32 and round it once: so here, on every
            // device (untouched elements round-trip exactly)
            let (w, s) = (wide(dst)?, wide(src)?);
            self.0.scatter(&w, dim, index, &s, op)?;
            return store(dst, &w);
        }
        self.0.scatter(dst, dim, index, src, op)
    }

    fn index_gather(&self, dst: &Tensor, src: &Tensor, walk: &Walk) -> Result<()> {
        self.0.index_gather(dst, src, walk)
    }

    fn index_scatter(&self, dst: &Tensor, values: &Tensor, walk: &Walk, accumulate: bool) -> Result<()> {
        self.0.index_scatter(dst, values, walk, accumulate)
    }

    fn nonzero(&self, src: &Tensor) -> Result<Tensor> {
        self.0.nonzero(src)
    }

    fn masked_select(&self, src: &Tensor, mask: &Tensor) -> Result<Tensor> {
        self.0.masked_select(src, mask)
    }

    // Convolution, pooling and padding take float32/float64 only: the op layer refuses the
    // narrow dtypes before it gets here (docs/divergences.md).
    fn conv2d(&self, out: &Tensor, x: &Tensor, w: &Tensor, bias: Option<&Tensor>, g: &ConvGeometry) -> Result<()> {
        self.0.conv2d(out, x, w, bias, g)
    }

    fn conv2d_input_grad(&self, dx: &Tensor, grad: &Tensor, w: &Tensor, g: &ConvGeometry) -> Result<()> {
        self.0.conv2d_input_grad(dx, grad, w, g)
    }

    fn conv2d_weight_grad(&self, dw: &Tensor, x: &Tensor, grad: &Tensor, g: &ConvGeometry) -> Result<()> {
        self.0.conv2d_weight_grad(dw, x, grad, g)
    }

    fn max_pool2d(&self, out: &Tensor, indices: &Tensor, x: &Tensor, g: &MaxGeometry) -> Result<()> {
        self.0.max_pool2d(out, indices, x, g)
    }

    fn max_pool2d_backward(&self, dx: &Tensor, grad: &Tensor, indices: &Tensor, g: &MaxGeometry) -> Result<()> {
        self.0.max_pool2d_backward(dx, grad, indices, g)
    }

    fn avg_pool2d(&self, out: &Tensor, x: &Tensor, win: &AvgWindows) -> Result<()> {
        self.0.avg_pool2d(out, x, win)
    }

    fn avg_pool2d_backward(&self, dx: &Tensor, grad: &Tensor, win: &AvgWindows) -> Result<()> {
        self.0.avg_pool2d_backward(dx, grad, win)
    }

    fn pad2d(&self, out: &Tensor, x: &Tensor, rows: &[usize], cols: &[usize]) -> Result<()> {
        self.0.pad2d(out, x, rows, cols)
    }

    fn pad2d_backward(&self, dx: &Tensor, grad: &Tensor, rows: &[usize], cols: &[usize]) -> Result<()> {
        self.0.pad2d_backward(dx, grad, rows, cols)
    }

    #[allow(clippy::too_many_arguments)]
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
        let all: Vec<&Tensor> = [Some(x), running_mean, running_var, weight, bias].into_iter().flatten().collect();
        if any_narrow(&all) {
            // the running statistics are updated in place: a widened copy would lose the update
            return Err(crate::error::Error::NotImplemented(format!(
                "\"batch_norm\" not implemented for '{}' in minigrad (cast to float32 first)",
                x.dtype().scalar_type_name()
            )));
        }
        self.0.batch_norm(x, running_mean, running_var, weight, bias, training, momentum, eps)
    }

    fn layer_norm(&self, x: &Tensor, normalized_shape: &[usize], weight: Option<&Tensor>, bias: Option<&Tensor>, eps: f64) -> Result<(Tensor, Tensor, Tensor)> {
        let all: Vec<&Tensor> = [Some(x), weight, bias].into_iter().flatten().collect();
        if !any_narrow(&all) {
            return self.0.layer_norm(x, normalized_shape, weight, bias, eps);
        }
        // computed in float32 (the statistics stay float32, as torch's), the output rounded once
        let (w, b) = (weight.map(wide).transpose()?, bias.map(wide).transpose()?);
        let (o, mean, rstd) = self.0.layer_norm(&wide(x)?, normalized_shape, w.as_ref(), b.as_ref(), eps)?;
        let result = Tensor::empty_on(o.shape(), x.dtype(), x.device())?;
        crate::ops::copy::copy_kernel(&result, &o)?;
        Ok((result, mean, rstd))
    }

    fn optim_step(&self, rule: crate::ops::optim::Rule, slots: &[crate::ops::optim::Slot]) -> Result<()> {
        // Refused, not widened: torch's for-loop step rounds every op to the narrow dtype, so a
        // float32 pass would give other numbers. minigrad's optimizers send float16/bfloat16
        // parameters to their op-by-op step instead.
        if let Some(s) = slots.iter().find(|s| s.param.dtype().is_narrow()) {
            return Err(crate::error::Error::NotImplemented(format!(
                "minigrad: the fused optimizer step does not support '{}' parameters (the optimizers step them op by op)",
                s.param.dtype().scalar_type_name()
            )));
        }
        self.0.optim_step(rule, slots)
    }

    fn batch_norm_backward(&self, g: &Tensor, x: &Tensor, weight: Option<&Tensor>, eps: f64) -> Result<Option<(Tensor, Tensor, Tensor)>> {
        let all: Vec<&Tensor> = [Some(g), Some(x), weight].into_iter().flatten().collect();
        if any_narrow(&all) {
            // narrow batch_norm is refused in the forward; nothing to fuse
            return Ok(None);
        }
        self.0.batch_norm_backward(g, x, weight, eps)
    }

    // Sorting compares values, and every narrow value widens exactly: the rows are sorted as
    // their opmath copies (ties and NaN order unchanged) and the values narrowed back exactly.
    fn sort(&self, op: super::SortOp, values: &Tensor, indices: &Tensor, src: &Tensor) -> Result<()> {
        if !any_narrow(&[values, src]) {
            return self.0.sort(op, values, indices, src);
        }
        let (s, o) = (wide(src)?, out(values)?);
        self.0.sort(op, &o, indices, &s)?;
        store(values, &o)
    }

    // Scans: arithmetic, so widened like the others; `acc` (float32 for the half types, from
    // the op layer) keeps torch's float32 accumulation on the float32 copies, each partial
    // result rounded once into the half output.
    fn scan(&self, op: super::ScanOp, dst: &Tensor, src: &Tensor, acc: DType) -> Result<()> {
        if !any_narrow(&[dst, src]) {
            return self.0.scan(op, dst, src, acc);
        }
        let (s, o) = (wide(src)?, out(dst)?);
        self.0.scan(op, &o, &s, acc)?;
        store(dst, &o)
    }

    // Pooling values: the op layer refuses narrow dtypes before this (as for max_pool2d), so
    // it passes straight through.
    fn max_pool2d_values(&self, out: &Tensor, x: &Tensor, g: &MaxGeometry) -> Result<()> {
        self.0.max_pool2d_values(out, x, g)
    }

    // One-mask reads and writes move data: every device has them for the narrow dtypes too
    // (the accumulating write of a half type adds in float32 and rounds, once per element, as
    // the CPU's index_put_ does), so they pass straight through.
    fn mask_ranks(&self, mask: &Tensor) -> Result<(Tensor, usize)> {
        self.0.mask_ranks(mask)
    }

    fn masked_put(&self, dst: &Tensor, first: usize, ranks: &Tensor, values: &Tensor, accumulate: bool) -> Result<()> {
        self.0.masked_put(dst, first, ranks, values, accumulate)
    }

    fn masked_take(&self, dst: &Tensor, src: &Tensor, first: usize, ranks: &Tensor) -> Result<()> {
        self.0.masked_take(dst, src, first, ranks)
    }

    // the index kernels move narrow elements as they are: pass through, as index_gather
    fn index_gather_table(&self, dst: &Tensor, src: &Tensor, walk: &Walk, table: &super::IndexTable) -> Result<bool> {
        self.0.index_gather_table(dst, src, walk, table)
    }

    fn index_scatter_table(&self, dst: &Tensor, values: &Tensor, walk: &Walk, table: &super::IndexTable, accumulate: bool) -> Result<bool> {
        self.0.index_scatter_table(dst, values, walk, table, accumulate)
    }

    // narrow products take the widened matmul path (the op layer falls back)
    fn matmul_bias(&self, dst: &Tensor, bias: &Tensor, a: &Tensor, b: &Tensor) -> Result<bool> {
        if any_narrow(&[dst, bias, a, b]) {
            return Ok(false);
        }
        self.0.matmul_bias(dst, bias, a, b)
    }
}

/// `r * (g - sum(g * r))` (softmax) or `g - exp(r) * sum(g)` (log_softmax), sums along `dim`,
/// with raw ops (this runs only when no graph of the backward is recorded).
fn softmax_backward_composite(g: &Tensor, r: &Tensor, dim: usize, log: bool) -> Result<Tensor> {
    use crate::ops::binary::binary_raw;
    use crate::ops::Arg;
    let t = |x: &Tensor| Arg::Tensor(x.clone());
    let sum = |x: &Tensor| crate::ops::reduce::sum_raw(x, Some(&[dim as i64]), true, None);
    if log {
        let e = crate::ops::unary::unary_raw(UnaryOp::Exp, r)?;
        let s = sum(g)?;
        let es = binary_raw(BinaryOp::Mul, &t(&e), &t(&s), None)?;
        binary_raw(BinaryOp::Sub, &t(g), &t(&es), None)
    } else {
        let gr = binary_raw(BinaryOp::Mul, &t(g), &t(r), None)?;
        let s = sum(&gr)?;
        let d = binary_raw(BinaryOp::Sub, &t(g), &t(&s), None)?;
        binary_raw(BinaryOp::Mul, &t(r), &t(&d), None)
    }
}
