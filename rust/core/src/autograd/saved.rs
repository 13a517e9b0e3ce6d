//! Saved tensors and the version check (R10, R18).
//!
//! A node saves a tensor together with the tensor's version at that moment. Unpacking compares
//! versions and raises torch's message when an in-place op changed the tensor in between.
//! Inputs are kept as the original handle (the message then names the tensor's *current*
//! grad_fn); outputs are kept without their autograd identity (a handle with a fresh meta plus
//! a weak link to the node), so a node saving its own output does not keep itself alive.
//!
//! Under saved-tensor hooks (`saved_hooks.rs`) the node keeps what the pack hook returned
//! instead, plus the autograd metadata needed to rebuild a tensor with the right gradient edge
//! from whatever the unpack hook gives back; as in torch, no version check is possible then.

use super::mode;
use super::node::Node;
use super::saved_hooks::{self, PackHooks, Packed};
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::sync::{Arc, Weak};

pub const FREED: &str = "Trying to backward through the graph a second time (or directly access saved tensors after they have already been freed). Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved tensors after calling backward.";
const INFERENCE_SAVED: &str = "Inference tensors cannot be saved for backward. Please do not use Tensors created in inference mode in computation tracked by autograd. To work around this, you can make a clone to get a normal tensor and use it in autograd, or use `minigrad.no_grad()` instead of `minigrad.inference_mode()`.";

pub struct SavedTensor {
    data: Option<Tensor>,
    version: u64,
    is_output: bool,
    output_nr: usize,
    /// For outputs: the node that produced them (re-attached on unpack, for double backward).
    producer: Weak<Node>,
    /// For the result of an in-place op on a view: the view's grad_fn after the rebase, which
    /// the version message names while it lives (torch's `weak_grad_fn_`).
    named_by: Option<Weak<Node>>,
    /// Anomaly mode / mutation blame: where it was saved.
    pub saved_at: Option<String>,
    /// A Python number saved as a 0-d tensor (`a * 2`): never shown to pack hooks (torch's
    /// wrapped numbers).
    number: bool,
    /// What the pack hook returned, when hooks were active at save time (`data` is then None).
    packed: Option<Box<dyn Packed>>,
    hooked: HookedMeta,
}

/// A tensor packed by the active hooks, ready to be installed in its `SavedTensor` (outputs are
/// packed without holding the node's lock, since the hook may look at the node).
pub struct PackedTensor {
    packed: Box<dyn Packed>,
    meta: HookedMeta,
    output_nr: usize,
}

impl PackedTensor {
    /// Packs `t` with the innermost active hooks; None when none are active.
    pub fn pack(t: &Tensor, is_output: bool) -> Result<Option<PackedTensor>> {
        let Some(hooks) = saved_hooks::current() else { return Ok(None) };
        PackedTensor::pack_using(hooks.as_ref(), t, t, is_output).map(Some)
    }

    /// Packs `shown` (what the hook sees) with `hooks`, keeping `t`'s place in the graph.
    pub fn pack_using(hooks: &dyn PackHooks, t: &Tensor, shown: &Tensor, is_output: bool) -> Result<PackedTensor> {
        let is_leaf = t.is_leaf()?;
        let own_flag = t.meta.lock().requires_grad;
        let meta = HookedMeta {
            requires_grad: is_leaf && t.requires_grad(),
            grad_accumulator: if is_leaf && own_flag { Arc::downgrade(&super::accumulate::grad_accumulator(t)) } else { Weak::new() },
            grad_fn: if !is_leaf && !is_output { t.raw_grad_fn() } else { None },
        };
        let output_nr = t.output_nr();
        let packed = saved_hooks::pack_with(hooks, shown)?;
        Ok(PackedTensor { packed, meta, output_nr })
    }
}

/// What torch's `save_metadata` keeps for a packed tensor: enough to give the unpacked tensor
/// the saved tensor's place in the graph.
#[derive(Default)]
struct HookedMeta {
    /// A leaf's requires_grad and its AccumulateGrad (weakly, as torch).
    requires_grad: bool,
    grad_accumulator: Weak<Node>,
    /// A saved non-leaf input's grad_fn at save time.
    grad_fn: Option<Arc<Node>>,
}

impl SavedTensor {
    /// Saves a forward input (or any tensor that is not an output of the saving node) and
    /// packs it at once if hooks are active.
    pub fn input(t: &Tensor) -> Result<SavedTensor> {
        let mut s = SavedTensor::unpacked_input(t)?;
        s.pack_if_hooked(t)?;
        Ok(s)
    }

