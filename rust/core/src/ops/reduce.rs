//! Reductions and softmax: which dims, keepdim, torch's dtype rules and error texts, output
//! allocation. The loops live in `kernels::reduce` (engine), `kernels::reducers` and
//! `kernels::softmax`.
//!
//! Every result is a fresh row-major tensor (torch allocates reduction outputs contiguous).

use crate::kernels::TensorArg;
use crate::dtype::DType;
use crate::element::Element;
use crate::error::fmt_g;
use crate::error::{Error, Result};
use crate::kernels::reduce::{reduce, Reducer};
use crate::kernels::reducers::{norm_kind, AllAny, ArgExtreme, CountNonzero, Extreme, LogSumExp, Norm, SquaredDeviation, SumProd};
use crate::kernels::parallel::SendPtr;
use crate::kernels::Arg;
use crate::layout::Layout;
use crate::ops::copy::{cast_input, contiguous_raw};
use crate::shape::wrap_dim;
use crate::tensor::Tensor;
use crate::{dispatch, dispatch_float};
use std::marker::PhantomData;

/// The reduction family: each op's public name (as in error messages) and torch's backward
/// node name (the form with a `dim` where torch has two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    Sum,
    Mean,
    Prod,
    Amax,
    Amin,
    Max,
    Min,
    Argmax,
    Argmin,
    Var,
    Std,
    Norm,
    LogSumExp,
    All,
    Any,
    CountNonzero,
    Softmax,
    LogSoftmax,
}

impl ReduceOp {
    pub fn name(self) -> &'static str {
        use ReduceOp::*;
        match self {
            Sum => "sum",
            Mean => "mean",
            Prod => "prod",
            Amax => "amax",
            Amin => "amin",
            Max => "max",
            Min => "min",
            Argmax => "argmax",
            Argmin => "argmin",
            Var => "var",
            Std => "std",
            Norm => "linalg.vector_norm",
            LogSumExp => "logsumexp",
            All => "all",
            Any => "any",
            CountNonzero => "count_nonzero",
            Softmax => "softmax",
            LogSoftmax => "log_softmax",
        }
    }

    /// (node without dim, node with dim); "NotImplemented" where torch has no gradient.
    pub fn nodes(self) -> (&'static str, &'static str) {
        use ReduceOp::*;
        match self {
            Sum => ("SumBackward0", "SumBackward1"),
            Mean => ("MeanBackward0", "MeanBackward1"),
            Prod => ("ProdBackward0", "ProdBackward1"),
            Amax => ("AmaxBackward0", "AmaxBackward0"),
            Amin => ("AminBackward0", "AminBackward0"),
            Max => ("MaxBackward1", "MaxBackward0"),
            Min => ("MinBackward1", "MinBackward0"),
            Var => ("VarBackward0", "VarBackward0"),
            Std => ("StdBackward0", "StdBackward0"),
            Norm => ("LinalgVectorNormBackward0", "LinalgVectorNormBackward0"),
            LogSumExp => ("LogsumexpBackward0", "LogsumexpBackward0"),
            Softmax => ("SoftmaxBackward0", "SoftmaxBackward0"),
            LogSoftmax => ("LogSoftmaxBackward0", "LogSoftmaxBackward0"),
            Argmax | Argmin | All | Any | CountNonzero => ("NotImplemented", "NotImplemented"),
        }
    }
}

// ----- dims -----

/// How a list of dims is validated. torch wraps every dim before looking for repeats in most
/// reductions, but var/std/norm check each dim in turn (so which error wins differs).
#[derive(Clone, Copy, PartialEq, Eq)]
enum DimCheck {
    WrapAllFirst,
    InTurn,
}

/// The reduced-dims mask for `dims`. `None` reduces every dim; so does an empty list when
/// `empty_is_all` (sum(dim=()) reduces all, all(dim=()) reduces none).
fn dim_mask(dims: Option<&[i64]>, ndim: usize, empty_is_all: bool, check: DimCheck) -> Result<Vec<bool>> {
    let dims = match dims {
        None => return Ok(vec![true; ndim]),
        Some([]) => return Ok(vec![empty_is_all; ndim]),
        Some(d) => d,
    };
    let mut mask = vec![false; ndim];
    // A 0-d tensor accepts dim 0 / -1 but has no dim to mark.
    let mut seen = vec![false; ndim.max(1)];
    let mut wrapped = Vec::with_capacity(dims.len());
    if check == DimCheck::WrapAllFirst {
        for &d in dims {
            wrapped.push(wrap_dim(d, ndim)?);
        }
    }
    for (k, &d) in dims.iter().enumerate() {
        let w = if check == DimCheck::WrapAllFirst { wrapped[k] } else { wrap_dim(d, ndim)? };
        if seen[w] {
            return Err(Error::Runtime(format!("dim {} appears multiple times in the list of dims", w)));
        }
        seen[w] = true;
        if w < ndim {
            mask[w] = true;
        }
    }
    Ok(mask)
}

