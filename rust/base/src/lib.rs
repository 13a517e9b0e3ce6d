//! minigrad-base: the bottom layer, which everything else builds on and which depends on
//! nothing of minigrad's. Read bottom-up: `dtype` and `element` (what a number is), `error`
//! (torch's exception kinds and words), `device`, `shape` and `layout` (where a number lives, with every
//! size checked as torch checks it), `alloc` (with `huge_pages`) and `storage` (memory, counted byte for byte).

pub mod alloc;
pub mod device;
pub mod dtype;
pub mod element;
pub mod error;
mod huge_pages;
pub mod layout;
pub mod shape;
pub mod storage;

pub use device::Device;
pub use dtype::{DType, Scalar};
pub use error::{Error, Result};
