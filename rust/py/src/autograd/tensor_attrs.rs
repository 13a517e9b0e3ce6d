//! The autograd attributes of a tensor: requires_grad, grad, grad_fn, is_leaf, retain_grad,
//! detach_, its gradient edge.

use crate::convert::{tensor_of, wrap};
use crate::errors::to_py;
use crate::tensor::TensorBase;
use minigrad_core::autograd::meta::RequiresGradEntry;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use std::sync::Arc;
use super::node::wrap_node;

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
        let nr = self.t.output_nr();
        f.edit_hooks(|h| h.retains.push((nr, Arc::downgrade(&self.t.meta))));
        self.t.meta.lock().retains_grad = true;
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