fn reduced_shape(shape: &[usize], mask: &[bool], keepdim: bool) -> Vec<usize> {
    shape
        .iter()
        .zip(mask)
        .filter_map(|(&s, &m)| match (m, keepdim) {
            (false, _) => Some(s),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

fn reduced_numel(shape: &[usize], mask: &[bool]) -> usize {
    shape.iter().zip(mask).filter(|(_, &m)| m).map(|(&s, _)| s).product()
}

/// Runs reducer `r` over `x` (whose dtype is `R::In`).
fn run<R: Reducer>(r: R, x: &Tensor, mask: &[bool]) {
    debug_assert_eq!(x.dtype(), R::In::DTYPE);
    // SAFETY: x's layout lies inside its storage and x is alive for the call; every output
    // the reducer writes was allocated by the caller with the reduced shape's element count
    // and is fresh memory, so it cannot overlap x.
    unsafe { reduce(r, x.shape(), Arg::of(x), mask) }
}

fn out_ptr<T: Element>(t: &Tensor) -> *mut T {
    t.data_ptr::<T>()
}

// ----- sum, mean, prod -----

/// `sum(dim, keepdim, dtype=)`: integers and bool sum to int64 unless `dtype` says otherwise.
pub fn sum_raw(x: &Tensor, dims: Option<&[i64]>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let mask = dim_mask(dims, x.ndim(), true, DimCheck::WrapAllFirst)?;
    let out_dtype = dtype.unwrap_or(if x.dtype().is_integral(true) { DType::Int64 } else { x.dtype() });
    Ok(sum_prod::<false>(x, &mask, keepdim, out_dtype, false)?)
}

/// `prod()` or `prod(dim, keepdim)`, with sum's dtype rule.
pub fn prod_raw(x: &Tensor, dim: Option<i64>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let dims: Option<Vec<i64>> = dim.map(|d| vec![d]);
    let mask = dim_mask(dims.as_deref(), x.ndim(), true, DimCheck::WrapAllFirst)?;
    let out_dtype = dtype.unwrap_or(if x.dtype().is_integral(true) { DType::Int64 } else { x.dtype() });
    Ok(sum_prod::<true>(x, &mask, keepdim && dim.is_some(), out_dtype, false)?)
}

/// `mean(dim, keepdim, dtype=)`: floating inputs (or a floating `dtype`) only.
pub fn mean_raw(x: &Tensor, dims: Option<&[i64]>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let (what, d) = match dtype {
        Some(d) => ("Optional", d),
        None => ("Input", x.dtype()),
    };
    if !d.is_floating() {
        return Err(Error::Runtime(format!(
            "mean(): could not infer output dtype. {} dtype must be either a floating point or complex dtype. Got: {}",
            what,
            d.scalar_type_name()
        )));
    }
    let mask = dim_mask(dims, x.ndim(), true, DimCheck::WrapAllFirst)?;
    Ok(sum_prod::<false>(x, &mask, keepdim, d, true)?)
}

fn sum_prod<const PROD: bool>(x: &Tensor, mask: &[bool], keepdim: bool, out_dtype: DType, is_mean: bool) -> crate::error::Result<Tensor> {
    let out = Tensor::empty(&reduced_shape(x.shape(), mask, keepdim), out_dtype)?;
    let div = is_mean.then(|| reduced_numel(x.shape(), mask) as f64);
    dispatch!(x.dtype(), T => dispatch!(out_dtype, D => {
        run(SumProd::<T, D, PROD>::new(out_ptr::<D>(&out), div), x, mask)
    }));
    Ok(out)
}

// ----- amax, amin, max, min, argmax, argmin -----

/// torch's check for a reduction with no identity over an empty input (`dims` as given).
fn zero_numel_check(x: &Tensor, dims: &[i64], name: &str) -> Result<()> {
    if x.numel() != 0 {
        return Ok(());
    }
    if dims.is_empty() {
        return Err(Error::Runtime(format!(
            "{}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument.",
            name
        )));
    }
    for &d in dims {
        let w = wrap_dim(d, x.ndim())?;
        if x.shape()[w] == 0 {
            return Err(Error::Index(format!("{}(): Expected reduction dim {} to have non-zero size.", name, d)));
        }
    }
    Ok(())
}

/// `amax(dim=(), keepdim)` / `amin`: an empty `dims` reduces every dim.
pub fn amax_raw(x: &Tensor, dims: &[i64], keepdim: bool, is_max: bool) -> Result<Tensor> {
    let op = if is_max { ReduceOp::Amax } else { ReduceOp::Amin };
    zero_numel_check(x, dims, op.name())?;
    let mask = dim_mask(Some(dims), x.ndim(), true, DimCheck::WrapAllFirst)?;
    extreme(x, &mask, keepdim, is_max)
}

/// `max()` / `min()` of every element: a 0-d tensor.
pub fn max_all_raw(x: &Tensor, is_max: bool) -> Result<Tensor> {
    let op = if is_max { ReduceOp::Max } else { ReduceOp::Min };
    zero_numel_check(x, &[], op.name())?;
    Ok(extreme(x, &vec![true; x.ndim()], false, is_max)?)
}

fn extreme(x: &Tensor, mask: &[bool], keepdim: bool, is_max: bool) -> crate::error::Result<Tensor> {
    let out = Tensor::empty(&reduced_shape(x.shape(), mask, keepdim), x.dtype())?;
    dispatch!(x.dtype(), T => {
        let p = out_ptr::<T>(&out);
        if is_max { run(Extreme::<T, true> { out: SendPtr(p) }, x, mask) }
        else { run(Extreme::<T, false> { out: SendPtr(p) }, x, mask) }
    });
    Ok(out)
}

/// `max(dim, keepdim)` / `min`: (values, indices) of the first extreme element (or first NaN).
pub fn max_dim_raw(x: &Tensor, dim: i64, keepdim: bool, is_max: bool) -> Result<(Tensor, Tensor)> {
    let op = if is_max { ReduceOp::Max } else { ReduceOp::Min };
    let w = wrap_dim(dim, x.ndim())?;
    zero_numel_check(x, &[w as i64], op.name())?;
    let mask = dim_mask(Some(&[dim]), x.ndim(), true, DimCheck::WrapAllFirst)?;
    let shape = reduced_shape(x.shape(), &mask, keepdim);
    let (values, indices) = (Tensor::empty(&shape, x.dtype())?, Tensor::empty(&shape, DType::Int64)?);
    arg_extreme(x, &mask, Some(&values), &indices, is_max);
    Ok((values, indices))
}

/// `argmax(dim=None, keepdim)` / `argmin`: with no dim, the flat (row-major) index.
pub fn argmax(x: &Tensor, dim: Option<i64>, keepdim: bool, is_max: bool) -> Result<Tensor> {
    let op = if is_max { ReduceOp::Argmax } else { ReduceOp::Argmin };
    if x.dtype() == DType::Bool {
        return Err(Error::Runtime(format!("{}(): does not support bool input", op.name())));
    }
    match dim {
        Some(d) => {
            let w = wrap_dim(d, x.ndim())?;
            if x.numel() == 0 && x.shape()[w] == 0 {
                return Err(Error::Index(format!("{}(): Expected reduction dim {} to have non-zero size.", op.name(), w)));
            }
            let mask = dim_mask(Some(&[d]), x.ndim(), true, DimCheck::WrapAllFirst)?;
            let indices = Tensor::empty(&reduced_shape(x.shape(), &mask, keepdim), DType::Int64)?;
            arg_extreme(x, &mask, None, &indices, is_max);
            Ok(indices)
        }
        None => {
            if x.numel() == 0 {
                return Err(Error::Index(format!(
                    "{}(): Expected reduction dim to be specified for input.numel() == 0.",
                    op.name()
                )));
            }
            // The flat index counts in logical order: reduce a contiguous 1-d view.
            let c = contiguous_raw(x)?;
            let flat = c.view_as_layout(Layout { shape: vec![c.numel()], strides: vec![1], offset: c.layout.offset });
            let shape = if keepdim { vec![1; x.ndim()] } else { vec![] };
            let indices = Tensor::empty(&shape, DType::Int64)?;
            arg_extreme(&flat, &[true], None, &indices, is_max);
            Ok(indices)
        }
    }
}

fn arg_extreme(x: &Tensor, mask: &[bool], values: Option<&Tensor>, indices: &Tensor, is_max: bool) {
    let ip = SendPtr(out_ptr::<i64>(indices));
    dispatch!(x.dtype(), T => {
        let vp = values.map(|v| SendPtr(out_ptr::<T>(v)));
        if is_max { run(ArgExtreme::<T, true> { values: vp, indices: ip }, x, mask) }
        else { run(ArgExtreme::<T, false> { values: vp, indices: ip }, x, mask) }
    });
}

// ----- var, std -----

/// `var` / `std` (`sqrt`) over `dims` (None or empty: all) with `correction` (1 = unbiased).
/// Also says whether torch warns that the degrees of freedom are <= 0.
pub fn var_raw(x: &Tensor, dims: Option<&[i64]>, correction: f64, keepdim: bool, sqrt: bool) -> Result<(Tensor, bool)> {
    if !x.dtype().is_floating() {
        return Err(Error::Runtime("std and var only support floating point and complex dtypes".into()));
    }
    let mask = dim_mask(dims, x.ndim(), true, DimCheck::InTurn)?;
    let out = Tensor::empty(&reduced_shape(x.shape(), &mask, keepdim), x.dtype())?;
    let n = reduced_numel(x.shape(), &mask);
    let out_numel = out.numel();
    let per_output = x.numel().checked_div(out_numel).unwrap_or(0);
    let warn = per_output as f64 - correction <= 0.0;
    if x.numel() == 0 {
        crate::kernels::fill::fill(&out, crate::Scalar::Float(f64::NAN));
        return Ok((out, warn));
    }
    dispatch_float!(x.dtype(), T => {
        let mut means = crate::alloc::try_vec(out_numel, 0.0f64)?;
        run(SumProd::<T, f64, false>::new(means.as_mut_ptr(), Some(n as f64)), x, &mask);
        let divisor = (n as f64 - correction).max(0.0);
        let r = SquaredDeviation::<T> { means: &means, out: SendPtr(out_ptr::<T>(&out)), divisor, sqrt };
        run(r, x, &mask);
    }, _ => unreachable!("checked floating above"));
    Ok((out, warn))
}

// ----- norm -----

/// `linalg.vector_norm(x, ord, dim, keepdim, dtype=)`, which `Tensor.norm` uses for numeric
/// orders and for 'fro' over at most two dims.
pub fn vector_norm_raw(x: &Tensor, ord: f64, dims: Option<&[i64]>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let name = ReduceOp::Norm.name();
    // torch's order: input dtype, orders without an identity on empty input, dtype=, dims.
    if !x.dtype().is_floating() {
        return Err(Error::Runtime(format!(
            "{}: Expected a floating point or complex tensor as input. Got {}",
            name,
            x.dtype().scalar_type_name()
        )));
    }
    if x.numel() == 0 && (ord < 0.0 || ord == f64::INFINITY) {
        match dims {
            Some(ds) if !ds.is_empty() => {
                for &d in ds {
                    if x.shape()[wrap_dim(d, x.ndim())?] == 0 {
                        return Err(Error::Runtime(format!(
                            "{} cannot compute the {} norm on the dimension {}because this dimension is empty and the operation does not have an identity",
                            name,
                            fmt_g(ord),
                            d
                        )));
                    }
                }
            }
            _ => {
                return Err(Error::Runtime(format!(
                    "{} cannot compute the {} norm on an empty tensor because the operation does not have an identity",
                    name,
                    fmt_g(ord)
                )))
            }
        }
    }
    if let Some(d) = dtype {
        if !d.is_floating() {
            return Err(Error::Runtime(format!("{}: dtype should be floating point or complex, but got {}", name, d.scalar_type_name())));
        }
        if d < x.dtype() {
            return Err(Error::Runtime(format!(
                "{}: the dtype of the input ({}) should be convertible without narrowing to the specified dtype ({})",
                name,
                x.dtype().scalar_type_name(),
                d.scalar_type_name()
            )));
        }
    }
    let mask = dim_mask(dims, x.ndim(), true, DimCheck::InTurn)?;
    let out_dtype = dtype.unwrap_or(x.dtype());
    let out = Tensor::empty(&reduced_shape(x.shape(), &mask, keepdim), out_dtype)?;
    dispatch_float!(x.dtype(), T => dispatch_float!(out_dtype, D => {
        let p = out_ptr::<D>(&out);
        use norm_kind::*;
        if ord == 2.0 { run(Norm::<T, D, TWO>::new(p, ord), x, &mask) }
        else if ord == 1.0 { run(Norm::<T, D, ONE>::new(p, ord), x, &mask) }
        else if ord == f64::INFINITY { run(Norm::<T, D, INF>::new(p, ord), x, &mask) }
        else if ord == f64::NEG_INFINITY { run(Norm::<T, D, NEG_INF>::new(p, ord), x, &mask) }
        else if ord == 0.0 { run(Norm::<T, D, ZERO>::new(p, ord), x, &mask) }
        else { run(Norm::<T, D, P>::new(p, ord), x, &mask) }
    }, _ => unreachable!("checked floating above")), _ => unreachable!("checked floating above"));
    Ok(out)
}

// ----- logsumexp -----

/// `logsumexp(dim, keepdim)`: integer inputs compute in the default float dtype.
pub fn logsumexp_raw(x: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
    let x = if x.dtype().is_floating() { x.clone() } else { cast_input(x, DType::Float32)? };
    let mask = dim_mask(Some(dims), x.ndim(), true, DimCheck::WrapAllFirst)?;
    if dims.is_empty() && x.numel() != 0 && x.ndim() > 0 && !keepdim {
        // torch adds the kept-dim maxima ([1, ..., 1]) in place into the 0-d sum and fails.
        return Err(Error::Runtime(format!(
            "output with shape [] doesn't match the broadcast shape {}",
            crate::error::fmt_shape(&vec![1; x.ndim()])
        )));
    }
    let out = Tensor::empty(&reduced_shape(x.shape(), &mask, keepdim), x.dtype())?;
    let out_numel = out.numel();
    dispatch_float!(x.dtype(), T => {
        // Shift by each output's max, except where it is infinite (torch masks those to 0).
        let shifts: Vec<f64> = if x.numel() == 0 {
            crate::alloc::try_vec(out_numel, 0.0)?
        } else {
            let mut maxes = crate::alloc::try_vec(out_numel, T::zero())?;
            run(Extreme::<T, true> { out: SendPtr(maxes.as_mut_ptr()) }, &x, &mask);
            maxes.iter().map(|&m| if m.to_f64().is_infinite() { 0.0 } else { m.to_f64() }).collect()
        };
        let r = LogSumExp::<T, T> { shifts: &shifts, out: SendPtr(out_ptr::<T>(&out)), _t: PhantomData };
        run(r, &x, &mask);
    }, _ => unreachable!("cast to float above"));
    Ok(out)
}

// ----- all, any, count_nonzero -----

/// `all(dim, keepdim)` / `any`: bool results; dim=() reduces nothing.
pub fn all(x: &Tensor, dims: Option<&[i64]>, keepdim: bool, is_all: bool) -> Result<Tensor> {
    let mask = dim_mask(dims, x.ndim(), false, DimCheck::WrapAllFirst)?;
    let out = Tensor::empty(&reduced_shape(x.shape(), &mask, keepdim), DType::Bool)?;
    let p = out_ptr::<bool>(&out);
    dispatch!(x.dtype(), T => {
        if is_all { run(AllAny::<T, true>::new(p), x, &mask) } else { run(AllAny::<T, false>::new(p), x, &mask) }
    });
    Ok(out)
}

/// `count_nonzero(dim=None)`: int64 counts; dim=() counts everything.
pub fn count_nonzero(x: &Tensor, dims: Option<&[i64]>) -> Result<Tensor> {
    let mask = dim_mask(dims, x.ndim(), true, DimCheck::WrapAllFirst)?;
    let out = Tensor::empty(&reduced_shape(x.shape(), &mask, false), DType::Int64)?;
    let p = out_ptr::<i64>(&out);
    dispatch!(x.dtype(), T => run(CountNonzero::<T>::new(p), x, &mask));
    Ok(out)
}

// ----- softmax, log_softmax -----

/// `softmax(dim, dtype=)` / `log_softmax` (`log`): the input is cast to `dtype` first; the
/// result is row-major like torch's.
pub fn softmax_raw(x: &Tensor, dim: i64, dtype: Option<DType>, log: bool) -> Result<Tensor> {
    let w = wrap_dim(dim, x.ndim())?;
    let x = match dtype {
        Some(d) => cast_input(x, d)?,
        None => x.clone(),
    };
    let out = Tensor::empty(x.shape(), x.dtype())?;
    if x.numel() == 0 {
        return Ok(out);
    }
    if !x.dtype().is_floating() {
        let lastdim = x.ndim() == 0 || w == x.ndim() - 1;
        return Err(Error::NotImplemented(format!(
            "\"{}softmax{}_kernel_impl\" not implemented for '{}'",
            if log { "log_" } else { "" },
            if lastdim { "_lastdim" } else { "" },
            x.dtype().scalar_type_name()
        )));
    }
    let src = contiguous_raw(&x)?;
    let shape = x.shape();
    let (outer, n, inner) = if shape.is_empty() {
        (1, 1, 1)
    } else {
        (shape[..w].iter().product(), shape[w], shape[w + 1..].iter().product())
    };
    dispatch_float!(x.dtype(), T => {
        // SAFETY: src is contiguous with outer*n*inner elements from data_ptr; out is fresh
        // memory of the same size, so they do not overlap.
        unsafe { crate::kernels::softmax::softmax::<T>(src.data_ptr::<T>(), out.data_ptr::<T>(), outer, n, inner, log) }
    }, _ => unreachable!("checked floating above"));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t<T: Element>(v: Vec<T>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape).unwrap()
    }

    #[test]
    fn dims_validation_order() {
        // Wrap errors beat repeats in sum; var checks dims in turn.
        let e = dim_mask(Some(&[0, 0, 5]), 2, true, DimCheck::WrapAllFirst).unwrap_err();
        assert!(matches!(e, Error::Index(_)));
        let e = dim_mask(Some(&[0, 0, 5]), 2, true, DimCheck::InTurn).unwrap_err();
        assert_eq!(e.to_string(), "dim 0 appears multiple times in the list of dims");
        assert_eq!(dim_mask(Some(&[-1]), 0, true, DimCheck::InTurn).unwrap(), Vec::<bool>::new());
        assert!(dim_mask(Some(&[0, -1]), 0, true, DimCheck::InTurn).is_err());
        assert_eq!(dim_mask(Some(&[]), 2, false, DimCheck::InTurn).unwrap(), vec![false, false]);
    }

    #[test]
    fn dtype_rules() {
        let i = t(vec![1i32, 2, 3, 4], &[2, 2]);
        assert_eq!(sum_raw(&i, None, false, None).unwrap().dtype(), DType::Int64);
        assert_eq!(sum_raw(&i, Some(&[0]), true, Some(DType::Int32)).unwrap().shape(), &[1, 2]);
        assert_eq!(
            mean_raw(&i, None, false, None).unwrap_err().to_string(),
            "mean(): could not infer output dtype. Input dtype must be either a floating point or complex dtype. Got: Int"
        );
        assert_eq!(mean_raw(&i, None, false, Some(DType::Float64)).unwrap().to_vec::<f64>().unwrap(), vec![2.5]);
        assert!(var_raw(&i, None, 1.0, false, false).is_err());
        assert!(argmax(&t(vec![true], &[1]), None, false, true).is_err());
    }

    #[test]
    fn values_along_each_dim() {
        let x = t(vec![1.0f32, 5.0, 3.0, 4.0, 2.0, 6.0], &[2, 3]);
        assert_eq!(sum_raw(&x, Some(&[0]), false, None).unwrap().to_vec::<f32>().unwrap(), vec![5.0, 7.0, 9.0]);
        assert_eq!(sum_raw(&x, Some(&[1]), false, None).unwrap().to_vec::<f32>().unwrap(), vec![9.0, 12.0]);
        assert_eq!(prod_raw(&x, Some(1), false, None).unwrap().to_vec::<f32>().unwrap(), vec![15.0, 48.0]);
        let (v, i) = max_dim_raw(&x, 1, false, true).unwrap();
        assert_eq!((v.to_vec::<f32>().unwrap(), i.to_vec::<i64>().unwrap()), (vec![5.0, 6.0], vec![1, 2]));
        assert_eq!(argmax(&x, None, false, false).unwrap().to_vec::<i64>().unwrap(), vec![0]);
        let xt = crate::ops::views::transpose_raw(&x, 0, 1).unwrap();
        assert_eq!(argmax(&xt, None, false, true).unwrap().to_vec::<i64>().unwrap(), vec![5]);
        let (v, _) = var_raw(&x, Some(&[1]), 1.0, false, false).unwrap();
        assert_eq!(v.to_vec::<f32>().unwrap(), vec![4.0, 4.0]);
        let n = vector_norm_raw(&x, 1.0, None, false, None).unwrap();
        assert_eq!(n.to_vec::<f32>().unwrap(), vec![21.0]);
    }

    #[test]
    fn empty_and_zero_dim() {
        let e = Tensor::zeros(&[0, 3], DType::Float32).unwrap();
        assert_eq!(sum_raw(&e, Some(&[0]), false, None).unwrap().to_vec::<f32>().unwrap(), vec![0.0; 3]);
        assert!(mean_raw(&e, None, false, None).unwrap().to_vec::<f32>().unwrap()[0].is_nan());
        assert_eq!(
            max_all_raw(&e, true).unwrap_err().to_string(),
            "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
        );
        assert!(matches!(amax_raw(&e, &[-2], false, true).unwrap_err(), Error::Index(m) if m.contains("dim -2")));
        let s = Tensor::scalar(crate::Scalar::Float(3.0), DType::Float32).unwrap();
        let (v, i) = max_dim_raw(&s, -1, true, true).unwrap();
        assert_eq!((v.shape().len(), i.to_vec::<i64>().unwrap()), (0, vec![0]));
        assert_eq!(softmax_raw(&s, 0, None, false).unwrap().to_vec::<f32>().unwrap(), vec![1.0]);
    }

    #[test]
    fn g_format() {
        assert_eq!(fmt_g(-1.0), "-1");
        assert_eq!(fmt_g(-0.5), "-0.5");
        assert_eq!(fmt_g(-1e-7), "-1e-07");
        assert_eq!(fmt_g(-1.2345678), "-1.23457");
        assert_eq!(fmt_g(-1e8), "-1e+08");
        assert_eq!(fmt_g(f64::NEG_INFINITY), "-inf");
        assert_eq!(fmt_g(123456.0), "123456");
        assert_eq!(fmt_g(1234567.0), "1.23457e+06");
    }
}

// ----- autograd: saves and backward formulas (derivatives.yaml) -----

use crate::autograd::formulas as fm;
use crate::autograd::Recorder;
use crate::dtype::Scalar;
use crate::ops::binary::{self, BinaryOp};
use crate::ops::copy::to_dtype_raw;
use crate::ops::unary::{unary_raw, UnaryOp};
use crate::ops::{views, Arg as OpArg};

/// Python's repr of a tuple of ints (`(1,)`, `(0, 2)`), as `grad_fn._saved_dim` shows it.
pub(crate) fn py_ints<T: std::fmt::Display>(d: &[T]) -> String {
    match d {
        [one] => format!("({},)", one),
        _ => format!("({})", d.iter().map(|v| v.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

pub(crate) fn py_bool(b: bool) -> &'static str {
    if b { "True" } else { "False" }
}

/// Python's repr of a number argument (`1`, `2.0`, `inf`).
pub(crate) fn py_number(v: Scalar) -> String {
    match v {
        Scalar::Bool(b) => py_bool(b).to_string(),
        Scalar::Int(i) => i.to_string(),
        Scalar::Float(f) if f.is_infinite() => if f > 0.0 { "inf".into() } else { "-inf".into() },
        Scalar::Float(f) if f.is_nan() => "nan".into(),
        Scalar::Float(f) if f.fract() == 0.0 && f.abs() < 1e16 => format!("{:.1}", f),
        Scalar::Float(f) => format!("{}", f),
    }
}

fn py_opt_ints(d: Option<&[i64]>) -> String {
    d.map_or_else(|| "None".to_string(), py_ints)
}

/// The reduced dims (wrapped, ascending) of a reduction over `dims`, as the forward chose them.
fn reduced_dims(ndim: usize, dims: Option<&[i64]>, check: DimCheck) -> Result<Vec<usize>> {
    let mask = dim_mask(dims, ndim, true, check)?;
    Ok(mask.iter().enumerate().filter(|(_, &m)| m).map(|(i, _)| i).collect())
}

fn as_i64(d: &[usize]) -> Vec<i64> {
    d.iter().map(|&v| v as i64).collect()
}

/// Puts back the size-1 dims a `keepdim=False` reduction removed (torch's unsqueeze_multiple).
fn unsqueeze_dims(g: &Tensor, rd: &[usize], keepdim: bool) -> Result<Tensor> {
    let mut g = g.clone();
    if !keepdim {
        for &d in rd {
            g = views::unsqueeze(&g, d as i64)?;
        }
    }
    Ok(g)
}

fn div_s(a: &Tensor, v: f64) -> Result<Tensor> {
    binary::binary(BinaryOp::Div, &OpArg::Tensor(a.clone()), &OpArg::Scalar(Scalar::Float(v)), None)
}

fn num(v: f64) -> OpArg {
    OpArg::Scalar(Scalar::Float(v))
}

fn tensor_arg(t: &Tensor) -> OpArg {
    OpArg::Tensor(t.clone())
}

/// A bool mask as 0/1 values of `dtype` (a constant of the formula).
fn float_mask(m: &Tensor, dtype: DType) -> crate::error::Result<Tensor> {
    to_dtype_raw(m, dtype)
}

/// `a` where `mask` is false, 0 where it is true (as `formulas::zero_where`, but through
/// `where`, whose node also differentiates again under create_graph).
fn zero_at(a: &Tensor, mask: &Tensor) -> Result<Tensor> {
    binary::where_(mask, &num(0.0), &tensor_arg(a))
}

fn any_true(m: &Tensor) -> Result<bool> {
    Ok(all(m, None, false, false)?.item()?.to_bool())
}

/// Differentiable `sum(dim, keepdim, dtype=)`: SumBackward0 (no dims) / SumBackward1; the
/// gradient is expanded back over the reduced dims.
pub fn sum(x: &Tensor, dims: Option<&[i64]>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(x)])?;
    let out = sum_raw(x, dims, keepdim, dtype)?;
    let Some(mut rec) = rec else { return Ok(out) };
    let name = if dims.is_none() && !keepdim { "SumBackward0" } else { "SumBackward1" };
    if name == "SumBackward1" {
        rec.value("dim", py_opt_ints(dims));
        rec.value("keepdim", py_bool(keepdim));
    }
    rec.value("self_sym_sizes", py_ints(x.shape()));
    let rd = reduced_dims(x.ndim(), dims, DimCheck::WrapAllFirst)?;
    let shape = x.shape().to_vec();
    rec.finish(name, &[&out], Box::new(move |ctx| Ok(vec![Some(fm::expand_back(ctx.grad(), &shape, &rd, keepdim)?)])))?;
    Ok(out)
}

/// Differentiable `mean`: MeanBackward0 / MeanBackward1, the expanded gradient over the count.
pub fn mean(x: &Tensor, dims: Option<&[i64]>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(x)])?;
    let out = mean_raw(x, dims, keepdim, dtype)?;
    let Some(mut rec) = rec else { return Ok(out) };
    let name = if dims.is_none() && !keepdim { "MeanBackward0" } else { "MeanBackward1" };
    if name == "MeanBackward1" {
        rec.value("dim", py_opt_ints(dims));
        rec.value("keepdim", py_bool(keepdim));
    }
    rec.value("self_sym_numel", x.numel());
    rec.value("self_sym_sizes", py_ints(x.shape()));
    let rd = reduced_dims(x.ndim(), dims, DimCheck::WrapAllFirst)?;
    let shape = x.shape().to_vec();
    let n = rd.iter().map(|&d| shape[d]).product::<usize>() as f64;
    rec.finish(name, &[&out], Box::new(move |ctx| Ok(vec![Some(fm::expand_back(&div_s(ctx.grad(), n)?, &shape, &rd, keepdim)?)])))?;
    Ok(out)
}

/// torch's prod_backward: `grad * result / self` when no element is zero; otherwise each
/// element gets the product of the others in its slice, built so that its own derivatives
/// (double backward) are right too: `Q / x1 * W`, with `x1` the input with zeros replaced by
/// one, `Q = prod(x1)` and `W` the product of the *other* zeros of the slice (1 without zeros,
/// the zero element itself for the others of a one-zero slice, ...).
fn prod_backward(g: &Tensor, x: &Tensor, r: &Tensor, dim: Option<usize>, keepdim: bool) -> Result<Tensor> {
    if x.ndim() == 0 {
        return Ok(g.clone());
    }
    let (g, r) = match dim {
        Some(d) if !keepdim => (views::unsqueeze(g, d as i64)?, views::unsqueeze(r, d as i64)?),
        _ => (g.clone(), r.clone()),
    };
    let zero = fm::cmp_s(BinaryOp::Eq, x, 0.0)?;
    if !any_true(&zero)? {
        return fm::mul(&g, &fm::div(&r, x)?);
    }
    // The slice each element belongs to: its dim, or everything (an empty list reduces all).
    let sdims: Vec<i64> = dim.map(|d| vec![d as i64]).unwrap_or_default();
    let sdims = Some(sdims.as_slice());
    let x1 = binary::where_(&zero, &num(1.0), &tensor_arg(x))?;
    let q = match dim {
        Some(d) => prod(&x1, Some(d as i64), true, None)?,
        None => prod(&x1, None, false, None)?,
    };
    let count = sum_raw(&zero, sdims, true, None)?;
    let s = sum(&fm::mul(x, &float_mask(&zero, x.dtype())?)?, sdims, true, None)?;
    let is = |v: f64| fm::cmp_s(BinaryOp::Eq, &count, v);
    let w1 = binary::where_(&zero, &num(1.0), &tensor_arg(&s))?;
    let w2 = binary::where_(&zero, &tensor_arg(&fm::sub(&s, x)?), &num(0.0))?;
    let w = binary::where_(&is(2.0)?, &tensor_arg(&w2), &num(0.0))?;
    let w = binary::where_(&is(1.0)?, &tensor_arg(&w1), &tensor_arg(&w))?;
    let w = binary::where_(&is(0.0)?, &num(1.0), &tensor_arg(&w))?;
    fm::mul(&g, &fm::mul(&fm::div(&q, &x1)?, &w)?)
}

/// Differentiable `prod`: ProdBackward0 (all) / ProdBackward1 (one dim); saves self and result.
pub fn prod(x: &Tensor, dim: Option<i64>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(x)])?;
    let out = prod_raw(x, dim, keepdim, dtype)?;
    let Some(mut rec) = rec else { return Ok(out) };
    let name = if dim.is_some() { "ProdBackward1" } else { "ProdBackward0" };
    if let Some(d) = dim {
        rec.value("dim", d);
        rec.value("keepdim", py_bool(keepdim));
    }
    rec.save("self", x)?;
    rec.save_output("result", &out, 0);
    let wd = match dim {
        Some(d) if x.ndim() > 0 => Some(wrap_dim(d, x.ndim())?),
        _ => None,
    };
    let kd = keepdim && dim.is_some();
    rec.finish(name, &[&out], Box::new(move |ctx| Ok(vec![Some(prod_backward(ctx.grad(), ctx.saved(0), ctx.saved(1), wd, kd)?)])))?;
    Ok(out)
}

