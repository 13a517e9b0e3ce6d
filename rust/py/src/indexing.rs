//! `_C` entry points for indexing: `x[key]`, `x[key] = value`, `index_put_`/`index_put`,
//! `nonzero`, `masked_select`. Keys are read in `key.rs`; their meaning is in minigrad-core
//! (`ops::index`, `ops::advanced`, `ops::mask`).

mod key;

use crate::convert::{tensor_of, wrap, wrap_view};
use crate::errors::{run, to_py, type_err};
use crate::tensor::TensorBase;
use key::tp_name;
use minigrad_core::ops::index::{self, Indexed, Key, TensorIndex};
use minigrad_core::ops::{advanced, mask};
use minigrad_core::Tensor;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

/// Work estimate for the GIL decision: only keys with tensors move data.
fn work(x: &Tensor, key: &Key) -> usize {
    match key {
        Key::Tuple(items) if items.iter().any(|i| matches!(i, TensorIndex::Tensor(_))) => x.numel(),
        Key::Single(TensorIndex::Bool(_)) => x.numel(),
        _ => 0,
    }
}

/// `x[key]`: a view for basic keys (sharing storage and version counter, `_base` the root),
/// a new tensor for advanced keys.
#[pyfunction]
pub fn getitem(py: Python<'_>, x: &Bound<'_, TensorBase>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let key = key::parse(key)?;
    let t = x.borrow().t.clone();
    let n = work(&t, &key);
    match run(py, n, move || index::get_item(&t, &key))? {
        Indexed::View(v) => wrap_view(py, v, x),
        Indexed::Copy(c) => wrap(py, c),
    }
}

/// `x[key] = value`. The value is converted first, as torch does.
#[pyfunction]
pub fn setitem(py: Python<'_>, x: &Bound<'_, TensorBase>, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    let t = x.borrow().t.clone();
    let v = key::value_tensor(value, t.dtype())?;
    let key = key::parse(key)?;
    // Even a basic key may fill a large part of x.
    let n = t.numel().max(v.numel());
    run(py, n, move || index::set_item(&t, &key, &v))
}

/// The arguments of index_put_/index_put, checked like torch's argument parser.
fn put_args(op: &str, indices: &Bound<'_, PyAny>, values: &Bound<'_, PyAny>) -> PyResult<(Vec<Option<Tensor>>, Tensor)> {
    if !indices.is_instance_of::<PyTuple>() && !indices.is_instance_of::<PyList>() {
        return Err(type_err(format!("{}(): argument 'indices' (position 1) must be tuple of Tensors, not {}", op, tp_name(indices))));
    }
    let mut list = Vec::new();
    for (i, item) in indices.try_iter()?.enumerate() {
        let item = item?;
        match item.cast::<TensorBase>() {
            Ok(t) => list.push(Some(t.borrow().t.clone())),
            Err(_) => {
                return Err(type_err(format!("expected Tensor as element {} in argument 0, but got {}", i, tp_name(&item))))
            }
        }
    }
    match values.cast::<TensorBase>() {
        Ok(v) => Ok((list, v.borrow().t.clone())),
        Err(_) => Err(type_err(format!("{}(): argument 'values' (position 2) must be Tensor, not {}", op, tp_name(values)))),
    }
}

/// `x.index_put_(indices, values, accumulate=False)`: returns x itself.
#[pyfunction]
#[pyo3(signature = (x, indices, values, accumulate=false))]
pub fn index_put_(py: Python<'_>, x: &Bound<'_, TensorBase>, indices: &Bound<'_, PyAny>, values: &Bound<'_, PyAny>, accumulate: bool) -> PyResult<Py<PyAny>> {
    let (list, v) = put_args("index_put_", indices, values)?;
    let t = x.borrow().t.clone();
    run(py, t.numel().max(v.numel()), move || advanced::index_put_(&t, &list, &v, accumulate))?;
    Ok(x.clone().into_any().unbind())
}

/// `x.index_put(indices, values, accumulate=False)`: a new tensor.
#[pyfunction]
#[pyo3(signature = (x, indices, values, accumulate=false))]
pub fn index_put(py: Python<'_>, x: &Bound<'_, TensorBase>, indices: &Bound<'_, PyAny>, values: &Bound<'_, PyAny>, accumulate: bool) -> PyResult<Py<PyAny>> {
    let (list, v) = put_args("index_put", indices, values)?;
    let t = x.borrow().t.clone();
    let out = run(py, t.numel().max(v.numel()), move || advanced::index_put(&t, &list, &v, accumulate))?;
    wrap(py, out)
}

/// `x.nonzero(as_tuple=False)`; with `as_tuple`, one view per dim of the (n, ndim) result.
#[pyfunction]
#[pyo3(signature = (x, as_tuple=false))]
pub fn nonzero(py: Python<'_>, x: &Bound<'_, TensorBase>, as_tuple: bool) -> PyResult<Py<PyAny>> {
    let mut t = x.borrow().t.clone();
    if as_tuple && t.ndim() == 0 {
        // torch answers a 0-d input as if it were 1-d here.
        t = t.view_as_layout(t.layout.unsqueeze(0).map_err(to_py)?);
    }
    let nz = run(py, t.numel(), move || mask::nonzero(&t))?;
    if !as_tuple {
        return wrap(py, nz);
    }
    let columns = mask::nonzero_columns(&nz).map_err(to_py)?;
    let base = wrap(py, nz.clone())?;
    let base = base.bind(py).cast::<TensorBase>()?;
    let views = columns.into_iter().map(|l| wrap_view(py, nz.view_as_layout(l), base)).collect::<PyResult<Vec<_>>>()?;
    Ok(PyTuple::new(py, views)?.into_any().unbind())
}

#[pyfunction]
pub fn masked_select(py: Python<'_>, x: &Bound<'_, TensorBase>, mask: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let m = tensor_of(mask, "masked_select(): argument 'mask' (position 1)")?;
    let t = x.borrow().t.clone();
    let out = run(py, t.numel().max(m.numel()), move || mask::masked_select(&t, &m))?;
    wrap(py, out)
}

/// `x.masked_scatter_(mask, source)` (returns x) or `masked_scatter` (a new tensor).
#[pyfunction]
pub fn masked_scatter(py: Python<'_>, x: &Bound<'_, TensorBase>, mask: &Bound<'_, PyAny>, source: &Bound<'_, PyAny>, inplace: bool) -> PyResult<Py<PyAny>> {
    let m = tensor_of(mask, "masked_scatter(): argument 'mask' (position 1)")?;
    let s = tensor_of(source, "masked_scatter(): argument 'source' (position 2)")?;
    let t = x.borrow().t.clone();
    if inplace {
        run(py, t.numel(), move || minigrad_core::ops::mask_scatter::masked_scatter_(&t, &m, &s))?;
        return Ok(x.clone().into_any().unbind());
    }
    let out = run(py, t.numel(), move || minigrad_core::ops::mask_scatter::masked_scatter(&t, &m, &s))?;
    wrap(py, out)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(getitem, m)?)?;
    m.add_function(wrap_pyfunction!(setitem, m)?)?;
    m.add_function(wrap_pyfunction!(index_put_, m)?)?;
    m.add_function(wrap_pyfunction!(index_put, m)?)?;
    m.add_function(wrap_pyfunction!(nonzero, m)?)?;
    m.add_function(wrap_pyfunction!(masked_select, m)?)?;
    m.add_function(wrap_pyfunction!(masked_scatter, m)?)?;
    Ok(())
}
