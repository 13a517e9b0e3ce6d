//! Bindings of the fused optimizer steps (core `ops::optim`): one call per parameter group from
//! `minigrad.optim`, with the lists of parameters, gradients and state the Python step gathers.
//! The GIL is released for the whole group when it is large (`errors::run`).

use crate::convert::{tensor_of, wrap};
use crate::errors::run;
use minigrad_core::ops::optim::{adam_step, sgd_step, Adam, Sgd};
use minigrad_core::Tensor;
use pyo3::prelude::*;

fn tensors(objs: &[Bound<'_, PyAny>], what: &str) -> PyResult<Vec<Tensor>> {
    objs.iter().map(|o| tensor_of(o, what)).collect()
}

/// `torch.optim.SGD`'s step over one group; returns every parameter's momentum buffer (the
/// given ones, and those made on a first step), or None without momentum.
#[pyfunction]
#[pyo3(signature = (params, grads, momentum_buffers, lr, momentum, dampening, weight_decay, nesterov, maximize, torch_bumps))]
#[allow(clippy::too_many_arguments)]
fn _sgd_step(
    py: Python<'_>,
    params: Vec<Bound<'_, PyAny>>,
    grads: Vec<Bound<'_, PyAny>>,
    momentum_buffers: Vec<Option<Bound<'_, PyAny>>>,
    lr: f64,
    momentum: f64,
    dampening: f64,
    weight_decay: f64,
    nesterov: bool,
    maximize: bool,
    torch_bumps: bool,
) -> PyResult<Vec<Option<Py<PyAny>>>> {
    let (p, g) = (tensors(&params, "params")?, tensors(&grads, "grads")?);
    let b = momentum_buffers.iter().map(|o| o.as_ref().map(|o| tensor_of(o, "momentum_buffers")).transpose()).collect::<PyResult<Vec<_>>>()?;
    let h = Sgd { lr, momentum, dampening, weight_decay, nesterov, maximize };
    let work = p.iter().map(Tensor::numel).sum();
    let out = run(py, work, move || sgd_step(&p, &g, &b, h, torch_bumps))?;
    out.into_iter().map(|t| t.map(|t| wrap(py, t)).transpose()).collect()
}

/// `torch.optim.Adam`/`AdamW`'s step over one group (`decoupled`: AdamW's weight decay).
#[pyfunction]
#[pyo3(signature = (params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr, beta1, beta2, eps, weight_decay, amsgrad, maximize, decoupled, torch_bumps))]
#[allow(clippy::too_many_arguments)]
fn _adam_step(
    py: Python<'_>,
    params: Vec<Bound<'_, PyAny>>,
    grads: Vec<Bound<'_, PyAny>>,
    exp_avgs: Vec<Bound<'_, PyAny>>,
    exp_avg_sqs: Vec<Bound<'_, PyAny>>,
    max_exp_avg_sqs: Option<Vec<Bound<'_, PyAny>>>,
    state_steps: Vec<Bound<'_, PyAny>>,
    lr: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    weight_decay: f64,
    amsgrad: bool,
    maximize: bool,
    decoupled: bool,
    torch_bumps: bool,
) -> PyResult<()> {
    let (p, g) = (tensors(&params, "params")?, tensors(&grads, "grads")?);
    let (m, v) = (tensors(&exp_avgs, "exp_avgs")?, tensors(&exp_avg_sqs, "exp_avg_sqs")?);
    let vmax = max_exp_avg_sqs.map(|x| tensors(&x, "max_exp_avg_sqs")).transpose()?;
    let steps = tensors(&state_steps, "state_steps")?;
    let h = Adam { lr, beta1, beta2, eps, weight_decay, decoupled, amsgrad, maximize };
    let work = p.iter().map(Tensor::numel).sum();
    run(py, work, move || adam_step(&p, &g, &m, &v, vmax.as_deref(), &steps, h, torch_bumps))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_sgd_step, m)?)?;
    m.add_function(wrap_pyfunction!(_adam_step, m)?)?;
    Ok(())
}
