//! Autograd from Python: tensor attributes (requires_grad, grad, grad_fn, hooks...), graph
//! nodes as Python objects, the engine entry, grad/inference/anomaly modes, and the node of a
//! custom `autograd.Function` (whose backward is Python).

use crate::convert::{tensor_of, wrap};
use crate::errors::{to_py, type_err};
use crate::tensor::TensorBase;
use minigrad_core::autograd::accumulate::AccumulateGrad;
use minigrad_core::autograd::meta::{CreationMeta, RequiresGradEntry};
use minigrad_core::autograd::node::{next_hook_id, Backward, Edge, Hook, InputMeta, Node};
use minigrad_core::autograd::saved::SavedTensor;
use minigrad_core::autograd::{mode, BackwardRequest};
use minigrad_core::{Error, Tensor};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyTuple};
use std::any::Any;
use std::cell::RefCell;
use std::sync::{Arc, Weak};

// ----- Python errors raised inside hooks and custom backwards -----

thread_local! {
    /// A Python exception raised by user code the engine called; re-raised as is afterwards.
    static PY_ERROR: RefCell<Option<PyErr>> = const { RefCell::new(None) };
}

fn stash(e: PyErr) -> Error {
    let msg = e.to_string();
    PY_ERROR.with(|p| *p.borrow_mut() = Some(e));
    Error::Runtime(msg)
}

/// Turns a core error into the Python exception: the original one if user code raised it.
fn raise(e: Error) -> PyErr {
    PY_ERROR.with(|p| p.borrow_mut().take()).unwrap_or_else(|| to_py(e))
}

fn emit_warnings(py: Python<'_>) -> PyResult<()> {
    for w in mode::take_warnings() {
        let warnings = py.import("warnings")?;
        warnings.call_method1("warn", (w, py.get_type::<pyo3::exceptions::PyUserWarning>(), 2))?;
    }
    Ok(())
}

