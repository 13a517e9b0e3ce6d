//! minigrad-core: the tensor engine behind minigrad, with no Python in it.
//!
//! Read bottom-up: `dtype` and `element` (what a number is), `shape` and `layout` (where it
//! lives), `alloc`/`storage`/`version` (memory and its version counter), `tensor` (the value
//! users hold), `kernels` (loops over memory), `ops` (what users call; every write goes through
//! `ops::write`).

pub mod alloc;
pub mod autograd;
pub mod dtype;
pub mod element;
pub mod error;
pub mod kernels;
pub mod layout;
pub mod ops;
pub mod shape;
pub mod storage;
pub mod tensor;
pub mod version;

pub use dtype::{DType, Scalar};
pub use error::{Error, Result};
pub use tensor::Tensor;