/// Differentiable `amax`/`amin` (AmaxBackward0 / AminBackward0): the gradient is shared evenly
/// among the elements equal to the result.
pub fn amax(x: &Tensor, dims: &[i64], keepdim: bool, is_max: bool) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(x)])?;
    let out = amax_raw(x, dims, keepdim, is_max)?;
    let Some(mut rec) = rec else { return Ok(out) };
    rec.value("dim", py_ints(dims));
    rec.value("keepdim", py_bool(keepdim));
    rec.save("self", x)?;
    rec.save_output("result", &out, 0);
    let rd = reduced_dims(x.ndim(), Some(dims), DimCheck::WrapAllFirst)?;
    let name = if is_max { "AmaxBackward0" } else { "AminBackward0" };
    rec.finish(name, &[&out], Box::new(move |ctx| {
        let (x, r) = (ctx.saved(0), ctx.saved(1));
        let g = unsqueeze_dims(ctx.grad(), &rd, keepdim)?;
        let r = unsqueeze_dims(r, &rd, keepdim)?;
        let mask = float_mask(&fm::cmp(BinaryOp::Eq, x, &tensor_arg(&r))?, g.dtype())?;
        let count = sum_raw(&mask, Some(&as_i64(&rd)), true, None)?;
        Ok(vec![Some(fm::mul(&fm::div(&g, &count)?, &mask)?)])
    }))?;
    Ok(out)
}

