//! Helpers for the gradient tests of the ops files.

use crate::autograd::RequiresGradEntry;
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
        let term = crate::ops::reduce::sum(&crate::ops::formulas::mul(g, &vals(v.clone(), g.shape())).unwrap(), None, false, None).unwrap();
        s = Some(match s {
            None => term,
            Some(acc) => crate::ops::formulas::add(&acc, &term).unwrap(),
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
