//! The Python object that owns CUDA for the backend: CuPy (`minigrad.cuda._cupy_driver`) on a
//! GPU, or the host emulation the tests register (`tests/cuda_host/driver.py`). The backend asks
//! it for memory, copies, compiled functions and launches, and nothing else, so all of CUDA's
//! Python-side state (the memory pool, the current stream, NVRTC's cache) stays CuPy's.
//!
//! A launch calls no Python: `cuLaunchKernel` through a function pointer (entry.rs), on the stream
//! read from CuPy's C API. An allocation is one call of the driver's `alloc`, bound once here.
//!
//! Every call attaches to the interpreter (the core may be running with the GIL released) and
//! turns a Python exception into a core error that carries it back unchanged (`errors::stash`),
//! so CuPy's out-of-memory error, for one, reaches the user as itself.

use super::entry::Entries;
use crate::errors::stash;
use minigrad_core::error::Result;
use pyo3::prelude::*;

/// Which way `copy` moves bytes.
#[derive(Clone, Copy)]
pub enum CopyKind {
    HostToDevice,
    DeviceToHost,
}

pub struct Driver {
    obj: Py<PyAny>,
    /// `obj.alloc`, bound once: an allocation is on the per-op path.
    alloc: Py<PyAny>,
    entries: Entries,
}

impl Driver {
    /// The driver object of `cuda:device`; reads its entry points and binds `alloc` now.
    pub fn new(py: Python<'_>, obj: Py<PyAny>, device: u32) -> PyResult<Driver> {
        let bound = obj.bind(py);
        let entries = Entries::from_driver(bound, device)?;
        let alloc = bound.getattr("alloc")?.unbind();
        Ok(Driver { obj, alloc, entries })
    }

    /// `nbytes` of device memory: its address and the Python object that keeps it alive (the
    /// block returns to the pool when that object is released).
    pub fn alloc(&self, nbytes: usize) -> Result<(u64, Py<PyAny>)> {
        Python::attach(|py| {
            let r = self.alloc.bind(py).call1((nbytes,)).map_err(stash)?;
            r.extract::<(u64, Py<PyAny>)>().map_err(|e| stash(e.into()))
        })
    }

    pub fn memset_zero(&self, ptr: u64, nbytes: usize) -> Result<()> {
        Python::attach(|py| self.obj.bind(py).call_method1("memset_zero", (ptr, nbytes)).map(drop).map_err(stash))
    }

    /// A synchronous copy of `nbytes` (host addresses are plain process memory).
    pub fn copy(&self, dst: u64, src: u64, nbytes: usize, kind: CopyKind) -> Result<()> {
        let kind = match kind {
            CopyKind::HostToDevice => "h2d",
            CopyKind::DeviceToHost => "d2h",
        };
        Python::attach(|py| self.obj.bind(py).call_method1("copy", (dst, src, nbytes, kind)).map(drop).map_err(stash))
    }

    /// The handle of kernel `expr` of source `source`, compiling it (with `group`, the instances
    /// likely to be wanted next, in one NVRTC program) when it is not cached yet.
    pub fn function(&self, source: &str, expr: &str, group: Vec<String>) -> Result<u64> {
        Python::attach(|py| {
            let r = self.obj.bind(py).call_method1("function", (source, expr, group)).map_err(stash)?;
            r.extract::<u64>().map_err(|e| stash(e.into()))
        })
    }

    /// Launches `function` on `grid` x `block` threads on CuPy's current stream (of this device,
    /// in this thread, read now); `params` is the address of the `void*` array of its parameters.
    /// A failed launch is a RuntimeError naming the driver's error (`CUDA error: CUDA_ERROR_...`).
    pub fn launch(&self, function: u64, grid: u32, block: u32, shared_bytes: u32, params: u64) -> Result<()> {
        Python::attach(|py| {
            let stream = self.entries.current_stream(py).map_err(stash)?;
            self.entries.launch(py, function, grid, block, shared_bytes, stream, params)
        })
    }

    /// The handle of CuPy's current stream of this device in this thread (as a launch reads it).
    pub fn current_stream(&self) -> Result<usize> {
        Python::attach(|py| self.entries.current_stream(py).map_err(stash))
    }

    /// `dst[B] = a[B] @ b[B]` through cuBLAS (CuPy's matmul): each operand as (address of its
    /// first element, shape, strides in elements); `dtype` is the dtype's name (`float32`, ...).
    pub fn matmul(&self, dtype: &str, dst: Strided, a: Strided, b: Strided) -> Result<()> {
        Python::attach(|py| self.obj.bind(py).call_method1("matmul", (dtype, dst, a, b)).map(drop).map_err(stash))
    }
}

impl Driver {
    /// One cuBLAS strided-batched GEMM (`gemm.rs`) with raw device pointers, on CuPy's current
    /// stream and cuBLAS handle: `C[i] = op(A[i]) op(B[i])` for `i < batch`, alpha 1, beta 0.
    pub fn gemm(&self, dtype: &str, c: &super::gemm::GemmCall) -> Result<()> {
        let args = (
            dtype,
            c.trans_a,
            c.trans_b,
            (c.m, c.n, c.k),
            (c.a, c.lda, c.stride_a),
            (c.b, c.ldb, c.stride_b),
            (c.c, c.ldc, c.stride_c),
            c.batch,
        );
        Python::attach(|py| self.obj.bind(py).call_method1("gemm", args).map(drop).map_err(stash))
    }
}

/// An operand handed to the driver: first element's address, shape, strides (elements).
pub type Strided = (u64, Vec<usize>, Vec<isize>);
