//! The extension module `minigrad._C`: argument parsing, Python exceptions, the GIL, NumPy
//! interop. All tensor semantics live in `minigrad-core`.

// The module is `_C`, as torch's is: a private extension under the public package.
#![allow(non_snake_case)]

use pyo3::prelude::*;

mod autograd;
mod composite;
mod convert;
mod creation;
mod cuda;
mod cuda_sources;
mod device;
mod dlpack;
mod dtype;
mod elementwise;
mod errors;
mod indexing;
mod interop;
mod linalg;
mod nn_norm;
mod nn_conv;
mod optim;
mod reduce;
mod scan_sort;
mod tensor;
mod operators;

#[pymodule]
fn _C(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::install_panic_hook();
    m.add_class::<tensor::TensorBase>()?;
    m.add_class::<dtype::PyDType>()?;
    for d in minigrad_core::DType::EVERY {
        m.add(d.name(), dtype::PyDType::from(d))?;
    }
    m.add_function(wrap_pyfunction!(dtype::promote_types, m)?)?;
    m.add_function(wrap_pyfunction!(convert::_set_classes, m)?)?;
    m.add_function(wrap_pyfunction!(convert::_make_subclass, m)?)?;
    m.add("_debug_build", cfg!(debug_assertions))?;
    creation::register(m)?;
    device::register(m)?;
    dlpack::register(m)?;
    elementwise::register(m)?;
    interop::register(m)?;
    reduce::register(m)?;
    linalg::register(m)?;
    indexing::register(m)?;
    autograd::register(m)?;
    nn_norm::register(m)?;
    nn_conv::register(m)?;
    scan_sort::register(m)?;
    composite::register(m)?;
    cuda_sources::register(m)?;
    cuda::register(m)?;
    optim::register(m)?;
    Ok(())
}
