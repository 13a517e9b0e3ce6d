//! `_C` entry points for normalization, embedding and losses (`nn/_functional/norm.py`,
//! `loss.py`). Python checks argument kinds and torch's Python-level rules; these parse
//! tensors, release the GIL for large inputs and convert errors.

use crate::convert::{tensor_of, wrap};
use crate::errors::run;
use minigrad_core::ops::loss::{self, Reduction};
use minigrad_core::ops::{embedding as emb, norm};
use minigrad_core::Tensor;
use pyo3::prelude::*;

fn opt(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Tensor>> {
    match obj {
        Some(o) if !o.is_none() => Ok(Some(tensor_of(o, what)?)),
        _ => Ok(None),
    }
}

fn reduction(s: &str) -> PyResult<Reduction> {
    Reduction::parse(s).map_err(crate::errors::to_py)
}

#[pyfunction]
#[pyo3(signature = (input, running_mean, running_var, weight, bias, training, momentum, eps))]
#[allow(clippy::too_many_arguments)]
pub fn batch_norm(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    running_mean: Option<&Bound<'_, PyAny>>,
    running_var: Option<&Bound<'_, PyAny>>,
    weight: Option<&Bound<'_, PyAny>>,
    bias: Option<&Bound<'_, PyAny>>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> PyResult<Py<PyAny>> {
    let x = tensor_of(input, "input")?;
    let (rm, rv) = (opt(running_mean, "running_mean")?, opt(running_var, "running_var")?);
    let (w, b) = (opt(weight, "weight")?, opt(bias, "bias")?);
    let out = run(py, x.numel(), || norm::batch_norm(&x, rm.as_ref(), rv.as_ref(), w.as_ref(), b.as_ref(), training, momentum, eps))?;
    wrap(py, out)
}

#[pyfunction]
#[pyo3(signature = (input, normalized_shape, weight, bias, eps))]
pub fn layer_norm(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    normalized_shape: Vec<usize>,
    weight: Option<&Bound<'_, PyAny>>,
    bias: Option<&Bound<'_, PyAny>>,
    eps: f64,
) -> PyResult<Py<PyAny>> {
    let x = tensor_of(input, "input")?;
    let (w, b) = (opt(weight, "weight")?, opt(bias, "bias")?);
    let out = run(py, x.numel(), || norm::layer_norm(&x, &normalized_shape, w.as_ref(), b.as_ref(), eps))?;
    wrap(py, out)
}

#[pyfunction]
pub fn embedding(py: Python<'_>, weight: &Bound<'_, PyAny>, indices: &Bound<'_, PyAny>, padding_idx: i64, scale_grad_by_freq: bool, sparse: bool) -> PyResult<Py<PyAny>> {
    let (w, i) = (tensor_of(weight, "weight")?, tensor_of(indices, "indices")?);
    let out = run(py, i.numel(), || emb::embedding(&w, &i, padding_idx, scale_grad_by_freq, sparse))?;
    wrap(py, out)
}

#[pyfunction]
pub fn embedding_renorm_(py: Python<'_>, weight: &Bound<'_, PyAny>, indices: &Bound<'_, PyAny>, max_norm: f64, norm_type: f64) -> PyResult<()> {
    let (w, i) = (tensor_of(weight, "weight")?, tensor_of(indices, "indices")?);
    run(py, i.numel(), || emb::embedding_renorm_(&w, &i, max_norm, norm_type))
}

/// mse_loss, l1_loss, smooth_l1_loss (`param`: beta), huber_loss (`param`: delta): `op` names
/// the loss.
#[pyfunction]
#[pyo3(signature = (op, input, target, reduction_, param=1.0))]
pub fn pointwise_loss(py: Python<'_>, op: &str, input: &Bound<'_, PyAny>, target: &Bound<'_, PyAny>, reduction_: &str, param: f64) -> PyResult<Py<PyAny>> {
    let r = reduction(reduction_)?;
    let (x, t) = (tensor_of(input, "input")?, tensor_of(target, "target")?);
    let out = match op {
        "mse_loss" => run(py, x.numel(), || loss::mse_loss(&x, &t, r))?,
        "smooth_l1_loss" => run(py, x.numel(), || loss::robust_loss(loss::Robust::SmoothL1 { beta: param }, &x, &t, r))?,
        "huber_loss" => run(py, x.numel(), || loss::robust_loss(loss::Robust::Huber { delta: param }, &x, &t, r))?,
        _ => run(py, x.numel(), || loss::l1_loss(&x, &t, r))?,
    };
    wrap(py, out)
}

#[pyfunction]
#[pyo3(signature = (input, target, weight, reduction_, ignore_index))]
pub fn nll_loss(py: Python<'_>, input: &Bound<'_, PyAny>, target: &Bound<'_, PyAny>, weight: Option<&Bound<'_, PyAny>>, reduction_: &str, ignore_index: i64) -> PyResult<Py<PyAny>> {
    let r = reduction(reduction_)?;
    let (x, t, w) = (tensor_of(input, "input")?, tensor_of(target, "target")?, opt(weight, "weight")?);
    let out = run(py, x.numel(), || loss::nll_loss(&x, &t, w.as_ref(), r, ignore_index))?;
    wrap(py, out)
}

#[pyfunction]
#[pyo3(signature = (input, target, weight, reduction_, ignore_index, label_smoothing))]
pub fn cross_entropy(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    reduction_: &str,
    ignore_index: i64,
    label_smoothing: f64,
) -> PyResult<Py<PyAny>> {
    let r = reduction(reduction_)?;
    let (x, t, w) = (tensor_of(input, "input")?, tensor_of(target, "target")?, opt(weight, "weight")?);
    let out = run(py, x.numel(), || loss::cross_entropy(&x, &t, w.as_ref(), r, ignore_index, label_smoothing))?;
    wrap(py, out)
}

#[pyfunction]
#[pyo3(signature = (input, target, weight, reduction_))]
pub fn binary_cross_entropy(py: Python<'_>, input: &Bound<'_, PyAny>, target: &Bound<'_, PyAny>, weight: Option<&Bound<'_, PyAny>>, reduction_: &str) -> PyResult<Py<PyAny>> {
    let r = reduction(reduction_)?;
    let (x, t, w) = (tensor_of(input, "input")?, tensor_of(target, "target")?, opt(weight, "weight")?);
    let out = run(py, x.numel(), || loss::binary_cross_entropy(&x, &t, w.as_ref(), r))?;
    wrap(py, out)
}

#[pyfunction]
#[pyo3(signature = (input, target, weight, pos_weight, reduction_))]
pub fn binary_cross_entropy_with_logits(
    py: Python<'_>,
    input: &Bound<'_, PyAny>,
    target: &Bound<'_, PyAny>,
    weight: Option<&Bound<'_, PyAny>>,
    pos_weight: Option<&Bound<'_, PyAny>>,
    reduction_: &str,
) -> PyResult<Py<PyAny>> {
    let r = reduction(reduction_)?;
    let (x, t) = (tensor_of(input, "input")?, tensor_of(target, "target")?);
    let (w, pw) = (opt(weight, "weight")?, opt(pos_weight, "pos_weight")?);
    let out = run(py, x.numel(), || loss::binary_cross_entropy_with_logits(&x, &t, w.as_ref(), pw.as_ref(), r))?;
    wrap(py, out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(batch_norm, m)?)?;
    m.add_function(wrap_pyfunction!(layer_norm, m)?)?;
    m.add_function(wrap_pyfunction!(embedding, m)?)?;
    m.add_function(wrap_pyfunction!(embedding_renorm_, m)?)?;
    m.add_function(wrap_pyfunction!(pointwise_loss, m)?)?;
    m.add_function(wrap_pyfunction!(nll_loss, m)?)?;
    m.add_function(wrap_pyfunction!(cross_entropy, m)?)?;
    m.add_function(wrap_pyfunction!(binary_cross_entropy, m)?)?;
    m.add_function(wrap_pyfunction!(binary_cross_entropy_with_logits, m)?)?;
    Ok(())
}
