//! NumPy interop: `numpy()` and `from_numpy` share memory with no copy, as torch's do.

use crate::convert::wrap;
use crate::errors::type_err;
use crate::tensor::TensorBase;
use minigrad_core::layout::Layout;
use minigrad_core::storage::Storage;
use minigrad_core::{DType, Tensor};
use numpy::ndarray::{ArrayViewD, IxDyn, ShapeBuilder};
use numpy::{PyArray, PyArrayDescrMethods, PyUntypedArray, PyUntypedArrayMethods};
use pyo3::prelude::*;
use std::sync::Arc;

/// Keeps a storage alive for as long as a NumPy array borrows its memory.
#[pyclass(module = "minigrad._C", frozen)]
pub struct StorageOwner {
    /// Never read: holding it is the point (the array's memory lives as long as this object).
    _storage: Arc<Storage>,
}

/// `t.numpy()`: an ndarray over the tensor's own memory (writes are shared both ways).
#[pyfunction]
pub fn to_numpy(py: Python<'_>, x: &Bound<'_, TensorBase>) -> PyResult<Py<PyAny>> {
    let t = x.borrow().t.clone();
    let owner = Bound::new(py, StorageOwner { _storage: t.storage.clone() })?.into_any();
    let shape = IxDyn(t.shape());
    // (an array without elements gets zero strides, as torch's numpy() gives it)
    let strides = IxDyn(&t.strides().iter().map(|&s| if t.numel() == 0 { 0 } else { s as usize }).collect::<Vec<_>>());
    if t.dtype() == DType::BFloat16 {
        // NumPy has no bfloat16 (torch's words)
        return Err(type_err("Got unsupported ScalarType BFloat16".to_string()));
    }
    let arr = minigrad_core::dispatch_all!(t.dtype(), T => {
        // SAFETY: the pointer and layout describe elements inside `t.storage` (checked when the
        // layout was made; strides are non-negative), which `owner` keeps alive and never
        // reallocates; the returned array holds `owner` as its base object.
        unsafe {
            let view: ArrayViewD<'_, T> = ArrayViewD::from_shape_ptr(shape.strides(strides), t.data_ptr::<T>() as *const T);
            PyArray::borrow_from_array(&view, owner).into_any().unbind()
        }
    });
    Ok(arr)
}

fn dtype_of(arr: &Bound<'_, PyUntypedArray>) -> PyResult<DType> {
    let d = arr.dtype();
    let (kind, size) = (d.kind(), d.itemsize());
    Ok(match (kind, size) {
        (b'f', 4) => DType::Float32,
        (b'f', 8) => DType::Float64,
        (b'i', 8) => DType::Int64,
        (b'i', 4) => DType::Int32,
        (b'b', 1) => DType::Bool,
        (b'f', 2) => DType::Float16,
        (b'u', 1) => DType::UInt8,
        (b'i', 1) => DType::Int8,
        (b'i', 2) => DType::Int16,
        _ => {
            return Err(type_err(format!(
                "can't convert np.ndarray of type {}. The only supported types are: float64, float32, float16, int64, int32, int16, int8, uint8, and bool.",
                d.typeobj().str()?
            )))
        }
    })
}

/// `from_numpy(arr)`: a tensor over the array's memory; the array stays alive with it.
#[pyfunction]
pub fn from_numpy(py: Python<'_>, arr: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let a = arr.cast::<PyUntypedArray>().map_err(|_| type_err(format!("expected np.ndarray (got {})", crate::convert::type_name(arr))))?;
    let dtype = dtype_of(a)?;
    let item = dtype.size() as isize;
    let shape = a.shape().to_vec();
    let mut strides = Vec::with_capacity(shape.len());
    for &s in a.strides() {
        if s < 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "At least one stride in the given numpy array is negative, and tensors with negative strides are not currently supported. (You can probably work around this by making a copy of your array  with array.copy().) ",
            ));
        }
        if s % item != 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "given numpy array strides not a multiple of the element byte size. Copy the numpy array to reallocate the memory."
            )));
        }
        strides.push(s / item);
    }
    if !a.is_aligned() {
        return Err(pyo3::exceptions::PyValueError::new_err("given numpy array is not aligned; copy it first"));
    }
    let layout = Layout { shape: shape.into(), strides: strides.into(), offset: 0 };
    let len_elems = layout.extent().map_or(0, |(_, hi)| hi as usize);
    // SAFETY: reading the data pointer field of a live PyArrayObject.
    let ptr = unsafe { (*a.as_array_ptr()).fields.data as *mut u8 };
    let owner: Py<PyAny> = arr.clone().unbind();
    // SAFETY: NumPy guarantees `ptr` addresses the array's elements; with non-negative strides
    // every element lies in [ptr, ptr + len_elems * itemsize), and `owner` (the array itself)
    // keeps that memory alive for as long as the storage exists. Alignment was checked above.
    let storage = unsafe { Storage::from_foreign(ptr, len_elems * item as usize, dtype, Box::new(owner)) };
    wrap(py, Tensor::from_storage(storage, layout))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<StorageOwner>()?;
    m.add_function(wrap_pyfunction!(to_numpy, m)?)?;
    m.add_function(wrap_pyfunction!(from_numpy, m)?)?;
    Ok(())
}
