//! What crosses the device seam for a reduction: the `Reduction` enum (one variant per kernel,
//! carrying its parameters) and the CPU kernel behind `Backend::reduce`, which runs the
//! reducers of the kernels crate (`kernels::reducers`) through the reduction engine.
//!
//! The op files decide dims, dtypes, output shapes and autograd; they hand the element work
//! to `device::backend_for(..)?.reduce(..)` and never ask which device they are on.

use crate::element::Element;
use crate::error::{Error, Result};
use crate::kernels::parallel::SendPtr;
use crate::kernels::reduce::{reduce, Reducer};
use crate::kernels::reducers::{self as rd, norm_kind, AllAny, ArgExtreme, Extreme, SquaredDeviation, SumProd};
use crate::kernels::{Arg, TensorArg};
use crate::tensor::Tensor;
use crate::{dispatch, dispatch_float};
use std::marker::PhantomData;

/// One reduction's element work (`Backend::reduce` documents dtypes and empty inputs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Reduction {
    Sum,
    Prod,
    /// The sum over the number of reduced elements.
    Mean,
    Amax,
    Amin,
    /// The first largest element (or first NaN): its position along the reduced dims (row-major
    /// over them; the op layer reduces one dim, or a flat view) into `indices`, and the element
    /// into `values` when given.
    Argmax,
    Argmin,
    All,
    Any,
    CountNonzero,
    /// `linalg.vector_norm` of order `p`: 2, 1, inf, -inf, 0 (count of non-zeros) or any other p.
    Norm { p: f64 },
    /// Variance with `correction` (divisor `max(0, N - correction)`); its square root when `std`.
    /// Two passes on every device: the mean of each output, then the squared deviations.
    Var { correction: f64, std: bool },
    /// `log(sum(exp(x - s))) + s`, `s` each output's max (0 where that max is infinite).
    LogSumExp,
}

impl Reduction {
    /// torch's op name (as its NotImplementedError names `aten::<op>`).
    pub fn name(self) -> &'static str {
        use Reduction::*;
        match self {
            Sum => "sum",
            Prod => "prod",
            Mean => "mean",
            Amax => "amax",
            Amin => "amin",
            Argmax => "argmax",
            Argmin => "argmin",
            All => "all",
            Any => "any",
            CountNonzero => "count_nonzero",
            Norm { .. } => "linalg_vector_norm",
            Var { std: false, .. } => "var",
            Var { std: true, .. } => "std",
            LogSumExp => "logsumexp",
        }
    }
}

/// Sets the reduced dims `dims` (ascending, distinct) in `mask` (false on entry).
fn mark(mask: &mut [bool], dims: &[usize]) -> Result<()> {
    let ndim = mask.len();
    for &d in dims {
        *mask.get_mut(d).ok_or_else(|| Error::Runtime(format!("reduce: dim {} out of range for {} dims", d, ndim)))? = true;
    }
    Ok(())
}

/// Runs reducer `r` over `x` (whose dtype is `R::In`).
fn run<R: Reducer>(r: R, x: &Tensor, mask: &[bool]) {
    debug_assert_eq!(x.dtype(), R::In::DTYPE);
    // SAFETY: x's layout lies inside its storage and x is alive for the call; every output
    // the reducer writes was allocated by the op layer with the kept dims' element count and
    // is fresh memory, so it cannot overlap x.
    unsafe { reduce(r, x.shape(), Arg::of(x), mask) }
}

fn out_ptr<T: Element>(t: &Tensor) -> *mut T {
    t.data_ptr::<T>()
}

fn output<'a>(t: Option<&'a Tensor>, op: Reduction, what: &str) -> Result<&'a Tensor> {
    t.ok_or_else(|| Error::Runtime(format!("{}: the op layer passed no {} tensor", op.name(), what)))
}

fn not_float(op: Reduction) -> Error {
    Error::Runtime(format!("{}: expected a floating point tensor", op.name()))
}

