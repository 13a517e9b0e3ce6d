//! Scans along a dim: `cumsum`, `cumprod` (each with `dtype=` and an in-place `_` variant) and
//! `logcumsumexp`, with CumsumBackward0, CumprodBackward0 and LogcumsumexpBackward0.
//!
//! dtype rules (torch's `meta_func_cum_ops`): integers and bool scan to int64 unless `dtype=`
//! says otherwise; the input is cast to the result dtype first. In place, the result dtype is
//! the tensor's own and a different `dtype=` is refused. logcumsumexp is floating only.
//! The element work crosses the device seam as one `Backend::scan` call (in `run`); the CPU's
//! loops are `kernels::scan` (`cpu_kernel` below), the GPU's `scan.cu` beside this file.

use crate::ops::formulas as fm;
use crate::autograd::Recorder;
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::kernels::scan::{scan_rows, scan_rows_f32_acc, Scan};
use crate::ops::binary::BinaryOp;
use crate::ops::copy::{cast_input, contiguous_copy, copy_inplace_raw, to_dtype};
use crate::ops::lanes::{from_rows, read, rows_of, write};
use crate::ops::reduce::{all, prod, sum};
use crate::ops::shape_ops::flip;
use crate::ops::unary::UnaryOp;
use crate::ops::{join, views};
use crate::shape::wrap_dim;
use crate::tensor::Tensor;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanOp {
    Cumsum,
    Cumprod,
    Logcumsumexp,
}

impl ScanOp {
    /// torch's op name (for the NotImplementedError of a device without the kernel).
    pub fn name(self) -> &'static str {
        match self {
            ScanOp::Cumsum => "cumsum",
            ScanOp::Cumprod => "cumprod",
            ScanOp::Logcumsumexp => "logcumsumexp",
        }
    }
    fn scan(self) -> Scan {
        match self {
            ScanOp::Cumsum => Scan::Sum,
            ScanOp::Cumprod => Scan::Prod,
            ScanOp::Logcumsumexp => Scan::LogSumExp,
        }
    }
    /// The name torch's CPU kernel dispatches under (in its "not implemented" errors).
    fn kernel(self) -> &'static str {
        match self {
            ScanOp::Cumsum => "cumsum_out_cpu",
            ScanOp::Cumprod => "cumprod_out_cpu",
            ScanOp::Logcumsumexp => "logcumsumexp_out_cpu",
        }
    }
    fn node(self) -> &'static str {
        match self {
            ScanOp::Cumsum => "CumsumBackward0",
            ScanOp::Cumprod => "CumprodBackward0",
            ScanOp::Logcumsumexp => "LogcumsumexpBackward0",
        }
    }
    fn name_(self) -> &'static str {
        match self {
            ScanOp::Cumsum => "cumsum_",
            _ => "cumprod_",
        }
    }
}

fn not_implemented(op: ScanOp, dtype: DType) -> Error {
    Error::NotImplemented(format!("\"{}\" not implemented for '{}'", op.kernel(), dtype.scalar_type_name()))
}

/// The dtype a cumsum/cumprod of `x` returns.
fn result_dtype(x: &Tensor, dtype: Option<DType>) -> DType {
    dtype.unwrap_or(if x.dtype().is_integral(true) { DType::Int64 } else { x.dtype() })
}

/// The dtype a scan of `dtype` accumulates in: torch's CPU `acc_type` (double for float32 and
/// float64, float for the half types, int64 for the integers), handed to `Backend::scan`.
pub fn acc_dtype(dtype: DType) -> DType {
    match dtype {
        DType::Float16 | DType::BFloat16 => DType::Float32,
        d if d.is_floating() => DType::Float64,
        _ => DType::Int64,
    }
}

/// The CPU backend's `scan`: `kernels::scan` on the rows (`src` and `dst` contiguous, of one
/// wide dtype; `acc` as `Backend::scan` says).
pub fn cpu_kernel(op: ScanOp, dst: &Tensor, src: &Tensor, acc: DType) -> Result<()> {
    let n = src.shape().last().copied().unwrap_or(1);
    if src.dtype() == DType::Float32 && acc == DType::Float32 {
        // SAFETY: `src` is contiguous and only read here; `dst` is fresh, contiguous, of the
        // same length, and nobody else sees it yet.
        unsafe { scan_rows_f32_acc(op.scan(), read::<f32>(src), write::<f32>(dst), n) };
        return Ok(());
    }
    crate::dispatch!(src.dtype(), T => {
        // SAFETY: as above.
        unsafe { scan_rows::<T>(op.scan(), read::<T>(src), write::<T>(dst), n) }
    });
    Ok(())
}

