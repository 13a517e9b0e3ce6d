//! minigrad-core: the tensor engine behind minigrad, with no Python in it.
//!
//! Layers, bottom to top, each a crate or module that only looks down:
//! minigrad-base (`dtype`, `element`, `error`, `shape`, `layout`, `alloc`, `storage`, re-exported
//! here under the same names) -> minigrad-kernels (loops over raw memory; `kernels` re-exports
//! them with the tensor-to-operand seam) -> `version` and `tensor` (the value users hold) ->
//! `device` (the per-device seam: `Backend`, with the CPU's built in) -> `autograd` (graph, saved
//! tensors, engine) and `ops` (what users call; every write goes through `ops::write`, every
//! element of work through `device::backend_for`).

pub use minigrad_base::{alloc, dtype, element, error, layout, shape, storage};
pub use minigrad_base::{bail, dispatch, dispatch_all, dispatch_float};

pub mod autograd;
pub mod device;
pub mod kernels;
pub mod ops;
pub mod tensor;
pub mod version;

pub use device::Device;
pub use dtype::{DType, Scalar};
pub use error::{Error, Result};
pub use tensor::Tensor;