/// Differentiable `max()`/`min()` of all elements (MaxBackward1 / MinBackward1): torch's
/// evenly_distribute_backward (ties share the gradient; a NaN result goes to the NaNs).
pub fn max_all(x: &Tensor, is_max: bool) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(x)])?;
    let out = max_all_raw(x, is_max)?;
    let Some(mut rec) = rec else { return Ok(out) };
    rec.save("self", x)?;
    rec.save_output("result", &out, 0);
    let name = if is_max { "MaxBackward1" } else { "MinBackward1" };
    rec.finish(name, &[&out], Box::new(move |ctx| {
        let (g, x, r) = (ctx.grad(), ctx.saved(0), ctx.saved(1));
        let mask = if r.item()?.to_f64().is_nan() {
            fm::cmp(BinaryOp::Ne, x, &tensor_arg(x))?
        } else {
            fm::cmp(BinaryOp::Eq, x, &tensor_arg(r))?
        };
        let mask = float_mask(&mask, g.dtype())?;
        let count = sum_raw(&mask, None, false, None)?;
        Ok(vec![Some(fm::mul(&mask, &fm::div(g, &count)?)?)])
    }))?;
    Ok(out)
}

/// Differentiable `max(dim)`/`min(dim)` (MaxBackward0 / MinBackward0): saves the indices; the
/// gradient is scattered to them.
pub fn max_dim(x: &Tensor, dim: i64, keepdim: bool, is_max: bool) -> Result<(Tensor, Tensor)> {
    crate::autograd::record::precheck(&[Some(x)])?;
    let (values, indices) = max_dim_raw(x, dim, keepdim, is_max)?;
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok((values, indices)) };
    rec.value("dim", dim);
    rec.value("keepdim", py_bool(keepdim));
    rec.value("self_sym_sizes", py_ints(x.shape()));
    rec.save("indices", &indices)?;
    let shape = x.shape().to_vec();
    let w = wrap_dim(dim, x.ndim())?;
    let name = if is_max { "MaxBackward0" } else { "MinBackward0" };
    rec.finish(name, &[&values, &indices], Box::new(move |ctx| {
        let (g, idx) = (ctx.grad(), ctx.saved(0));
        if shape.is_empty() {
            return Ok(vec![Some(g.clone())]);
        }
        let (idx, g) = if keepdim { (idx.clone(), g.clone()) } else { (views::unsqueeze_raw(idx, w as i64)?, views::unsqueeze(g, w as i64)?) };
        let z = fm::zeros(&shape, g.dtype())?;
        let src = crate::ops::gather::Source::Tensor(g);
        Ok(vec![Some(crate::ops::gather::scatter(&z, w as i64, &idx, &src, None, false)?)])
    }))?;
    Ok((values, indices))
}

