//! CPU kernels. Each takes raw strided operands (`Arg`) and a shape; the op layer (`ops/`) has
//! already checked shapes, dtypes and overlap and allocated the outputs.

pub mod conv;
pub mod elementwise;
pub mod fill;
pub mod gather;
pub mod index;
pub mod iter;
pub mod matmul;
pub mod pad;
pub mod parallel;
pub mod pool;
pub mod reduce;
pub mod reducers;
pub mod softmax;

use crate::element::Element;
use crate::tensor::Tensor;

/// One strided operand of a kernel: element 0 of its storage, strides and offset in elements.
#[derive(Clone, Copy)]
pub struct Arg<'a, T> {
    pub base: *mut T,
    pub strides: &'a [isize],
    pub offset: usize,
}

impl<'a, T: Element> Arg<'a, T> {
    /// The operand as `t` lays it out.
    pub fn of(t: &'a Tensor) -> Arg<'a, T> {
        debug_assert!(t.within_storage(), "kernel operand outside its storage: {:?}", t);
        Arg { base: t.base_ptr::<T>(), strides: &t.layout.strides, offset: t.layout.offset }
    }
    /// The same memory read through broadcast strides (computed by the op layer).
    pub fn broadcast(t: &Tensor, strides: &'a [isize]) -> Arg<'a, T> {
        debug_assert!(t.within_storage(), "kernel operand outside its storage: {:?}", t);
        Arg { base: t.base_ptr::<T>(), strides, offset: t.layout.offset }
    }
}
