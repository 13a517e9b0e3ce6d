//! DLPack: zero-copy exchange of tensors with torch, NumPy, CuPy and any other array library.
//!
//! `to_dlpack` hands out a capsule named "dltensor" holding a `DLManagedTensor` that keeps the
//! storage alive until the consumer calls its deleter (or, if nobody consumes it, until the
//! capsule dies). `from_dlpack` takes such a capsule from another library, renames it
//! "used_dltensor" (a capsule is consumed once) and wraps the memory as foreign storage whose
//! owner calls the producer's deleter when the last view goes. As in torch, memory is shared
//! but version counters are not: the new tensor starts its own.
//!
//! The structs are DLPack's C ABI (dlpack.h, v0.8 unversioned capsules, which every consumer
//! accepts); they are small enough that no crate is needed.

use crate::convert::wrap;
use crate::errors::type_err;
use crate::tensor::TensorBase;
use minigrad_core::device::Device;
use minigrad_core::layout::Layout;
use minigrad_core::storage::Storage;
use minigrad_core::{DType, Tensor};
use pyo3::exceptions::{PyBufferError, PyRuntimeError};
use pyo3::ffi;
use pyo3::prelude::*;
use std::ffi::{c_void, CStr};
use std::sync::Arc;

const CPU: i32 = 1;
const CUDA: i32 = 2;
const NAME: &CStr = c"dltensor";
const USED: &CStr = c"used_dltensor";

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

fn dl_dtype(d: DType) -> DLDataType {
    let (code, bits) = match d {
        DType::Float32 => (2, 32),
        DType::Float64 => (2, 64),
        DType::Int64 => (0, 64),
        DType::Int32 => (0, 32),
        DType::Bool => (6, 8),
        DType::Float16 => (2, 16),
        DType::BFloat16 => (4, 16),
        DType::UInt8 => (1, 8),
        DType::Int8 => (0, 8),
        DType::Int16 => (0, 16),
    };
    DLDataType { code, bits, lanes: 1 }
}

fn dtype_of(t: DLDataType) -> PyResult<DType> {
    Ok(match (t.code, t.bits, t.lanes) {
        (2, 32, 1) => DType::Float32,
        (2, 64, 1) => DType::Float64,
        (0, 64, 1) => DType::Int64,
        (0, 32, 1) => DType::Int32,
        (6, 8, 1) => DType::Bool,
        (2, 16, 1) => DType::Float16,
        (4, 16, 1) => DType::BFloat16,
        (1, 8, 1) => DType::UInt8,
        (0, 8, 1) => DType::Int8,
        (0, 16, 1) => DType::Int16,
        _ => return Err(type_err(format!(
            "minigrad.from_dlpack: unsupported dtype (DLPack code {}, {} bits, {} lanes); minigrad holds float64, float32, float16, bfloat16, int64, int32, int16, int8, uint8 and bool",
            t.code, t.bits, t.lanes
        ))),
    })
}

fn dl_device(d: Device) -> DLDevice {
    match d {
        Device::Cpu => DLDevice { device_type: CPU, device_id: 0 },
        Device::Cuda(i) => DLDevice { device_type: CUDA, device_id: i as i32 },
    }
}

/// What an exported tensor owns: the DLPack header plus the arrays it points into and the
/// storage that keeps the memory alive. `manager_ctx` points back at this box.
#[repr(C)]
struct Exported {
    managed: DLManagedTensor,
    shape: Vec<i64>,
    strides: Vec<i64>,
    _storage: Arc<Storage>,
}

/// The deleter consumers call once they are done.
unsafe extern "C" fn delete_exported(m: *mut DLManagedTensor) {
    if m.is_null() {
        return;
    }
    // SAFETY: `m` is the `managed` field of a leaked `Box<Exported>` whose address is in
    // `manager_ctx`; the DLPack contract calls the deleter exactly once.
    unsafe { drop(Box::from_raw((*m).manager_ctx as *mut Exported)) };
}

