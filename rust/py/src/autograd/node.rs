//! Graph nodes as Python objects: one `_NodeBase` object per live node (`grad_fn`,
//! `next_functions`, `_saved_*`), made by the class factory of `minigrad.autograd.graph`.

use crate::convert::wrap;
use crate::errors::{to_py, type_err};
use minigrad_core::autograd::accumulate::AccumulateGrad;
use minigrad_core::autograd::node::Node;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyTuple;
use std::cell::RefCell;
use std::sync::{Arc, Weak};

/// The Python class each node name gets (`MulBackward0`...), made by `minigrad.autograd.graph`.
static NODE_FACTORY: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
thread_local! {
    static PENDING_NODE: RefCell<Option<Arc<Node>>> = const { RefCell::new(None) };
}

pub(super) enum NodeLink {
    None,
    Strong(Arc<Node>),
    /// A custom Function's ctx is owned by its node, so it points back weakly.
    Weak(Weak<Node>),
}

#[pyclass(name = "_NodeBase", module = "minigrad._C", subclass, dict)]
pub struct PyNode {
    pub(super) link: NodeLink,
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
    pub(super) fn node(&self) -> PyResult<Arc<Node>> {
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

    /// A saved tensor without the version check: `(tensor, version it was saved at, is_output)`,
    /// the tensor a detached alias (same memory, same version counter), so a stale save can be
    /// compared with the writes that moved it (the in-place auditor); None when `name` saved no
    /// tensor or backward freed it.
    fn _saved_unchecked(&self, py: Python<'_>, name: &str) -> PyResult<Option<(Py<PyAny>, u64, bool)>> {
        let n = self.node()?;
        let body = n.body();
        for (k, s) in body.saved() {
            if k == name {
                return match s.peek() {
                    Some(t) => Ok(Some((wrap(py, t.fresh_handle())?, s.saved_version(), s.is_output()))),
                    None => Ok(None),
                };
            }
        }
        Ok(None)
    }

    /// `grad_fn._raw_saved_<name>`: the saved tensor as an object (`register_hooks`).
    fn _raw_saved(&self, name: &str) -> PyResult<Option<super::saved_hooks::PySavedTensor>> {
        let n = self.node()?;
        let found = n.body().saved().iter().any(|(k, _)| *k == name);
        Ok(found.then(|| super::saved_hooks::PySavedTensor::of_node(n.clone(), name.to_string())))
    }

    fn _saved_names(&self) -> PyResult<Vec<String>> {
        let n = self.node()?;
        let body = n.body();
        let mut names: Vec<String> = body.saved().iter().map(|(k, _)| k.to_string()).collect();
        names.extend(body.saved_values().iter().map(|(k, _)| k.to_string()));
        Ok(names)
    }

    fn _same_node(&self, other: &Bound<'_, PyNode>) -> PyResult<bool> {
        Ok(Arc::ptr_eq(&self.node()?, &other.borrow().node()?))
    }
}

#[pyfunction]
pub(super) fn _set_node_factory(py: Python<'_>, f: Py<PyAny>) {
    let _ = NODE_FACTORY.set(py, f);
}

/// True when `x` is an AccumulateGrad node (for graph pictures and tests).
#[pyfunction]
pub(super) fn _is_accumulate(node: &Bound<'_, PyNode>) -> PyResult<bool> {
    Ok(node.borrow().node()?.body().as_any().downcast_ref::<AccumulateGrad>().is_some())
}
