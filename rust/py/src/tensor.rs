//! `TensorBase`: the Rust half of `minigrad.Tensor`. It holds a core tensor value and, for
//! views, the Python object of the root base (so `v._base is x`, as in torch). This file holds
//! metadata and view methods; op families live in `methods_*.rs`.

use crate::convert::{int_list, make_size, sizes_from_args, tensor_of, wrap, wrap_view, PENDING};
use crate::dtype::PyDType;
use crate::errors::{run, type_err};

/// Runs a core call on this tensor's value (copied out, so the GIL can be released).
pub fn with_t<R: Send>(slf: &Bound<'_, TensorBase>, work: usize, f: impl FnOnce(&Tensor) -> minigrad_core::Result<R> + Send) -> PyResult<R> {
    let x = slf.borrow().t.clone();
    run(slf.py(), work, move || f(&x))
}
use minigrad_core::ops::{copy, views, write};
use minigrad_core::{DType, Tensor};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

#[pyclass(name = "TensorBase", module = "minigrad._C", subclass)]
pub struct TensorBase {
    pub t: Tensor,
    /// Root base object for views (None for non-views).
    pub base: Option<Py<PyAny>>,
}


/// Wraps every view in a list so each records `of` as its base.
fn wrap_views(py: Python<'_>, ts: Vec<Tensor>, of: &Bound<'_, TensorBase>) -> PyResult<Py<PyAny>> {
    let objs: PyResult<Vec<Py<PyAny>>> = ts.into_iter().map(|t| wrap_view(py, t, of)).collect();
    Ok(PyTuple::new(py, objs?)?.into_any().unbind())
}