    /// An input saved without packing yet: custom Functions pack everything they save in the
    /// order it was given, after the node exists (`pack_if_hooked`).
    pub fn unpacked_input(t: &Tensor) -> Result<SavedTensor> {
        if t.is_inference() && !mode::is_inference_mode() {
            return Err(Error::Runtime(INFERENCE_SAVED.into()));
        }
        Ok(SavedTensor::new(t.clone(), t.version(), false, 0))
    }

    /// A Python number saved as a 0-d tensor: kept as is, never packed.
    pub fn number(t: &Tensor) -> SavedTensor {
        let mut s = SavedTensor::new(t.clone(), t.version(), false, 0);
        s.number = true;
        s
    }

    /// Saves output `output_nr` of the node being built (the node is linked once it exists).
    /// Not packed here: torch packs an output once it carries its grad_fn, which the recorder
    /// does after setting the outputs' edges (`pack_if_hooked`).
    pub fn output(t: &Tensor, output_nr: usize) -> SavedTensor {
        SavedTensor::new(t.fresh_handle(), t.version(), true, output_nr)
    }

    fn new(data: Tensor, version: u64, is_output: bool, output_nr: usize) -> SavedTensor {
        SavedTensor {
            data: Some(data),
            version,
            is_output,
            output_nr,
            producer: Weak::new(),
            named_by: None,
            saved_at: trace(),
            number: false,
            packed: None,
            hooked: HookedMeta::default(),
        }
    }

    /// Hands `t` (the very tensor being saved, with its autograd identity) to the active pack
    /// hook, if any, and keeps the result instead of the tensor.
    pub fn pack_if_hooked(&mut self, t: &Tensor) -> Result<()> {
        if self.number || self.packed.is_some() || self.data.is_none() {
            return Ok(());
        }
        if let Some(p) = PackedTensor::pack(t, self.is_output)? {
            self.install(p);
        }
        Ok(())
    }

    /// Keeps what a pack hook made of this tensor instead of the tensor.
    pub fn install(&mut self, p: PackedTensor) {
        if self.number {
            return;
        }
        self.packed = Some(p.packed);
        self.hooked = p.meta;
        self.output_nr = p.output_nr;
        self.data = None;
    }

    /// Whether a pack hook holds this tensor (no version check at unpack).
    pub fn is_packed(&self) -> bool {
        self.packed.is_some()
    }

    /// Whether the tensor (or what a pack hook made of it) is still held.
    pub fn is_freed(&self) -> bool {
        self.data.is_none() && self.packed.is_none()
    }

    pub fn set_producer(&mut self, node: &Arc<Node>) {
        if self.is_output {
            self.producer = Arc::downgrade(node);
        }
    }

    pub fn name_by(&mut self, grad_fn: &Arc<Node>) {
        if self.is_output {
            self.named_by = Some(Arc::downgrade(grad_fn));
        }
    }

    pub fn is_output(&self) -> bool {
        self.is_output
    }
    pub fn saved_version(&self) -> u64 {
        self.version
    }
    /// The saved tensor without the version check (graph pictures show stale ones).
    pub fn peek(&self) -> Option<&Tensor> {
        self.data.as_ref()
    }

    /// For `register_hooks` on one saved tensor (`grad_fn._raw_saved_<name>`): the tensor
    /// whose graph place is kept and the one the pack hook sees (a saved input is shown
    /// detached, as torch shows it), or torch's error when hooks are set or it was freed.
    pub fn for_register_hooks(&self) -> Result<(Tensor, Tensor)> {
        if self.packed.is_some() {
            return Err(Error::Runtime("Calling register_hooks on a saved tensor whose hooks have already been set. Hint: only one pair of hooks is allowed at a time.".into()));
        }
        let Some(t) = self.data.as_ref() else {
            return Err(Error::Runtime("Calling register_hooks on a saved tensor after it has been freed. Saved intermediate values of the graph are freed when you call .backward() or autograd.grad(). Specify retain_graph=True if you need to backward through the graph a second time or if you need to access saved variables after calling backward.".into()));
        };
        let t = t.current_data();
        let shown = if self.is_output { t.clone() } else { t.alias() };
        Ok((t, shown))
    }