/// torch's var_backward: `2 / (n - correction) * grad * (self - mean)`. Without dims (or for a
/// 0-d input) the degrees of freedom are checked: <= 0 gives NaN where self equals its mean and
/// inf elsewhere. With dims, `n` is the product of the listed sizes (1 for an empty list).
fn var_backward(g: &Tensor, x: &Tensor, dims: Option<&[i64]>, correction: f64, keepdim: bool) -> Result<Tensor> {
    let Some(d) = dims.filter(|_| x.ndim() > 0) else {
        let dof = x.numel() as f64 - correction;
        let m = mean(x, None, false, None)?;
        if dof <= 0.0 {
            let eq = fm::cmp(BinaryOp::Eq, x, &tensor_arg(&m))?;
            let c = binary::where_raw(&eq, &num(f64::NAN), &num(f64::INFINITY))?;
            return fm::mul(g, &float_mask(&c, x.dtype())?);
        }
        return fm::mul(&fm::mul_s(g, 2.0 / dof)?, &fm::sub(x, &m)?);
    };
    let mut wrapped = d.iter().map(|&v| wrap_dim(v, x.ndim())).collect::<Result<Vec<_>>>()?;
    let rnumel = wrapped.iter().map(|&w| x.shape()[w]).product::<usize>() as f64;
    wrapped.sort_unstable();
    let g = if !keepdim && x.ndim() > 1 { unsqueeze_dims(g, &wrapped, false)? } else { g.clone() };
    let m = mean(x, Some(d), true, None)?;
    fm::mul(&fm::mul_s(&g, 2.0 / (rnumel - correction))?, &fm::sub(x, &m)?)
}

/// Differentiable `var`/`std` (VarBackward0 saves self; StdBackward0 also its result).
pub fn var(x: &Tensor, dims: Option<&[i64]>, correction: f64, keepdim: bool, sqrt: bool) -> Result<(Tensor, bool)> {
    crate::autograd::record::precheck(&[Some(x)])?;
    let (out, warn) = var_raw(x, dims, correction, keepdim, sqrt)?;
    let Some(mut rec) = Recorder::new(&[Some(x)])? else { return Ok((out, warn)) };
    rec.value("correction", py_number(if correction.fract() == 0.0 { Scalar::Int(correction as i64) } else { Scalar::Float(correction) }));
    rec.value("dim", py_opt_ints(dims));
    rec.value("keepdim", py_bool(keepdim));
    rec.save("self", x)?;
    if sqrt {
        rec.save_output("result", &out, 0);
    }
    let d: Option<Vec<i64>> = dims.map(|d| d.to_vec());
    let name = if sqrt { "StdBackward0" } else { "VarBackward0" };
    rec.finish(name, &[&out], Box::new(move |ctx| {
        let (g, x) = (ctx.grad(), ctx.saved(0));
        let g = if sqrt {
            let r = ctx.saved(1);
            zero_at(&fm::div(g, &fm::mul_s(r, 2.0)?)?, &fm::cmp_s(BinaryOp::Eq, r, 0.0)?)?
        } else {
            g.clone()
        };
        Ok(vec![Some(var_backward(&g, x, d.as_deref(), correction, keepdim)?)])
    }))?;
    Ok((out, warn))
}

