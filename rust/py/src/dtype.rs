//! `minigrad.dtype`: the Python objects for float32, float64, int64, int32, bool.

use minigrad_core::DType;
use pyo3::prelude::*;

#[pyclass(name = "dtype", module = "minigrad", frozen, eq, hash, from_py_object)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDType {
    pub d: DType,
}

#[pymethods]
impl PyDType {
    fn __repr__(&self) -> String {
        format!("minigrad.{}", self.d.name())
    }
    #[getter]
    fn is_floating_point(&self) -> bool {
        self.d.is_floating()
    }
    #[getter]
    fn is_signed(&self) -> bool {
        self.d != DType::Bool
    }
    #[getter]
    fn itemsize(&self) -> usize {
        self.d.size()
    }
    fn __reduce__(&self) -> String {
        self.d.name().to_string()
    }
}

impl From<DType> for PyDType {
    fn from(d: DType) -> Self {
        PyDType { d }
    }
}
