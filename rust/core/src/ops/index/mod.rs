//! Indexing keys: `x[key]` and `x[key] = value`, following torch's rules step by step
//! (`THPVariable_getitem`/`setitem`, `at::indexing::applySlicing`).
//!
//! A key is read left to right. Ints, slices, `None`, `...` and 0-d integer tensors change the
//! layout (a view); tensors, lists and bools are *recorded* as advanced indices, which
//! `ops::advanced` then applies: a copy on read, `index_put_` on write.
//!
//! This file holds the key types and the recorded views both directions use; `walk.rs` reads a
//! key (torch's `applySlicing`) and checks it in torch's order, `get.rs` is `x[key]` and
//! `set.rs` is `x[key] = value`, each with its autograd side.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::tensor::Tensor;
use std::sync::Arc;
use walk::slice;

mod get;
mod set;
mod walk;

pub use get::{get_item, get_item_raw};
pub use set::{checked_convert, conversion_overflow, set_item, set_item_raw, value_tensor};

/// One item of a key, as torch's `TensorIndex`.
#[derive(Debug, Clone)]
pub enum TensorIndex {
    Int(i64),
    /// start/stop/step as Python unpacks them (`None` already replaced, huge values clamped).
    Slice { start: i64, stop: i64, step: i64 },
    None,
    Ellipsis,
    Bool(bool),
    Tensor(Tensor),
    /// An item that could not be converted (a bad list, an unsupported type). torch converts
    /// items while it walks the key, so the error is raised only when the walk reaches it.
    Invalid(Error),
}

/// A whole key. torch takes shortcuts for a bare int, slice, `None`, `...` or bool; everything
/// else (tuples, tensors, lists) is walked as a tuple of items.
#[derive(Debug, Clone)]
pub enum Key {
    Single(TensorIndex),
    Tuple(Vec<TensorIndex>),
}

/// What `x[key]` gives: a view of `x` (basic keys) or a new tensor (advanced keys).
#[derive(Debug)]
pub enum Indexed {
    View(Tensor),
    Copy(Tensor),
}

impl TensorIndex {
    /// How many dims of the indexed tensor this item consumes (torch's
    /// `count_specified_dimensions`): a bool mask consumes its own rank.
    fn specified_dims(&self) -> usize {
        match self {
            TensorIndex::None | TensorIndex::Ellipsis | TensorIndex::Bool(_) => 0,
            TensorIndex::Tensor(t) if t.dtype() == DType::Bool => t.ndim(),
            _ => 1,
        }
    }
}

/// One basic step of a key, in terms of the view so far (for replaying it on a gradient).
#[derive(Debug, Clone)]
pub enum Step {
    Select(usize, i64),
    Slice(usize, i64, i64, i64),
    Unsqueeze(usize),
}

impl Step {
    fn apply(&self, l: &Layout) -> Result<Layout> {
        match *self {
            Step::Select(d, i) => l.select(d as i64, i),
            Step::Slice(d, start, stop, step) => slice(l, d, start, stop, step),
            Step::Unsqueeze(d) => l.unsqueeze(d as i64),
        }
    }

    fn node(&self) -> &'static str {
        match self {
            Step::Select(..) => "SelectBackward0",
            Step::Slice(..) => "SliceBackward0",
            Step::Unsqueeze(_) => "UnsqueezeBackward0",
        }
    }
}

/// The view `layout` of `x` reached through `steps`, recorded as one view node named after
/// the last step (torch records a chain, one node per step; the gradient is the same).
fn basic_view(x: &Tensor, layout: Layout, steps: Vec<Step>) -> Result<Tensor> {
    let out = x.view_as_layout(layout);
    let name = steps.last().map_or("AliasBackward0", Step::node);
    // one slice or select: torch's slice_backward / select_backward op is the gradient's node
    let backward_op = match steps[..] {
        [Step::Select(..)] => Some("SelectBackwardBackward0"),
        [Step::Slice(..)] => Some("SliceBackwardBackward0"),
        _ => None,
    };
    let steps_for_values = steps.clone();
    let view_fn: Arc<dyn Fn(&Tensor) -> Result<Vec<Tensor>> + Send + Sync> = Arc::new(move |z| {
        let mut l = z.layout.clone();
        for s in &steps {
            l = s.apply(&l)?;
        }
        Ok(vec![z.view_as_layout(l)])
    });
    let values = || last_step_values(&x.layout, &steps_for_values);
    match backward_op {
        Some(op) => crate::autograd::record_view_with_backward_op(name, op, x, &out, values, view_fn)?,
        None => crate::autograd::record_view_joined(name, x, &[&out], values, view_fn, None)?,
    }
    Ok(out)
}

/// The saved values of the node named after the last step: torch's node for that step, whose
/// input is the view the steps before it made.
fn last_step_values(layout: &Layout, steps: &[Step]) -> crate::autograd::ViewValues {
    let Some((last, before)) = steps.split_last() else { return Vec::new() };
    let mut l = layout.clone();
    for s in before {
        // the steps made the view already, so each applies
        l = s.apply(&l).unwrap_or_else(|_| l.clone());
    }
    match *last {
        Step::Select(d, i) => crate::ops::views::select_values(&l.shape, d as i64, i),
        Step::Slice(d, start, stop, step) => crate::ops::views::slice_values(&l.shape, d as i64, start, stop, step),
        Step::Unsqueeze(d) => vec![("dim", crate::autograd::SavedValue::Int(d as i64))],
    }
}

/// `x` itself when no step changed it, else the recorded view.
fn view_or_self(x: &Tensor, layout: Layout, steps: Vec<Step>) -> Result<Tensor> {
    if steps.is_empty() {
        Ok(x.clone())
    } else {
        basic_view(x, layout, steps)
    }
}

/// Builders shared by the tests of the indexing files.
#[cfg(test)]
mod test_util {
    use super::*;

    pub(super) fn arange(n: usize, shape: &[usize]) -> Tensor {
        Tensor::from_vec((0..n).map(|v| v as f32).collect::<Vec<_>>(), shape).unwrap()
    }

    pub(super) fn sl(start: i64, stop: i64) -> TensorIndex {
        TensorIndex::Slice { start, stop, step: 1 }
    }
}
