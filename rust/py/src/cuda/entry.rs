//! The per-op path without Python: the driver API's `cuLaunchKernel` and `cuGetErrorName` called
//! through typed function pointers, on the stream CuPy would use now.
//!
//! The driver object says where the entry points are (`entry_points()`, see
//! python/minigrad/_cuda_driver.py): on a GPU, the addresses of libcuda's own functions (the
//! library CuPy soft-links, by the same name, so the very functions CuPy's `launchKernel` calls);
//! in the host emulation (tests/cuda_host/driver.py), ctypes callbacks with the same C
//! signatures that run the g++ build of the kernel. Everything below is the same for both.
//!
//! The stream is read at every launch, never cached: CuPy's current stream is per thread and per
//! device and changes under `with cupy.cuda.Stream():` / `Stream.use()` with no notification, so
//! a cache could launch on a stream the user has left. Reading it is one C call into CuPy
//! (`cupy_backends.cuda.stream.get_stream_ptr`, the function CuPy's own kernels ask), or a Python
//! call where that C API is missing.

use minigrad_core::error::{Error, Result};
use pyo3::prelude::*;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};

/// `CUresult`: 0 is `CUDA_SUCCESS`.
type CuResult = c_int;

/// `cuLaunchKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ,
/// sharedMemBytes, hStream, kernelParams, extra)`.
type LaunchKernelFn = unsafe extern "C" fn(
    *mut c_void,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    c_uint,
    *mut c_void,
    *mut *mut c_void,
    *mut *mut c_void,
) -> CuResult;

/// `cuGetErrorName(error, &name)`: a static string, or `CUDA_ERROR_INVALID_VALUE` for an unknown code.
type GetErrorNameFn = unsafe extern "C" fn(CuResult, *mut *const c_char) -> CuResult;

/// `intptr_t get_stream_ptr(int device)` (CuPy's C API): needs the GIL; returns -1 with a Python
/// exception set when it fails (Cython's `except? -1`).
type StreamOfFn = unsafe extern "C" fn(c_int) -> isize;

enum StreamSource {
    Native(StreamOfFn),
    Python(Py<PyAny>),
}

/// The entry points of one device's driver object. They stay valid while that object lives
/// (the `Driver` holding these keeps it).
pub struct Entries {
    launch: LaunchKernelFn,
    error_name: Option<GetErrorNameFn>,
    stream: StreamSource,
    device: c_int,
}

/// An address handed over by the driver; None counts as 0 (ctypes gives None for a null `c_void_p`).
fn address(v: &Bound<'_, PyAny>, what: &str) -> PyResult<usize> {
    if v.is_none() {
        return Ok(0);
    }
    v.extract::<usize>()
        .map_err(|_| pyo3::exceptions::PyTypeError::new_err(format!("minigrad: the CUDA driver's {what} must be an address (int)")))
}

impl Entries {
    /// Reads `driver.entry_points()`: `(launch_kernel, get_error_name, stream_of)`.
    pub fn from_driver(obj: &Bound<'_, PyAny>, device: u32) -> PyResult<Entries> {
        let (launch, name, stream): (Bound<'_, PyAny>, Bound<'_, PyAny>, Bound<'_, PyAny>) =
            obj.call_method0("entry_points")?.extract()?;
        let launch = address(&launch, "cuLaunchKernel")?;
        if launch == 0 {
            return Err(pyo3::exceptions::PyRuntimeError::new_err("minigrad: the CUDA driver has no cuLaunchKernel"));
        }
        // SAFETY: the driver's documented interface: a non-zero `launch_kernel` is the address of
        // a function with cuLaunchKernel's C signature, alive as long as the driver object (which
        // `Driver` keeps); an address and a function pointer have the same size.
        let launch = unsafe { std::mem::transmute::<usize, LaunchKernelFn>(launch) };
        let error_name = match address(&name, "cuGetErrorName")? {
            0 => None,
            // SAFETY: as above, for cuGetErrorName's signature.
            a => Some(unsafe { std::mem::transmute::<usize, GetErrorNameFn>(a) }),
        };
        let stream = if stream.is_callable() {
            StreamSource::Python(stream.unbind())
        } else {
            match address(&stream, "stream_of")? {
                0 => return Err(pyo3::exceptions::PyRuntimeError::new_err("minigrad: the CUDA driver has no stream reader")),
                // SAFETY: as above, for `intptr_t (int)`, called with the GIL held.
                a => StreamSource::Native(unsafe { std::mem::transmute::<usize, StreamOfFn>(a) }),
            }
        };
        Ok(Entries { launch, error_name, stream, device: device as c_int })
    }

    /// The handle of the stream CuPy would launch on now, in this thread, for this device (0:
    /// the legacy default stream; 2: the per-thread one under CUPY_CUDA_PER_THREAD_DEFAULT_STREAM).
    pub fn current_stream(&self, py: Python<'_>) -> PyResult<usize> {
        match &self.stream {
            StreamSource::Native(f) => {
                // SAFETY: the driver's interface (see `from_driver`); the GIL is held (`py`).
                let s = unsafe { f(self.device) };
                if s == -1 {
                    if let Some(e) = PyErr::take(py) {
                        return Err(e);
                    }
                }
                Ok(s as usize)
            }
            StreamSource::Python(f) => f.bind(py).call1((self.device,))?.extract::<usize>(),
        }
    }

    /// `cuLaunchKernel` of `function` on `grid` x `block` threads (1-d), on `stream`, the GIL
    /// released while the driver works. `params` is the address of the `void*` array of the
    /// kernel's parameters, valid for the duration of the call.
    pub fn launch(&self, py: Python<'_>, function: u64, grid: u32, block: u32, shared: u32, stream: usize, params: u64) -> Result<()> {
        let launch = self.launch;
        let params = params as usize;
        let rc = py.detach(move || {
            // SAFETY: `launch` has cuLaunchKernel's signature (`from_driver`); `function` is a
            // handle the same driver returned, `params` points at one pointer per kernel
            // parameter, each at a value laid out as the kernel declares it (launch.rs), alive
            // until this returns (the driver copies them at launch); no `extra` options.
            unsafe {
                launch(
                    function as usize as *mut c_void,
                    grid,
                    1,
                    1,
                    block,
                    1,
                    1,
                    shared,
                    stream as *mut c_void,
                    params as *mut *mut c_void,
                    std::ptr::null_mut(),
                )
            }
        });
        if rc != 0 {
            return Err(Error::Runtime(format!("CUDA error: {} (cuLaunchKernel returned {rc})", self.error_name(rc))));
        }
        Ok(())
    }

    /// The driver's name for `rc` (`CUDA_ERROR_ILLEGAL_ADDRESS`, ...), as cuGetErrorName gives it.
    fn error_name(&self, rc: CuResult) -> String {
        let Some(f) = self.error_name else { return "unknown CUDA error".into() };
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: `f` has cuGetErrorName's signature; `name` is a valid place for the result.
        let ok = unsafe { f(rc, &mut name) } == 0;
        if !ok || name.is_null() {
            return "unrecognized CUDA error".into();
        }
        // SAFETY: on success cuGetErrorName points `name` at a static NUL-terminated string.
        unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
    }
}
