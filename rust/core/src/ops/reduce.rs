//! Reductions and softmax: which dims, keepdim, torch's dtype rules and error texts, output
//! allocation. The loops live in `kernels::reduce` (engine), `kernels::reducers` and
//! `kernels::softmax`.
//!
//! Every result is a fresh row-major tensor (torch allocates reduction outputs contiguous).

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
    Ok(sum_prod::<false>(x, &mask, keepdim, out_dtype, false))
}

/// `prod()` or `prod(dim, keepdim)`, with sum's dtype rule.
pub fn prod_raw(x: &Tensor, dim: Option<i64>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    let dims: Option<Vec<i64>> = dim.map(|d| vec![d]);
    let mask = dim_mask(dims.as_deref(), x.ndim(), true, DimCheck::WrapAllFirst)?;
    let out_dtype = dtype.unwrap_or(if x.dtype().is_integral(true) { DType::Int64 } else { x.dtype() });
    Ok(sum_prod::<true>(x, &mask, keepdim && dim.is_some(), out_dtype, false))
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
    Ok(sum_prod::<false>(x, &mask, keepdim, d, true))
}

fn sum_prod<const PROD: bool>(x: &Tensor, mask: &[bool], keepdim: bool, out_dtype: DType, is_mean: bool) -> Tensor {
    let out = Tensor::empty(&reduced_shape(x.shape(), mask, keepdim), out_dtype);
    let div = is_mean.then(|| reduced_numel(x.shape(), mask) as f64);
    dispatch!(x.dtype(), T => dispatch!(out_dtype, D => {
        run(SumProd::<T, D, PROD>::new(out_ptr::<D>(&out), div), x, mask)
    }));
    out
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
    Ok(extreme(x, &mask, keepdim, is_max))
}

/// `max()` / `min()` of every element: a 0-d tensor.
pub fn max_all_raw(x: &Tensor, is_max: bool) -> Result<Tensor> {
    let op = if is_max { ReduceOp::Max } else { ReduceOp::Min };
    zero_numel_check(x, &[], op.name())?;
    Ok(extreme(x, &vec![true; x.ndim()], false, is_max))
}

fn extreme(x: &Tensor, mask: &[bool], keepdim: bool, is_max: bool) -> Tensor {
    let out = Tensor::empty(&reduced_shape(x.shape(), mask, keepdim), x.dtype());
    dispatch!(x.dtype(), T => {
        let p = out_ptr::<T>(&out);
        if is_max { run(Extreme::<T, true> { out: SendPtr(p) }, x, mask) }
        else { run(Extreme::<T, false> { out: SendPtr(p) }, x, mask) }
    });
    out
}

