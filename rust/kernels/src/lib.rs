//! minigrad-kernels: the CPU kernels. Each takes raw strided operands (`Arg`) and a shape; the
//! op layer (minigrad-core's `ops`) has already checked shapes, dtypes and overlap and allocated
//! the outputs. Kernels are leaves: this crate depends only on minigrad-base, so a kernel cannot
//! reach a tensor, an op or the autograd graph (the compiler refuses the import).

pub mod conv;
pub mod elementwise;
pub mod gather;
pub mod index;
pub mod iter;
pub mod matmul;
pub mod pad;
pub mod parallel;
pub mod pool;
pub mod reduce;
pub mod reducers;
pub mod scan;
pub mod simd;
pub mod softmax;
pub mod sort;
pub mod unary;
pub mod optim;
/// Deterministic inputs for the unit tests and the `probes` bench (not API).
#[doc(hidden)]
pub mod test_data;

// The base layer's modules and macros under the paths the kernels use (`crate::element`, ...).
use minigrad_base::{alloc, element, error, layout};
#[allow(unused_imports)]
use minigrad_base::{dispatch, dispatch_float};

/// One strided operand of a kernel: element 0 of its storage, strides and offset in elements.
/// The op layer builds it from a tensor (minigrad-core's `kernels::TensorArg`) after checking
/// that the layout lies inside the storage.
#[derive(Clone, Copy)]
pub struct Arg<'a, T> {
    pub base: *mut T,
    pub strides: &'a [isize],
    pub offset: usize,
}
