//! Per-tensor autograd state (torch's `AutogradMeta` / `DifferentiableViewMeta`).
//!
//! Every handle of one tensor shares one `AutogradMeta` behind an `Arc<Mutex<_>>`: that shared
//! cell *is* the tensor's identity (`requires_grad`, `.grad`, `grad_fn`). Locks are held only
//! for a field read or write, never across a call that could lock another tensor.

use super::mode;
use super::node::{Edge, Hook, Node};
use crate::tensor::Tensor;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// How a view came to be; anything but `Default` forbids in-place on it in grad mode (R38-R43).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CreationMeta {
    Default,
    NoGradMode,
    InferenceMode,
    MultiOutputNode,
    InCustomFunction,
}

pub struct ViewMeta {
    /// The root base (a view of a view records the root, as torch's `_base`).
    pub base: Tensor,
    pub creation: CreationMeta,
    /// The version at which `grad_fn` was last valid; a mismatch means base or a sibling was
    /// modified in place and the grad_fn must be regenerated (R34).
    pub attr_version: u64,
}

#[derive(Default)]
pub struct AutogradMeta {
    /// Set on leaves by `requires_grad_()`; non-leaves require grad through their grad_fn.
    pub requires_grad: bool,
    pub grad_fn: Option<Arc<Node>>,
    /// Which output of `grad_fn` this tensor is.
    pub output_nr: usize,
    pub grad: Option<Tensor>,
    /// A leaf's AccumulateGrad node, held weakly (the graph holds it strongly).
    pub grad_accumulator: Weak<Node>,
    pub retains_grad: bool,
    /// Hooks of a leaf (a non-leaf's hooks live on its grad_fn, R31).
    pub hooks: Vec<(u64, Hook)>,
    pub view: Option<ViewMeta>,
    /// Created in inference mode: no version tracking allowed outside it (R42).
    pub inference: bool,
    /// `x.data = y` gives x new memory (same identity, same version counter); handles taken
    /// earlier (saved tensors) read it from here, as torch's saved variables see the swap (R16).
    pub replaced_data: Option<(Arc<crate::storage::Storage>, crate::layout::Layout)>,
    /// The binding's Python object for this tensor (a borrowed pointer it keeps current), so a
    /// tensor met twice is the same Python object (`x.grad is x.grad`).
    pub py_object: usize,
}

pub type MetaRef = Arc<MetaCell>;

/// A mutex that ignores poisoning: no code panics while holding it, and the binding turns
/// panics into Python exceptions, so the data is never half-written.
#[derive(Default)]
pub struct MetaCell(Mutex<AutogradMeta>);

impl MetaCell {
    pub fn lock(&self) -> MutexGuard<'_, AutogradMeta> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl AutogradMeta {
    pub fn new_ref() -> MetaRef {
        Arc::new(MetaCell(Mutex::new(AutogradMeta { inference: mode::is_inference_mode(), ..Default::default() })))
    }

    /// The meta of a new view of `of`: its root base, and the creation meta torch would record.
    pub fn new_view_ref(of: &Tensor) -> MetaRef {
        let (root, prev, inference) = {
            let m = of.meta.lock();
            match &m.view {
                Some(v) => (v.base.clone(), Some(v.creation), m.inference),
                None => (of.clone(), None, m.inference),
            }
        };
        let now = if mode::is_inference_mode() {
            CreationMeta::InferenceMode
        } else if !mode::is_grad_enabled() {
            CreationMeta::NoGradMode
        } else {
            CreationMeta::Default
        };
        // torch's propagate_creation_meta: a view of a special view stays special.
        let creation = match (prev, now) {
            (Some(p), CreationMeta::Default) => p,
            (Some(CreationMeta::InferenceMode), _) => CreationMeta::InferenceMode,
            (_, n) => n,
        };
        let view = ViewMeta { base: root, creation, attr_version: of.version() };
        // A view of a normal tensor made in inference mode is a normal tensor (with an
        // InferenceMode creation meta); only views of inference tensors are inference tensors.
        Arc::new(MetaCell(Mutex::new(AutogradMeta { view: Some(view), inference, ..Default::default() })))
    }
}

/// The three wordings torch uses for "this dtype cannot require grad" (R48).
#[derive(Clone, Copy)]
pub enum RequiresGradEntry {
    Factory,
    Method,
    Setter,
}

impl Tensor {
    /// Leaf flag, or a grad_fn, or a view of a tensor that requires grad.
    pub fn requires_grad(&self) -> bool {
        let base = {
            let m = self.meta.lock();
            if m.requires_grad || m.grad_fn.is_some() {
                return true;
            }
            match &m.view {
                Some(v) => v.base.clone(),
                None => return false,
            }
        };
        base.requires_grad()
    }