/// Capsule destructor: frees the export only if nobody consumed it (a consumer renames it).
unsafe extern "C" fn capsule_destructor(capsule: *mut ffi::PyObject) {
    // SAFETY: called by Python with the capsule being destroyed (GIL held). A capsule still
    // named "dltensor" owns its DLManagedTensor; a renamed one was handed to a consumer.
    unsafe {
        if ffi::PyCapsule_IsValid(capsule, NAME.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(capsule, NAME.as_ptr()) as *mut DLManagedTensor;
            delete_exported(m);
        } else {
            ffi::PyErr_Clear();
        }
    }
}

/// `tensor.__dlpack__()`: a "dltensor" capsule sharing the tensor's memory.
#[pyfunction]
pub fn to_dlpack(py: Python<'_>, x: &Bound<'_, TensorBase>) -> PyResult<Py<PyAny>> {
    let t = x.borrow().t.clone();
    if t.meta.lock().requires_grad {
        return Err(PyBufferError::new_err("Can't export tensors that require gradient, use tensor.detach()"));
    }
    let item = t.dtype().size();
    let mut exported = Box::new(Exported {
        managed: DLManagedTensor {
            dl_tensor: DLTensor {
                data: t.storage.as_ptr() as *mut c_void,
                device: dl_device(t.device()),
                ndim: t.ndim() as i32,
                dtype: dl_dtype(t.dtype()),
                shape: std::ptr::null_mut(),
                strides: std::ptr::null_mut(),
                byte_offset: (t.layout.offset * item) as u64,
            },
            manager_ctx: std::ptr::null_mut(),
            deleter: Some(delete_exported),
        },
        shape: t.shape().iter().map(|&s| s as i64).collect(),
        strides: t.strides().iter().map(|&s| s as i64).collect(),
        _storage: t.storage.clone(),
    });
    exported.managed.dl_tensor.shape = exported.shape.as_mut_ptr();
    exported.managed.dl_tensor.strides = exported.strides.as_mut_ptr();
    let raw = Box::into_raw(exported);
    // SAFETY: `raw` is a live, leaked box; its address becomes the context the deleter frees.
    // The Vec buffers it points into do not move when the Box is leaked.
    unsafe { (*raw).managed.manager_ctx = raw as *mut c_void };
    // SAFETY: `managed` is the first field of a live allocation; the capsule owns it until a
    // consumer renames the capsule and takes over the deleter.
    let capsule = unsafe { ffi::PyCapsule_New(&mut (*raw).managed as *mut DLManagedTensor as *mut c_void, NAME.as_ptr(), Some(capsule_destructor)) };
    if capsule.is_null() {
        // SAFETY: the capsule was not created, so we still own the export.
        unsafe { delete_exported(&mut (*raw).managed) };
        return Err(PyErr::fetch(py));
    }
    // SAFETY: PyCapsule_New returned a new reference.
    Ok(unsafe { Bound::from_owned_ptr(py, capsule) }.unbind())
}

/// Calls the producer's deleter when the last view of an imported tensor goes.
struct Imported(*mut DLManagedTensor);

// SAFETY: DLPack requires deleters to be callable from any thread (and to take the GIL
// themselves when they need it, as NumPy's and torch's do); the pointer is only used for that.
unsafe impl Send for Imported {}
// SAFETY: as above; shared references never touch the pointer.
unsafe impl Sync for Imported {}

impl Drop for Imported {
    fn drop(&mut self) {
        // SAFETY: we consumed the capsule, so calling its deleter once is ours to do.
        unsafe {
            if let Some(d) = (*self.0).deleter {
                d(self.0)
            }
        }
    }
}

