//! Custom `autograd.Function`: the node whose backward calls Python, and recording a call.

use crate::convert::wrap;
use crate::errors::to_py;
use crate::tensor::TensorBase;
use minigrad_core::autograd::meta::CreationMeta;
use minigrad_core::autograd::node::{Backward, Body, Edge, InputMeta, Node};
use minigrad_core::autograd::saved::{PackedTensor, SavedTensor};
use minigrad_core::autograd::mode;
use minigrad_core::Tensor;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::any::Any;
use std::sync::Arc;
use super::{from_opt_tensors, opt_tensors, stash};
use super::node::{NodeLink, PyNode};

/// The node of a custom Function: its backward calls `ctx._call_backward(*grads)`.
struct PyFunctionBody {
    ctx: Py<PyAny>,
    saved: Vec<(&'static str, SavedTensor)>,
    released: bool,
}

impl Backward for PyFunctionBody {
    fn apply(&mut self, node: &Node, grads: Vec<Option<Tensor>>) -> minigrad_core::Result<Vec<Option<Tensor>>> {
        // The body lock is held while this runs, so `ctx.saved_tensors` cannot reach back into
        // the node: the saved tensors are unpacked (version-checked) and handed over first.
        let saved = self.saved.iter().map(|(_, s)| s.unpack(node)).collect::<minigrad_core::Result<Vec<_>>>()?;
        Python::attach(|py| {
            let g = opt_tensors(py, &grads).map_err(stash)?;
            let saved: Vec<Option<Tensor>> = saved.into_iter().map(Some).collect();
            let saved = opt_tensors(py, &saved).map_err(stash)?;
            let r = self.ctx.bind(py).call_method1("_call_backward", (g, saved)).map_err(stash)?;
            from_opt_tensors(&r).map_err(stash)
        })
    }
    fn release(&mut self) {
        for (_, s) in &mut self.saved {
            s.release();
        }
        self.released = true;
    }
    fn saved(&self) -> Vec<(&'static str, &SavedTensor)> {
        self.saved.iter().map(|(n, s)| (*n, s)).collect()
    }
    fn link_producer(&mut self, node: &Arc<Node>) {
        for (_, s) in &mut self.saved {
            s.set_producer(node);
        }
    }
    fn install_packed(&mut self, i: usize, p: PackedTensor) {
        if let Some((_, s)) = self.saved.get_mut(i) {
            s.install(p);
        }
    }
    fn saved_mut(&mut self) -> Vec<(&'static str, &mut SavedTensor)> {
        self.saved.iter_mut().map(|(n, s)| (*n, s)).collect()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Records a custom Function call after its forward ran (under no_grad): `ctx` becomes the
/// node's Python object; outputs join the graph; dirty inputs are rebased (R27); outputs that
/// are inputs or views of inputs may not be modified in place later (R43).
#[pyfunction]
#[pyo3(signature = (ctx, name, inputs, outputs, dirty, non_differentiable, to_save))]
pub(super) fn _record_function(
    py: Python<'_>,
    ctx: &Bound<'_, PyNode>,
    name: String,
    inputs: Vec<Bound<'_, PyAny>>,
    outputs: Vec<Bound<'_, PyAny>>,
    dirty: Vec<Bound<'_, PyAny>>,
    non_differentiable: Vec<Bound<'_, PyAny>>,
    to_save: Vec<Bound<'_, PyAny>>,
) -> PyResult<Py<PyList>> {
    let tensor = |o: &Bound<'_, PyAny>| o.cast::<TensorBase>().ok().map(|t| t.borrow().t.clone());
    let ins: Vec<Option<Tensor>> = inputs.iter().map(tensor).collect();
    let outs: Vec<Option<Tensor>> = outputs.iter().map(tensor).collect();
    let dirty_ts: Vec<Tensor> = dirty.iter().filter_map(tensor).collect();
    let nondiff: Vec<Tensor> = non_differentiable.iter().filter_map(tensor).collect();
    let is_in = |t: &Tensor, set: &[Tensor]| set.iter().any(|d| d.same_tensor(t));
    let record = mode::is_grad_enabled() && ins.iter().flatten().any(|t| t.requires_grad());

    // Dirty inputs: the leaf check (R27's wording), then the extra bump of mark_dirty.
    for d in &dirty_ts {
        if record && d.requires_grad() && d.is_leaf().map_err(to_py)? && !d.is_view() {
            return Err(PyRuntimeError::new_err("a leaf Variable that requires grad has been used in an in-place operation."));
        }
        minigrad_core::ops::write::bump_metadata(d);
    }

    // Outputs that are inputs returned as-is become views of them (torch does the same).
    let mut result: Vec<Py<PyAny>> = Vec::new();
    let mut final_outs: Vec<Option<Tensor>> = Vec::new();
    for (o, obj) in outs.iter().zip(&outputs) {
        match o {
            Some(t) if !is_in(t, &dirty_ts) && ins.iter().flatten().any(|i| i.same_tensor(t)) => {
                let v = t.view_as_layout(t.layout.clone());
                final_outs.push(Some(v.clone()));
                result.push(wrap(py, v)?);
            }
            Some(t) => {
                final_outs.push(Some(t.clone()));
                result.push(obj.clone().unbind());
            }
            None => {
                final_outs.push(None);
                result.push(obj.clone().unbind());
            }
        }
    }

    if record {
        let edges: Vec<Edge> = ins.iter().map(|t| match t {
            Some(t) if t.requires_grad() => t.gradient_edge(),
            _ => Ok(Edge::none()),
        }).collect::<minigrad_core::Result<_>>().map_err(to_py)?;
        let metas: Vec<InputMeta> = ins.iter().map(|t| match t {
            Some(t) => InputMeta { shape: minigrad_core::layout::Dims::from_slice(t.shape()), dtype: t.dtype() },
            None => InputMeta { shape: Default::default(), dtype: minigrad_core::DType::Float32 },
        }).collect();
        let mut saved = Vec::new();
        // packed by saved-tensor hooks in to_save order once the outputs carry the node
        let mut to_pack: Vec<(Tensor, bool)> = Vec::new();
        for s in &to_save {
            let Some(t) = tensor(s) else { continue };
            let pos = final_outs.iter().position(|o| o.as_ref().is_some_and(|o| o.same_tensor(&t) || (o.same_storage(&t) && o.layout == t.layout && is_in(&t, &dirty_ts))));
            let st = match pos {
                Some(nr) => SavedTensor::output(&t, nr),
                None => SavedTensor::unpacked_input(&t).map_err(to_py)?,
            };
            to_pack.push((t, pos.is_some()));
            saved.push(("saved", st));
        }
        let body = PyFunctionBody { ctx: ctx.clone().into_any().unbind(), saved, released: false };
        let node = Node::new(name, edges, metas, final_outs.len(), Body::boxed(body));
        node.body().link_producer(&node);
        node.py_object.store(ctx.as_ptr() as usize, std::sync::atomic::Ordering::Release);
        ctx.borrow_mut().link = NodeLink::Weak(Arc::downgrade(&node));
        for (i, o) in final_outs.iter().enumerate() {
            let Some(t) = o else { continue };
            // (an input returned as-is was marked under its own name, before it became a view)
            let marked = is_in(t, &nondiff) || outs[i].as_ref().is_some_and(|o| is_in(o, &nondiff));
            if marked || !t.dtype().is_floating() {
                continue;
            }
            if is_in(t, &dirty_ts) {
                minigrad_core::autograd::inplace::rebase_history(t, node.clone()).map_err(to_py)?;
            } else {
                t.set_gradient_edge(node.clone(), i);
            }
            // Views of inputs (and inputs returned as-is) refuse later in-place ops (R43).
            if t.is_view() && !is_in(t, &dirty_ts) {
                minigrad_core::autograd::record::mark_creation(t, CreationMeta::InCustomFunction);
            }
        }
        for (i, (t, is_output)) in to_pack.iter().enumerate() {
            // the hook runs without the node's lock held (it may look at the node)
            if let Some(p) = PackedTensor::pack(t, *is_output).map_err(to_py)? {
                node.body().install_packed(i, p);
            }
        }
    } else {
        for o in final_outs.iter().flatten() {
            if o.is_view() {
                minigrad_core::autograd::record::mark_creation(o, CreationMeta::InCustomFunction);
            }
        }
    }
    Ok(PyList::new(py, result)?.unbind())
}

/// `ctx.saved_tensors`: unpacked with the version check.
#[pyfunction]
pub(super) fn _function_saved(py: Python<'_>, ctx: &Bound<'_, PyNode>) -> PyResult<Py<PyTuple>> {
    let n = ctx.borrow().node()?;
    let body = n.body();
    let mut items = Vec::new();
    let Some(b) = body.as_any().downcast_ref::<PyFunctionBody>() else { return Ok(PyTuple::empty(py).unbind()) };
    if b.released {
        return Err(PyRuntimeError::new_err(minigrad_core::autograd::saved::FREED));
    }
    for (_, s) in &b.saved {
        items.push(s.unpack(&n).map_err(to_py)?);
    }
    drop(body);
    let objs: Vec<Py<PyAny>> = items.into_iter().map(|t| wrap(py, t)).collect::<PyResult<_>>()?;
    Ok(PyTuple::new(py, objs)?.unbind())
}
