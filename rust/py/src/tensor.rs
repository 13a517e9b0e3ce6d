//! `TensorBase`: the Rust half of `minigrad.Tensor`. It holds a core tensor handle; the core
//! tensor's autograd meta remembers this object, so every path back to the same tensor returns
//! the same Python object. This file holds metadata and view methods; autograd attributes live
//! in `autograd/`, op families in their own files.

use crate::convert::{int_arg, int_list_arg, is_int_like, make_size, opt_int_arg, sizes_arg, tensor_of, wrap, wrap_view, PENDING};
use crate::dtype::PyDType;
use crate::errors::{run, to_py, type_err};

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
    /// This object's own address, as stored in the core tensor's `py_object` slot.
    pub self_addr: usize,
}

impl Drop for TensorBase {
    /// Clears the core tensor's pointer to this object (only if it still points here).
    fn drop(&mut self) {
        let mut m = self.t.meta.lock();
        if m.py_object == self.self_addr {
            m.py_object = 0;
        }
    }
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
    fn new(_args: &Bound<'_, PyTuple>, _kwargs: Option<&Bound<'_, pyo3::types::PyDict>>) -> PyResult<Self> {
        let t = match PENDING.with(|p| p.borrow_mut().take()) {
            Some(t) => t,
            None => Tensor::empty(&[0], DType::Float32).map_err(to_py)?,
        };
        Ok(TensorBase { t, self_addr: 0 })
    }

    // ----- metadata -----

    #[getter]
    fn shape(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        make_size(py, self.t.shape())
    }

    #[pyo3(signature = (dim=None))]
    fn size(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        match opt_int_arg(dim, "size", "dim", 1)? {
            None => make_size(py, self.t.shape()),
            Some(d) => {
                let d = minigrad_core::shape::wrap_dim(d, self.t.ndim()).map_err(crate::errors::to_py)?;
                Ok(self.t.shape().get(d).copied().unwrap_or(1).into_pyobject(py)?.into_any().unbind())
            }
        }
    }

