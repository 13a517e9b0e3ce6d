//! AccumulateGrad: the node at the end of every path, adding the gradient into a leaf's `.grad`
//! (in place after the first time, R49).

use super::mode;
use super::node::{Backward, Body, Edges, InputMeta, Node};
use crate::error::Result;
use crate::ops::for_autograd::{self as ops, is_non_overlapping_and_dense};
use crate::tensor::Tensor;
use std::any::Any;
use std::sync::Arc;

pub struct AccumulateGrad {
    pub variable: Tensor,
}

/// The leaf's AccumulateGrad node, created on first use and shared while the graph holds it.
pub fn grad_accumulator(t: &Tensor) -> Arc<Node> {
    if let Some(n) = t.meta.lock().grad_accumulator.upgrade() {
        return n;
    }
    // Built without holding the lock (anomaly mode may call into Python while building).
    let inputs = InputMeta { shape: minigrad_base::layout::Dims::from_slice(t.shape()), dtype: t.dtype() };
    let node = Node::new_accumulate(inputs, AccumulateGrad { variable: t.clone() });
    let mut m = t.meta.lock();
    match m.grad_accumulator.upgrade() {
        Some(n) => n,
        None => {
            m.grad_accumulator = Arc::downgrade(&node);
            node
        }
    }
}

impl Backward for AccumulateGrad {
    fn apply(&mut self, _node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let Some(mut g) = grads.into_iter().next().flatten() else { return Ok(Vec::new()) };
        // A leaf whose requires_grad was switched off after the graph was built gets nothing.
        if !self.variable.requires_grad() {
            return Ok(Vec::new());
        }
        g = run_tensor_hooks(&self.variable, g)?;
        accumulate(&self.variable, g)?;
        Ok(Vec::new())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// A leaf's own hooks, in registration order; each may replace the gradient.
pub fn run_tensor_hooks(leaf: &Tensor, mut g: Tensor) -> Result<Tensor> {
    let hooks: Vec<_> = leaf.meta.lock().hooks.iter().map(|(_, h)| h.clone()).collect();
    for h in hooks {
        if let Some(new) = h(&g)? {
            g = new;
        }
    }
    Ok(g)
}

/// `.grad += g` (in place, through the write path) or the first `.grad = g`.
pub fn accumulate(variable: &Tensor, g: Tensor) -> Result<()> {
    let create_graph = mode::is_grad_enabled();
    match variable.grad() {
        None => {
            let g = if !create_graph && can_steal(&g, variable) { g.fresh_handle() } else { clone_like(&g, variable)? };
            variable.set_grad(Some(g));
        }
        Some(old) if !create_graph => ops::add_(&old, &g)?,
        Some(old) => variable.set_grad(Some(ops::add(&old, &g)?)),
    }
    Ok(())
}

/// A gradient buffer nobody else holds, laid out as the leaf is, becomes `.grad` as is. A view
/// made in backward (the `.t()` of a Linear weight's transposed gradient, a bias gradient's
/// `view` after `sum_to`) also holds its base's handle: one more owner, as torch's use count
/// of a view made in backward does not include its base.
fn can_steal(g: &Tensor, variable: &Tensor) -> bool {
    sole_owner(g)
        && g.layout.offset == 0
        && g.numel() == g.storage.len()
        && g.dtype() == variable.dtype()
        && obeys_layout_contract(g, &ops::preserved_layout(variable).strides)
}

/// torch's `obeys_layout_contract`: the strides match where a dim's size is not 1; a size-1
/// dim's stride is free but not 0 (the gradient of `x.t().squeeze()` on a `[1, n]` leaf comes
/// back as `[1, n]` with strides `(1, 1)`, which torch keeps as `.grad`).
fn obeys_layout_contract(g: &Tensor, want: &[isize]) -> bool {
    g.shape().len() == want.len() && g.shape().iter().zip(g.strides()).zip(want).all(|((&n, &s), &w)| if n == 1 { s != 0 } else { s == w })
}

/// Nothing but the backward pass holds `g`'s storage: one handle, or two for a view made in
/// backward (the view and its base's handle; torch's use count of such a view leaves the base out).
pub(super) fn sole_owner(g: &Tensor) -> bool {
    let owners = if g.is_view() { 2 } else { 1 };
    Arc::strong_count(&g.storage) == owners
}

/// torch's InputBuffer::accumulate, two gradients for one input of a node: while the pass runs
/// without create_graph, the sum goes in place into a buffer nobody else holds (the first one if
/// it can take it, else the second), non-overlapping and dense, of the sum's shape, dtype and
/// device; so the sum keeps that buffer's strides as torch's does (a transposed gradient meeting
/// a contiguous one stays transposed) and no new buffer is made. With create_graph, or when
/// neither can take it, out of place.
pub fn add_gradients(old: Tensor, g: Tensor) -> Result<Tensor> {
    if !mode::is_grad_enabled() {
        if can_take_sum(&old, &g) {
            ops::add_(&old, &g)?;
            return Ok(old);
        }
        if can_take_sum(&g, &old) {
            ops::add_(&g, &old)?;
            return Ok(g);
        }
    }
    ops::add(&old, &g)
}

fn can_take_sum(dst: &Tensor, other: &Tensor) -> bool {
    sole_owner(dst)
        && dst.shape() == other.shape()
        && dst.dtype() == other.dtype()
        && dst.device() == other.device()
        && is_non_overlapping_and_dense(&dst.layout)
}

/// torch's clone_obey_contract: `.grad` gets the leaf's strides when those are dense. torch
/// makes that copy with `new_empty_strided(...).copy_(g)`, an in-place write, so such a `.grad`
/// starts at version 1; the other branch is a plain `clone()` (version 0).
fn clone_like(g: &Tensor, variable: &Tensor) -> crate::error::Result<Tensor> {
    let dense = is_non_overlapping_and_dense(&variable.layout);
    let layout = if dense { ops::preserved_layout(variable) } else { crate::layout::Layout::contiguous(variable.shape()) };
    let out = ops::empty_with_layout(&layout, variable.dtype(), variable.device())?;
    if dense {
        // torch's copy_: through the one write path, which bumps the version
        crate::ops::for_autograd::write(&out, &[g], |reads| {
            ops::copy_kernel(&out, &reads[0].0)?;
            Ok(())
        })?;
    } else {
        ops::copy_kernel(&out, g)?;
    }
    Ok(out)
}

impl Node {
    /// AccumulateGrad nodes sort last in creation order so the engine runs them as soon as
    /// they are ready (torch gives them the largest sequence number).
    pub fn new_accumulate(input: InputMeta, body: AccumulateGrad) -> Arc<Node> {
        // torch's name() is its C++ class, `torch::autograd::AccumulateGrad` (the Python type is `AccumulateGrad`)
        Node::with_seq("torch::autograd::AccumulateGrad", Edges::new(), smallvec::smallvec![input], 1, Body::Accumulate(body), u64::MAX)
    }
}