    /// `requires_grad_()` / `requires_grad=` with torch's checks.
    pub fn set_requires_grad(&self, on: bool, entry: RequiresGradEntry) -> crate::Result<()> {
        if on && !self.dtype().is_floating() {
            let msg = match entry {
                RequiresGradEntry::Factory => "Only Tensors of floating point and complex dtype can require gradients",
                RequiresGradEntry::Method => "only Tensors of floating point dtype can require gradients",
                RequiresGradEntry::Setter => "only Tensors of floating point and complex dtype can require gradients",
            };
            return Err(crate::Error::Runtime(msg.into()));
        }
        if !self.is_leaf()? {
            if matches!(entry, RequiresGradEntry::Setter) {
                // the attribute setter refuses any change on a non-leaf
                let extra = if on { "" } else { " If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach()." };
                return Err(crate::Error::Runtime(format!("you can only change requires_grad flags of leaf variables.{}", extra)));
            }
            if on {
                return Ok(()); // requires_grad_(True) is a no-op on non-leaves (R30)
            }
            return Err(crate::Error::Runtime("you can only change requires_grad flags of leaf variables. If you want to use a computed variable in a subgraph that doesn't require differentiation use var_no_grad = var.detach().".into()));
        }
        self.meta.lock().requires_grad = on;
        Ok(())
    }

    /// torch's C++ `is_leaf`: no grad_fn recorded (a stale view is not regenerated here; the
    /// Python property `is_leaf` reads the regenerated `grad_fn()` instead).
    pub fn is_leaf(&self) -> crate::Result<bool> {
        Ok(self.meta.lock().grad_fn.is_none())
    }

    /// The grad_fn without regenerating a stale view's node (for messages and introspection).
    pub fn raw_grad_fn(&self) -> Option<Arc<Node>> {
        self.meta.lock().grad_fn.clone()
    }

    pub fn output_nr(&self) -> usize {
        self.meta.lock().output_nr
    }

    /// Where gradient for this tensor flows: (grad_fn, output_nr), a leaf's AccumulateGrad, or
    /// nowhere (torch's `gradient_edge`).
    pub fn gradient_edge(&self) -> crate::Result<Edge> {
        if let Some(f) = self.grad_fn()? {
            return Ok(Edge { node: Some(f), input_nr: self.output_nr() });
        }
        // Only a tensor's own flag gets an AccumulateGrad: a view that requires grad through its
        // base but has no grad_fn (made under no_grad) leads nowhere, as in torch.
        if self.meta.lock().requires_grad {
            return Ok(Edge { node: Some(super::accumulate::grad_accumulator(self)), input_nr: 0 });
        }
        Ok(Edge::none())
    }

    /// `(requires_grad(), gradient_edge())` for recording an op, the edge none where no grad
    /// is required. A tensor that is not a view has no history to regenerate, so one lock
    /// answers both unless its leaf accumulator must be made (issue 13, per-op overhead).
    pub fn recording_edge(&self) -> crate::Result<(bool, Edge)> {
        {
            let m = self.meta.lock();
            if m.view.is_none() {
                if let Some(f) = &m.grad_fn {
                    return Ok((true, Edge { node: Some(f.clone()), input_nr: m.output_nr }));
                }
                if !m.requires_grad {
                    return Ok((false, Edge::none()));
                }
                if let Some(n) = m.grad_accumulator.upgrade() {
                    return Ok((true, Edge { node: Some(n), input_nr: 0 }));
                }
            }
        }
        if !self.requires_grad() {
            return Ok((false, Edge::none()));
        }
        Ok((true, self.gradient_edge()?))
    }

    /// Makes this tensor output `output_nr` of `node` (a non-leaf from now on).
    pub fn set_gradient_edge(&self, node: Arc<Node>, output_nr: usize) {
        let mut m = self.meta.lock();
        m.grad_fn = Some(node);
        m.output_nr = output_nr;
        if let Some(v) = m.view.as_mut() {
            v.attr_version = self.version.get();
        }
    }

    pub fn grad(&self) -> Option<Tensor> {
        self.meta.lock().grad.clone()
    }

    pub fn set_grad(&self, g: Option<Tensor>) {
        self.meta.lock().grad = g;
    }

    /// `x.data = src`: this tensor now shows `src`'s memory and layout (no version bump, R4).
    pub fn set_data(&mut self, src: &Tensor) {
        self.storage = src.storage.clone();
        self.layout = src.layout.clone();
        self.meta.lock().replaced_data = Some((src.storage.clone(), src.layout.clone()));
    }

    /// This handle with the memory a later `x.data = ...` installed, if any.
    pub fn current_data(&self) -> Tensor {
        match self.meta.lock().replaced_data.clone() {
            Some((storage, layout)) => Tensor { storage, layout, version: self.version.clone(), meta: self.meta.clone(), stale_size0: false },
            None => self.clone(),
        }
    }

    pub fn is_inference(&self) -> bool {
        self.meta.lock().inference
    }

    pub fn retains_grad(&self) -> bool {
        self.meta.lock().retains_grad
    }
}