#[pymethods]
impl TensorBase {
    /// Python subclasses are created by `wrap`, which parks the core tensor in PENDING first;
    /// a direct `Tensor()` call makes an empty float tensor like `torch.Tensor()`.
    #[new]
    #[pyo3(signature = (*_args, **_kwargs))]
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, pyo3::types::PyDict>>) -> Self {
        let t = PENDING.with(|p| p.borrow_mut().take()).unwrap_or_else(|| Tensor::empty(&[0], DType::Float32));
        TensorBase { t, base: None }
    }

    // ----- metadata -----

    #[getter]
    fn shape(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        make_size(py, self.t.shape())
    }

    #[pyo3(signature = (dim=None))]
    fn size(&self, py: Python<'_>, dim: Option<i64>) -> PyResult<Py<PyAny>> {
        match dim {
            None => make_size(py, self.t.shape()),
            Some(d) => {
                let d = minigrad_core::shape::wrap_dim(d, self.t.ndim()).map_err(crate::errors::to_py)?;
                Ok(self.t.shape().get(d).copied().unwrap_or(1).into_pyobject(py)?.into_any().unbind())
            }
        }
    }

    #[pyo3(signature = (dim=None))]
    fn stride(&self, py: Python<'_>, dim: Option<i64>) -> PyResult<Py<PyAny>> {
        match dim {
            None => Ok(PyTuple::new(py, self.t.strides())?.into_any().unbind()),
            Some(d) => {
                let d = minigrad_core::shape::wrap_dim(d, self.t.ndim()).map_err(crate::errors::to_py)?;
                Ok(self.t.strides().get(d).copied().unwrap_or(1).into_pyobject(py)?.into_any().unbind())
            }
        }
    }

    #[getter]
    fn dtype(&self) -> PyDType {
        self.t.dtype().into()
    }
    #[getter]
    fn ndim(&self) -> usize {
        self.t.ndim()
    }
    fn dim(&self) -> usize {
        self.t.ndim()
    }
    fn ndimension(&self) -> usize {
        self.t.ndim()
    }
    fn numel(&self) -> usize {
        self.t.numel()
    }
    fn nelement(&self) -> usize {
        self.t.numel()
    }
    fn element_size(&self) -> usize {
        self.t.dtype().size()
    }
    #[getter]
    fn itemsize(&self) -> usize {
        self.t.dtype().size()
    }
    #[getter]
    fn nbytes(&self) -> usize {
        self.t.numel() * self.t.dtype().size()
    }
    fn storage_offset(&self) -> usize {
        self.t.layout.offset
    }
    #[pyo3(signature = (memory_format=None))]
    fn is_contiguous(&self, memory_format: Option<&Bound<'_, PyAny>>) -> bool {
        let _ = memory_format;
        self.t.is_contiguous()
    }
    /// The address of the first element; 0 for a tensor with no elements, as in torch.
    fn data_ptr(&self) -> usize {
        if self.t.numel() == 0 {
            return 0;
        }
        self.t.data_addr()
    }
    fn is_floating_point(&self) -> bool {
        self.t.dtype().is_floating()
    }
    #[getter]
    fn _version(&self) -> u64 {
        self.t.version()
    }
    #[getter]
    fn _base(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.base.as_ref().map(|b| b.clone_ref(py))
    }
    fn _is_view(&self) -> bool {
        self.base.is_some()
    }
    /// True when both tensors use the same storage (for tests and the memory tools).
    fn _shares_storage(&self, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.t.same_storage(&tensor_of(other, "other")?))
    }
    fn _shares_version_counter(&self, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.t.version.shares_with(&tensor_of(other, "other")?.version))
    }
    fn untyped_storage_nbytes(&self) -> usize {
        self.t.storage.nbytes()
    }

    // ----- views (share storage and version counter) -----

    #[pyo3(signature = (*shape))]
    fn view(slf: &Bound<'_, Self>, shape: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        if shape.len() == 1 {
            if let Ok(d) = shape.get_item(0)?.extract::<PyDType>() {
                if d.d == slf.borrow().t.dtype() {
                    return wrap_view(py, slf.borrow().t.view_as_layout(slf.borrow().t.layout.clone()), slf);
                }
                return Err(pyo3::exceptions::PyNotImplementedError::new_err("view(dtype) with a different dtype is not supported by minigrad"));
            }
        }
        if shape.is_empty() {
            return Err(type_err("view() received an invalid combination of arguments - got (), but expected one of:\n * (torch.dtype dtype)\n * (tuple of ints size)\n"));
        }
        let sizes = sizes_from_args(shape)?;
        let t = with_t(slf, 0, |x| views::view(x, &sizes))?;
        wrap_view(py, t, slf)
    }

    fn view_as(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let shape: Vec<i64> = tensor_of(other, "view_as(): argument 'other'")?.shape().iter().map(|&d| d as i64).collect();
        let t = with_t(slf, 0, |x| views::view(x, &shape))?;
        wrap_view(slf.py(), t, slf)
    }

    #[pyo3(signature = (*shape))]
    fn reshape(slf: &Bound<'_, Self>, shape: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        missing_arg(shape, "reshape", "shape")?;
        let sizes = sizes_from_args(shape)?;
        reshape_impl(slf, &sizes)
    }

    fn reshape_as(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let shape: Vec<i64> = tensor_of(other, "reshape_as(): argument 'other'")?.shape().iter().map(|&d| d as i64).collect();
        reshape_impl(slf, &shape)
    }

    #[pyo3(signature = (start_dim=0, end_dim=-1))]
    fn flatten(slf: &Bound<'_, Self>, start_dim: i64, end_dim: i64) -> PyResult<Py<PyAny>> {
        let (n, nd) = (slf.borrow().t.numel(), slf.borrow().t.ndim());
        let t = with_t(slf, n, |x| views::flatten(x, start_dim, end_dim))?;
        let wrap = |d: i64| minigrad_core::shape::wrap_dim(d, nd).ok();
        if nd > 0 && wrap(start_dim) == wrap(end_dim) {
            return Ok(slf.clone().into_any().unbind());
        }
        wrap_maybe_view(slf, t)
    }

    #[pyo3(signature = (dim=None))]
    fn squeeze(slf: &Bound<'_, Self>, dim: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let dims = match dim {
            None => None,
            Some(d) => Some(int_list(d)?),
        };
        let t = with_t(slf, 0, |x| views::squeeze(x, dims.as_deref()))?;
        wrap_view(slf.py(), t, slf)
    }

    fn unsqueeze(slf: &Bound<'_, Self>, dim: i64) -> PyResult<Py<PyAny>> {
        let t = with_t(slf, 0, |x| views::unsqueeze(x, dim))?;
        wrap_view(slf.py(), t, slf)
    }

    fn transpose(slf: &Bound<'_, Self>, dim0: i64, dim1: i64) -> PyResult<Py<PyAny>> {
        let t = with_t(slf, 0, |x| views::transpose(x, dim0, dim1))?;
        wrap_view(slf.py(), t, slf)
    }

    fn swapaxes(slf: &Bound<'_, Self>, axis0: i64, axis1: i64) -> PyResult<Py<PyAny>> {
        Self::transpose(slf, axis0, axis1)
    }

    fn t(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let t = with_t(slf, 0, |x| views::t(x))?;
        wrap_view(slf.py(), t, slf)
    }

    #[getter(T)]
    fn big_t(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let n = slf.borrow().t.ndim() as i64;
        let dims: Vec<i64> = (0..n).rev().collect();
        let t = with_t(slf, 0, |x| views::permute(x, &dims))?;
        wrap_view(slf.py(), t, slf)
    }

    #[getter(mT)]
    fn m_t(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        if slf.borrow().t.ndim() < 2 {
            return Err(pyo3::exceptions::PyRuntimeError::new_err(format!(
                "tensor.mT is only supported on matrices or batches of matrices. Got {}-D tensor.",
                slf.borrow().t.ndim()
            )));
        }
        Self::transpose(slf, -2, -1)
    }

    #[pyo3(signature = (*dims))]
    fn permute(slf: &Bound<'_, Self>, dims: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        missing_arg(dims, "permute", "dims")?;
        let dims = sizes_from_args(dims)?;
        let t = with_t(slf, 0, |x| views::permute(x, &dims))?;
        wrap_view(slf.py(), t, slf)
    }

    #[pyo3(signature = (*sizes))]
    fn expand(slf: &Bound<'_, Self>, sizes: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        missing_arg(sizes, "expand", "size")?;
        let sizes = sizes_from_args(sizes)?;
        let t = with_t(slf, 0, |x| views::expand(x, &sizes))?;
        wrap_view(slf.py(), t, slf)
    }

    fn expand_as(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let sizes: Vec<i64> = tensor_of(other, "expand_as(): argument 'other'")?.shape().iter().map(|&d| d as i64).collect();
        let t = with_t(slf, 0, |x| views::expand(x, &sizes))?;
        wrap_view(slf.py(), t, slf)
    }

    fn narrow(slf: &Bound<'_, Self>, dim: i64, start: i64, length: i64) -> PyResult<Py<PyAny>> {
        let t = with_t(slf, 0, |x| views::narrow(x, dim, start, length))?;
        wrap_view(slf.py(), t, slf)
    }

    fn select(slf: &Bound<'_, Self>, dim: i64, index: i64) -> PyResult<Py<PyAny>> {
        let t = with_t(slf, 0, |x| views::select(x, dim, index))?;
        wrap_view(slf.py(), t, slf)
    }

    #[pyo3(signature = (offset=0, dim1=0, dim2=1))]
    fn diagonal(slf: &Bound<'_, Self>, offset: i64, dim1: i64, dim2: i64) -> PyResult<Py<PyAny>> {
        let t = with_t(slf, 0, |x| views::diagonal(x, offset, dim1, dim2))?;
        wrap_view(slf.py(), t, slf)
    }

    #[pyo3(signature = (size, stride, storage_offset=None))]
    fn as_strided(slf: &Bound<'_, Self>, size: &Bound<'_, PyAny>, stride: &Bound<'_, PyAny>, storage_offset: Option<i64>) -> PyResult<Py<PyAny>> {
        let (size, stride) = (int_list(size)?, int_list(stride)?);
        let t = with_t(slf, 0, |x| views::as_strided(x, &size, &stride, storage_offset))?;
        wrap_view(slf.py(), t, slf)
    }

    #[pyo3(signature = (dim=0))]
    fn unbind(slf: &Bound<'_, Self>, dim: i64) -> PyResult<Py<PyAny>> {
        let ts = with_t(slf, 0, |x| views::unbind(x, dim))?;
        wrap_views(slf.py(), ts, slf)
    }

    #[pyo3(signature = (split_size_or_sections, dim=0))]
    fn split(slf: &Bound<'_, Self>, split_size_or_sections: &Bound<'_, PyAny>, dim: i64) -> PyResult<Py<PyAny>> {
        let ts = if let Ok(n) = split_size_or_sections.extract::<i64>() {
            with_t(slf, 0, |x| views::split(x, n, dim))?
        } else {
            let sizes = int_list(split_size_or_sections)?;
            with_t(slf, 0, |x| views::split_with_sizes(x, &sizes, dim))?
        };
        wrap_views(slf.py(), ts, slf)
    }

    #[pyo3(signature = (split_sizes, dim=0))]
    fn split_with_sizes(slf: &Bound<'_, Self>, split_sizes: &Bound<'_, PyAny>, dim: i64) -> PyResult<Py<PyAny>> {
        let sizes = int_list(split_sizes)?;
        let ts = with_t(slf, 0, |x| views::split_with_sizes(x, &sizes, dim))?;
        wrap_views(slf.py(), ts, slf)
    }

    #[pyo3(signature = (chunks, dim=0))]
    fn chunk(slf: &Bound<'_, Self>, chunks: i64, dim: i64) -> PyResult<Py<PyAny>> {
        let ts = with_t(slf, 0, |x| views::chunk(x, chunks, dim))?;
        wrap_views(slf.py(), ts, slf)
    }

    // ----- in-place view ops: change this tensor's layout, bump its version (R3) -----

    fn t_(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let layout = slf.borrow().t.layout.t().map_err(|e| crate::errors::to_py(match e {
            minigrad_core::Error::Runtime(m) => minigrad_core::Error::Runtime(m.replacen("t()", "t_()", 1)),
            other => other,
        }))?;
        set_layout(slf, layout)
    }

    fn transpose_(slf: &Bound<'_, Self>, dim0: i64, dim1: i64) -> PyResult<Py<PyAny>> {
        let layout = slf.borrow().t.layout.transpose(dim0, dim1).map_err(crate::errors::to_py)?;
        set_layout(slf, layout)
    }

    fn swapaxes_(slf: &Bound<'_, Self>, axis0: i64, axis1: i64) -> PyResult<Py<PyAny>> {
        Self::transpose_(slf, axis0, axis1)
    }

    #[pyo3(signature = (size, stride, storage_offset=None))]
    fn as_strided_(slf: &Bound<'_, Self>, size: &Bound<'_, PyAny>, stride: &Bound<'_, PyAny>, storage_offset: Option<i64>) -> PyResult<Py<PyAny>> {
        let (size, stride) = (int_list(size)?, int_list(stride)?);
        let layout = with_t(slf, 0, |x| views::as_strided(x, &size, &stride, storage_offset))?.layout;
        set_layout(slf, layout)
    }

    #[pyo3(signature = (dim=None))]
    fn squeeze_(slf: &Bound<'_, Self>, dim: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let dims = match dim {
            None => None,
            Some(d) => Some(int_list(d)?),
        };
        let layout = slf.borrow().t.layout.squeeze(dims.as_deref()).map_err(crate::errors::to_py)?;
        set_layout(slf, layout)
    }

    fn unsqueeze_(slf: &Bound<'_, Self>, dim: i64) -> PyResult<Py<PyAny>> {
        let layout = slf.borrow().t.layout.unsqueeze(dim).map_err(crate::errors::to_py)?;
        set_layout(slf, layout)
    }

    // ----- copies and aliases -----

    #[pyo3(signature = (memory_format=None))]
    fn contiguous(slf: &Bound<'_, Self>, memory_format: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let _ = memory_format;
        if slf.borrow().t.is_contiguous() {
            return Ok(slf.clone().into_any().unbind());
        }
        let n = slf.borrow().t.numel();
        let t = with_t(slf, n, |x| Ok(copy::contiguous(x)))?;
        wrap(slf.py(), t)
    }

    #[pyo3(signature = (memory_format=None))]
    fn clone(slf: &Bound<'_, Self>, memory_format: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let _ = memory_format;
        let n = slf.borrow().t.numel();
        let t = with_t(slf, n, |x| Ok(copy::clone(x)))?;
        wrap(slf.py(), t)
    }

    /// Shares memory and the version counter (R7); not a view (`_base` is None), as in torch.
    fn detach(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let t = slf.borrow().t.alias();
        wrap(slf.py(), t)
    }

    fn detach_(slf: &Bound<'_, Self>) -> Py<PyAny> {
        slf.clone().into_any().unbind()
    }

    /// `.data`: same memory, a fresh version counter (R7).
    #[getter]
    fn data(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let t = slf.borrow().t.alias_with_new_version();
        wrap(slf.py(), t)
    }

    /// `x.data = y`: x now shows y's memory and layout; x keeps its own version counter (R4).
    #[setter]
    fn set_data(slf: &Bound<'_, Self>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let src = tensor_of(value, "data")?;
        let mut me = slf.borrow_mut();
        me.t = Tensor { storage: src.storage.clone(), layout: src.layout.clone(), version: me.t.version.clone(), is_view: me.t.is_view };
        Ok(())
    }

    fn __len__(&self) -> PyResult<usize> {
        if self.t.ndim() == 0 {
            return Err(type_err("len() of a 0-d tensor"));
        }
        Ok(self.t.shape()[0])
    }

    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }

    fn tolist(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let t = copy::contiguous(&self.t);
        let flat: Vec<Py<PyAny>> = minigrad_core::dispatch!(t.dtype(), T => {
            t.to_vec::<T>().into_iter().map(|v| crate::convert::scalar_to_py(py, minigrad_core::element::Element::to_scalar(v))).collect::<PyResult<Vec<_>>>()?
        });
        nest(py, &flat, self.t.shape())
    }
}

