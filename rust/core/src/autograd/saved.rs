//! Saved tensors and the version check (R10, R18).
//!
//! A node saves a tensor together with the tensor's version at that moment. Unpacking compares
//! versions and raises torch's message when an in-place op changed the tensor in between.
//! Inputs are kept as the original handle (the message then names the tensor's *current*
//! grad_fn); outputs are kept without their autograd identity (a handle with a fresh meta plus
//! a weak link to the node), so a node saving its own output does not keep itself alive.

use super::mode;
use super::node::Node;
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
}

impl SavedTensor {
    /// Saves a forward input (or any tensor that is not an output of the saving node).
    pub fn input(t: &Tensor) -> Result<SavedTensor> {
        if t.is_inference() && !mode::is_inference_mode() {
            return Err(Error::Runtime(INFERENCE_SAVED.into()));
        }
        Ok(SavedTensor { data: Some(t.clone()), version: t.version(), is_output: false, output_nr: 0, producer: Weak::new(), named_by: None, saved_at: trace() })
    }

    /// Saves output `output_nr` of the node being built (the node is linked once it exists).
    pub fn output(t: &Tensor, output_nr: usize) -> SavedTensor {
        SavedTensor { data: Some(t.fresh_handle()), version: t.version(), is_output: true, output_nr, producer: Weak::new(), named_by: None, saved_at: trace() }
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

    /// The tensor, if its version still matches; `node` is the node that saved it.
    pub fn unpack(&self, node: &Node) -> Result<Tensor> {
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

    fn version_message(&self, t: &Tensor, grad_fn: Option<Arc<Node>>, node: &Node, now: u64) -> String {
        let clause = if self.is_output {
            match self.named_by.as_ref().and_then(Weak::upgrade) {
                // the regenerated view node is output 0 of itself
                Some(f) => format!(", which is output 0 of {},", f.forward_op_name()),
                None => format!(", which is output {} of {},", self.output_nr, node.forward_op_name()),
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
