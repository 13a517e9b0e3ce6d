//! The tensor: a strided window (layout) onto shared storage, plus its version counter.
//!
//! `Tensor` is a cheap-to-clone value (an `Arc` and a small layout). Cloning the value is not
//! `clone()` in torch's sense (that is `ops::copy::clone`): both values name the same tensor
//! memory and version counter. Views are new values over the same storage and counter.
//! `meta` is the tensor's identity for autograd (requires_grad, grad, grad_fn, view base): two
//! values with the same `meta` are the same tensor; `detach()` and `.data` get a new one.

use crate::autograd::meta::{AutogradMeta, MetaRef};
use crate::device::Device;
use crate::dtype::{DType, Scalar};
use crate::element::Element;
use crate::error::{Error, Result};
use crate::layout::{Dims, Layout};
use crate::storage::Storage;
use crate::version::VersionCounter;
use std::sync::Arc;

/// The panic payload of a device tensor that reached a CPU-only kernel (`assert_host`): not a
/// bug, a family with no kernel on that device yet. The bindings raise NotImplementedError.
#[derive(Debug, Clone, Copy)]
pub struct NoKernelOnDevice(pub Device);

#[derive(Clone)]
pub struct Tensor {
    pub storage: Arc<Storage>,
    pub layout: Layout,
    pub version: VersionCounter,
    /// Autograd state shared by every handle of this tensor (see `autograd::meta`).
    pub meta: MetaRef,
    /// A 0-d output of `max`/`min`/`kthvalue(dim)` on a 1-d input: torch allocates it as `[1]`
    /// and squeezes it, and its `x[i]` bounds check then reads the stale size 1 (issue 14 F).
    /// Kept by `detach()` and `.data`, which copy torch's size slots; views start without it.
    pub stale_size0: bool,
}

impl std::fmt::Debug for Tensor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tensor(shape={:?}, strides={:?}, offset={}, dtype={:?})", self.shape(), self.layout.strides, self.layout.offset, self.dtype())
    }
}

impl Tensor {
    /// Uninitialised contiguous tensor (memory from the caching allocator). Every new tensor's
    /// memory comes through here or `zeros`, so this is where sizes are checked as torch checks
    /// them: the byte count, then the strides, then the allocation, each with torch's error.
    pub fn empty(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::allocate(shape, dtype, Device::Cpu, false)
    }

    pub fn zeros(shape: &[usize], dtype: DType) -> Result<Tensor> {
        Tensor::allocate(shape, dtype, Device::Cpu, true)
    }

    /// `empty` on `device` (memory from that device's backend).
    pub fn empty_on(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        Tensor::allocate(shape, dtype, device, false)
    }

    pub fn zeros_on(shape: &[usize], dtype: DType, device: Device) -> Result<Tensor> {
        Tensor::allocate(shape, dtype, device, true)
    }

    fn allocate(shape: &[usize], dtype: DType, device: Device, zeroed: bool) -> Result<Tensor> {
        let nbytes = crate::shape::storage_nbytes_contiguous(shape, dtype.size())?;
        let strides = crate::shape::checked_contiguous_strides(shape)?;
        let layout = Layout { shape: Dims::from_slice(shape), strides, offset: 0 };
        let storage = crate::device::backend(device)?.allocate(nbytes, dtype, zeroed)?;
        Ok(Tensor { storage, layout, version: VersionCounter::new(), meta: AutogradMeta::new_ref(), stale_size0: false })
    }

    pub fn full(shape: &[usize], value: Scalar, dtype: DType) -> Result<Tensor> {
        Tensor::full_on(shape, value, dtype, Device::Cpu)
    }

    pub fn full_on(shape: &[usize], value: Scalar, dtype: DType, device: Device) -> Result<Tensor> {
        let t = Tensor::empty_on(shape, dtype, device)?;
        crate::device::backend(device)?.fill(&t, value)?;
        Ok(t)
    }

    /// A 0-d tensor holding one number.
    pub fn scalar(value: Scalar, dtype: DType) -> Result<Tensor> {
        Tensor::full(&[], value, dtype)
    }

    /// Builds a contiguous tensor from row-major values.
    pub fn from_vec<T: Element>(values: Vec<T>, shape: &[usize]) -> Result<Tensor> {
        let n = crate::shape::checked_numel(shape)?;
        if n != values.len() {
            return Err(Error::Runtime(format!("shape {:?} is invalid for input of size {}", shape, values.len())));
        }
        let t = Tensor::empty(shape, T::DTYPE)?;
        // SAFETY: t is fresh, contiguous, holds exactly n elements of T, and nobody else sees it.
        unsafe { std::ptr::copy_nonoverlapping(values.as_ptr(), t.data_ptr::<T>(), n) };
        Ok(t)
    }

    /// A new contiguous tensor whose element `i` (row-major) is `f(i)`: allocated first, through
    /// the checked path, then filled in place (no second buffer of the full size).
    pub fn from_fn<T: Element>(shape: &[usize], mut f: impl FnMut(usize) -> T) -> Result<Tensor> {
        let t = Tensor::empty(shape, T::DTYPE)?;
        let n = t.numel();
        let p = t.data_ptr::<T>();
        for i in 0..n {
            // SAFETY: t is fresh and contiguous with n elements of T; nobody else sees it yet.
            unsafe { p.add(i).write(f(i)) };
        }
        Ok(t)
    }

    /// Wraps existing storage with a layout (used by from_numpy and as_strided).
    pub fn from_storage(storage: Arc<Storage>, layout: Layout) -> Tensor {
        Tensor { storage, layout, version: VersionCounter::new(), meta: AutogradMeta::new_ref(), stale_size0: false }
    }

