//! Saved-tensor hooks from Python: the pack/unpack pair of `saved_tensors_hooks` as a core
//! `PackHooks`, the disable switch, standalone saved tensors (`_make_saved_tensor`) and one
//! node's saved tensor as an object (`grad_fn._raw_saved_<name>`).
//!
//! The core calls the hooks while it saves (an op, with or without the GIL) and while it
//! unpacks (backward, `_saved_<name>`); each call takes the GIL. A Python exception raised by a
//! hook is parked and re-raised as is when the core's error reaches Python.

use crate::convert::{tensor_of, wrap};
use crate::errors::to_py;
use crate::tensor::TensorBase;
use minigrad_core::autograd::node::Node;
use minigrad_core::autograd::saved::{PackedTensor, SavedTensor};
use minigrad_core::autograd::saved_hooks::{self, PackHooks, Packed};
use minigrad_core::{Error, Tensor};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::sync::{Arc, Mutex};
use super::stash;

struct PyPackHooks {
    pack: Py<PyAny>,
    unpack: Py<PyAny>,
}

/// What the pack hook returned, with the unpack hook to call on it.
struct PyPacked {
    packed: Py<PyAny>,
    unpack: Py<PyAny>,
}

impl PackHooks for PyPackHooks {
    fn pack(&self, t: &Tensor) -> minigrad_core::Result<Box<dyn Packed>> {
        Python::attach(|py| {
            let arg = wrap(py, t.clone()).map_err(stash)?;
            let packed = self.pack.bind(py).call1((arg,)).map_err(stash)?;
            Ok(Box::new(PyPacked { packed: packed.unbind(), unpack: self.unpack.clone_ref(py) }) as Box<dyn Packed>)
        })
    }
}

impl Packed for PyPacked {
    fn unpack(&self) -> minigrad_core::Result<Tensor> {
        Python::attach(|py| {
            let r = self.unpack.bind(py).call1((self.packed.bind(py),)).map_err(stash)?;
            if r.cast::<TensorBase>().is_err() {
                let name = r.get_type().name().map(|n| n.to_string()).unwrap_or_default();
                return Err(Error::Type(format!("Output of saved tensor unpack_hook expected to be a Tensor but got result of type {}", name)));
            }
            tensor_of(&r, "unpack_hook result").map_err(stash)
        })
    }
}

fn hooks_of(pack: &Bound<'_, PyAny>, unpack: &Bound<'_, PyAny>) -> Arc<dyn PackHooks> {
    Arc::new(PyPackHooks { pack: pack.clone().unbind(), unpack: unpack.clone().unbind() })
}

#[pyfunction]
pub(super) fn _push_saved_tensors_default_hooks(pack_hook: &Bound<'_, PyAny>, unpack_hook: &Bound<'_, PyAny>) -> PyResult<()> {
    saved_hooks::push(hooks_of(pack_hook, unpack_hook)).map_err(to_py)
}

#[pyfunction]
pub(super) fn _pop_saved_tensors_default_hooks() -> PyResult<()> {
    saved_hooks::pop().map(|_| ()).ok_or_else(|| PyRuntimeError::new_err("no saved tensors default hooks to pop"))
}

#[pyfunction]
pub(super) fn _saved_tensors_hooks_disable(message: String) -> PyResult<()> {
    saved_hooks::disable(message).map_err(to_py)
}

#[pyfunction]
pub(super) fn _saved_tensors_hooks_enable() {
    saved_hooks::enable()
}

#[pyfunction]
pub(super) fn _saved_tensors_hooks_get_disabled_error_message() -> Option<String> {
    saved_hooks::disabled_message()
}

#[pyfunction]
pub(super) fn _current_graph_task_id() -> i64 {
    minigrad_core::autograd::engine::current_graph_task_id()
}

/// Where a `SavedTensor` object's saved tensor lives.
enum Source {
    /// Made by `_make_saved_tensor`, owned by this object.
    Own(Mutex<SavedTensor>),
    /// Saved tensor `name` of a node (`grad_fn._raw_saved_<name>`).
    Node(Arc<Node>, String),
}

/// torch's `torch._C._autograd.SavedTensor`.
#[pyclass(name = "SavedTensor", module = "minigrad._C")]
pub struct PySavedTensor {
    source: Source,
}

impl PySavedTensor {
    pub(super) fn of_node(node: Arc<Node>, name: String) -> PySavedTensor {
        PySavedTensor { source: Source::Node(node, name) }
    }

    /// Runs `f` on the saved tensor (under the node's lock for a node's one: `f` must not call
    /// Python).
    fn with<T>(&self, f: impl FnOnce(&mut SavedTensor) -> minigrad_core::Result<T>) -> minigrad_core::Result<T> {
        match &self.source {
            Source::Own(m) => f(&mut m.lock().unwrap_or_else(|e| e.into_inner())),
            Source::Node(n, name) => {
                let mut body = n.body();
                let mut saved = body.saved_mut();
                match saved.iter_mut().find(|(k, _)| *k == name.as_str()) {
                    Some((_, s)) => f(s),
                    None => Err(Error::Runtime(format!("no saved tensor named {}", name))),
                }
            }
        }
    }
}

#[pymethods]
impl PySavedTensor {
    /// The saved tensor (through the unpack hook, if hooks pack it; version-checked if not).
    fn unpack(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let t = match &self.source {
            Source::Own(m) => m.lock().unwrap_or_else(|e| e.into_inner()).unpack_for(None),
            Source::Node(n, name) => unpack_node_saved(n, name),
        };
        wrap(py, t.map_err(to_py)?)
    }

    /// Packs this one saved tensor with `pack_hook` now; `unpack_hook` gives it back later.
    fn register_hooks(&self, pack_hook: &Bound<'_, PyAny>, unpack_hook: &Bound<'_, PyAny>) -> PyResult<()> {
        let (is_output, (t, shown)) = self.with(|s| Ok((s.is_output(), s.for_register_hooks()?))).map_err(to_py)?;
        let hooks = hooks_of(pack_hook, unpack_hook);
        let packed = PackedTensor::pack_using(hooks.as_ref(), &t, &shown, is_output).map_err(to_py)?;
        self.with(|s| {
            s.install_registered(packed);
            Ok(())
        })
        .map_err(to_py)
    }
}

/// Unpacks a node's saved tensor (an unpack hook runs under the node's lock, as it does in
/// backward).
fn unpack_node_saved(n: &Arc<Node>, name: &str) -> minigrad_core::Result<Tensor> {
    let body = n.body();
    let Some((_, s)) = body.saved().into_iter().find(|(k, _)| *k == name) else {
        return Err(Error::Runtime(format!("no saved tensor named {}", name)));
    };
    s.unpack(n)
}

/// torch's `_make_saved_tensor(t, is_output)`: a saved tensor that belongs to no node, packed by
/// the active hooks like any other.
#[pyfunction]
pub(super) fn _make_saved_tensor(t: &Bound<'_, TensorBase>, is_output: bool) -> PyResult<PySavedTensor> {
    let t = t.borrow().t.clone();
    let s = if is_output {
        let mut s = SavedTensor::output(&t, t.output_nr());
        s.pack_if_hooked(&t).map_err(to_py)?;
        s
    } else {
        SavedTensor::input(&t).map_err(to_py)?
    };
    Ok(PySavedTensor { source: Source::Own(Mutex::new(s)) })
}