    /// Like `install`, for a pack made by `register_hooks` (also on a wrapped number).
    pub fn install_registered(&mut self, p: PackedTensor) {
        let nr = self.output_nr;
        self.number = false;
        self.install(p);
        if self.is_output {
            self.output_nr = nr; // the shown handle of an output has no edge of its own
        }
    }

    /// The tensor, if its version still matches; `node` is the node that saved it.
    pub fn unpack(&self, node: &Node) -> Result<Tensor> {
        self.unpack_for(Some(node))
    }

    /// `unpack` for a saved tensor that belongs to no node (`_make_saved_tensor`).
    pub fn unpack_for(&self, node: Option<&Node>) -> Result<Tensor> {
        if let Some(p) = &self.packed {
            return self.unpack_hooked(p.as_ref());
        }
        let t = self.data.as_ref().ok_or_else(|| Error::Runtime(FREED.into()))?;
        // torch reads a saved input's grad_fn before checking its version (for the message):
        // a stale view regenerates its grad_fn there, and a stale multi-output view raises its
        // own error first.
        let grad_fn = if self.is_output { None } else { t.grad_fn()? };
        let now = t.version();
        if now != self.version {
            return Err(Error::Runtime(self.version_message(t, grad_fn, node, now)));
        }
        if self.is_output {
            // Re-attach the producing node so formulas run under create_graph see the history.
            if let Some(p) = self.producer.upgrade() {
                let h = t.fresh_handle();
                h.set_gradient_edge(p, self.output_nr);
                return Ok(h);
            }
        }
        Ok(t.current_data())
    }

    /// torch's unpack under hooks: no version check; the unpack hook's tensor is returned as
    /// is when it needs no gradient edge, else a new handle on its memory (sharing its version
    /// counter) that takes the saved tensor's place in the graph.
    fn unpack_hooked(&self, packed: &dyn Packed) -> Result<Tensor> {
        let data = packed.unpack()?;
        let grad_fn = if self.is_output { self.producer.upgrade() } else { self.hooked.grad_fn.clone() };
        if grad_fn.is_none() && !self.hooked.requires_grad && !data.requires_grad() {
            return Ok(data);
        }
        let h = data.fresh_handle();
        match grad_fn {
            Some(f) => h.set_gradient_edge(f, self.output_nr),
            None => {
                let mut m = h.meta.lock();
                m.requires_grad = self.hooked.requires_grad;
                m.grad_accumulator = self.hooked.grad_accumulator.clone();
            }
        }
        Ok(h)
    }

    fn version_message(&self, t: &Tensor, grad_fn: Option<Arc<Node>>, node: Option<&Node>, now: u64) -> String {
        let clause = if self.is_output {
            match (self.named_by.as_ref().and_then(Weak::upgrade), node) {
                // the regenerated view node is output 0 of itself
                (Some(f), _) => format!(", which is output 0 of {},", f.forward_op_name()),
                (None, Some(node)) => format!(", which is output {} of {},", self.output_nr, node.forward_op_name()),
                (None, None) => String::new(),
            }
        } else {
            match grad_fn {
                Some(f) => format!(", which is output {} of {},", t.output_nr(), f.forward_op_name()),
                None => String::new(),
            }
        };
        let hint = if mode::is_anomaly_enabled() {
            "Hint: the backtrace further above shows the operation that failed to compute its gradient. The variable in question was changed in there or anywhere later. Good luck!".to_string()
        } else {
            "Hint: enable anomaly detection to find the operation that failed to compute its gradient, with minigrad.autograd.set_detect_anomaly(True, check_nan=False).".to_string()
        };
        let mut msg = format!(
            "one of the variables needed for gradient computation has been modified by an inplace operation: [{} {}]{} is at version {}; expected version {} instead. {}",
            t.type_string(),
            crate::error::fmt_shape(t.shape()),
            clause,
            now,
            self.version,
            hint
        );
        if mode::is_anomaly_enabled() {
            msg.push_str(&super::blame::explain(t, self.version, self.saved_at.as_deref()));
        }
        msg
    }

    pub fn release(&mut self) {
        self.data = None;
        self.packed = None;
        self.hooked.grad_fn = None;
    }
}

fn trace() -> Option<String> {
    if mode::is_anomaly_enabled() { Some(mode::current_trace()) } else { None }
}

impl Tensor {
    /// torch's legacy type string under minigrad's name: `minigrad.FloatTensor`...
    pub fn type_string(&self) -> String {
        format!("minigrad.{}", self.dtype().legacy_tensor_name())
    }
}