    #[pyo3(signature = (dim=None))]
    fn stride(&self, py: Python<'_>, dim: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        match opt_int_arg(dim, "stride", "dim", 1)? {
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
    fn is_contiguous(&self, memory_format: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
        no_memory_format(memory_format, "is_contiguous")?;
        Ok(self.t.is_contiguous())
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
    fn _version(&self) -> PyResult<u64> {
        if self.t.is_inference() {
            return Err(pyo3::exceptions::PyRuntimeError::new_err("Inference tensors do not track version counter."));
        }
        Ok(self.t.version())
    }
    #[getter]
    fn _base(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.t.base().map(|b| crate::convert::wrap(py, b)).transpose()
    }
    fn _is_view(&self) -> bool {
        self.t.is_view()
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
        let sizes = sizes_arg(shape, "view", "size")?;
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
        let sizes = sizes_arg(shape, "reshape", "shape")?;
        reshape_impl(slf, &sizes)
    }

    fn reshape_as(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let shape: Vec<i64> = tensor_of(other, "reshape_as(): argument 'other'")?.shape().iter().map(|&d| d as i64).collect();
        reshape_impl(slf, &shape)
    }

    #[pyo3(signature = (start_dim=None, end_dim=None))]
    fn flatten(slf: &Bound<'_, Self>, start_dim: Option<&Bound<'_, PyAny>>, end_dim: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let start_dim = opt_int_arg(start_dim, "flatten", "start_dim", 1)?.unwrap_or(0);
        let end_dim = opt_int_arg(end_dim, "flatten", "end_dim", 2)?.unwrap_or(-1);
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
            Some(d) => Some(int_list_arg(d, "squeeze", "dim", 1)?),
        };
        // squeeze(0) and squeeze((0,)) are different overloads (SqueezeBackward1 / 2)
        let single = dim.is_some_and(is_int_like);
        let t = with_t(slf, 0, |x| match (single, dims.as_deref()) {
            (true, Some([d])) => views::squeeze_dim(x, *d),
            (_, dims) => views::squeeze(x, dims),
        })?;
        wrap_view(slf.py(), t, slf)
    }

    fn unsqueeze(slf: &Bound<'_, Self>, dim: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let dim = int_arg(dim, "unsqueeze", "dim", 1)?;
        let t = with_t(slf, 0, |x| views::unsqueeze(x, dim))?;
        wrap_view(slf.py(), t, slf)
    }

    fn transpose(slf: &Bound<'_, Self>, dim0: &Bound<'_, PyAny>, dim1: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let (dim0, dim1) = (int_arg(dim0, "transpose", "dim0", 1)?, int_arg(dim1, "transpose", "dim1", 2)?);
        let t = with_t(slf, 0, |x| views::transpose(x, dim0, dim1))?;
        wrap_view(slf.py(), t, slf)
    }

    fn swapaxes(slf: &Bound<'_, Self>, axis0: &Bound<'_, PyAny>, axis1: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let (a, b) = (int_arg(axis0, "swapaxes", "axis0", 1)?, int_arg(axis1, "swapaxes", "axis1", 2)?);
        let t = with_t(slf, 0, |x| views::transpose(x, a, b))?;
        wrap_view(slf.py(), t, slf)
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
        let t = with_t(slf, 0, |x| views::transpose(x, -2, -1))?;
        wrap_view(slf.py(), t, slf)
    }

    #[pyo3(signature = (*dims))]
    fn permute(slf: &Bound<'_, Self>, dims: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        missing_arg(dims, "permute", "dims")?;
        let dims = sizes_arg(dims, "permute", "dims")?;
        let t = with_t(slf, 0, |x| views::permute(x, &dims))?;
        wrap_view(slf.py(), t, slf)
    }

    #[pyo3(signature = (*sizes))]
    fn expand(slf: &Bound<'_, Self>, sizes: &Bound<'_, PyTuple>) -> PyResult<Py<PyAny>> {
        missing_arg(sizes, "expand", "size")?;
        let sizes = sizes_arg(sizes, "expand", "size")?;
        let t = with_t(slf, 0, |x| views::expand(x, &sizes))?;
        wrap_view(slf.py(), t, slf)
    }

    fn expand_as(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let sizes: Vec<i64> = tensor_of(other, "expand_as(): argument 'other'")?.shape().iter().map(|&d| d as i64).collect();
        let t = with_t(slf, 0, |x| views::expand(x, &sizes))?;
        wrap_view(slf.py(), t, slf)
    }

    fn narrow(slf: &Bound<'_, Self>, dim: &Bound<'_, PyAny>, start: &Bound<'_, PyAny>, length: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let (dim, start, length) = (int_arg(dim, "narrow", "dim", 1)?, int_arg(start, "narrow", "start", 2)?, int_arg(length, "narrow", "length", 3)?);
        let t = with_t(slf, 0, |x| views::narrow(x, dim, start, length))?;
        wrap_view(slf.py(), t, slf)
    }

    /// torch's `slice(dim, start, end, step)` (SliceBackward0 keeping start/end as given, clamped
    /// only in the layout), for composites built from slices (`tensor_split`).
    fn _slice(slf: &Bound<'_, Self>, dim: i64, start: i64, end: i64, step: i64) -> PyResult<Py<PyAny>> {
        let t = with_t(slf, 0, |x| {
            let d = minigrad_core::shape::wrap_dim(dim, x.ndim())?;
            views::slice(x, d, start, end, step)
        })?;
        wrap_view(slf.py(), t, slf)
    }

    fn unfold(slf: &Bound<'_, Self>, dimension: &Bound<'_, PyAny>, size: &Bound<'_, PyAny>, step: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let dim = int_arg(dimension, "unfold", "dimension", 1)?;
        let (size, step) = (int_arg(size, "unfold", "size", 2)?, int_arg(step, "unfold", "step", 3)?);
        let t = with_t(slf, 0, |x| views::unfold(x, dim, size, step))?;
        wrap_view(slf.py(), t, slf)
    }

    fn select(slf: &Bound<'_, Self>, dim: &Bound<'_, PyAny>, index: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let (dim, index) = (int_arg(dim, "select", "dim", 1)?, int_arg(index, "select", "index", 2)?);
        let t = with_t(slf, 0, |x| views::select(x, dim, index))?;
        wrap_view(slf.py(), t, slf)
    }

    #[pyo3(signature = (offset=None, dim1=None, dim2=None))]
    fn diagonal(slf: &Bound<'_, Self>, offset: Option<&Bound<'_, PyAny>>, dim1: Option<&Bound<'_, PyAny>>, dim2: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let offset = opt_int_arg(offset, "diagonal", "offset", 1)?.unwrap_or(0);
        let dim1 = opt_int_arg(dim1, "diagonal", "dim1", 2)?.unwrap_or(0);
        let dim2 = opt_int_arg(dim2, "diagonal", "dim2", 3)?.unwrap_or(1);
        let t = with_t(slf, 0, |x| views::diagonal(x, offset, dim1, dim2))?;
        wrap_view(slf.py(), t, slf)
    }

    #[pyo3(signature = (size, stride, storage_offset=None))]
    fn as_strided(slf: &Bound<'_, Self>, size: &Bound<'_, PyAny>, stride: &Bound<'_, PyAny>, storage_offset: Option<i64>) -> PyResult<Py<PyAny>> {
        let (size, stride) = (int_list_arg(size, "as_strided", "size", 1)?, int_list_arg(stride, "as_strided", "stride", 2)?);
        let t = with_t(slf, 0, |x| views::as_strided(x, &size, &stride, storage_offset))?;
        wrap_view(slf.py(), t, slf)
    }

    #[pyo3(signature = (dim=None))]
    fn unbind(slf: &Bound<'_, Self>, dim: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let dim = opt_int_arg(dim, "unbind", "dim", 1)?.unwrap_or(0);
        let ts = with_t(slf, 0, |x| views::unbind(x, dim))?;
        wrap_views(slf.py(), ts, slf)
    }

    #[pyo3(signature = (split_size_or_sections, dim=None))]
    fn split(slf: &Bound<'_, Self>, split_size_or_sections: &Bound<'_, PyAny>, dim: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let dim = opt_int_arg(dim, "split", "dim", 2)?.unwrap_or(0);
        let ts = if is_int_like(split_size_or_sections) {
            let n = int_arg(split_size_or_sections, "split", "split_size", 1)?;
            with_t(slf, 0, |x| views::split(x, n, dim))?
        } else {
            let sizes = int_list_arg(split_size_or_sections, "split_with_sizes", "split_sizes", 2)?;
            with_t(slf, 0, |x| views::split_with_sizes(x, &sizes, dim))?
        };
        wrap_views(slf.py(), ts, slf)
    }

    #[pyo3(signature = (split_sizes, dim=None))]
    fn split_with_sizes(slf: &Bound<'_, Self>, split_sizes: &Bound<'_, PyAny>, dim: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let dim = opt_int_arg(dim, "split_with_sizes", "dim", 2)?.unwrap_or(0);
        let sizes = int_list_arg(split_sizes, "split_with_sizes", "split_sizes", 1)?;
        let ts = with_t(slf, 0, |x| views::split_with_sizes(x, &sizes, dim))?;
        wrap_views(slf.py(), ts, slf)
    }

    #[pyo3(signature = (chunks, dim=None))]
    fn chunk(slf: &Bound<'_, Self>, chunks: &Bound<'_, PyAny>, dim: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let chunks = int_arg(chunks, "chunk", "chunks", 1)?;
        let dim = opt_int_arg(dim, "chunk", "dim", 2)?.unwrap_or(0);
        let ts = with_t(slf, 0, |x| views::chunk(x, chunks, dim))?;
        wrap_views(slf.py(), ts, slf)
    }

    // ----- in-place view ops: change this tensor's layout, bump its version (R3) -----

    fn t_(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let layout = slf.borrow().t.layout.t().map_err(|e| crate::errors::to_py(match e {
            minigrad_core::Error::Runtime(m) => minigrad_core::Error::Runtime(m.replacen("t()", "t_()", 1)),
            other => other,
        }))?;
        set_layout(slf, layout, InplaceView::T)
    }

    fn transpose_(slf: &Bound<'_, Self>, dim0: &Bound<'_, PyAny>, dim1: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let (dim0, dim1) = (int_arg(dim0, "transpose_", "dim0", 1)?, int_arg(dim1, "transpose_", "dim1", 2)?);
        let layout = slf.borrow().t.layout.transpose(dim0, dim1).map_err(crate::errors::to_py)?;
        set_layout(slf, layout, InplaceView::Transpose(dim0, dim1))
    }

    fn swapaxes_(slf: &Bound<'_, Self>, axis0: &Bound<'_, PyAny>, axis1: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let (a, b) = (int_arg(axis0, "swapaxes_", "axis0", 1)?, int_arg(axis1, "swapaxes_", "axis1", 2)?);
        let layout = slf.borrow().t.layout.transpose(a, b).map_err(crate::errors::to_py)?;
        set_layout(slf, layout, InplaceView::Transpose(a, b))
    }

    #[pyo3(signature = (size, stride, storage_offset=None))]
    fn as_strided_(slf: &Bound<'_, Self>, size: &Bound<'_, PyAny>, stride: &Bound<'_, PyAny>, storage_offset: Option<i64>) -> PyResult<Py<PyAny>> {
        let (size, stride) = (int_list_arg(size, "as_strided_", "size", 1)?, int_list_arg(stride, "as_strided_", "stride", 2)?);
        let layout = with_t(slf, 0, |x| views::as_strided(x, &size, &stride, storage_offset))?.layout;
        set_layout(slf, layout, InplaceView::AsStrided)
    }

    #[pyo3(signature = (dim=None))]
    fn squeeze_(slf: &Bound<'_, Self>, dim: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let dims = match dim {
            None => None,
            Some(d) => Some(int_list_arg(d, "squeeze_", "dim", 1)?),
        };
        let layout = slf.borrow().t.layout.squeeze(dims.as_deref()).map_err(crate::errors::to_py)?;
        set_layout(slf, layout, InplaceView::Reshape("SqueezeBackward3"))
    }

