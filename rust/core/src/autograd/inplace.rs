//! The autograd side of in-place ops (DESIGN invariants 1 and 4): the checks before a write
//! and the history rebase after it.
//!
//! * `check_inplace`: a leaf that requires grad, a view of one, and views that may not be
//!   modified (multi-output, made under no_grad / inference mode, returned by a custom
//!   Function) are refused in grad mode, with torch's words (R22-R24, R38-R43).
//! * `rebase_history`: the modified tensor's grad_fn becomes the op's node (R28); if it is a
//!   view, the node is wrapped in `CopySlices`, which becomes the *base's* grad_fn, and the
//!   view's own grad_fn is regenerated from the base (R32).
//! * `Tensor::grad_fn`: a view whose base (or a sibling) was modified since its grad_fn was
//!   made gets a fresh `AsStridedBackward0` on the base's current history (R34).

use super::meta::CreationMeta;
use super::mode;
use super::node::{Backward, Body, FnBackward, Formula, InputMeta, Node};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::tensor::Tensor;
use std::any::Any;
use std::sync::Arc;

const LEAF: &str = "a leaf Variable that requires grad is being used in an in-place operation.";
const VIEW_OF_LEAF: &str = "a view of a leaf Variable that requires grad is being used in an in-place operation.";
const INFERENCE_INPLACE: &str = "Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone to get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 for more details.";

/// torch's check_inplace: `will_record` is "grad mode is on and self or an operand requires grad".
pub fn check_inplace(t: &Tensor, will_record: bool) -> Result<()> {
    if t.is_inference() && !mode::is_inference_mode() {
        return Err(Error::Runtime(INFERENCE_INPLACE.into()));
    }
    if !will_record {
        return Ok(());
    }
    let base = t.base();
    if let Some(base) = &base {
        handle_view_on_rebase(t, false)?;
        if t.requires_grad() && base.is_leaf()? {
            return Err(Error::Runtime(VIEW_OF_LEAF.into()));
        }
    }
    if t.requires_grad() && t.is_leaf()? {
        return Err(Error::Runtime(LEAF.into()));
    }
    Ok(())
}

/// Raises for views that may not be modified in place (creation meta other than Default).
fn handle_view_on_rebase(t: &Tensor, indirect: bool) -> Result<()> {
    let (creation, grad_fn, output_nr) = {
        let m = t.meta.lock();
        let Some(v) = &m.view else { return Ok(()) };
        (v.creation, m.grad_fn.clone(), m.output_nr)
    };
    if creation == CreationMeta::Default {
        return Ok(());
    }
    let modified = if indirect { " and its base or another view of its base has been modified inplace" } else { " and is being modified inplace" };
    if creation == CreationMeta::InferenceMode {
        let what = if indirect { "its base or another view of its base has been modified inplace" } else { "is being modified inplace" };
        return Err(Error::Runtime(format!("A view was created in inference mode and {} in normal mode. Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the inference_mode block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).", what)));
    }
    let mut msg = match &grad_fn {
        Some(f) => format!("Output {} of {} is a view", output_nr, f.forward_op_name()),
        None => "A view was created in no_grad mode".to_string(),
    };
    if creation == CreationMeta::NoGradMode && grad_fn.is_some() {
        msg.push_str(" of a view which was created in no_grad mode");
    }
    msg.push_str(modified);
    if grad_fn.is_none() || creation == CreationMeta::NoGradMode {
        msg.push_str(" with grad mode enabled");
    }
    msg.push_str(match creation {
        CreationMeta::MultiOutputNode => ". This view is the output of a function that returns multiple views. Such functions do not allow the output views to be modified inplace. You should replace the inplace operation by an out-of-place one.",
        CreationMeta::NoGradMode => ". Given that this use case is ambiguous and error-prone, it is forbidden. You can clarify your code by moving both the view and the inplace either both inside the no_grad block (if you don't want the inplace to be tracked) or both outside (if you want the inplace to be tracked).",
        _ => ". This view was created inside a custom Function (or because an input was returned as-is) and the autograd logic to handle view+inplace would override the custom backward associated with the custom Function, leading to incorrect gradients. This behavior is forbidden. You can fix this by cloning the output of the custom Function.",
    });
    Err(Error::Runtime(msg))
}

/// Installs `node` (the in-place op's node; its edge 0 is self's previous history) as the new
/// history of `t`.
pub fn rebase_history(t: &Tensor, node: Arc<Node>) -> Result<()> {
    if let Some(base) = t.base() {
        let copy_slices = CopySlices::node(&base, t, node)?;
        base.set_gradient_edge(copy_slices, 0);
        // The view's own grad_fn is regenerated from the base's new history.
        let old = t.raw_grad_fn();
        t.grad_fn()?;
        move_retains(t, old.as_ref());
        return Ok(());
    }
    let old = t.raw_grad_fn();
    t.set_gradient_edge(node, 0);
    move_retains(t, old.as_ref());
    Ok(())
}

/// `retain_grad()` follows the tensor to its new grad_fn (R31); other hooks stay behind.
fn move_retains(t: &Tensor, old: Option<&Arc<Node>>) {
    if !t.retains_grad() {
        return;
    }
    if let Some(old) = old {
        old.edit_hooks(|h| h.retains.retain(|(_, m)| !m.upgrade().is_some_and(|m| Arc::ptr_eq(&m, &t.meta))));
    }
    if let Some(new) = t.raw_grad_fn() {
        let nr = t.output_nr();
        new.edit_hooks(|h| h.retains.push((nr, Arc::downgrade(&t.meta))));
    }
}