/// Scans `x` (already of the result dtype) along wrapped `dim` into a fresh row-major tensor.
fn run(op: ScanOp, x: &Tensor, dim: usize) -> Result<Tensor> {
    if x.ndim() == 0 {
        // one element: its own running sum / product / logsumexp (torch fills it, no kernel)
        return contiguous_copy(x, x.dtype());
    }
    if x.dtype() == DType::Bool || (op == ScanOp::Logcumsumexp && !x.dtype().is_floating()) {
        return Err(not_implemented(op, x.dtype()));
    }
    let rows = rows_of(x, dim)?;
    let out = Tensor::empty_on(rows.shape(), x.dtype(), x.device())?;
    crate::device::backend_for(&[&rows])?.scan(op, &out, &rows, acc_dtype(x.dtype()))?;
    from_rows(&out, x.ndim(), dim)
}

/// `cumsum(dim, dtype=)` / `cumprod(dim, dtype=)` without autograd.
pub fn cum_raw(op: ScanOp, x: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    let d = wrap_dim(dim, x.ndim())?;
    let out_dtype = result_dtype(x, dtype);
    if x.numel() == 0 {
        return Tensor::zeros_on(x.shape(), out_dtype, x.device());
    }
    run(op, &cast_input(x, out_dtype)?, d)
}

/// `logcumsumexp(dim)` without autograd: floating dtypes only.
pub fn logcumsumexp_raw(x: &Tensor, dim: i64) -> Result<Tensor> {
    let d = wrap_dim(dim, x.ndim())?;
    if !x.dtype().is_floating() {
        return Err(not_implemented(ScanOp::Logcumsumexp, x.dtype()));
    }
    if x.numel() == 0 {
        return Tensor::zeros_on(x.shape(), x.dtype(), x.device());
    }
    run(ScanOp::Logcumsumexp, x, d)
}

/// `x.cumsum_(dim, dtype=)` / `cumprod_` without autograd: the result keeps x's dtype, so a
/// `dtype` other than x's is refused; the values go in through the write path.
pub fn cum_inplace_raw(op: ScanOp, x: &Tensor, dim: i64, dtype: Option<DType>) -> Result<()> {
    let d = wrap_dim(dim, x.ndim())?;
    if let Some(want) = dtype.filter(|&t| t != x.dtype()) {
        return Err(Error::Runtime(format!(
            "Bad in-place call: input tensor dtype {} and output tensor dtype {} should match",
            x.dtype().type_meta_name(),
            want.type_meta_name()
        )));
    }
    crate::ops::write::check_no_internal_overlap(x)?;
    let result = if x.numel() == 0 { Tensor::zeros_on(x.shape(), x.dtype(), x.device())? } else { run(op, x, d)? };
    copy_inplace_raw(x, &result)
}

// ----- backward formulas (torch's FunctionsManual.cpp) -----

/// `g` summed from each position to the end of its dim: `g.flip(dim).cumsum(dim).flip(dim)`.
fn reversed_cumsum(g: &Tensor, dim: usize) -> Result<Tensor> {
    let d = [dim as i64];
    flip(&cum(ScanOp::Cumsum, &flip(g, &d)?, dim as i64, None)?, &d)
}

/// torch's cumsum_backward.
fn cumsum_backward(g: &Tensor, dim: usize) -> Result<Tensor> {
    if g.numel() <= 1 || g.shape()[dim] == 1 {
        return Ok(g.clone());
    }
    reversed_cumsum(g, dim)
}

