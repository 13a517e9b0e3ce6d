//! Reverse-mode autograd in the core (DESIGN invariants 2-5): per-tensor state (`meta`), graph
//! nodes (`node`), saved tensors with their version check (`saved`) and pack/unpack hooks (`saved_hooks`), recording ops
//! (`record`), the in-place rules and history rebase (`inplace`), leaf accumulation
//! (`accumulate`), the backward engine (`engine`), grad/inference/anomaly modes (`mode`) and
//! mutation blame (`blame`). Each op's own backward formula lives beside the op in `ops/`.

pub mod accumulate;
pub mod blame;
pub mod engine;
pub mod formulas;
pub mod inplace;
pub mod meta;
pub mod mode;
pub mod node;
pub mod record;
pub mod saved;
pub mod saved_hooks;

pub use engine::{run_backward, BackwardRequest};
pub use node::{Edge, Formula, Node};
pub use record::Recorder;