/// `max(dim, keepdim)` / `min`: (values, indices) of the first extreme element (or first NaN).
pub fn max_dim_raw(x: &Tensor, dim: i64, keepdim: bool, is_max: bool) -> Result<(Tensor, Tensor)> {
    let op = if is_max { ReduceOp::Max } else { ReduceOp::Min };
    let w = wrap_dim(dim, x.ndim())?;
    zero_numel_check(x, &[w as i64], op.name())?;
    let mask = dim_mask(Some(&[dim]), x.ndim(), true, DimCheck::WrapAllFirst)?;
    let shape = reduced_shape(x.shape(), &mask, keepdim);
    let (values, indices) = (Tensor::empty(&shape, x.dtype()), Tensor::empty(&shape, DType::Int64));
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
            let indices = Tensor::empty(&reduced_shape(x.shape(), &mask, keepdim), DType::Int64);
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
            let c = contiguous_raw(x);
            let flat = c.view_as_layout(Layout { shape: vec![c.numel()], strides: vec![1], offset: c.layout.offset });
            let shape = if keepdim { vec![1; x.ndim()] } else { vec![] };
            let indices = Tensor::empty(&shape, DType::Int64);
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
    let out = Tensor::empty(&reduced_shape(x.shape(), &mask, keepdim), x.dtype());
    let n = reduced_numel(x.shape(), &mask);
    let out_numel = out.numel();
    let per_output = x.numel().checked_div(out_numel).unwrap_or(0);
    let warn = per_output as f64 - correction <= 0.0;
    if x.numel() == 0 {
        crate::kernels::fill::fill(&out, crate::Scalar::Float(f64::NAN));
        return Ok((out, warn));
    }
    dispatch_float!(x.dtype(), T => {
        let mut means = vec![0.0f64; out_numel];
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
    let out = Tensor::empty(&reduced_shape(x.shape(), &mask, keepdim), out_dtype);
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
    let x = if x.dtype().is_floating() { x.clone() } else { cast_input(x, DType::Float32) };
    let mask = dim_mask(Some(dims), x.ndim(), true, DimCheck::WrapAllFirst)?;
    if dims.is_empty() && x.numel() != 0 && x.ndim() > 0 && !keepdim {
        // torch adds the kept-dim maxima ([1, ..., 1]) in place into the 0-d sum and fails.
        return Err(Error::Runtime(format!(
            "output with shape [] doesn't match the broadcast shape {}",
            crate::error::fmt_shape(&vec![1; x.ndim()])
        )));
    }
    let out = Tensor::empty(&reduced_shape(x.shape(), &mask, keepdim), x.dtype());
    let out_numel = out.numel();
    dispatch_float!(x.dtype(), T => {
        // Shift by each output's max, except where it is infinite (torch masks those to 0).
        let shifts: Vec<f64> = if x.numel() == 0 {
            vec![0.0; out_numel]
        } else {
            let mut maxes = vec![T::zero(); out_numel];
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
    let out = Tensor::empty(&reduced_shape(x.shape(), &mask, keepdim), DType::Bool);
    let p = out_ptr::<bool>(&out);
    dispatch!(x.dtype(), T => {
        if is_all { run(AllAny::<T, true>::new(p), x, &mask) } else { run(AllAny::<T, false>::new(p), x, &mask) }
    });
    Ok(out)
}

/// `count_nonzero(dim=None)`: int64 counts; dim=() counts everything.
pub fn count_nonzero(x: &Tensor, dims: Option<&[i64]>) -> Result<Tensor> {
    let mask = dim_mask(dims, x.ndim(), true, DimCheck::WrapAllFirst)?;
    let out = Tensor::empty(&reduced_shape(x.shape(), &mask, false), DType::Int64);
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
        Some(d) => cast_input(x, d),
        None => x.clone(),
    };
    let out = Tensor::empty(x.shape(), x.dtype());
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
    let src = contiguous_raw(&x);
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
        assert_eq!(mean_raw(&i, None, false, Some(DType::Float64)).unwrap().to_vec::<f64>(), vec![2.5]);
        assert!(var_raw(&i, None, 1.0, false, false).is_err());
        assert!(argmax(&t(vec![true], &[1]), None, false, true).is_err());
    }

    #[test]
    fn values_along_each_dim() {
        let x = t(vec![1.0f32, 5.0, 3.0, 4.0, 2.0, 6.0], &[2, 3]);
        assert_eq!(sum_raw(&x, Some(&[0]), false, None).unwrap().to_vec::<f32>(), vec![5.0, 7.0, 9.0]);
        assert_eq!(sum_raw(&x, Some(&[1]), false, None).unwrap().to_vec::<f32>(), vec![9.0, 12.0]);
        assert_eq!(prod_raw(&x, Some(1), false, None).unwrap().to_vec::<f32>(), vec![15.0, 48.0]);
        let (v, i) = max_dim_raw(&x, 1, false, true).unwrap();
        assert_eq!((v.to_vec::<f32>(), i.to_vec::<i64>()), (vec![5.0, 6.0], vec![1, 2]));
        assert_eq!(argmax(&x, None, false, false).unwrap().to_vec::<i64>(), vec![0]);
        let xt = crate::ops::views::transpose_raw(&x, 0, 1).unwrap();
        assert_eq!(argmax(&xt, None, false, true).unwrap().to_vec::<i64>(), vec![5]);
        let (v, _) = var_raw(&x, Some(&[1]), 1.0, false, false).unwrap();
        assert_eq!(v.to_vec::<f32>(), vec![4.0, 4.0]);
        let n = vector_norm_raw(&x, 1.0, None, false, None).unwrap();
        assert_eq!(n.to_vec::<f32>(), vec![21.0]);
    }

    #[test]
    fn empty_and_zero_dim() {
        let e = Tensor::zeros(&[0, 3], DType::Float32);
        assert_eq!(sum_raw(&e, Some(&[0]), false, None).unwrap().to_vec::<f32>(), vec![0.0; 3]);
        assert!(mean_raw(&e, None, false, None).unwrap().to_vec::<f32>()[0].is_nan());
        assert_eq!(
            max_all_raw(&e, true).unwrap_err().to_string(),
            "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the 'dim' argument."
        );
        assert!(matches!(amax_raw(&e, &[-2], false, true).unwrap_err(), Error::Index(m) if m.contains("dim -2")));
        let s = Tensor::scalar(crate::Scalar::Float(3.0), DType::Float32);
        let (v, i) = max_dim_raw(&s, -1, true, true).unwrap();
        assert_eq!((v.shape().len(), i.to_vec::<i64>()), (0, vec![0]));
        assert_eq!(softmax_raw(&s, 0, None, false).unwrap().to_vec::<f32>(), vec![1.0]);
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

// ----- autograd (differentiable entry points; formulas to be filled in beside each op) -----

pub fn sum(x: &Tensor, dims: Option<&[i64]>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    sum_raw(x, dims, keepdim, dtype)
}

pub fn prod(x: &Tensor, dim: Option<i64>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    prod_raw(x, dim, keepdim, dtype)
}

pub fn mean(x: &Tensor, dims: Option<&[i64]>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    mean_raw(x, dims, keepdim, dtype)
}

pub fn amax(x: &Tensor, dims: &[i64], keepdim: bool, is_max: bool) -> Result<Tensor> {
    amax_raw(x, dims, keepdim, is_max)
}

pub fn max_all(x: &Tensor, is_max: bool) -> Result<Tensor> {
    max_all_raw(x, is_max)
}

pub fn max_dim(x: &Tensor, dim: i64, keepdim: bool, is_max: bool) -> Result<(Tensor, Tensor)> {
    max_dim_raw(x, dim, keepdim, is_max)
}

pub fn var(x: &Tensor, dims: Option<&[i64]>, correction: f64, keepdim: bool, sqrt: bool) -> Result<(Tensor, bool)> {
    var_raw(x, dims, correction, keepdim, sqrt)
}

pub fn vector_norm(x: &Tensor, ord: f64, dims: Option<&[i64]>, keepdim: bool, dtype: Option<DType>) -> Result<Tensor> {
    vector_norm_raw(x, ord, dims, keepdim, dtype)
}

pub fn logsumexp(x: &Tensor, dims: &[i64], keepdim: bool) -> Result<Tensor> {
    logsumexp_raw(x, dims, keepdim)
}

pub fn softmax(x: &Tensor, dim: i64, dtype: Option<DType>, log: bool) -> Result<Tensor> {
    softmax_raw(x, dim, dtype, log)
}

/// Any NaN in a float tensor (anomaly mode's check of backward results).
pub fn has_nan(t: &Tensor) -> bool {
    crate::dispatch_float!(t.dtype(), T => t.to_vec::<T>().iter().any(|v| v.to_f64().is_nan()), _ => false)
}