/// torch's cumprod_backward. Without zeros in `x`: `reversed_cumsum(result * g) / x`. With
/// zeros, torch (and so this) takes one of two forms: under create_graph a differentiable one,
/// built from the products that omit x[k], `sum_{j >= k} g[j] * prod_{i <= j, i != k} x[i]`;
/// otherwise `cumprod_backward_masked`, which rounds differently (it divides by x before the
/// first zero), so both are kept to give torch's numbers.
fn cumprod_backward(g: &Tensor, x: &Tensor, dim: usize, result: &Tensor) -> Result<Tensor> {
    if x.numel() <= 1 || x.shape()[dim] == 1 {
        return Ok(g.clone());
    }
    let zero = fm::cmp_s(BinaryOp::Eq, x, 0.0)?;
    if !all(&zero, None, false, false)?.item()?.to_bool() {
        return fm::div(&reversed_cumsum(&fm::mul(result, g)?, dim)?, x);
    }
    if !crate::autograd::mode::is_grad_enabled() {
        return cumprod_backward_masked(g, x, dim, result, &zero);
    }
    let (n, d) = (x.shape()[dim] as i64, dim as i64);
    let mut ones_shape: Vec<i64> = x.shape().iter().map(|&s| s as i64).collect();
    ones_shape[dim] = 1;
    let ones = views::expand_raw(&Tensor::full_on(&[1], Scalar::Float(1.0), g.dtype(), g.device())?, &ones_shape)?;
    let mut slices = Vec::with_capacity(n as usize);
    for k in 0..n {
        let omitted = if k == 0 {
            let from_k1 = cum(ScanOp::Cumprod, &views::narrow(x, d, 1, n - 1)?, d, None)?;
            join::cat(&[ones.clone(), from_k1], d)?
        } else {
            let until_k = prod(&views::narrow(x, d, 0, k)?, Some(d), true, None)?;
            if k == n - 1 {
                until_k
            } else {
                let from_k1 = cum(ScanOp::Cumprod, &views::narrow(x, d, k + 1, n - k - 1)?, d, None)?;
                let target: Vec<i64> = from_k1.shape().iter().map(|&s| s as i64).collect();
                let rest = fm::mul(&views::expand(&until_k, &target)?, &from_k1)?;
                join::cat(&[until_k, rest], d)?
            }
        };
        let gk = views::narrow(g, d, k, n - k)?;
        slices.push(sum(&fm::mul(&gk, &omitted)?, Some(&[d]), false, None)?);
    }
    join::stack(&slices, d)
}

/// torch's first-order cumprod gradient with zeros, per slice along `dim`: before the first
/// zero z1, `reversed_cumsum(result * g) / x` over that stretch; at z1, the product of the
/// elements before it times `sum_{z1 <= j < z2} g[j] * prod_{z1 < i <= j} x[i]` (z2 the second
/// zero); after z1, zero.
fn cumprod_backward_masked(g: &Tensor, x: &Tensor, dim: usize, result: &Tensor, zero: &Tensor) -> Result<Tensor> {
    use crate::ops::binary::{binary_raw, where_raw};
    use crate::ops::Arg;
    let d = dim as i64;
    let (ta, num) = (|t: &Tensor| Arg::Tensor(t.clone()), |v: f64| Arg::Scalar(Scalar::Float(v)));
    let int = |v: i64| Arg::Scalar(Scalar::Int(v));
    let zeros_seen = cum_raw(ScanOp::Cumsum, zero, d, None)?;
    let before = binary_raw(BinaryOp::Eq, &ta(&zeros_seen), &int(0), None)?;
    let w = where_raw(&before, &ta(&binary_raw(BinaryOp::Mul, &ta(result), &ta(g), None)?), &num(0.0))?;
    let rev = crate::ops::shape_ops::flip_raw(&cum_raw(ScanOp::Cumsum, &crate::ops::shape_ops::flip_raw(&w, &[d])?, d, None)?, &[d])?;
    let head = where_raw(&before, &ta(&binary_raw(BinaryOp::Div, &ta(&rev), &ta(x), None)?), &num(0.0))?;
    // the first zero of each slice: where the count of zeros seen turns 1
    let span = binary_raw(BinaryOp::Eq, &ta(&zeros_seen), &int(1), None)?;
    let (_, first) = crate::ops::reduce::max_dim_raw(&span, d, true, true)?;
    let positions = crate::ops::copy::to_device_raw(&positions_along(x.shape(), dim)?, x.device())?;
    let first_zero = binary_raw(
        BinaryOp::LogicalAnd,
        &ta(&binary_raw(BinaryOp::Eq, &ta(&positions), &ta(&first), None)?),
        &ta(&span),
        None,
    )?;
    let after = binary_raw(BinaryOp::LogicalAnd, &ta(&span), &ta(&crate::ops::unary::unary_raw(UnaryOp::LogicalNot, &first_zero)?), None)?;
    let prods = cum_raw(ScanOp::Cumprod, &where_raw(&after, &ta(x), &num(1.0))?, d, None)?;
    let g_span = where_raw(&span, &ta(g), &num(0.0))?;
    let summed = crate::ops::reduce::sum_raw(&binary_raw(BinaryOp::Mul, &ta(&prods), &ta(&g_span), None)?, Some(&[d]), true, None)?;
    let prev = binary_raw(BinaryOp::Maximum, &ta(&binary_raw(BinaryOp::Sub, &ta(&first), &int(1), None)?), &int(0), None)?;
    let before_first = crate::ops::gather::gather_raw(result, d, &prev)?;
    let no_before = binary_raw(BinaryOp::Eq, &ta(&first), &int(0), None)?;
    let factor = where_raw(&no_before, &num(1.0), &ta(&before_first))?;
    let at_zero = binary_raw(BinaryOp::Mul, &ta(&summed), &ta(&factor), None)?;
    where_raw(&first_zero, &ta(&at_zero), &ta(&head))
}