    fn unsqueeze_(slf: &Bound<'_, Self>, dim: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let dim = int_arg(dim, "unsqueeze_", "dim", 1)?;
        let layout = slf.borrow().t.layout.unsqueeze(dim).map_err(crate::errors::to_py)?;
        set_layout(slf, layout, InplaceView::Reshape("UnsqueezeBackward1"))
    }

    // ----- copies and aliases -----

    #[pyo3(signature = (memory_format=None))]
    fn contiguous(slf: &Bound<'_, Self>, memory_format: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        no_memory_format(memory_format, "contiguous")?;
        if slf.borrow().t.is_contiguous() {
            return Ok(slf.clone().into_any().unbind());
        }
        let n = slf.borrow().t.numel();
        let t = with_t(slf, n, copy::contiguous)?;
        wrap(slf.py(), t)
    }

    #[pyo3(signature = (memory_format=None))]
    fn clone(slf: &Bound<'_, Self>, memory_format: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        no_memory_format(memory_format, "clone")?;
        let n = slf.borrow().t.numel();
        let t = with_t(slf, n, copy::clone)?;
        wrap(slf.py(), t)
    }

    /// Shares memory and the version counter (R7); not a view (`_base` is None), as in torch.
    fn detach(slf: &Bound<'_, Self>) -> PyResult<Py<PyAny>> {
        let t = slf.borrow().t.alias();
        wrap(slf.py(), t)
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
        me.t.set_data(&src);
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
        let t = copy::contiguous_raw(&self.t).map_err(to_py)?;
        let flat: Vec<Py<PyAny>> = minigrad_core::dispatch_all!(t.dtype(), T => {
            t.to_vec::<T>().map_err(to_py)?.into_iter().map(|v| crate::convert::scalar_to_py(py, minigrad_core::element::Element::to_scalar(v))).collect::<PyResult<Vec<_>>>()?
        });
        nest(py, &flat, self.t.shape())
    }
}

