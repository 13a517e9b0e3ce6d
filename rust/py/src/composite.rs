//! `_C` entry points for the ops the core composes from other ops: flip, roll, tril/triu,
//! repeat/tile, sgn, nan_to_num, trace/diag/diag_embed, addcmul/addcdiv, lerp, einsum, addmm_,
//! bincount, histc, unique. The Python wrappers
//! (`_ops/shaping.py`, `_ops/fused.py`, `_ops/einsum.py`, `_ops/linalg.py`) check argument
//! kinds with torch's TypeErrors; these parse, release the GIL for large work, and return the
//! very `self` object from in-place variants.

use crate::convert::{tensor_of, to_scalar, wrap};
use crate::errors::{run, type_err};
use crate::tensor::TensorBase;
use minigrad_core::ops::fused::{self, Addc};
use minigrad_core::ops::diag as dg;
use minigrad_core::ops::nan_to_num::{self as ntn, Replacements};
use minigrad_core::ops::{einsum as es, linalg, sgn as sg, shape_ops, Arg};
use minigrad_core::{Scalar, Tensor};
use pyo3::prelude::*;
use pyo3::types::PySequence;

fn value(x: &Bound<'_, TensorBase>) -> Tensor {
    x.borrow().t.clone()
}

fn this(x: &Bound<'_, TensorBase>) -> Py<PyAny> {
    x.clone().into_any().unbind()
}

fn number(v: &Bound<'_, PyAny>, what: &str) -> PyResult<Scalar> {
    to_scalar(v)?.ok_or_else(|| type_err(format!("{} must be a number", what)))
}

#[pyfunction]
pub fn flip(py: Python<'_>, x: &Bound<'_, TensorBase>, dims: Vec<i64>) -> PyResult<Py<PyAny>> {
    let t = value(x);
    let out = run(py, t.numel(), move || shape_ops::flip(&t, &dims))?;
    wrap(py, out)
}

/// `bincount(self, weights=None, minlength=0)`.
#[pyfunction]
pub fn bincount(py: Python<'_>, x: &Bound<'_, TensorBase>, weights: Option<&Bound<'_, PyAny>>, minlength: i64) -> PyResult<Py<PyAny>> {
    let t = value(x);
    let w = weights.map(|w| tensor_of(w, "weights")).transpose()?;
    let out = run(py, t.numel(), move || minigrad_core::ops::histograms::bincount(&t, w.as_ref(), minlength))?;
    wrap(py, out)
}

/// `unique` / `unique_consecutive` (over `dim`, or all elements): (values, inverse, counts).
#[pyfunction]
pub fn unique(py: Python<'_>, x: &Bound<'_, TensorBase>, dim: Option<i64>, consecutive: bool) -> PyResult<(Py<PyAny>, Py<PyAny>, Py<PyAny>)> {
    let t = value(x);
    let u = run(py, t.numel(), move || minigrad_core::ops::unique::unique(&t, dim, consecutive))?;
    Ok((wrap(py, u.values)?, wrap(py, u.inverse)?, wrap(py, u.counts)?))
}

/// `histc(self, bins, min, max)`.
#[pyfunction]
pub fn histc(py: Python<'_>, x: &Bound<'_, TensorBase>, bins: i64, min: f64, max: f64) -> PyResult<Py<PyAny>> {
    let t = value(x);
    let out = run(py, t.numel(), move || minigrad_core::ops::histograms::histc(&t, bins, min, max))?;
    wrap(py, out)
}

#[pyfunction]
pub fn rot90(py: Python<'_>, x: &Bound<'_, TensorBase>, k: i64, dims: Vec<i64>) -> PyResult<Py<PyAny>> {
    let t = value(x);
    let out = run(py, t.numel(), move || shape_ops::rot90(&t, k, &dims))?;
    wrap(py, out)
}

#[pyfunction]
pub fn roll(py: Python<'_>, x: &Bound<'_, TensorBase>, shifts: Vec<i64>, dims: Vec<i64>) -> PyResult<Py<PyAny>> {
    let t = value(x);
    let out = run(py, t.numel(), move || shape_ops::roll(&t, &shifts, &dims))?;
    wrap(py, out)
}

