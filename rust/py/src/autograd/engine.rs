//! The engine entry: `backward` / `autograd.grad` from Python.

use crate::convert::tensor_of;
use crate::errors::to_py;
use crate::tensor::TensorBase;
use minigrad_core::autograd::node::Edge;
use minigrad_core::autograd::BackwardRequest;
use minigrad_core::Tensor;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use super::{call, opt_tensors};
use super::node::PyNode;

fn edge_of(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<Edge> {
    if let Ok(t) = obj.cast::<TensorBase>() {
        return t.borrow().t.gradient_edge().map_err(to_py);
    }
    // a GradientEdge(node, output_nr)
    let node = obj.getattr("node")?;
    let nr: usize = obj.getattr("output_nr")?.extract()?;
    let n = node.cast::<PyNode>()?.borrow().node()?;
    let _ = py;
    Ok(Edge { node: Some(n), input_nr: nr })
}

/// Runs backward from `tensors` with `grads` (validated by the Python side). With `inputs`,
/// returns the gradient reaching each input (autograd.grad), else accumulates into leaves.
#[pyfunction]
#[pyo3(signature = (tensors, grads, keep_graph, create_graph, inputs, accumulate))]
pub(super) fn _run_backward(py: Python<'_>, tensors: Vec<Bound<'_, PyAny>>, grads: Vec<Bound<'_, PyAny>>, keep_graph: bool, create_graph: bool, inputs: Vec<Bound<'_, PyAny>>, accumulate: bool) -> PyResult<Py<PyTuple>> {
    let mut roots = Vec::new();
    for (t, g) in tensors.iter().zip(&grads) {
        roots.push((edge_of(py, t)?, tensor_of(g, "gradient")?));
    }
    let edges: Vec<Edge> = inputs.iter().map(|i| edge_of(py, i)).collect::<PyResult<_>>()?;
    let input_tensors: Vec<Option<Tensor>> = inputs.iter().map(|i| i.cast::<TensorBase>().ok().map(|t| t.borrow().t.clone())).collect();
    let captured = call(py, move || {
        let out = minigrad_core::autograd::run_backward(BackwardRequest { roots, inputs: &edges, keep_graph, create_graph, accumulate })?;
        if accumulate {
            // backward(inputs=[non-leaf]) fills that tensor's .grad, as torch does.
            for (t, g) in input_tensors.iter().zip(&out) {
                if let (Some(t), Some(g)) = (t, g) {
                    if !t.is_leaf()? {
                        minigrad_core::autograd::engine::accumulate_into(t, g.clone())?;
                    }
                }
            }
        }
        Ok(out)
    })?;
    opt_tensors(py, &captured)
}