/// `minigrad.from_dlpack(capsule)`: a tensor over the producer's memory (no copy).
#[pyfunction]
pub fn from_dlpack_capsule(py: Python<'_>, capsule: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let invalid = || PyRuntimeError::new_err("from_dlpack received an invalid capsule. Note that DLTensor capsules can be consumed only once, so you might have already constructed a tensor from it once.");
    // SAFETY: PyCapsule_IsValid accepts any object and checks type and name.
    if unsafe { ffi::PyCapsule_IsValid(capsule.as_ptr(), NAME.as_ptr()) } != 1 {
        return Err(invalid());
    }
    // SAFETY: validated above: a live capsule named "dltensor" holding a DLManagedTensor.
    let m = unsafe { ffi::PyCapsule_GetPointer(capsule.as_ptr(), NAME.as_ptr()) } as *mut DLManagedTensor;
    if m.is_null() {
        return Err(invalid());
    }
    // SAFETY: the producer keeps `m` valid until its deleter runs.
    let dl = unsafe { &(*m).dl_tensor };
    let device = match (dl.device.device_type, dl.device.device_id) {
        (CPU, _) => Device::Cpu,
        (CUDA, i) if i >= 0 => Device::Cuda(i as u32),
        (kind, _) => return Err(PyRuntimeError::new_err(format!("minigrad.from_dlpack: unsupported device type {} (minigrad has cpu and cuda)", kind))),
    };
    let dtype = dtype_of(dl.dtype)?;
    if dl.ndim < 0 {
        return Err(invalid());
    }
    let ndim = dl.ndim as usize;
    // SAFETY: DLPack guarantees `shape` has ndim entries, and `strides` too unless null.
    let shape: Vec<i64> = if ndim == 0 { vec![] } else { unsafe { std::slice::from_raw_parts(dl.shape, ndim) }.to_vec() };
    if shape.iter().any(|&s| s < 0) {
        return Err(invalid());
    }
    let shape: Vec<usize> = shape.iter().map(|&s| s as usize).collect();
    let strides: Vec<isize> = if dl.strides.is_null() || ndim == 0 {
        Layout::contiguous(&shape).strides.to_vec()
    } else {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(dl.strides, ndim) }.iter().map(|&s| s as isize).collect()
    };
    let item = dtype.size();
    let first = (dl.data as usize).wrapping_add(dl.byte_offset as usize);
    if first % item != 0 {
        return Err(PyRuntimeError::new_err("minigrad.from_dlpack: the data is not aligned for its dtype; copy it first"));
    }
    // torch's tensors (and so minigrad's kernels) never step backwards through memory; torch
    // itself aborts on such a capsule, minigrad says so.
    if strides.iter().any(|&s| s < 0) {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "minigrad.from_dlpack: the array has a negative stride, which tensors do not support; copy it first (array.copy())",
        ));
    }
    let len = Layout { shape: shape[..].into(), strides: strides[..].into(), offset: 0 }.extent().map_or(0, |(_, hi)| hi as usize);
    let base = first as *mut u8;
    let layout = Layout { shape: shape.into(), strides: strides.into(), offset: 0 };
    // SAFETY: renaming marks the capsule consumed, so its destructor leaves the deleter to us.
    if unsafe { ffi::PyCapsule_SetName(capsule.as_ptr(), USED.as_ptr()) } != 0 {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: the producer guarantees every element the layout reaches is valid memory on
    // `device`; with non-negative strides they lie in `len` elements from `base` (the first
    // element). The address is aligned (checked) and stays alive until
    // its deleter runs, which `Imported` does when the storage is dropped.
    let storage = unsafe { Storage::from_foreign_on(device, base, len * item, dtype, Box::new(Imported(m))) };
    wrap(py, Tensor::from_storage(storage, layout))
}

/// (DLPack device type, index) of a tensor: (1, 0) for the CPU, (2, i) for cuda:i.
#[pyfunction]
pub fn dlpack_device(x: &Bound<'_, TensorBase>) -> (i32, i32) {
    let d = dl_device(x.borrow().t.device());
    (d.device_type, d.device_id)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(to_dlpack, m)?)?;
    m.add_function(wrap_pyfunction!(from_dlpack_capsule, m)?)?;
    m.add_function(wrap_pyfunction!(dlpack_device, m)?)?;
    Ok(())
}
