//! Hooks from Python: tensor hooks (on a leaf's meta or its node), and a node's hooks and
//! pre-hooks; a Python exception raised inside one is re-raised as is after backward.

use crate::convert::{tensor_of, wrap};
use crate::errors::to_py;
use crate::tensor::TensorBase;
use minigrad_core::autograd::node::{next_hook_id, Hook};
use minigrad_core::Tensor;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::sync::Arc;
use super::{from_opt_tensors, opt_tensors, stash};
use super::node::PyNode;

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

#[pymethods]
impl PyNode {
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
        self.node()?.edit_hooks(|h| h.post_hooks.push((id, hook)));
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
        self.node()?.edit_hooks(|h| h.pre_hooks.push((id, hook)));
        Ok(id)
    }

    fn _remove_hook(&self, id: u64) -> PyResult<()> {
        let n = self.node()?;
        n.edit_hooks(|h| {
            h.post_hooks.retain(|(i, _)| *i != id);
            h.pre_hooks.retain(|(i, _)| *i != id);
        });
        Ok(())
    }
}

#[pymethods]
impl TensorBase {
    /// Registers a tensor hook; returns its id (the Python side wraps it in a handle).
    fn _register_hook(&self, f: Py<PyAny>) -> PyResult<u64> {
        if !self.t.requires_grad() {
            return Err(PyRuntimeError::new_err("cannot register a hook on a tensor that doesn't require gradient"));
        }
        let id = next_hook_id();
        let hook = py_hook(f);
        match self.t.grad_fn().map_err(to_py)? {
            Some(n) => {
                let nr = self.t.output_nr();
                n.edit_hooks(|h| h.tensor_hooks.push((nr, id, hook)))
            }
            None => self.t.meta.lock().hooks.push((id, hook)),
        }
        Ok(id)
    }

    fn _remove_hook(&self, id: u64) -> PyResult<()> {
        self.t.meta.lock().hooks.retain(|(i, _)| *i != id);
        if let Some(n) = self.t.raw_grad_fn() {
            n.edit_hooks(|h| h.tensor_hooks.retain(|(_, i, _)| *i != id));
        }
        Ok(())
    }
}
