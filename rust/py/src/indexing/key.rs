//! Reading Python indexing keys and assigned values into core terms, with torch's rules for
//! which objects count as ints, which sequences are tuples of indices, and how lists become
//! index tensors (`python_variable_indexing.cpp`).

use crate::errors::{to_py, type_err};
use crate::tensor::TensorBase;
use minigrad_core::ops::copy::to_dtype_raw;
use minigrad_core::ops::index::{conversion_overflow, value_tensor as number_tensor, Key, TensorIndex};
use minigrad_core::{DType, Error, Scalar, Tensor};
use pyo3::exceptions::{PyIndexError, PyNotImplementedError, PyTypeError, PyUserWarning, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyComplex, PyEllipsis, PyFloat, PyInt, PyList, PySlice, PyTuple, PyType};
use std::ffi::CStr;

const NON_TUPLE_WARNING: &CStr = c"Using a non-tuple sequence for multidimensional indexing is deprecated and will be changed in pytorch 2.9; use x[tuple(seq)] instead of x[seq]. In pytorch 2.9 this will be interpreted as tensor index, x[torch.tensor(seq)], which will result either in an error or a different result";

/// numpy.integer and numpy.ndarray, looked up once (None without NumPy).
static NUMPY_TYPES: PyOnceLock<Option<(Py<PyType>, Py<PyType>)>> = PyOnceLock::new();

fn numpy_types(py: Python<'_>) -> Option<&(Py<PyType>, Py<PyType>)> {
    NUMPY_TYPES
        .get_or_init(py, || {
            let np = py.import("numpy").ok()?;
            let integer = np.getattr("integer").ok()?.cast_into::<PyType>().ok()?.unbind();
            let ndarray = np.getattr("ndarray").ok()?.cast_into::<PyType>().ok()?.unbind();
            Some((integer, ndarray))
        })
        .as_ref()
}

/// torch's `THPUtils_checkLong`: a Python int that is not a bool, or a NumPy integer.
fn is_long(obj: &Bound<'_, PyAny>) -> bool {
    if obj.is_exact_instance_of::<PyInt>() {
        return true;
    }
    if obj.is_instance_of::<PyInt>() {
        return !obj.is_instance_of::<PyBool>();
    }
    numpy_types(obj.py()).is_some_and(|(integer, _)| obj.is_instance(integer.bind(obj.py())).unwrap_or(false))
}

fn is_ndarray(obj: &Bound<'_, PyAny>) -> bool {
    numpy_types(obj.py()).is_some_and(|(_, nd)| obj.get_type().is(nd.bind(obj.py())))
}

/// torch's `THPUtils_unpackLong`.
fn unpack_long(obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    obj.extract::<i64>().map_err(|e| {
        if e.is_instance_of::<pyo3::exceptions::PyOverflowError>(obj.py()) {
            PyValueError::new_err("Overflow when unpacking long long")
        } else {
            e
        }
    })
}

/// Python's own slice unpacking: `None`s filled in, huge bounds clamped, step 0 refused.
fn unpack_slice(s: &Bound<'_, PySlice>) -> PyResult<TensorIndex> {
    let (mut start, mut stop, mut step): (ffi::Py_ssize_t, ffi::Py_ssize_t, ffi::Py_ssize_t) = (0, 0, 0);
    // SAFETY: `s` is a live slice object (checked by its type) and the GIL is held; the three
    // out-pointers are valid, exclusively borrowed locals.
    let rc = unsafe { ffi::PySlice_Unpack(s.as_ptr(), &mut start, &mut stop, &mut step) };
    if rc < 0 {
        return Err(PyErr::fetch(s.py()));
    }
    Ok(TensorIndex::Slice { start: start as i64, stop: stop as i64, step: step as i64 })
}

fn is_sequence(obj: &Bound<'_, PyAny>) -> bool {
    // SAFETY: a live object and the GIL; PySequence_Check only inspects the type's slots.
    unsafe { ffi::PySequence_Check(obj.as_ptr()) == 1 }
}

fn is_ellipsis(obj: &Bound<'_, PyAny>) -> bool {
    obj.as_ptr() == PyEllipsis::get(obj.py()).as_ptr()
}

/// The C-level type name torch prints (`tp_name`: "float", "numpy.float32", "Tensor").
pub fn tp_name(obj: &Bound<'_, PyAny>) -> String {
    // SAFETY: every live object has a type object whose `tp_name` is a NUL-terminated string
    // that lives as long as the type; the GIL is held.
    unsafe { CStr::from_ptr((*ffi::Py_TYPE(obj.as_ptr())).tp_name) }.to_string_lossy().into_owned()
}

/// `x[key]` / `x[key] = v`: the key in core terms. Item conversion errors are kept inside the
/// key, since torch raises them only when its walk over the key reaches that item.
pub fn parse(key: &Bound<'_, PyAny>) -> PyResult<Key> {
    if key.is_none() {
        return Ok(Key::Single(TensorIndex::None));
    }
    if is_ellipsis(key) {
        return Ok(Key::Single(TensorIndex::Ellipsis));
    }
    if is_long(key) {
        return Ok(Key::Single(TensorIndex::Int(unpack_long(key)?)));
    }
    if let Ok(s) = key.cast::<PySlice>() {
        return Ok(Key::Single(unpack_slice(s)?));
    }
    if let Ok(b) = key.cast::<PyBool>() {
        return Ok(Key::Single(TensorIndex::Bool(b.is_true())));
    }
    let items: Vec<TensorIndex> = if treat_as_tuple(key)? {
        let tuple = key.try_iter()?.collect::<PyResult<Vec<_>>>()?;
        tuple.iter().map(item).collect()
    } else {
        vec![item(key)]
    };
    Ok(Key::Tuple(items))
}