/// torch's norm_backward for `linalg.vector_norm` (ord 0 has no gradient; a zero norm gives
/// zero gradient for ord 2 and ord > 1).
fn norm_backward(g: &Tensor, x: &Tensor, r: &Tensor, ord: f64, rd: &[usize], keepdim: bool) -> Result<Option<Tensor>> {
    use crate::autograd::formulas::*;
    let (g, r) = if !keepdim && x.ndim() != 0 { (unsqueeze_dims(g, rd, false)?, unsqueeze_dims(r, rd, false)?) } else { (g.clone(), r.clone()) };
    let sgn = || un(UnaryOp::Sign, x);
    let r_zero = || cmp_s(BinaryOp::Eq, &r, 0.0);
    Ok(Some(if ord == 0.0 {
        return Ok(None);
    } else if ord == 1.0 {
        mul(&sgn()?, &g)?
    } else if ord == 2.0 {
        mul(&g, &zero_at(&div(x, &r)?, &r_zero()?)?)?
    } else if ord.is_infinite() {
        let a = unary_raw(UnaryOp::Abs, x)?;
        let hit = cmp(BinaryOp::LogicalOr, &cmp(BinaryOp::Eq, &a, &tensor_arg(&r))?, &tensor_arg(&cmp(BinaryOp::Ne, &a, &tensor_arg(&a))?))?;
        let mask = float_mask(&hit, g.dtype())?;
        let count = sum_raw(&mask, Some(&as_i64(rd)), true, None)?;
        mul(&sgn()?, &mul(&div(&g, &count)?, &mask)?)?
    } else if ord < 1.0 {
        let a = un(UnaryOp::Abs, x)?;
        let scaled = mul(&sgn()?, &zero_at(&pow_s(&a, ord - 1.0)?, &cmp_s(BinaryOp::Eq, x, 0.0)?)?)?;
        mul(&mul(&scaled, &g)?, &pow_s(&r, 1.0 - ord)?)?
    } else {
        let a = un(UnaryOp::Abs, x)?;
        let scaled = if ord < 2.0 { mul(&sgn()?, &pow_s(&a, ord - 1.0)?)? } else { mul(x, &pow_s(&a, ord - 2.0)?)? };
        let scale = zero_at(&div(&g, &pow_s(&r, ord - 1.0)?)?, &r_zero()?)?;
        mul(&scaled, &scale)?
    }))
}

/// Differentiable `linalg.vector_norm` (LinalgVectorNormBackward0: saves self and result).
pub fn vector_norm(x: &Tensor, ord: f64, dims: Option<&[i64]>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(x)])?;
    let out = vector_norm_raw(x, ord, dims, keepdim, dtype)?;
    let Some(mut rec) = rec else { return Ok(out) };
    rec.value("dim", py_opt_ints(dims));
    rec.value("keepdim", py_bool(keepdim));
    rec.value("ord", py_number(if ord.fract() == 0.0 && ord.is_finite() { Scalar::Int(ord as i64) } else { Scalar::Float(ord) }));
    rec.save("self", x)?;
    rec.save_output("result", &out, 0);
    let rd = reduced_dims(x.ndim(), dims, DimCheck::InTurn)?;
    rec.finish("LinalgVectorNormBackward0", &[&out], Box::new(move |ctx| Ok(vec![norm_backward(ctx.grad(), ctx.saved(0), ctx.saved(1), ord, &rd, keepdim)?])))?;
    Ok(out)
}

/// Differentiable `logsumexp` (LogsumexpBackward0): `grad * exp(self - result)`.
pub fn logsumexp(x: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
    let rec = Recorder::new(&[Some(x)])?;
    let out = logsumexp_raw(x, dims, keepdim)?;
    let Some(mut rec) = rec else { return Ok(out) };
    rec.value("dim", py_ints(dims));
    rec.value("keepdim", py_bool(keepdim));
    rec.save("self", x)?;
    rec.save_output("result", &out, 0);
    let rd = reduced_dims(x.ndim(), Some(dims), DimCheck::WrapAllFirst)?;
    rec.finish("LogsumexpBackward0", &[&out], Box::new(move |ctx| {
        let (x, r) = (ctx.saved(0), ctx.saved(1));
        let (g, r) = if x.ndim() != 0 { (unsqueeze_dims(ctx.grad(), &rd, keepdim)?, unsqueeze_dims(r, &rd, keepdim)?) } else { (ctx.grad().clone(), r.clone()) };
        Ok(vec![Some(fm::mul(&g, &fm::un(UnaryOp::Exp, &fm::sub(x, &r)?)?)?)])
    }))?;
    Ok(out)
}

/// Differentiable `softmax`/`log_softmax` (SoftmaxBackward0 / LogSoftmaxBackward0, saving the
/// result). With `dtype=` the input is cast first, as torch does (ToCopyBackward0 before it).
pub fn softmax(x: &Tensor, dim: i64, dtype: Option<DType>, log: bool) -> Result<Tensor> {
    crate::autograd::record::precheck(&[Some(x)])?;
    let xx = match dtype {
        Some(d) if d != x.dtype() && crate::autograd::record::should_record(&[Some(x)]) => {
            wrap_dim(dim, x.ndim())?;
            crate::ops::copy::to_dtype(x, d)?
        }
        _ => x.clone(),
    };
    let out = if xx.same_tensor(x) { softmax_raw(x, dim, dtype, log)? } else { softmax_raw(&xx, dim, None, log)? };
    if !out.dtype().is_floating() {
        return Ok(out);
    }
    let Some(mut rec) = Recorder::new(&[Some(&xx)])? else { return Ok(out) };
    rec.value("dim", dim);
    rec.save_output("result", &out, 0);
    let d = [wrap_dim(dim, out.ndim())? as i64];
    let name = if log { "LogSoftmaxBackward0" } else { "SoftmaxBackward0" };
    rec.finish(name, &[&out], Box::new(move |ctx| {
        let (g, r) = (ctx.grad(), ctx.saved(0));
        let gi = if log {
            fm::sub(g, &fm::mul(&fm::un(UnaryOp::Exp, r)?, &sum(g, Some(&d), true, None)?)?)?
        } else {
            fm::mul(r, &fm::sub(g, &sum(&fm::mul(g, r)?, Some(&d), true, None)?)?)?
        };
        Ok(vec![Some(gi)])
    }))?;
    Ok(out)
}

/// Any NaN in a float tensor (anomaly mode's check of backward results).
pub fn has_nan(t: &Tensor) -> Result<bool> {
    Ok(crate::dispatch_float!(t.dtype(), T => t.to_vec::<T>()?.iter().any(|v| v.to_f64().is_nan()), _ => false))
}

/// Helpers for the gradient tests of the ops files.
#[cfg(test)]
pub(crate) mod testing {
    use crate::autograd::meta::RequiresGradEntry;
    use crate::autograd::{run_backward, BackwardRequest};
    use crate::{DType, Result, Scalar, Tensor};

    /// A float64 leaf that requires grad.
    pub fn leaf(v: Vec<f64>, shape: &[usize]) -> Tensor {
        let t = vals(v, shape);
        t.set_requires_grad(true, RequiresGradEntry::Factory).unwrap();
        t
    }

    /// A float64 tensor (no grad).
    pub fn vals(v: Vec<f64>, shape: &[usize]) -> Tensor {
        Tensor::from_vec(v, shape).unwrap()
    }

    pub fn try_backward(out: &Tensor) -> Result<Vec<Option<Tensor>>> {
        let seed = Tensor::full(out.shape(), Scalar::Float(1.0), out.dtype())?;
        run_backward(BackwardRequest { roots: vec![(out.gradient_edge()?, seed)], inputs: &[], keep_graph: false, create_graph: false, accumulate: true })
    }

    /// `out.backward(seed)` (ones when None): leaves accumulate into `.grad`.
    pub fn backward(out: &Tensor, seed: Option<Tensor>) {
        let seed = seed.unwrap_or_else(|| Tensor::full(out.shape(), Scalar::Float(1.0), out.dtype()).unwrap());
        run_backward(BackwardRequest { roots: vec![(out.gradient_edge().unwrap(), seed)], inputs: &[], keep_graph: false, create_graph: false, accumulate: true }).unwrap();
    }

    /// `autograd.grad(out, inputs, ones, create_graph=True)`.
    pub fn grad_graph(out: &Tensor, inputs: &[&Tensor]) -> Vec<Tensor> {
        let seed = Tensor::full(out.shape(), Scalar::Float(1.0), out.dtype()).unwrap();
        let edges: Vec<_> = inputs.iter().map(|t| t.gradient_edge().unwrap()).collect();
        let r = run_backward(BackwardRequest { roots: vec![(out.gradient_edge().unwrap(), seed)], inputs: &edges, keep_graph: true, create_graph: true, accumulate: false }).unwrap();
        r.into_iter().map(|g| g.expect("a gradient reached the input")).collect()
    }