impl Tensor {
    /// torch's `grad_fn`: for a view whose version moved since its grad_fn was made, first the
    /// indirect in-place checks, then a fresh AsStridedBackward0 over the base's history.
    pub fn grad_fn(&self) -> Result<Option<Arc<Node>>> {
        let (base, attr_version, current) = {
            let m = self.meta.lock();
            let Some(v) = &m.view else { return Ok(m.grad_fn.clone()) };
            (v.base.clone(), v.attr_version, m.grad_fn.clone())
        };
        if current.is_none() && !base.requires_grad() {
            return Ok(None);
        }
        let now = self.version();
        if attr_version == now {
            return Ok(current);
        }
        handle_view_on_rebase(self, true)?;
        let node = as_strided_node(&base, &self.layout, Vec::new())?;
        self.set_gradient_edge(node.clone(), 0);
        move_retains(self, current.as_ref());
        Ok(Some(node))
    }
}

/// The geometry of `view` relative to a fresh buffer laid out like `base`.
fn relative_layout(view: &Layout, base: &Layout, buffer: &Layout) -> Layout {
    Layout { shape: view.shape.clone(), strides: view.strides.clone(), offset: buffer.offset + view.offset - base.offset }
}

/// A tensor laid out exactly like `base` (same strides), zero-filled, for gradients of views.
fn zeros_like_layout(base: &Tensor) -> crate::error::Result<Tensor> {
    let off = base.layout.offset as isize;
    let (lo, hi) = base.layout.extent().unwrap_or((off, off + 1));
    let buf = crate::ops::for_autograd::zeros_raw(&[(hi - lo).max(1) as usize], base.dtype(), base.device())?;
    let layout = Layout { shape: base.shape().into(), strides: base.strides().into(), offset: (off - lo) as usize };
    Ok(Tensor { layout, ..buf })
}

/// AsStridedBackward0 for view `view_layout` of `base`: scatter-add the gradient into a zero
/// buffer shaped like the base's memory, read the base's elements back out.
pub fn as_strided_node(base: &Tensor, view_layout: &Layout, values: super::ViewValues) -> Result<Arc<Node>> {
    let edge = base.gradient_edge()?;
    let base_t = base.fresh_handle();
    let view_layout = view_layout.clone();
    let formula: Formula = Box::new(move |ctx| {
        let buf = zeros_like_layout(&base_t)?;
        let region = Tensor { layout: relative_layout(&view_layout, &base_t.layout, &buf.layout), ..buf.fresh_handle() };
        crate::device::backend_for(&[&region, ctx.grad()])?.add_into(&region, ctx.grad())?;
        Ok(vec![Some(crate::ops::for_autograd::contiguous_raw(&buf)?)])
    });
    let inputs = vec![InputMeta { shape: minigrad_base::layout::Dims::from_slice(base.shape()), dtype: base.dtype() }];
    let body = FnBackward { saved: Vec::new(), values, formula };
    Ok(Node::new("AsStridedBackward0", vec![edge], inputs, 1, Body::Fn(body)))
}

/// torch's CopySlices: the base's gradient passes through unchanged outside the view; inside,
/// it goes through the in-place op's backward.
pub struct CopySlices {
    base: Tensor,
    view: Layout,
    func: Option<Arc<Node>>,
}

impl CopySlices {
    fn node(base: &Tensor, view: &Tensor, func: Arc<Node>) -> Result<Arc<Node>> {
        let mut next = vec![base.gradient_edge()?];
        next.extend(func.next.iter().skip(1).cloned());
        let mut inputs = vec![InputMeta { shape: minigrad_base::layout::Dims::from_slice(base.shape()), dtype: base.dtype() }];
        inputs.extend(func.inputs.iter().skip(1).cloned());
        let body = CopySlices { base: base.fresh_handle(), view: view.layout.clone(), func: Some(func) };
        Ok(Node::new("torch::autograd::CopySlices", next, inputs, 1, Body::boxed(body)))
    }
}

impl Backward for CopySlices {
    fn apply(&mut self, _node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let func = self.func.clone().ok_or_else(|| Error::Runtime(super::saved::FREED.into()))?;
        let Some(grad) = grads.into_iter().next().flatten() else { return Ok(vec![None; func.next.len()]) };
        let result = zeros_like_layout(&self.base)?;
        crate::ops::for_autograd::copy_(&result, &grad)?;
        // The region under the view, as a real (differentiable) view of `result`, so that under
        // create_graph the double-backward graph sees every step.
        let rel = relative_layout(&self.view, &self.base.layout, &result.layout);
        let size: Vec<i64> = rel.shape.iter().map(|&d| d as i64).collect();
        let stride: Vec<i64> = rel.strides.iter().map(|&d| d as i64).collect();
        let slice = crate::ops::for_autograd::as_strided(&result, &size, &stride, Some(rel.offset as i64))?;
        let slice_grad = crate::ops::for_autograd::clone(&slice)?;
        let res = func.apply(vec![Some(slice_grad)])?;
        match &res.first().cloned().flatten() {
            Some(g0) => crate::ops::for_autograd::copy_(&slice, g0)?,
            None => crate::ops::for_autograd::fill_(&slice, crate::Scalar::Float(0.0))?,
        }
        let mut out = vec![Some(result)];
        out.extend(res.into_iter().skip(1));
        Ok(out)
    }
    fn release(&mut self) {
        if let Some(f) = &self.func {
            f.release();
        }
        self.func = None;
    }
    fn saved(&self) -> Vec<(&'static str, &super::saved::SavedTensor)> {
        Vec::new()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