/// Whether the key is a tuple of indices; for short non-tuple sequences this is NumPy's old
/// heuristic, which torch keeps (with a deprecation warning).
fn treat_as_tuple(key: &Bound<'_, PyAny>) -> PyResult<bool> {
    if key.is_instance_of::<PyTuple>() {
        return Ok(true);
    }
    if key.is_instance_of::<TensorBase>() || is_ndarray(key) || !is_sequence(key) {
        return Ok(false);
    }
    let Ok(n) = key.len() else { return Ok(false) };
    if n >= 32 {
        return Ok(false);
    }
    for i in 0..n {
        let Ok(obj) = key.get_item(i) else { return Ok(false) };
        if obj.is_instance_of::<TensorBase>()
            || is_sequence(&obj)
            || obj.is_instance_of::<PySlice>()
            || is_ellipsis(&obj)
            || obj.is_none()
        {
            let py = key.py();
            PyErr::warn(py, &py.get_type::<PyUserWarning>(), NON_TUPLE_WARNING, 2)?;
            return Ok(true);
        }
    }
    Ok(false)
}

/// One item of a tuple key (torch's `applySlicing` conversion).
fn item(obj: &Bound<'_, PyAny>) -> TensorIndex {
    let converted = || -> PyResult<TensorIndex> {
        if is_long(obj) {
            return Ok(TensorIndex::Int(unpack_long(obj)?));
        }
        if let Ok(s) = obj.cast::<PySlice>() {
            return unpack_slice(s);
        }
        if is_ellipsis(obj) {
            return Ok(TensorIndex::Ellipsis);
        }
        if obj.is_none() {
            return Ok(TensorIndex::None);
        }
        if let Ok(b) = obj.cast::<PyBool>() {
            return Ok(TensorIndex::Bool(b.is_true()));
        }
        if let Ok(t) = obj.cast::<TensorBase>() {
            return Ok(TensorIndex::Tensor(t.borrow().t.clone()));
        }
        if is_sequence(obj) {
            return Ok(TensorIndex::Tensor(sequence_to_tensor(obj)?));
        }
        match obj.call_method0("__index__") {
            Ok(i) => Ok(TensorIndex::Int(unpack_long(&i)?)),
            Err(_) => Err(PyIndexError::new_err(format!(
                "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are valid indices (got {})",
                tp_name(obj)
            ))),
        }
    };
    converted().unwrap_or_else(|e| TensorIndex::Invalid(core_error(obj.py(), e)))
}

/// A list (or other sequence) used as an index: bool data stays a mask, anything else
/// becomes int64 (floats truncate), as torch's `indexing_tensor_from_data`.
fn sequence_to_tensor(obj: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    if let Ok(list) = obj.cast::<PyList>() {
        // Fast path: a flat list of plain ints.
        if list.iter().all(|v| v.is_exact_instance_of::<PyInt>()) {
            let values = list.iter().map(|v| unpack_long(&v)).collect::<PyResult<Vec<i64>>>()?;
            let n = values.len();
            return Tensor::from_vec(values, &[n]).map_err(crate::errors::to_py);
        }
    }
    let py = obj.py();
    let from_numpy = if is_ndarray(obj) { crate::interop::from_numpy(py, obj).ok() } else { None };
    let wrapped = match from_numpy {
        Some(t) => t,
        // Nested or mixed sequences: torch.tensor's own inference (python/minigrad/_creation.py).
        None => py.import("minigrad")?.getattr("tensor")?.call1((obj,))?.unbind(),
    };
    let t = wrapped.bind(py).cast::<TensorBase>()?.borrow().t.clone();
    Ok(match t.dtype() {
        DType::Bool | DType::Int64 => t,
        _ => to_dtype_raw(&t, DType::Int64).map_err(to_py)?,
    })
}

/// Python exceptions raised while converting an item, as the core error kinds.
fn core_error(py: Python<'_>, e: PyErr) -> Error {
    let msg = e.value(py).str().map(|s| s.to_string()).unwrap_or_default();
    if e.is_instance_of::<PyIndexError>(py) {
        Error::Index(msg)
    } else if e.is_instance_of::<PyTypeError>(py) {
        Error::Type(msg)
    } else if e.is_instance_of::<PyValueError>(py) {
        Error::Value(msg)
    } else if e.is_instance_of::<PyNotImplementedError>(py) {
        Error::NotImplemented(msg)
    } else {
        Error::Runtime(msg)
    }
}

/// The right-hand side of `x[key] = value` (torch's `valueToTensor`): a tensor as is, a
/// number as a 0-d tensor of x's dtype (checked for overflow), anything else a TypeError.
pub fn value_tensor(value: &Bound<'_, PyAny>, dtype: DType) -> PyResult<Tensor> {
    if let Ok(t) = value.cast::<TensorBase>() {
        return Ok(t.borrow().t.clone());
    }
    let scalar = if is_long(value) || value.is_instance_of::<PyBool>() {
        Scalar::Int(unpack_long(value)?)
    } else if value.is_instance_of::<PyFloat>() {
        Scalar::Float(value.extract()?)
    } else if let Ok(c) = value.cast::<PyComplex>() {
        let (re, im) = (c.real(), c.imag());
        if dtype == DType::Bool {
            Scalar::Bool(re != 0.0 || im != 0.0)
        } else if im != 0.0 {
            return Err(crate::errors::to_py(conversion_overflow(dtype)));
        } else {
            Scalar::Float(re)
        }
    } else {
        return Err(type_err(format!("can't assign a {} to a torch.{}", tp_name(value), dtype.legacy_tensor_name())));
    };
    number_tensor(scalar, dtype).map_err(crate::errors::to_py)
}