    pub fn grad(t: &Tensor) -> Vec<f64> {
        let g = t.grad().expect("a gradient was accumulated");
        assert_eq!(g.dtype(), DType::Float64);
        g.to_vec::<f64>().unwrap()
    }

    pub fn node_name(t: &Tensor) -> String {
        t.grad_fn().unwrap().expect("a grad_fn").name.to_string()
    }

    /// Deterministic values in [-2, 2] (an LCG), for gradient checks.
    pub fn values(n: usize, seed: u64) -> Vec<f64> {
        let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                ((state >> 11) as f64 / (1u64 << 53) as f64) * 4.0 - 2.0
            })
            .collect()
    }

    pub fn rand_leaf(shape: &[usize], seed: u64) -> Tensor {
        leaf(values(shape.iter().product(), seed), shape)
    }

    fn weighted_sum(out: &Tensor, w: &[f64]) -> f64 {
        crate::ops::copy::to_dtype_raw(out, DType::Float64).unwrap().to_vec::<f64>().unwrap().iter().zip(w).map(|(a, b)| a * b).sum()
    }

    fn fresh(inputs: &[Tensor], grad: bool) -> Vec<Tensor> {
        inputs.iter().map(|t| if grad { leaf(t.to_vec::<f64>().unwrap(), t.shape()) } else { vals(t.to_vec::<f64>().unwrap(), t.shape()) }).collect()
    }

    /// First-order gradients of `sum(f(xs) * w)` w.r.t. fresh leaves holding `xs` (zeros where
    /// none arrived); with `graph` they are recorded, for a second differentiation.
    fn first_grads(f: &dyn Fn(&[Tensor]) -> Result<Tensor>, xs: &[Tensor], graph: bool) -> Vec<Tensor> {
        let out = f(xs).unwrap();
        let w = Tensor::from_vec(values(out.numel(), 99), out.shape()).unwrap();
        let w = crate::ops::copy::to_dtype_raw(&w, out.dtype()).unwrap();
        let edges: Vec<_> = xs.iter().map(|t| t.gradient_edge().unwrap()).collect();
        let r = run_backward(BackwardRequest { roots: vec![(out.gradient_edge().unwrap(), w)], inputs: &edges, keep_graph: graph, create_graph: graph, accumulate: false }).unwrap();
        r.into_iter().zip(xs).map(|(g, x)| g.unwrap_or_else(|| Tensor::zeros(x.shape(), DType::Float64).unwrap())).collect()
    }

    fn assert_close(what: &str, k: usize, analytic: &[f64], numeric: &[f64]) {
        for (j, (a, n)) in analytic.iter().zip(numeric).enumerate() {
            assert!((a - n).abs() <= 1e-5 * (1.0 + n.abs()), "{}: input {} element {}: analytic {} numeric {}\n{:?}\n{:?}", what, k, j, a, n, analytic, numeric);
        }
    }

    /// d(phi)/d(inputs[k]) by central differences, element by element.
    fn central_differences(phi: &dyn Fn(&[Tensor]) -> f64, inputs: &[Tensor], k: usize) -> Vec<f64> {
        let eps = 1e-6;
        let x = &inputs[k];
        let base = x.to_vec::<f64>().unwrap();
        (0..base.len())
            .map(|j| {
                let mut xs = fresh(inputs, false);
                let mut v = base.clone();
                v[j] += eps;
                xs[k] = vals(v.clone(), x.shape());
                let up = phi(&xs);
                v[j] -= 2.0 * eps;
                xs[k] = vals(v, x.shape());
                (up - phi(&xs)) / (2.0 * eps)
            })
            .collect()
    }

    /// torch's gradcheck (and gradgradcheck when `double`): analytic gradients of
    /// `sum(f(inputs) * w)` against central differences, in float64.
    pub fn gradcheck(what: &str, f: &dyn Fn(&[Tensor]) -> Result<Tensor>, inputs: &[Tensor], double: bool) {
        let phi = |xs: &[Tensor]| {
            let out = f(xs).unwrap();
            weighted_sum(&out, &values(out.numel(), 99))
        };
        let analytic = first_grads(f, &fresh(inputs, true), false);
        for (k, x) in inputs.iter().enumerate() {
            let numeric = central_differences(&phi, inputs, k);
            assert_eq!(analytic[k].shape(), x.shape(), "{}: gradient shape", what);
            assert_close(what, k, &crate::ops::copy::to_dtype_raw(&analytic[k], DType::Float64).unwrap().to_vec::<f64>().unwrap(), &numeric);
        }
        if !double {
            return;
        }
        // Second order: d/dx of sum_k sum(grad_k * v_k), against differences of first gradients.
        let vs: Vec<Vec<f64>> = inputs.iter().enumerate().map(|(k, x)| values(x.numel(), 7 + k as u64)).collect();
        let psi = |xs: &[Tensor]| -> f64 { first_grads(f, &fresh(xs, true), false).iter().zip(&vs).map(|(g, v)| weighted_sum(g, v)).sum() };
        let xs = fresh(inputs, true);
        let gs = first_grads(f, &xs, true);
        let mut s: Option<Tensor> = None;
        for (g, v) in gs.iter().zip(&vs) {
            let term = crate::ops::reduce::sum(&crate::autograd::formulas::mul(g, &vals(v.clone(), g.shape())).unwrap(), None, false, None).unwrap();
            s = Some(match s {
                None => term,
                Some(acc) => crate::autograd::formulas::add(&acc, &term).unwrap(),
            });
        }
        let s = s.expect("inputs");
        let second: Vec<Option<Tensor>> = if s.requires_grad() {
            let edges: Vec<_> = xs.iter().map(|t| t.gradient_edge().unwrap()).collect();
            let seed = Tensor::full(&[], Scalar::Float(1.0), s.dtype()).unwrap();
            run_backward(BackwardRequest { roots: vec![(s.gradient_edge().unwrap(), seed)], inputs: &edges, keep_graph: false, create_graph: false, accumulate: false }).unwrap()
        } else {
            vec![None; xs.len()]
        };
        for (k, x) in inputs.iter().enumerate() {
            let numeric = central_differences(&psi, inputs, k);
            let a = second[k].as_ref().map_or(vec![0.0; x.numel()], |g| crate::ops::copy::to_dtype_raw(g, DType::Float64).unwrap().to_vec::<f64>().unwrap());
            assert_close(&format!("{} (second order)", what), k, &a, &numeric);
        }
    }

    pub fn close(a: &[f64], b: &[f64]) -> bool {
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= 1e-9 * (1.0 + y.abs()) || (x.is_nan() && y.is_nan()))
    }
}

#[cfg(test)]
mod grad_tests {
    use super::testing::*;
    use super::*;

    #[test]
    fn sum_mean_names_and_gradients() {
        let x = leaf(vec![1., 2., 3., 4., 5., 6.], &[2, 3]);
        let s = sum(&x, None, false, None).unwrap();
        assert_eq!(node_name(&s), "SumBackward0");
        let s1 = sum(&x, Some(&[1]), false, None).unwrap();
        assert_eq!(node_name(&s1), "SumBackward1");
        backward(&s1, Some(vals(vec![1., 2.], &[2])));
        assert_eq!(grad(&x), vec![1., 1., 1., 2., 2., 2.]);
        let m = mean(&x, Some(&[0]), true, None).unwrap();
        assert_eq!(node_name(&m), "MeanBackward1");
        x.set_grad(None);
        backward(&m, Some(vals(vec![2., 4., 6.], &[1, 3])));
        assert_eq!(grad(&x), vec![1., 2., 3., 1., 2., 3.]);
        // sum(dtype=float32) of a float64 input: the gradient comes back as float64.
        x.set_grad(None);
        let s = sum(&x, None, false, Some(DType::Float32)).unwrap();
        backward(&s, None);
        assert_eq!(grad(&x), vec![1.; 6]);
    }

    #[test]
    fn prod_with_and_without_zeros() {
        let x = leaf(vec![1., 0., 3., 0., 0., 2., 1., 2., 3.], &[3, 3]);
        let p = prod(&x, Some(1), false, None).unwrap();
        assert_eq!(node_name(&p), "ProdBackward1");
        backward(&p, None);
        assert_eq!(grad(&x), vec![0., 3., 0., 0., 0., 0., 6., 3., 2.]);
        let y = leaf(vec![2., 3., 4.], &[3]);
        let p = prod(&y, None, false, None).unwrap();
        assert_eq!(node_name(&p), "ProdBackward0");
        backward(&p, None);
        assert_eq!(grad(&y), vec![12., 8., 6.]);
        // Second derivative through a single zero: d2/dx0 dx1 of x0*x1*x2 at (0, 2, 5) is x2.
        let z = leaf(vec![0., 2., 5.], &[3]);
        let p = prod(&z, None, false, None).unwrap();
        let g = grad_graph(&p, &[&z]).remove(0);
        assert_eq!(g.to_vec::<f64>().unwrap(), vec![10., 0., 0.]);
        let gg = grad_graph(&sum(&g, None, false, None).unwrap(), &[&z]).remove(0);
        assert_eq!(gg.to_vec::<f64>().unwrap(), vec![7., 5., 2.]);
    }

