//! `minigrad.dtype`: the Python objects for every dtype, and `promote_types`.

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
        !matches!(self.d, DType::Bool | DType::UInt8)
    }
    #[getter]
    fn itemsize(&self) -> usize {
        self.d.size()
    }
    fn __reduce__(&self) -> String {
        self.d.name().to_string()
    }
}

/// `torch.promote_types(type1, type2)`.
#[pyfunction]
pub fn promote_types(type1: PyDType, type2: PyDType) -> PyDType {
    minigrad_core::dtype::promote_types(type1.d, type2.d).into()
}

impl From<DType> for PyDType {
    fn from(d: DType) -> Self {
        PyDType { d }
    }
}