/// The CPU side of `Backend::reduce`.
pub(crate) fn cpu_kernel(op: Reduction, values: Option<&Tensor>, indices: Option<&Tensor>, x: &Tensor, dims: &[usize]) -> Result<()> {
    use Reduction::*;
    // On the stack for the usual ranks: small reductions are dominated by such overheads.
    let (mut buf, mut heap) = ([false; 16], Vec::new());
    let mask: &mut [bool] = if x.ndim() <= buf.len() {
        &mut buf[..x.ndim()]
    } else {
        heap.resize(x.ndim(), false);
        &mut heap
    };
    mark(mask, dims)?;
    let mask: &[bool] = mask;
    let n: usize = dims.iter().map(|&d| x.shape()[d]).product();
    match op {
        Sum | Prod | Mean => {
            let out = output(values, op, "values")?;
            let div = (op == Mean).then_some(n as f64);
            dispatch!(x.dtype(), T => dispatch!(out.dtype(), D => {
                if op == Prod { run(SumProd::<T, D, true>::new(out_ptr::<D>(out), div), x, mask) }
                else { run(SumProd::<T, D, false>::new(out_ptr::<D>(out), div), x, mask) }
            }));
        }
        Amax | Amin => {
            let out = output(values, op, "values")?;
            dispatch!(x.dtype(), T => {
                let p = SendPtr(out_ptr::<T>(out));
                if op == Amax { run(Extreme::<T, true> { out: p }, x, mask) } else { run(Extreme::<T, false> { out: p }, x, mask) }
            });
        }
        Argmax | Argmin => {
            let ip = SendPtr(out_ptr::<i64>(output(indices, op, "indices")?));
            dispatch!(x.dtype(), T => {
                let vp = values.map(|v| SendPtr(out_ptr::<T>(v)));
                if op == Argmax { run(ArgExtreme::<T, true> { values: vp, indices: ip }, x, mask) }
                else { run(ArgExtreme::<T, false> { values: vp, indices: ip }, x, mask) }
            });
        }
        All | Any => {
            let p = out_ptr::<bool>(output(values, op, "values")?);
            dispatch!(x.dtype(), T => {
                if op == All { run(AllAny::<T, true>::new(p), x, mask) } else { run(AllAny::<T, false>::new(p), x, mask) }
            });
        }
        CountNonzero => {
            let p = out_ptr::<i64>(output(values, op, "values")?);
            dispatch!(x.dtype(), T => run(rd::CountNonzero::<T>::new(p), x, mask));
        }
        Norm { p: ord } => {
            let out = output(values, op, "values")?;
            dispatch_float!(x.dtype(), T => dispatch_float!(out.dtype(), D => {
                let p = out_ptr::<D>(out);
                use norm_kind::*;
                if ord == 2.0 { run(rd::Norm::<T, D, TWO>::new(p, ord), x, mask) }
                else if ord == 1.0 { run(rd::Norm::<T, D, ONE>::new(p, ord), x, mask) }
                else if ord == f64::INFINITY { run(rd::Norm::<T, D, INF>::new(p, ord), x, mask) }
                else if ord == f64::NEG_INFINITY { run(rd::Norm::<T, D, NEG_INF>::new(p, ord), x, mask) }
                else if ord == 0.0 { run(rd::Norm::<T, D, ZERO>::new(p, ord), x, mask) }
                else { run(rd::Norm::<T, D, P>::new(p, ord), x, mask) }
            }, _ => return Err(not_float(op))), _ => return Err(not_float(op)));
        }
        Var { correction, std } => {
            let out = output(values, op, "values")?;
            dispatch_float!(x.dtype(), T => {
                let mut means = crate::alloc::try_vec(out.numel(), 0.0f64)?;
                run(SumProd::<T, f64, false>::new(means.as_mut_ptr(), Some(n as f64)), x, mask);
                let divisor = (n as f64 - correction).max(0.0);
                let r = SquaredDeviation::<T> { means: &means, out: SendPtr(out_ptr::<T>(out)), divisor, sqrt: std };
                run(r, x, mask);
            }, _ => return Err(not_float(op)));
        }
        LogSumExp => {
            let out = output(values, op, "values")?;
            let out_numel = out.numel();
            dispatch_float!(x.dtype(), T => {
                // Shift by each output's max, except where it is infinite (torch masks those to 0).
                let shifts: Vec<f64> = if x.numel() == 0 {
                    crate::alloc::try_vec(out_numel, 0.0)?
                } else {
                    let mut maxes = crate::alloc::try_vec(out_numel, T::zero())?;
                    run(Extreme::<T, true> { out: SendPtr(maxes.as_mut_ptr()) }, x, mask);
                    maxes.iter().map(|&m| if m.to_f64().is_infinite() { 0.0 } else { m.to_f64() }).collect()
                };
                run(rd::LogSumExp::<T, T> { shifts: &shifts, out: SendPtr(out_ptr::<T>(out)), _t: PhantomData }, x, mask);
            }, _ => return Err(not_float(op)));
        }
    }
    Ok(())
}