/// An int64 tensor shaped `shape` holding each element's index along `dim` (0 for a 0-d shape).
pub(crate) fn positions_along(shape: &[usize], dim: usize) -> Result<Tensor> {
    if shape.is_empty() {
        return Tensor::from_fn(&[], |_| 0i64);
    }
    let inner: usize = shape[dim + 1..].iter().product();
    let n = shape[dim];
    Tensor::from_fn(shape, |i| ((i / inner.max(1)) % n.max(1)) as i64)
}

/// torch's logcumsumexp_backward: the positive and negative parts of `g` go through a reversed
/// logcumsumexp in log space (large values do not overflow).
fn logcumsumexp_backward(g: &Tensor, x: &Tensor, result: &Tensor, dim: usize) -> Result<Tensor> {
    if g.ndim() == 0 || g.numel() == 0 {
        return Ok(g.clone());
    }
    let lowest = if g.dtype() == DType::Float32 { f32::MIN as f64 } else { f64::MIN };
    let low = Tensor::scalar(Scalar::Float(lowest), g.dtype())?;
    let log_abs = fm::un(UnaryOp::Log, &fm::un(UnaryOp::Abs, g)?)?;
    let pos = fm::where_t(&fm::cmp_s(BinaryOp::Gt, g, 0.0)?, &log_abs, &low)?;
    let neg = fm::where_t(&fm::cmp_s(BinaryOp::Lt, g, 0.0)?, &log_abs, &low)?;
    let d = [dim as i64];
    let reverse_lcse = |t: &Tensor| -> Result<Tensor> { flip(&logcumsumexp(&flip(t, &d)?, dim as i64)?, &d) };
    let part = |logs: &Tensor| -> Result<Tensor> { fm::un(UnaryOp::Exp, &fm::add(&reverse_lcse(&fm::sub(logs, result)?)?, x)?) };
    fm::sub(&part(&pos)?, &part(&neg)?)
}

/// The gradient of a scan of a cast input goes back in the input's dtype.
fn to_input_dtype(g: &Tensor, dtype: DType) -> Result<Tensor> {
    if g.dtype() == dtype { Ok(g.clone()) } else { to_dtype(g, dtype) }
}

fn formula(op: ScanOp, dim: usize, in_dtype: DType) -> crate::autograd::Formula {
    Box::new(move |ctx| {
        let g = to_input_dtype(ctx.grad(), in_dtype)?;
        Ok(vec![Some(match op {
            ScanOp::Cumsum => cumsum_backward(&g, dim)?,
            ScanOp::Cumprod => cumprod_backward(&g, ctx.saved(0), dim, ctx.saved(1))?,
            ScanOp::Logcumsumexp => logcumsumexp_backward(&g, ctx.saved(0), ctx.saved(1), dim)?,
        })])
    })
}

// ----- differentiable ops -----

/// Differentiable `cumsum` / `cumprod` (CumsumBackward0 saves nothing; CumprodBackward0 saves
/// self and result).
pub fn cum(op: ScanOp, x: &Tensor, dim: i64, dtype: Option<DType>) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    let out = cum_raw(op, x, dim, dtype)?;
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok(out) };
    rec.value("dim", dim);
    if op == ScanOp::Cumprod {
        rec.save("self", x)?;
        rec.save_output("result", &out, 0);
    }
    let wd = wrap_dim(dim, x.ndim())?;
    rec.finish(op.node(), &[&out], formula(op, wd, x.dtype()))?;
    Ok(out)
}