/// torch's TypeError for a varargs method called with no arguments at all.
fn missing_arg(args: &Bound<'_, PyTuple>, method: &str, arg: &str) -> PyResult<()> {
    if args.is_empty() {
        return Err(type_err(format!("{}() missing 1 required positional arguments: \"{}\"", method, arg)));
    }
    Ok(())
}

/// Builds nested lists from row-major values.
fn nest(py: Python<'_>, flat: &[Py<PyAny>], shape: &[usize]) -> PyResult<Py<PyAny>> {
    if shape.is_empty() {
        return Ok(flat[0].clone_ref(py));
    }
    let step: usize = shape[1..].iter().product();
    let mut items = Vec::with_capacity(shape[0]);
    for i in 0..shape[0] {
        items.push(nest(py, &flat[i * step..(i + 1) * step], &shape[1..])?);
    }
    Ok(PyList::new(py, items)?.into_any().unbind())
}

fn reshape_impl(slf: &Bound<'_, TensorBase>, sizes: &[i64]) -> PyResult<Py<PyAny>> {
    let n = slf.borrow().t.numel();
    let t = with_t(slf, n, |x| views::reshape(x, sizes))?;
    wrap_maybe_view(slf, t)
}

/// reshape/flatten return a view when they could, a fresh tensor when they copied.
fn wrap_maybe_view(slf: &Bound<'_, TensorBase>, t: Tensor) -> PyResult<Py<PyAny>> {
    if t.same_storage(&slf.borrow().t) {
        wrap_view(slf.py(), t, slf)
    } else {
        wrap(slf.py(), t)
    }
}

fn set_layout(slf: &Bound<'_, TensorBase>, layout: minigrad_core::layout::Layout) -> PyResult<Py<PyAny>> {
    {
        let mut me = slf.borrow_mut();
        me.t.layout = layout;
        write::bump_metadata(&me.t);
    }
    Ok(slf.clone().into_any().unbind())
}