/// `tril` / `triu` (`upper`), out of place or in place.
#[pyfunction]
pub fn tri(py: Python<'_>, x: &Bound<'_, TensorBase>, diagonal: i64, upper: bool, inplace: bool) -> PyResult<Py<PyAny>> {
    let t = value(x);
    if inplace {
        run(py, t.numel(), move || shape_ops::tri_(&t, diagonal, upper))?;
        return Ok(this(x));
    }
    let out = run(py, t.numel(), move || shape_ops::tri(&t, diagonal, upper))?;
    wrap(py, out)
}

/// `repeat(repeats)`, or `tile(dims)` when `tile`.
#[pyfunction]
pub fn repeat(py: Python<'_>, x: &Bound<'_, TensorBase>, repeats: Vec<i64>, tile: bool) -> PyResult<Py<PyAny>> {
    let t = value(x);
    let out = run(py, t.numel(), move || if tile { shape_ops::tile(&t, &repeats) } else { shape_ops::repeat(&t, &repeats) })?;
    wrap(py, out)
}

#[pyfunction]
pub fn sgn(py: Python<'_>, x: &Bound<'_, TensorBase>, inplace: bool) -> PyResult<Py<PyAny>> {
    let t = value(x);
    if inplace {
        run(py, t.numel(), move || sg::sgn_(&t))?;
        return Ok(this(x));
    }
    let out = run(py, t.numel(), move || sg::sgn(&t))?;
    wrap(py, out)
}

/// `nan_to_num(nan, posinf, neginf)`, out of place or in place (the numbers already parsed as
/// floats by the Python wrapper).
#[pyfunction]
#[pyo3(signature = (x, nan, posinf, neginf, inplace))]
pub fn nan_to_num(py: Python<'_>, x: &Bound<'_, TensorBase>, nan: f64, posinf: Option<f64>, neginf: Option<f64>, inplace: bool) -> PyResult<Py<PyAny>> {
    let (t, r) = (value(x), Replacements { nan, posinf, neginf });
    if inplace {
        run(py, t.numel(), move || ntn::nan_to_num_(&t, r))?;
        return Ok(this(x));
    }
    let out = run(py, t.numel(), move || ntn::nan_to_num(&t, r))?;
    wrap(py, out)
}

/// `logit(eps)`, out of place or in place (`eps` already parsed by the Python wrapper).
#[pyfunction]
pub fn logit(py: Python<'_>, x: &Bound<'_, TensorBase>, eps: Option<f64>, inplace: bool) -> PyResult<Py<PyAny>> {
    let t = value(x);
    if inplace {
        run(py, t.numel(), move || minigrad_core::ops::logit::logit_(&t, eps))?;
        return Ok(this(x));
    }
    let out = run(py, t.numel(), move || minigrad_core::ops::logit::logit(&t, eps))?;
    wrap(py, out)
}

/// `trace` / `diag` / `diag_embed` (`op`), their ints already parsed by the Python wrapper.
#[pyfunction]
#[pyo3(signature = (x, op, offset=0, dim1=0, dim2=1))]
pub fn diag_op(py: Python<'_>, x: &Bound<'_, TensorBase>, op: &str, offset: i64, dim1: i64, dim2: i64) -> PyResult<Py<PyAny>> {
    let t = value(x);
    let out = match op {
        "trace" => run(py, t.numel(), move || dg::trace(&t))?,
        "diag" => run(py, t.numel(), move || dg::diag(&t, offset))?,
        "diag_embed" => run(py, t.numel(), move || dg::diag_embed(&t, offset, dim1, dim2))?,
        _ => return Err(type_err(format!("unknown diagonal op {}", op))),
    };
    wrap(py, out)
}

