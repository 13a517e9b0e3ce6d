//! Reductions and softmax: which dims, keepdim, torch's dtype rules and error texts, output
//! allocation. The element work goes through the device seam (`Backend::reduce` with a
//! `Reduction`, `Backend::softmax`); on the CPU the loops live in `kernels::reduce` (engine),
//! `kernels::reducers` and `kernels::softmax`, reached from `kernel.rs`.
//!
//! Every result is a fresh row-major tensor (torch allocates reduction outputs contiguous).
//!
//! This file holds what the family shares (the op table, dim handling, the helpers of the
//! backward formulas); each op's forward, backward formula and saves live together in one file:
//! `sum_prod.rs` (sum, mean, prod), `extremes.rs` (amax/amin, max/min, argmax/argmin),
//! `var_std.rs`, `norm.rs` (vector_norm), `logsumexp.rs`, `all_any.rs` (all, any,
//! count_nonzero) and `softmax.rs` (softmax, log_softmax). `testing.rs` has the gradient-test
//! helpers the ops files share.

use crate::dtype::{DType, Scalar};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::ops::binary;
use crate::ops::copy::to_dtype_raw;
use crate::ops::{views, Arg as OpArg};
use crate::shape::wrap_dim;
use crate::tensor::Tensor;

mod all_any;
mod extremes;
mod kernel;
mod logsumexp;
mod norm;
mod softmax;
mod sum_prod;
#[cfg(test)]
pub(crate) mod testing;
mod var_std;

pub use all_any::{all, count_nonzero};
pub use kernel::Reduction;
pub(crate) use kernel::cpu_kernel;
pub use extremes::{aminmax, amax, amax_raw, argmax, max_all, max_all_raw, max_dim, max_dim_raw};
pub use logsumexp::{logsumexp, logsumexp_raw};
pub use norm::{vector_norm, vector_norm_raw};
pub use softmax::{softmax, softmax_raw};
pub(crate) use softmax::softmax_cpu_kernel;
pub use sum_prod::{mean, mean_raw, nansum, prod, prod_raw, sum, sum_raw};
pub use var_std::{var, var_mean, var_raw};

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

/// A fresh output of a reduction of `x`: row-major, on `x`'s device.
fn new_out(x: &Tensor, shape: &[usize], dtype: DType) -> Result<Tensor> {
    Tensor::empty_on(shape, dtype, x.device())
}

/// Hands the element work of `op` over the dims set in `mask` to `x`'s device.
fn launch(op: Reduction, values: Option<&Tensor>, indices: Option<&Tensor>, x: &Tensor, mask: &[bool]) -> Result<()> {
    // On the stack for the usual ranks: small reductions are dominated by such overheads.
    let (mut buf, mut heap) = ([0usize; 16], Vec::new());
    let mut count = 0;
    for (i, _) in mask.iter().enumerate().filter(|(_, &m)| m) {
        if count < buf.len() {
            buf[count] = i;
        } else {
            if heap.is_empty() {
                heap.extend_from_slice(&buf);
            }
            heap.push(i);
        }
        count += 1;
    }
    let dims = if count <= buf.len() { &buf[..count] } else { &heap[..] };
    crate::device::backend_for(&[x])?.reduce(op, values, indices, x, dims)
}

// ----- autograd: how saved values print, pieces of the backward formulas -----

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

/// Any NaN in a float tensor (anomaly mode's check of backward results).
pub fn has_nan(t: &Tensor) -> Result<bool> {
    Ok(crate::dispatch_float!(t.dtype(), T => t.to_vec::<T>()?.iter().any(|v| v.to_f64().is_nan()), _ => false))
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
}

#[cfg(test)]
mod grad_tests {
    use super::testing::*;
    use super::*;

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
