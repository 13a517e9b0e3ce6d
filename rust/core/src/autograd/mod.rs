//! Reverse-mode autograd in the core (DESIGN invariants 2-5): per-tensor state (`meta`), graph
//! nodes (`node`), saved tensors with their version check (`saved`) and pack/unpack hooks (`saved_hooks`), recording ops
//! (`record`), the in-place rules and history rebase (`inplace`), leaf accumulation
//! (`accumulate`), the backward engine (`engine`), grad/inference/anomaly modes (`mode`) and
//! mutation blame (`blame`). Each op's own backward formula lives beside the op in `ops/`, written
//! in the differentiable building blocks of `ops::formulas`.

pub mod accumulate;
pub mod blame;
pub mod engine;
pub mod inplace;
pub mod meta;
pub mod mode;
pub mod node;
pub mod record;
pub mod saved;
pub mod saved_hooks;

// The door the op layer comes in by: ops use these items (and `blame`, `mode`) and nothing else
// of autograd's (tests/test_layering.py checks it); the engine goes down into ops only through
// `ops::for_autograd`.
pub use engine::{run_backward, BackwardRequest};
pub use inplace::{as_strided_node, check_inplace};
pub use meta::{AutogradMeta, RequiresGradEntry};
pub use node::{Ctx, Edge, Formula, Node, SavedValue};
pub use record::{backward_op, precheck, record_view, record_view_joined, record_view_with_backward_op, should_record, JoinGrads, Recorder, ViewValues};