/// `addcmul` / `addcdiv` (`op`), out of place or in place.
#[pyfunction]
pub fn addc(py: Python<'_>, x: &Bound<'_, TensorBase>, t1: &Bound<'_, PyAny>, t2: &Bound<'_, PyAny>, value_: &Bound<'_, PyAny>, op: &str, inplace: bool) -> PyResult<Py<PyAny>> {
    let op = if op == "addcdiv" { Addc::Div } else { Addc::Mul };
    let (t, a, b) = (value(x), tensor_of(t1, "tensor1")?, tensor_of(t2, "tensor2")?);
    let v = number(value_, "value")?;
    let work = t.numel().max(a.numel()).max(b.numel());
    if inplace {
        run(py, work, move || fused::addc_(op, &t, &a, &b, v))?;
        return Ok(this(x));
    }
    let out = run(py, work, move || fused::addc(op, &t, &a, &b, v))?;
    wrap(py, out)
}

/// `lerp(end, weight)` with a tensor or number weight, out of place or in place.
#[pyfunction]
pub fn lerp(py: Python<'_>, x: &Bound<'_, TensorBase>, end: &Bound<'_, PyAny>, weight: &Bound<'_, PyAny>, inplace: bool) -> PyResult<Py<PyAny>> {
    let (t, e) = (value(x), tensor_of(end, "end")?);
    let w = match weight.cast::<TensorBase>() {
        Ok(w) => Arg::Tensor(w.borrow().t.clone()),
        Err(_) => Arg::Scalar(number(weight, "weight")?),
    };
    let work = t.numel().max(e.numel());
    if inplace {
        run(py, work, move || fused::lerp_(&t, &e, &w))?;
        return Ok(this(x));
    }
    let out = run(py, work, move || fused::lerp(&t, &e, &w))?;
    wrap(py, out)
}

#[pyfunction]
pub fn einsum(py: Python<'_>, equation: &str, operands: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let seq = operands.cast::<PySequence>().map_err(|_| type_err("einsum(): operands must be a sequence of Tensors"))?;
    let ts: Vec<Tensor> = seq.try_iter()?.map(|t| tensor_of(&t?, "operand")).collect::<PyResult<_>>()?;
    let work = ts.iter().map(|t| t.numel()).sum();
    let eq = equation.to_string();
    let out = run(py, work, move || es::einsum(&eq, &ts))?;
    wrap(py, out)
}

/// `self.addmm_(mat1, mat2, *, beta=1, alpha=1)`.
#[pyfunction]
pub fn addmm_(py: Python<'_>, x: &Bound<'_, TensorBase>, mat1: &Bound<'_, PyAny>, mat2: &Bound<'_, PyAny>, beta: &Bound<'_, PyAny>, alpha: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let (t, a, b) = (value(x), tensor_of(mat1, "mat1")?, tensor_of(mat2, "mat2")?);
    let (beta, alpha) = (number(beta, "addmm_(): beta")?, number(alpha, "addmm_(): alpha")?);
    let work = a.numel().max(b.numel());
    run(py, work, move || linalg::addmm_(&t, &a, &b, beta, alpha))?;
    Ok(this(x))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(flip, m)?)?;
    m.add_function(wrap_pyfunction!(roll, m)?)?;
    m.add_function(wrap_pyfunction!(rot90, m)?)?;
    m.add_function(wrap_pyfunction!(bincount, m)?)?;
    m.add_function(wrap_pyfunction!(histc, m)?)?;
    m.add_function(wrap_pyfunction!(unique, m)?)?;
    m.add_function(wrap_pyfunction!(tri, m)?)?;
    m.add_function(wrap_pyfunction!(repeat, m)?)?;
    m.add_function(wrap_pyfunction!(sgn, m)?)?;
    m.add_function(wrap_pyfunction!(nan_to_num, m)?)?;
    m.add_function(wrap_pyfunction!(logit, m)?)?;
    m.add_function(wrap_pyfunction!(diag_op, m)?)?;
    m.add_function(wrap_pyfunction!(addc, m)?)?;
    m.add_function(wrap_pyfunction!(lerp, m)?)?;
    m.add_function(wrap_pyfunction!(einsum, m)?)?;
    m.add_function(wrap_pyfunction!(addmm_, m)?)?;
    Ok(())
}
