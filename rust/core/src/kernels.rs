//! The seam between the op layer and the CPU kernels (the crate minigrad-kernels, re-exported
//! here whole): how a tensor becomes a kernel operand, and the few kernels that are stated in
//! terms of tensors. Ops reach kernels through this module only.

pub use minigrad_kernels::*;

use crate::dtype::Scalar;
use crate::element::Element;
use crate::error::Result;
use crate::tensor::Tensor;
use elementwise::{map_inplace, zip_inplace};

/// A tensor as a kernel operand. Checked in debug builds: every element the layout reaches lies
/// inside the storage, the invariant each kernel's raw index arithmetic rests on.
pub trait TensorArg<'a>: Sized {
    /// The operand as `t` lays it out.
    fn of(t: &'a Tensor) -> Self;
    /// The same memory read through broadcast strides (computed by the op layer).
    fn broadcast(t: &Tensor, strides: &'a [isize]) -> Self;
}

impl<'a, T: Element> TensorArg<'a> for Arg<'a, T> {
    fn of(t: &'a Tensor) -> Self {
        debug_assert!(t.within_storage(), "kernel operand outside its storage: {:?}", t);
        Arg { base: t.base_ptr::<T>(), strides: &t.layout.strides, offset: t.layout.offset }
    }
    fn broadcast(t: &Tensor, strides: &'a [isize]) -> Self {
        debug_assert!(t.within_storage(), "kernel operand outside its storage: {:?}", t);
        Arg { base: t.base_ptr::<T>(), strides, offset: t.layout.offset }
    }
}

pub mod fill {
    //! Fill every element of a (possibly strided) tensor with one value.
    use super::*;

    /// Writes `value` (cast to the tensor's dtype) into every element. Callers outside the op
    /// layer use it only on tensors nobody else can see yet (fresh outputs); in-place `fill_`
    /// goes through `ops::write`.
    pub fn fill(t: &Tensor, value: Scalar) {
        crate::dispatch_all!(t.dtype(), T => {
            let v = T::from_scalar(value);
            // SAFETY: the tensor's layout lies within its storage; fill writes each element once
            // and reads nothing, and callers guarantee no internal overlap of `t`.
            unsafe { map_inplace::<T>(t.shape(), Arg::of(t), move |_| v) }
        })
    }
}

/// `dst += src` elementwise (same float dtype, `src` broadcast to `dst`'s shape). `dst` may have
/// self-overlapping elements (the gradient of an overlapping view): those are accumulated in
/// order, serially, so every alias receives every contribution.
pub fn add_into(dst: &Tensor, src: &Tensor) -> Result<()> {
    let strides = crate::ops::broadcast_strides(src, dst.shape());
    let src = crate::ops::copy::cast_input(src, dst.dtype())?;
    crate::dispatch_float!(dst.dtype(), T => {
        // SAFETY: both layouts lie inside their storages; src is a different storage (a
        // gradient) and overlapping dst elements are written serially by the plan.
        unsafe { zip_inplace::<T, T>(dst.shape(), Arg::of(dst), Arg::broadcast(&src, &strides), |a, b| a + b) }
    }, _ => unreachable!("gradients are floating point"));
    Ok(())
}