/// minigrad has no memory formats besides the default (no `minigrad.channels_last`): any value
/// given is refused as torch refuses a value that is not a `torch.memory_format`.
fn no_memory_format(memory_format: Option<&Bound<'_, PyAny>>, method: &str) -> PyResult<()> {
    match memory_format {
        Some(m) if !m.is_none() => Err(type_err(format!(
            "{}(): argument 'memory_format' must be minigrad.memory_format, not {}",
            method,
            crate::convert::type_name(m)
        ))),
        _ => Ok(()),
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

/// The in-place view ops, for their autograd node.
#[derive(Clone, Copy)]
enum InplaceView {
    T,
    Transpose(i64, i64),
    Reshape(&'static str),
    AsStrided,
}

/// Changes this tensor's layout in place: an in-place op (R3 bump, leaf/view checks, history
/// rebased onto TBackward1 / TransposeBackward1 / SqueezeBackward3 / UnsqueezeBackward1).
fn set_layout(slf: &Bound<'_, TensorBase>, layout: minigrad_core::layout::Layout, kind: InplaceView) -> PyResult<Py<PyAny>> {
    use minigrad_core::autograd::Recorder;
    let t = slf.borrow().t.clone();
    let rec = Recorder::inplace(&t, &[]).map_err(crate::errors::to_py)?;
    if rec.is_some() && matches!(kind, InplaceView::AsStrided) {
        return Err(pyo3::exceptions::PyNotImplementedError::new_err("as_strided_ on a tensor that requires grad is not supported by minigrad"));
    }
    let old_shape: Vec<i64> = t.shape().iter().map(|&d| d as i64).collect();
    let new_t = {
        let mut me = slf.borrow_mut();
        me.t.layout = layout;
        write::bump_metadata(&me.t);
        me.t.clone()
    };
    if let Some(rec) = rec {
        let (name, formula): (&'static str, minigrad_core::autograd::Formula) = match kind {
            InplaceView::T => ("TBackward1", Box::new(|ctx| Ok(vec![Some(views::t(ctx.grad())?)]))),
            InplaceView::Transpose(a, b) => ("TransposeBackward1", Box::new(move |ctx| Ok(vec![Some(views::transpose(ctx.grad(), a, b)?)]))),
            InplaceView::Reshape(name) => (name, Box::new(move |ctx| Ok(vec![Some(views::reshape(ctx.grad(), &old_shape)?)]))),
            InplaceView::AsStrided => unreachable!("refused above"),
        };
        rec.finish_inplace(name, &new_t, formula).map_err(crate::errors::to_py)?;
    }
    Ok(slf.clone().into_any().unbind())
}
