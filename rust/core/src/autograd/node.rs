//! Graph nodes: one per recorded op call, pointing at the nodes of its inputs (`next`).
//!
//! A node owns its backward (`Backward`: a formula plus what it saved). Forward outputs point
//! at their node strongly; nodes point at earlier nodes strongly; nothing points forward, so the
//! graph is a DAG of `Arc`s with no cycles (a node that saves its own output keeps it without
//! the back-link, see `saved.rs`).

use super::meta::MetaCell;
use super::saved::{PackedTensor, SavedTensor};
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use std::any::Any;
use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use smallvec::SmallVec;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// Where one gradient goes: input slot `input_nr` of `node` (None: an input that needs none).
#[derive(Clone)]
pub struct Edge {
    pub node: Option<Arc<Node>>,
    pub input_nr: usize,
}

impl Edge {
    pub fn none() -> Edge {
        Edge { node: None, input_nr: 0 }
    }
    pub fn is_some(&self) -> bool {
        self.node.is_some()
    }
    pub fn same(&self, other: &Edge) -> bool {
        match (&self.node, &other.node) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b) && self.input_nr == other.input_nr,
            _ => false,
        }
    }
}

/// A tensor hook: sees a gradient, may replace it.
pub type Hook = Arc<dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync>;
/// A node hook (`grad_fn.register_hook`): sees grad inputs and outputs, may replace the inputs.
pub type NodeHook = Arc<dyn Fn(&[Option<Tensor>], &[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>> + Send + Sync>;
/// A node pre-hook (`grad_fn.register_prehook`): sees the grads flowing in, may replace them.
pub type NodePreHook = Arc<dyn Fn(&[Option<Tensor>]) -> Result<Option<Vec<Option<Tensor>>>> + Send + Sync>;

/// Shape and dtype of one forward input: backward outputs are checked against it.
#[derive(Clone, Debug)]
pub struct InputMeta {
    pub shape: minigrad_base::layout::Dims,
    pub dtype: DType,
}

/// A node's edges and input metas, inline for the common one- and two-input ops (recording a
/// binary op then allocates no vector: issue 13, per-op overhead).
pub type Edges = SmallVec<[Edge; 2]>;
pub type InputMetas = SmallVec<[InputMeta; 2]>;

/// A node's backward, stored in the node itself for the two kinds nearly every graph is made
/// of (recorded ops and leaf accumulators) and boxed for the rest; it reads as a
/// `dyn Backward` either way.
pub enum Body {
    Fn(FnBackward),
    Accumulate(super::accumulate::AccumulateGrad),
    Boxed(Box<dyn Backward>),
}

impl Body {
    pub fn boxed(b: impl Backward + 'static) -> Body {
        Body::Boxed(Box::new(b))
    }
}

impl std::ops::Deref for Body {
    type Target = dyn Backward;
    fn deref(&self) -> &(dyn Backward + 'static) {
        match self {
            Body::Fn(b) => b,
            Body::Accumulate(b) => b,
            Body::Boxed(b) => &**b,
        }
    }
}

impl std::ops::DerefMut for Body {
    fn deref_mut(&mut self) -> &mut (dyn Backward + 'static) {
        match self {
            Body::Fn(b) => b,
            Body::Accumulate(b) => b,
            Body::Boxed(b) => &mut **b,
        }
    }
}

/// The backward of one node.
pub trait Backward: Send {
    /// Gradients w.r.t. the forward inputs (one per `next` edge) from the gradients w.r.t. the
    /// forward outputs (`None` where an output got no gradient).
    fn apply(&mut self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>>;
    /// Frees saved tensors after a backward without `retain_graph`.
    fn release(&mut self) {}
    /// Saved tensors by name, for `grad_fn._saved_<name>` and the graph pictures.
    fn saved(&self) -> Vec<(&'static str, &SavedTensor)> {
        Vec::new()
    }
    /// Non-tensor saved values by name (`_saved_dim`, `_saved_alpha`...), as display text.
    fn saved_values(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }
    /// Lets saved outputs point back (weakly) at the node that saved them.
    fn link_producer(&mut self, _node: &Arc<Node>) {}
    /// An in-place op on a view saved its own result: its version message names the view's
    /// grad_fn after the rebase (`grad_fn`), as torch's `is_inplace_on_view` saved variables.
    fn name_outputs_by(&mut self, _grad_fn: &Arc<Node>) {}
    /// Whether this node saved one of its own outputs.
    fn saves_output(&self) -> bool {
        false
    }
    /// Replaces saved tensor `i` (in save order) by what a pack hook made of it.
    fn install_packed(&mut self, _i: usize, _p: PackedTensor) {}
    /// Saved tensors by name, mutable (`grad_fn._raw_saved_<name>.register_hooks`).
    fn saved_mut(&mut self) -> Vec<(&'static str, &mut SavedTensor)> {
        Vec::new()
    }
    fn as_any(&self) -> &dyn Any;
}

/// A node's hook lists. Few nodes ever get a hook, so a node holds them behind one lazily made
/// box instead of four locked vectors: a smaller node to build, copy and drop per recorded op
/// (issue 13, per-op overhead).
#[derive(Default)]
pub struct NodeHooks {
    /// Tensor hooks registered on this node's outputs: (output_nr, id, hook).
    pub tensor_hooks: Vec<(usize, u64, Hook)>,
    /// Tensors that asked `retain_grad()` while this node was their grad_fn.
    pub retains: Vec<(usize, Weak<MetaCell>)>,
    pub pre_hooks: Vec<(u64, NodePreHook)>,
    pub post_hooks: Vec<(u64, NodeHook)>,
}

static NEXT_SEQ: AtomicU64 = AtomicU64::new(0);

pub struct Node {
    pub name: Cow<'static, str>,
    /// Creation order: the engine runs later nodes first when several are ready.
    pub seq: u64,
    pub next: Edges,
    pub inputs: InputMetas,
    /// How many outputs the forward had (gradient slots this node receives).
    pub num_outputs: usize,
    body: Mutex<Body>,
    /// The hook lists, made when the first hook is registered (see `NodeHooks`).
    hooks: Mutex<Option<Box<NodeHooks>>>,
    /// Anomaly mode: where the forward op was called.
    pub trace: Option<String>,
    /// The binding's Python object for this node (borrowed pointer, kept current by it).
    pub py_object: AtomicUsize,
}

impl Node {
    pub fn new(name: impl Into<Cow<'static, str>>, next: impl Into<Edges>, inputs: impl Into<InputMetas>, num_outputs: usize, body: Body) -> Arc<Node> {
        Node::with_seq(name, next, inputs, num_outputs, body, NEXT_SEQ.fetch_add(1, Ordering::Relaxed))
    }

    pub fn with_seq(name: impl Into<Cow<'static, str>>, next: impl Into<Edges>, inputs: impl Into<InputMetas>, num_outputs: usize, body: Body, seq: u64) -> Arc<Node> {
        let trace = if super::mode::is_anomaly_enabled() { Some(super::mode::current_trace()) } else { None };
        Arc::new(Node {
            name: name.into(),
            seq,
            next: next.into(),
            inputs: inputs.into(),
            num_outputs,
            body: Mutex::new(body),
            hooks: Mutex::new(None),
            trace,
            py_object: AtomicUsize::new(0),
        })
    }

    /// Edits the hook lists (made on first use). Callers run no hook under this lock.
    pub fn edit_hooks<R>(&self, f: impl FnOnce(&mut NodeHooks) -> R) -> R {
        let mut h = self.hooks.lock().unwrap_or_else(|e| e.into_inner());
        f(h.get_or_insert_with(Default::default))
    }

    /// Reads the hook lists; a node without any gives `R::default()`.
    pub fn read_hooks<R: Default>(&self, f: impl FnOnce(&NodeHooks) -> R) -> R {
        let h = self.hooks.lock().unwrap_or_else(|e| e.into_inner());
        h.as_deref().map(f).unwrap_or_default()
    }

    pub fn body(&self) -> MutexGuard<'_, Body> {
        self.body.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn apply(&self, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        self.body().apply(self, grads)
    }

    pub fn release(&self) {
        self.body().release()
    }

    /// The leaf an AccumulateGrad node accumulates into.
    pub fn variable(&self) -> Option<Tensor> {
        self.body().as_any().downcast_ref::<super::accumulate::AccumulateGrad>().map(|a| a.variable.clone())
    }

    /// How errors name this node in 2.13: `MulBackward0` -> `Mul`, `MaxBackward1` -> `Max1`,
    /// a custom `MyFnBackward` -> `MyFn`; C++ nodes (`torch::autograd::CopySlices`) unchanged.
    pub fn forward_op_name(&self) -> String {
        forward_op_name(&self.name)
    }
}

pub fn forward_op_name(name: &str) -> String {
    let digits = name.len() - name.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let stem = &name[..name.len() - digits];
    match stem.strip_suffix("Backward") {
        Some(op) if !op.is_empty() => {
            let n = &name[name.len() - digits..];
            if n == "0" { op.to_string() } else { format!("{}{}", op, n) }
        }
        _ => name.to_string(),
    }
}

static NEXT_HOOK_ID: AtomicU64 = AtomicU64::new(1);
pub fn next_hook_id() -> u64 {
    NEXT_HOOK_ID.fetch_add(1, Ordering::Relaxed)
}

/// A view of the arguments a formula works with.
pub struct Ctx<'a> {
    pub grads: &'a [Option<Tensor>],
    pub saved: Vec<Tensor>,
    /// Which forward inputs need a gradient (torch's `needs_input_grad` / `should_compute_output`).
    pub needs: Vec<bool>,
    pub inputs: &'a [InputMeta],
}

impl Ctx<'_> {
    /// The gradient of output 0 (single-output formulas are only run when it exists).
    pub fn grad(&self) -> &Tensor {
        self.grads[0].as_ref().expect("engine runs a node only when a gradient reached it")
    }
    pub fn saved(&self, i: usize) -> &Tensor {
        &self.saved[i]
    }
    pub fn needs(&self, i: usize) -> bool {
        self.needs[i]
    }
}

pub type Formula = Box<dyn FnMut(&Ctx) -> Result<Vec<Option<Tensor>>> + Send>;

/// The common node body: saved tensors plus a formula closure (which may also capture numbers,
/// shapes and dims it needs).
pub struct FnBackward {
    pub saved: Vec<(&'static str, SavedTensor)>,
    pub values: Vec<(&'static str, SavedValue)>,
    pub formula: Formula,
}

/// A non-tensor argument a node shows as `grad_fn._saved_<name>`: ints and int lists (dims,
/// shapes, bounds: the views record these per call, so no text is made until someone reads
/// them), or Python literal text for the rest (floats, flags, None, strings).
#[derive(Clone, Debug)]
pub enum SavedValue {
    Int(i64),
    Ints(smallvec::SmallVec<[i64; 5]>),
    Text(String),
    /// A tensor torch's node declares but did not keep (its input needed no gradient):
    /// `grad_fn._saved_other` is None.
    Absent,
}

impl SavedValue {
    /// A shape (or any list of sizes) as a tuple of ints.
    pub fn sizes(d: &[usize]) -> Self {
        SavedValue::Ints(d.iter().map(|&v| v as i64).collect())
    }
    /// Python literal text: `3`, `(4, 5)`, `(1,)`, or the text itself.
    pub fn text(&self) -> String {
        match self {
            SavedValue::Int(v) => v.to_string(),
            SavedValue::Ints(vs) => crate::ops::for_autograd::py_ints(vs),
            SavedValue::Text(t) => t.clone(),
            SavedValue::Absent => "None".into(),
        }
    }
}

impl Backward for FnBackward {
    fn apply(&mut self, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
        let needs: Vec<bool> = node.next.iter().map(|e| e.is_some()).collect();
        // torch's generated nodes unpack (and so version-check) their saved variables first,
        // inputs by name and then outputs, which decides which error a program that modified
        // two of them sees (and the order unpack hooks run in); even a node whose inputs lead
        // nowhere (e.g. views made under no_grad) checks them.
        let mut order: Vec<usize> = (0..self.saved.len()).collect();
        order.sort_by_key(|&i| super::record::saved_order(self.saved[i].0, &self.saved[i].1));
        let mut slots: Vec<Option<Tensor>> = vec![None; self.saved.len()];
        for i in order {
            slots[i] = Some(self.saved[i].1.unpack(node)?);
        }
        if !needs.iter().any(|&n| n) {
            return Ok(vec![None; node.next.len()]);
        }
        let saved = slots.into_iter().map(|t| t.expect("every slot unpacked")).collect();
        let ctx = Ctx { grads: &grads, saved, needs, inputs: &node.inputs };
        (self.formula)(&ctx)
    }
    fn release(&mut self) {
        for (_, s) in &mut self.saved {
            s.release();
        }
    }
    fn saved(&self) -> Vec<(&'static str, &SavedTensor)> {
        self.saved.iter().map(|(n, s)| (*n, s)).collect()
    }
    fn saved_values(&self) -> Vec<(&'static str, String)> {
        self.values.iter().map(|(k, v)| (*k, v.text())).collect()
    }
    fn link_producer(&mut self, node: &Arc<Node>) {
        for (_, s) in &mut self.saved {
            s.set_producer(node);
        }
    }
    fn name_outputs_by(&mut self, grad_fn: &Arc<Node>) {
        for (_, s) in &mut self.saved {
            s.name_by(grad_fn);
        }
    }
    fn saves_output(&self) -> bool {
        self.saved.iter().any(|(_, s)| s.is_output())
    }
    fn install_packed(&mut self, i: usize, p: PackedTensor) {
        if let Some((_, s)) = self.saved.get_mut(i) {
            s.install(p);
        }
    }
    fn saved_mut(&mut self) -> Vec<(&'static str, &mut SavedTensor)> {
        self.saved.iter_mut().map(|(n, s)| (*n, s)).collect()
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}