/// Differentiable `x.cumsum_(dim, dtype=)` / `cumprod_`: cumprod saves a copy of the old x
/// (taken before the write, as torch's `self.clone()`) and x itself as the result (R14).
pub fn cum_(op: ScanOp, x: &Tensor, dim: i64, dtype: Option<DType>) -> Result<()> {
    let _blame = crate::autograd::blame::op(op.name_());
    let rec = Recorder::inplace(x, &[])?;
    let old = match (&rec, op) {
        (Some(_), ScanOp::Cumprod) => Some(crate::ops::copy::clone(x)?),
        _ => None,
    };
    cum_inplace_raw(op, x, dim, dtype)?;
    let Some(mut rec) = rec else { return Ok(()) };
    rec.value("dim", dim);
    if let Some(old) = &old {
        rec.save("self", old)?;
        rec.save_output("result", x, 0);
    }
    let wd = wrap_dim(dim, x.ndim())?;
    rec.finish_inplace(op.node(), x, formula(op, wd, x.dtype()))
}

/// Differentiable `logcumsumexp(dim)` (LogcumsumexpBackward0: saves self and result).
pub fn logcumsumexp(x: &Tensor, dim: i64) -> Result<Tensor> {
    crate::autograd::precheck(&[Some(x)])?;
    let out = logcumsumexp_raw(x, dim)?;
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok(out) };
    rec.value("dim", dim);
    rec.save("self", x)?;
    rec.save_output("result", &out, 0);
    let wd = wrap_dim(dim, x.ndim())?;
    rec.finish(ScanOp::Logcumsumexp.node(), &[&out], formula(ScanOp::Logcumsumexp, wd, x.dtype()))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::reduce::testing::*;

    #[test]
    fn dtypes_and_values() {
        let i = Tensor::from_vec(vec![1i32, 2, 3, 4], &[2, 2]).unwrap();
        let s = cum_raw(ScanOp::Cumsum, &i, 0, None).unwrap();
        assert_eq!((s.dtype(), s.to_vec::<i64>().unwrap()), (DType::Int64, vec![1, 2, 4, 6]));
        let p = cum_raw(ScanOp::Cumprod, &i, -1, Some(DType::Float64)).unwrap();
        assert_eq!(p.to_vec::<f64>().unwrap(), vec![1., 2., 3., 12.]);
        let t = views::t_raw(&Tensor::from_vec(vec![1f32, 2., 3., 4., 5., 6.], &[2, 3]).unwrap()).unwrap();
        assert_eq!(cum_raw(ScanOp::Cumsum, &t, 0, None).unwrap().to_vec::<f32>().unwrap(), vec![1., 4., 3., 9., 6., 15.]);
        let b = Tensor::from_vec(vec![true, false], &[2]).unwrap();
        assert!(matches!(cum_inplace_raw(ScanOp::Cumsum, &b, 0, None), Err(Error::NotImplemented(_))));
        assert!(matches!(logcumsumexp_raw(&i, 0), Err(Error::NotImplemented(_))));
        let e = cum_inplace_raw(ScanOp::Cumsum, &t.fresh_handle(), 0, Some(DType::Float64)).unwrap_err();
        assert_eq!(e.to_string(), "Bad in-place call: input tensor dtype float and output tensor dtype double should match");
    }

    #[test]
    fn scans_pass_gradcheck() {
        let x = rand_leaf(&[3, 4], 5);
        for d in [0, 1, -1] {
            gradcheck("cumsum", &|t| cum(ScanOp::Cumsum, &t[0], d, None), &[x.clone()], true);
            gradcheck("cumprod", &|t| cum(ScanOp::Cumprod, &t[0], d, None), &[x.clone()], true);
            gradcheck("logcumsumexp", &|t| logcumsumexp(&t[0], d), &[x.clone()], true);
        }
        let z = leaf(vec![1.5, 0.0, -2.0, 0.5, 3.0, 0.0, 0.0, 1.0], &[2, 4]);
        gradcheck("cumprod zeros", &|t| cum(ScanOp::Cumprod, &t[0], 1, None), &[z], true);
        assert_eq!(node_name(&cum(ScanOp::Cumsum, &x, 0, None).unwrap()), "CumsumBackward0");
    }
}