/// Runs a core autograd call with the GIL released; warnings queued by the core are emitted.
fn call<T: Send>(py: Python<'_>, f: impl FnOnce() -> minigrad_core::Result<T> + Send) -> PyResult<T> {
    let r = py.detach(move || std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    emit_warnings(py)?;
    match r {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(raise(e)),
        Err(_) => Err(PyRuntimeError::new_err("minigrad internal error in autograd (please report)")),
    }
}

fn py_hook(f: Py<PyAny>) -> Hook {
    Arc::new(move |g: &Tensor| {
        Python::attach(|py| -> minigrad_core::Result<Option<Tensor>> {
            let arg = wrap(py, g.clone()).map_err(stash)?;
            let r = f.bind(py).call1((arg,)).map_err(stash)?;
            if r.is_none() {
                return Ok(None);
            }
            tensor_of(&r, "hook return value").map(Some).map_err(stash)
        })
    })
}

fn opt_tensors(py: Python<'_>, ts: &[Option<Tensor>]) -> PyResult<Py<PyTuple>> {
    let items: Vec<Py<PyAny>> = ts.iter().map(|t| match t {
        Some(t) => wrap(py, t.clone()),
        None => Ok(py.None()),
    }).collect::<PyResult<_>>()?;
    Ok(PyTuple::new(py, items)?.unbind())
}

fn from_opt_tensors(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Option<Tensor>>> {
    let mut out = Vec::new();
    for item in obj.try_iter()? {
        let item = item?;
        out.push(if item.is_none() { None } else { Some(tensor_of(&item, "gradient")?) });
    }
    Ok(out)
}

// ----- graph nodes as Python objects -----

/// The Python class each node name gets (`MulBackward0`...), made by `minigrad.autograd.graph`.
static NODE_FACTORY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
thread_local! {
    static PENDING_NODE: RefCell<Option<Arc<Node>>> = const { RefCell::new(None) };
}

enum NodeLink {
    None,
    Strong(Arc<Node>),
    /// A custom Function's ctx is owned by its node, so it points back weakly.
    Weak(Weak<Node>),
}

#[pyclass(name = "_NodeBase", module = "minigrad._C", subclass, dict)]
pub struct PyNode {
    link: NodeLink,
    self_addr: usize,
}

impl Drop for PyNode {
    fn drop(&mut self) {
        if let NodeLink::Strong(n) = &self.link {
            let _ = n.py_object.compare_exchange(self.self_addr, 0, std::sync::atomic::Ordering::AcqRel, std::sync::atomic::Ordering::Acquire);
        }
    }
}

impl PyNode {
    fn node(&self) -> PyResult<Arc<Node>> {
        match &self.link {
            NodeLink::Strong(n) => Ok(n.clone()),
            NodeLink::Weak(w) => w.upgrade().ok_or_else(|| PyRuntimeError::new_err("this Function's graph has been freed")),
            NodeLink::None => Err(PyRuntimeError::new_err("this Function has not been applied yet")),
        }
    }
}

/// The Python object for a node (one per node while it is alive).
pub fn wrap_node(py: Python<'_>, n: &Arc<Node>) -> PyResult<Py<PyAny>> {
    let existing = n.py_object.load(std::sync::atomic::Ordering::Acquire);
    if existing != 0 {
        // SAFETY: the slot holds the address of a live node object: set when the object is made
        // (or, for custom Functions, owned by the node itself) and cleared by its Drop, all under
        // the GIL; a non-zero value names a live object.
        return Ok(unsafe { Bound::<PyAny>::from_borrowed_ptr(py, existing as *mut pyo3::ffi::PyObject).unbind() });
    }
    let factory = NODE_FACTORY.get(py).ok_or_else(|| type_err("minigrad.autograd.graph not imported"))?;
    let cls = factory.bind(py).call1((n.name.to_string(),))?;
    PENDING_NODE.with(|p| *p.borrow_mut() = Some(n.clone()));
    let obj = cls.call0()?;
    let addr = obj.as_ptr() as usize;
    if let Ok(b) = obj.cast::<PyNode>() {
        b.borrow_mut().self_addr = addr;
    }
    n.py_object.store(addr, std::sync::atomic::Ordering::Release);
    Ok(obj.unbind())
}

#[pymethods]
impl PyNode {
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, pyo3::types::PyDict>>) -> Self {
        let link = PENDING_NODE.with(|p| p.borrow_mut().take()).map(NodeLink::Strong).unwrap_or(NodeLink::None);
        PyNode { link, self_addr: 0 }
    }

    fn name(&self) -> PyResult<String> {
        Ok(self.node()?.name.to_string())
    }

    #[getter]
    fn next_functions(&self, py: Python<'_>) -> PyResult<Py<PyTuple>> {
        let n = self.node()?;
        let items: Vec<Py<PyAny>> = n.next.iter().map(|e| -> PyResult<Py<PyAny>> {
            let node = match &e.node {
                Some(c) => wrap_node(py, c)?,
                None => py.None(),
            };
            Ok(PyTuple::new(py, [node, e.input_nr.into_pyobject(py)?.into_any().unbind()])?.into_any().unbind())
        }).collect::<PyResult<_>>()?;
        Ok(PyTuple::new(py, items)?.unbind())
    }

    /// AccumulateGrad's leaf.
    #[getter]
    fn variable(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.node()?.variable() {
            Some(t) => wrap(py, t),
            None => Err(pyo3::exceptions::PyAttributeError::new_err("'variable' exists only on AccumulateGrad nodes")),
        }
    }

    /// `grad_fn._saved_<name>` (tensors are checked against their saved version).
    fn _saved(&self, py: Python<'_>, name: &str) -> PyResult<Option<Py<PyAny>>> {
        let n = self.node()?;
        let body = n.body();
        for (k, s) in body.saved() {
            if k == name {
                let t = s.unpack(&n).map_err(to_py)?;
                return Ok(Some(wrap(py, t)?));
            }
        }
        for (k, v) in body.saved_values() {
            if k == name {
                return Ok(Some(v.into_pyobject(py)?.into_any().unbind()));
            }
        }
        Ok(None)
    }

    fn _saved_names(&self) -> PyResult<Vec<String>> {
        let n = self.node()?;
        let body = n.body();
        let mut names: Vec<String> = body.saved().iter().map(|(k, _)| k.to_string()).collect();
        names.extend(body.saved_values().iter().map(|(k, _)| k.to_string()));
        Ok(names)
    }

    fn register_hook(&self, f: Py<PyAny>) -> PyResult<u64> {
        let id = next_hook_id();
        let hook: minigrad_core::autograd::node::NodeHook = Arc::new(move |grad_inputs, grad_outputs| {
            Python::attach(|py| {
                let gi = opt_tensors(py, grad_inputs).map_err(stash)?;
                let go = opt_tensors(py, grad_outputs).map_err(stash)?;
                let r = f.bind(py).call1((gi, go)).map_err(stash)?;
                if r.is_none() { Ok(None) } else { from_opt_tensors(&r).map(Some).map_err(stash) }
            })
        });
        self.node()?.post_hooks.lock().unwrap_or_else(|e| e.into_inner()).push((id, hook));
        Ok(id)
    }

    fn register_prehook(&self, f: Py<PyAny>) -> PyResult<u64> {
        let id = next_hook_id();
        let hook: minigrad_core::autograd::node::NodePreHook = Arc::new(move |grads| {
            Python::attach(|py| {
                let go = opt_tensors(py, grads).map_err(stash)?;
                let r = f.bind(py).call1((go,)).map_err(stash)?;
                if r.is_none() { Ok(None) } else { from_opt_tensors(&r).map(Some).map_err(stash) }
            })
        });
        self.node()?.pre_hooks.lock().unwrap_or_else(|e| e.into_inner()).push((id, hook));
        Ok(id)
    }

    fn _remove_hook(&self, id: u64) -> PyResult<()> {
        let n = self.node()?;
        n.post_hooks.lock().unwrap_or_else(|e| e.into_inner()).retain(|(i, _)| *i != id);
        n.pre_hooks.lock().unwrap_or_else(|e| e.into_inner()).retain(|(i, _)| *i != id);
        Ok(())
    }

    fn _same_node(&self, other: &Bound<'_, PyNode>) -> PyResult<bool> {
        Ok(Arc::ptr_eq(&self.node()?, &other.borrow().node()?))
    }
}

#[pyfunction]
fn _set_node_factory(py: Python<'_>, f: Py<PyAny>) {
    let _ = NODE_FACTORY.set(py, f);
}

// ----- tensor attributes -----

#[pymethods]
impl TensorBase {
    #[getter]
    fn requires_grad(&self) -> bool {
        self.t.requires_grad()
    }

    #[setter(requires_grad)]
    fn set_requires_grad_attr(&self, on: bool) -> PyResult<()> {
        self.t.set_requires_grad(on, RequiresGradEntry::Setter).map_err(to_py)
    }

    #[pyo3(signature = (requires_grad=true))]
    fn requires_grad_(slf: &Bound<'_, Self>, requires_grad: bool) -> PyResult<Py<PyAny>> {
        slf.borrow().t.set_requires_grad(requires_grad, RequiresGradEntry::Method).map_err(to_py)?;
        Ok(slf.clone().into_any().unbind())
    }

    /// Factories' `requires_grad=True` (their own wording for integer dtypes, R48).
    fn _requires_grad_factory(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        slf.borrow().t.set_requires_grad(true, RequiresGradEntry::Factory).map_err(to_py)?;
        Ok(slf.clone().into_any().unbind())
    }

    #[getter]
    fn is_leaf(&self) -> PyResult<bool> {
        Ok(self.t.grad_fn().map_err(to_py)?.is_none())
    }

    #[getter]
    fn grad_fn(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match self.t.grad_fn().map_err(to_py)? {
            Some(n) => Ok(Some(wrap_node(py, &n)?)),
            None => Ok(None),
        }
    }

    #[getter]
    fn output_nr(&self) -> usize {
        self.t.output_nr()
    }

    /// `.grad`, without torch's non-leaf warning (the Python property adds it).
    #[getter]
    fn _grad(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.t.grad().map(|g| wrap(py, g)).transpose()
    }

    #[setter(_grad)]
    fn set_grad_attr(&self, value: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let g = match value {
            None => None,
            Some(v) if v.is_none() => None,
            Some(v) => {
                let g = tensor_of(v, "assigned grad")?;
                if g.dtype() != self.t.dtype() {
                    return Err(PyRuntimeError::new_err("assigned grad has data of a different type"));
                }
                if g.shape() != self.t.shape() {
                    return Err(PyRuntimeError::new_err("assigned grad has data of a different size"));
                }
                Some(g)
            }
        };
        self.t.set_grad(g);
        Ok(())
    }

    #[getter]
    fn retains_grad(&self) -> bool {
        self.t.retains_grad()
    }

    fn retain_grad(&self) -> PyResult<()> {
        if !self.t.requires_grad() {
            return Err(PyRuntimeError::new_err("can't retain_grad on Tensor that has requires_grad=False"));
        }
        if self.t.is_leaf().map_err(to_py)? || self.t.retains_grad() {
            return Ok(());
        }
        let f = self.t.grad_fn().map_err(to_py)?.expect("non-leaf has a grad_fn");
        f.retains.lock().unwrap_or_else(|e| e.into_inner()).push((self.t.output_nr(), Arc::downgrade(&self.t.meta)));
        self.t.meta.lock().retains_grad = true;
        Ok(())
    }

    /// Registers a tensor hook; returns its id (the Python side wraps it in a handle).
    fn _register_hook(&self, f: Py<PyAny>) -> PyResult<u64> {
        if !self.t.requires_grad() {
            return Err(PyRuntimeError::new_err("cannot register a hook on a tensor that doesn't require gradient"));
        }
        let id = next_hook_id();
        let hook = py_hook(f);
        match self.t.grad_fn().map_err(to_py)? {
            Some(n) => n.tensor_hooks.lock().unwrap_or_else(|e| e.into_inner()).push((self.t.output_nr(), id, hook)),
            None => self.t.meta.lock().hooks.push((id, hook)),
        }
        Ok(id)
    }

    fn _remove_hook(&self, id: u64) -> PyResult<()> {
        self.t.meta.lock().hooks.retain(|(i, _)| *i != id);
        if let Some(n) = self.t.raw_grad_fn() {
            n.tensor_hooks.lock().unwrap_or_else(|e| e.into_inner()).retain(|(_, i, _)| *i != id);
        }
        Ok(())
    }

    /// `detach_()`: cuts the history in place (R54); refused on views.
    fn detach_(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let t = slf.borrow().t.clone();
        if t.is_view() {
            return Err(PyRuntimeError::new_err("Can't detach views in-place. Use detach() instead. If you are using DistributedDataParallel (DDP) for training, and gradient_as_bucket_view is set as True, gradients are views of DDP buckets, and hence detach_() cannot be called on these gradients. To fix this error, please refer to the Optimizer.zero_grad() function in torch/optim/optimizer.py as the solution."));
        }
        {
            let mut m = t.meta.lock();
            m.grad_fn = None;
            m.output_nr = 0;
            m.requires_grad = false;
        }
        Ok(slf.clone().into_any().unbind())
    }

    fn _gradient_edge(&self, py: Python<'_>) -> PyResult<(Option<Py<PyAny>>, usize)> {
        let e = self.t.gradient_edge().map_err(to_py)?;
        Ok((e.node.as_ref().map(|n| wrap_node(py, n)).transpose()?, e.input_nr))
    }

    fn _is_inference(&self) -> bool {
        self.t.is_inference()
    }
}

// ----- the engine -----

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
fn _run_backward(py: Python<'_>, tensors: Vec<Bound<'_, PyAny>>, grads: Vec<Bound<'_, PyAny>>, keep_graph: bool, create_graph: bool, inputs: Vec<Bound<'_, PyAny>>, accumulate: bool) -> PyResult<Py<PyTuple>> {
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

// ----- modes -----

#[pyfunction]
fn is_grad_enabled() -> bool {
    mode::is_grad_enabled()
}
#[pyfunction]
fn _set_grad_enabled(on: bool) {
    mode::set_grad_enabled(on)
}
#[pyfunction]
fn is_inference_mode_enabled() -> bool {
    mode::is_inference_mode()
}
#[pyfunction]
fn _set_inference_mode(on: bool) {
    mode::set_inference_mode(on)
}
#[pyfunction]
fn is_anomaly_enabled() -> bool {
    mode::is_anomaly_enabled()
}
#[pyfunction]
fn is_anomaly_check_nan_enabled() -> bool {
    mode::is_anomaly_check_nan_enabled()
}
#[pyfunction]
fn _set_anomaly_enabled(on: bool, check_nan: bool) {
    mode::set_anomaly_enabled(on, check_nan)
}

/// The user's stack (innermost user frames), for anomaly traces and mutation blame.
static TRACE_FN: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn python_trace() -> String {
    Python::attach(|py| match TRACE_FN.get(py) {
        Some(f) => f.bind(py).call0().and_then(|s| s.extract::<String>()).unwrap_or_default(),
        None => String::new(),
    })
}

#[pyfunction]
fn _set_trace_fn(py: Python<'_>, f: Py<PyAny>) {
    let _ = TRACE_FN.set(py, f);
    mode::set_trace_hook(python_trace);
}

// ----- custom Functions -----

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
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Records a custom Function call after its forward ran (under no_grad): `ctx` becomes the
/// node's Python object; outputs join the graph; dirty inputs are rebased (R27); outputs that
/// are inputs or views of inputs may not be modified in place later (R43).
#[pyfunction]
#[pyo3(signature = (ctx, name, inputs, outputs, dirty, non_differentiable, to_save))]
fn _record_function(
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
            Some(t) => InputMeta { shape: t.shape().to_vec(), dtype: t.dtype() },
            None => InputMeta { shape: Vec::new(), dtype: minigrad_core::DType::Float32 },
        }).collect();
        let mut saved = Vec::new();
        for s in &to_save {
            let Some(t) = tensor(s) else { continue };
            let pos = final_outs.iter().position(|o| o.as_ref().is_some_and(|o| o.same_tensor(&t) || (o.same_storage(&t) && o.layout == t.layout && is_in(&t, &dirty_ts))));
            let st = match pos {
                Some(nr) => SavedTensor::output(&t, nr),
                None => SavedTensor::input(&t).map_err(to_py)?,
            };
            saved.push(("saved", st));
        }
        let body = PyFunctionBody { ctx: ctx.clone().into_any().unbind(), saved, released: false };
        let node = Node::new(name, edges, metas, final_outs.len(), Box::new(body));
        node.body().link_producer(&node);
        node.py_object.store(ctx.as_ptr() as usize, std::sync::atomic::Ordering::Release);
        ctx.borrow_mut().link = NodeLink::Weak(Arc::downgrade(&node));
        for (i, o) in final_outs.iter().enumerate() {
            let Some(t) = o else { continue };
            if is_in(t, &nondiff) || !t.dtype().is_floating() {
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
fn _function_saved(py: Python<'_>, ctx: &Bound<'_, PyNode>) -> PyResult<Py<PyTuple>> {
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

/// True when `x` is an AccumulateGrad node (for graph pictures and tests).
#[pyfunction]
fn _is_accumulate(node: &Bound<'_, PyNode>) -> PyResult<bool> {
    Ok(node.borrow().node()?.body().as_any().downcast_ref::<AccumulateGrad>().is_some())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyNode>()?;
    m.add_function(wrap_pyfunction!(_set_node_factory, m)?)?;
    m.add_function(wrap_pyfunction!(_run_backward, m)?)?;
    m.add_function(wrap_pyfunction!(is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_inference_mode_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_inference_mode, m)?)?;
    m.add_function(wrap_pyfunction!(is_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_anomaly_check_nan_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_trace_fn, m)?)?;
    m.add_function(wrap_pyfunction!(_record_function, m)?)?;
    m.add_function(wrap_pyfunction!(_function_saved, m)?)?;
    m.add_function(wrap_pyfunction!(_is_accumulate, m)?)?;
    Ok(())
}