    pub fn dtype(&self) -> DType {
        self.storage.dtype
    }
    pub fn device(&self) -> Device {
        self.storage.device
    }
    pub fn shape(&self) -> &[usize] {
        &self.layout.shape
    }
    pub fn strides(&self) -> &[isize] {
        &self.layout.strides
    }
    pub fn ndim(&self) -> usize {
        self.layout.ndim()
    }
    pub fn numel(&self) -> usize {
        self.layout.numel()
    }
    pub fn is_contiguous(&self) -> bool {
        self.layout.is_contiguous()
    }
    pub fn version(&self) -> u64 {
        self.version.get()
    }

    /// True when every element the layout can reach lies inside the storage: the invariant on
    /// which every kernel's raw index arithmetic rests (the checked size helpers in `shape` and
    /// `Layout::as_strided` establish it; view ops only narrow a layout). Debug builds assert it
    /// for each kernel operand (`kernels::Arg`).
    pub fn within_storage(&self) -> bool {
        match self.layout.wide_extent() {
            None => true,
            Some((lo, hi)) => lo >= 0 && hi <= self.storage.len() as i128,
        }
    }

    /// Pointer to the first element (storage base + offset).
    pub fn data_ptr<T: Element>(&self) -> *mut T {
        debug_assert_eq!(T::DTYPE, self.dtype());
        self.assert_host();
        debug_assert!(self.within_storage(), "layout outside its storage: {:?}", self);
        // wrapping_add, not add: an empty view's offset may lie past the storage's end (it is
        // never dereferenced then), and `add` past one-past-the-end would be undefined.
        (self.storage.as_ptr() as *mut T).wrapping_add(self.layout.offset)
    }

    /// Base pointer of the storage (element 0), typed.
    pub fn base_ptr<T: Element>(&self) -> *mut T {
        debug_assert_eq!(T::DTYPE, self.dtype());
        self.assert_host();
        self.storage.as_ptr() as *mut T
    }

    /// Host pointers are for CPU kernels only: a device tensor that reached one would have its
    /// address dereferenced on the host. Routed ops reach kernels through
    /// `device::backend_for`; the families not routed yet (sort, scan) still call their CPU
    /// kernels, and a device tensor stops here, before any memory is touched, with a
    /// `NoKernelOnDevice` panic that the bindings turn into a NotImplementedError.
    #[inline]
    fn assert_host(&self) {
        if !self.device().is_cpu() {
            std::panic::panic_any(NoKernelOnDevice(self.device()));
        }
    }

    /// Address of the first element, as torch's `data_ptr()` reports it.
    pub fn data_addr(&self) -> usize {
        self.storage.as_ptr() as usize + self.layout.offset * self.dtype().size()
    }

    /// A view: same storage, same version counter, new layout; records its root base and how
    /// it was created (grad mode, inference mode) for the in-place rules.
    pub fn view_as_layout(&self, layout: Layout) -> Tensor {
        let meta = AutogradMeta::new_view_ref(self);
        Tensor { storage: self.storage.clone(), layout, version: self.version.clone(), meta, stale_size0: false }
    }

    /// True for results of view ops (they share storage and counter with a base).
    pub fn is_view(&self) -> bool {
        self.meta.lock().view.is_some()
    }

    /// The root base of a view.
    pub fn base(&self) -> Option<Tensor> {
        self.meta.lock().view.as_ref().map(|v| v.base.clone())
    }

    /// True when both values are handles of the same tensor.
    pub fn same_tensor(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.meta, &other.meta)
    }

    /// The same memory, layout and counter under a new identity with no autograd state: what
    /// internal code uses when it must not touch the caller's graph.
    pub fn fresh_handle(&self) -> Tensor {
        Tensor { storage: self.storage.clone(), layout: self.layout.clone(), version: self.version.clone(), meta: AutogradMeta::new_ref(), stale_size0: self.stale_size0 }
    }

    /// `detach()`: same memory and counter, not a view (torch's `detach()._base` is None).
    pub fn alias(&self) -> Tensor {
        self.fresh_handle()
    }

    /// `.data`: same memory, a fresh version counter (R7).
    pub fn alias_with_new_version(&self) -> Tensor {
        Tensor { storage: self.storage.clone(), layout: self.layout.clone(), version: VersionCounter::new(), meta: AutogradMeta::new_ref(), stale_size0: self.stale_size0 }
    }

    pub fn same_storage(&self, other: &Tensor) -> bool {
        Arc::ptr_eq(&self.storage, &other.storage)
    }

    /// Reads every element in row-major order (tests and small conversions).
    pub fn to_vec<T: Element>(&self) -> Result<Vec<T>> {
        let c = crate::ops::copy::to_device_raw(&crate::ops::copy::contiguous_raw(self)?, Device::Cpu)?;
        let n = c.numel();
        let mut out = Vec::with_capacity(n);
        // SAFETY: c is contiguous with n elements of T starting at data_ptr.
        unsafe {
            std::ptr::copy_nonoverlapping(c.data_ptr::<T>(), out.as_mut_ptr(), n);
            out.set_len(n);
        }
        Ok(out)
    }

    /// The single value of a one-element tensor.
    pub fn item(&self) -> Result<Scalar> {
        if self.numel() != 1 {
            return Err(Error::Runtime(format!(
                "a Tensor with {} elements cannot be converted to Scalar",
                self.numel()
            )));
        }
        let host = crate::ops::copy::to_device_raw(self, Device::Cpu)?;
        // SAFETY: one element exists at data_ptr, in host memory.
        Ok(crate::dispatch_all!(host.dtype(), T => unsafe { (*host.data_ptr::<T>()).to_scalar() }))
    }
}