    #[test]
    fn extremes_share_ties() {
        let m = leaf(vec![1., 3., 3., 2., 2., 1.], &[2, 3]);
        let a = amax(&m, &[1], false, true).unwrap();
        assert_eq!(node_name(&a), "AmaxBackward0");
        backward(&a, None);
        assert_eq!(grad(&m), vec![0., 0.5, 0.5, 0.5, 0.5, 0.]);
        m.set_grad(None);
        let a = max_all(&m, true).unwrap();
        assert_eq!(node_name(&a), "MaxBackward1");
        backward(&a, None);
        assert_eq!(grad(&m), vec![0., 0.5, 0.5, 0., 0., 0.]);
        m.set_grad(None);
        let (v, i) = max_dim(&m, 1, false, false).unwrap();
        assert_eq!(node_name(&v), "MinBackward0");
        assert!(i.grad_fn().unwrap().is_none());
        backward(&v, Some(vals(vec![5., 7.], &[2])));
        assert_eq!(grad(&m), vec![5., 0., 0., 0., 0., 7.]);
    }

    #[test]
    fn var_std_norm_logsumexp_softmax() {
        let x = leaf(vec![1., 2., 4., 7.], &[2, 2]);
        let (v, _) = var(&x, Some(&[1]), 1.0, false, false).unwrap();
        assert_eq!(node_name(&v), "VarBackward0");
        backward(&v, None);
        // 2/(n-1) * (x - mean): rows [1,2] (mean 1.5) and [4,7] (mean 5.5)
        assert_eq!(grad(&x), vec![-1., 1., -3., 3.]);
        x.set_grad(None);
        let (s, _) = var(&x, None, 0.0, false, true).unwrap();
        assert_eq!(node_name(&s), "StdBackward0");
        backward(&s, None);
        let sd = s.to_vec::<f64>().unwrap()[0];
        let want: Vec<f64> = [1., 2., 4., 7.].iter().map(|v| (v - 3.5) / (4.0 * sd)).collect();
        assert!(close(&grad(&x), &want));

        let y = leaf(vec![3., -4., 0.], &[3]);
        let n = vector_norm(&y, 2.0, None, false, None).unwrap();
        assert_eq!(node_name(&n), "LinalgVectorNormBackward0");
        backward(&n, None);
        assert!(close(&grad(&y), &[0.6, -0.8, 0.]));
        y.set_grad(None);
        backward(&vector_norm(&y, 1.0, None, false, None).unwrap(), None);
        assert_eq!(grad(&y), vec![1., -1., 0.]);
        y.set_grad(None);
        backward(&vector_norm(&y, f64::INFINITY, None, false, None).unwrap(), None);
        assert_eq!(grad(&y), vec![0., -1., 0.]);
        y.set_grad(None);
        backward(&vector_norm(&y, 3.0, None, false, None).unwrap(), None);
        let n3 = (27.0f64 + 64.0).cbrt();
        assert!(close(&grad(&y), &[9.0 / (n3 * n3), -16.0 / (n3 * n3), 0.]));
        // A zero norm gives a zero gradient.
        let z = leaf(vec![0., 0.], &[2]);
        backward(&vector_norm(&z, 2.0, None, false, None).unwrap(), None);
        assert_eq!(grad(&z), vec![0., 0.]);

        let w = leaf(vec![0., (2.0f64).ln()], &[2]);
        let l = logsumexp(&w, &[0], false).unwrap();
        assert_eq!(node_name(&l), "LogsumexpBackward0");
        backward(&l, None);
        assert!(close(&grad(&w), &[1.0 / 3.0, 2.0 / 3.0]));

        let w = leaf(vec![0., (2.0f64).ln()], &[2]);
        let s = softmax(&w, 0, None, false).unwrap();
        assert_eq!(node_name(&s), "SoftmaxBackward0");
        backward(&s, Some(vals(vec![1., 0.], &[2])));
        // d s0 / dx = s0 (e0 - s): [s0 - s0^2, -s0 s1] with s = [1/3, 2/3]
        assert!(close(&grad(&w), &[2.0 / 9.0, -2.0 / 9.0]));
        let w = leaf(vec![0., (2.0f64).ln()], &[2]);
        let s = softmax(&w, 0, None, true).unwrap();
        assert_eq!(node_name(&s), "LogSoftmaxBackward0");
        backward(&s, Some(vals(vec![1., 0.], &[2])));
        assert!(close(&grad(&w), &[2.0 / 3.0, -2.0 / 3.0]));
    }

    #[test]
    fn reductions_pass_gradcheck() {
        type F = Box<dyn Fn(&[Tensor]) -> Result<Tensor>>;
        let x = || rand_leaf(&[2, 3, 4], 1);
        let cases: Vec<(&str, F, bool)> = vec![
            ("sum", Box::new(|t| sum(&t[0], None, false, None)), true),
            ("sum dims", Box::new(|t| sum(&t[0], Some(&[0, -1]), false, None)), true),
            ("sum keepdim", Box::new(|t| sum(&t[0], Some(&[1]), true, None)), false),
            ("mean", Box::new(|t| mean(&t[0], Some(&[-1]), true, None)), false),
            ("mean all", Box::new(|t| mean(&t[0], None, false, None)), false),
            ("prod dim", Box::new(|t| prod(&t[0], Some(1), false, None)), true),
            ("prod keepdim", Box::new(|t| prod(&t[0], Some(-1), true, None)), true),
            ("prod all", Box::new(|t| prod(&t[0], None, false, None)), true),
            ("amax", Box::new(|t| amax(&t[0], &[1], false, true)), true),
            ("amin all", Box::new(|t| amax(&t[0], &[], true, false)), false),
            ("max", Box::new(|t| max_all(&t[0], true)), true),
            ("min", Box::new(|t| max_all(&t[0], false)), false),
            ("max dim", Box::new(|t| Ok(max_dim(&t[0], 2, false, true)?.0)), true),
            ("min dim keepdim", Box::new(|t| Ok(max_dim(&t[0], 0, true, false)?.0)), false),
            ("var dim", Box::new(|t| Ok(var(&t[0], Some(&[1]), 1.0, false, false)?.0)), true),
            ("var all", Box::new(|t| Ok(var(&t[0], None, 0.0, false, false)?.0)), true),
            ("var keepdim", Box::new(|t| Ok(var(&t[0], Some(&[0, 2]), 1.0, true, false)?.0)), false),
            ("std dim", Box::new(|t| Ok(var(&t[0], Some(&[-1]), 1.0, false, true)?.0)), true),
            ("std all", Box::new(|t| Ok(var(&t[0], None, 1.0, true, true)?.0)), true),
            ("norm 2", Box::new(|t| vector_norm(&t[0], 2.0, None, false, None)), true),
            ("norm 2 dim", Box::new(|t| vector_norm(&t[0], 2.0, Some(&[1]), false, None)), true),
            ("norm 1", Box::new(|t| vector_norm(&t[0], 1.0, Some(&[0, 2]), true, None)), false),
            ("norm inf", Box::new(|t| vector_norm(&t[0], f64::INFINITY, Some(&[2]), false, None)), false),
            ("norm -inf", Box::new(|t| vector_norm(&t[0], f64::NEG_INFINITY, None, false, None)), false),
            ("norm 0.5", Box::new(|t| vector_norm(&t[0], 0.5, Some(&[1]), false, None)), true),
            ("norm 1.5", Box::new(|t| vector_norm(&t[0], 1.5, None, false, None)), true),
            ("norm 3", Box::new(|t| vector_norm(&t[0], 3.0, Some(&[-1]), true, None)), true),
            ("logsumexp", Box::new(|t| logsumexp(&t[0], &[1], false)), true),
            ("logsumexp all keepdim", Box::new(|t| logsumexp(&t[0], &[0, 1, 2], true)), true),
            ("softmax", Box::new(|t| softmax(&t[0], 1, None, false)), true),
            ("log_softmax", Box::new(|t| softmax(&t[0], -1, None, true)), true),
        ];
        for (what, f, double) in &cases {
            gradcheck(what, f.as_ref(), &[x()], *double);
        }
        // prod through zeros (one and two per slice), first and second order.
        let z = leaf(vec![0., 1.5, -2., 0., 0., 3., 1., 2., -1.], &[3, 3]);
        gradcheck("prod zeros", &|t| prod(&t[0], Some(1), false, None), &[z], true);
        gradcheck("prod zeros all", &|t| prod(&t[0], None, false, None), &[leaf(vec![0., 1.5, -2., 3.], &[4])], true);
    }
}
