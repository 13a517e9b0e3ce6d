//! Recording an op into the graph: the one helper every differentiable op uses.
//!
//! An op first asks `Recorder::new(inputs)`; `None` means nothing to record (grad mode off, or
//! no input requires grad) and the op returns its plain result. Otherwise the op decides what
//! to save (`rec.needs(i)` tells which input gradients will be asked for, R13), then calls
//! `finish` with its outputs, saved tensors and formula. In-place ops use `Recorder::inplace`,
//! which also runs the leaf/view checks before anything is written (R22-R24, R38-R43).

use super::inplace;
use super::meta::CreationMeta;
use super::mode;
use super::node::{Body, Edge, Edges, FnBackward, Formula, InputMeta, InputMetas, Node, SavedValue};
use super::saved::{PackedTensor, SavedTensor};
use crate::error::Result;
use crate::tensor::Tensor;
use std::sync::Arc;

pub struct Recorder {
    edges: Edges,
    inputs: InputMetas,
    saved: Vec<(&'static str, SavedTensor)>,
    values: Vec<(&'static str, SavedValue)>,
    /// Saved tensors waiting for the active pack hook (index into `saved`): see `pack_saved`.
    to_pack: Vec<(usize, Tensor)>,
}

fn input_meta(t: Option<&Tensor>) -> InputMeta {
    match t {
        Some(t) => InputMeta { shape: minigrad_base::layout::Dims::from_slice(t.shape()), dtype: t.dtype() },
        None => InputMeta { shape: Default::default(), dtype: crate::DType::Float32 },
    }
}

/// What torch does before an op's kernel runs: collecting the inputs' gradient edges, which
/// regenerates stale view histories and raises their errors (R39, R41) before any shape error
/// of the forward. Ops call this first; `Recorder::new` after the kernel then finds them fresh.
pub fn precheck(inputs: &[Option<&Tensor>]) -> Result<()> {
    if !mode::is_grad_enabled() {
        return Ok(());
    }
    for t in inputs.iter().flatten() {
        if t.is_view() && t.requires_grad() {
            t.grad_fn()?;
        }
    }
    Ok(())
}

/// Grad mode on and some input requires grad: the op must record.
pub fn should_record(inputs: &[Option<&Tensor>]) -> bool {
    mode::is_grad_enabled() && inputs.iter().flatten().any(|t| t.requires_grad())
}

/// One of torch's backward ops (`tanh_backward`, `_softmax_backward_data`, `nll_loss_backward`,
/// ...) over `inputs`: its value computed by `value` unrecorded (its own ops leave no nodes), and,
/// when a graph of the backward is being built (create_graph), `record` given a recorder for
/// one node around it (it saves what torch saves and calls `finish` with the op's name and its
/// derivatives.yaml formulas).
pub fn backward_op(
    inputs: &[Option<&Tensor>],
    value: impl FnOnce() -> Result<Tensor>,
    record: impl FnOnce(Recorder, &Tensor) -> Result<()>,
) -> Result<Tensor> {
    if !should_record(inputs) {
        return value();
    }
    let out = {
        let _unrecorded = mode::GradModeGuard::new(false);
        value()?
    };
    if let Some(rec) = Recorder::new(inputs)? {
        record(rec, &out)?;
    }
    Ok(out)
}

impl Recorder {
    /// For an out-of-place op over `inputs` (None for arguments that are not tensors).
    pub fn new(inputs: &[Option<&Tensor>]) -> Result<Option<Recorder>> {
        if !mode::is_grad_enabled() {
            return Ok(None);
        }
        // `should_record` and each input's gradient edge in one pass (one look at the meta of
        // a tensor that is not a view): an input that requires no grad gets no edge, and the
        // others' edges are collected in order, as before.
        let mut any = false;
        let mut edges = Edges::new();
        for t in inputs {
            let (requires, edge) = match t {
                Some(t) => t.recording_edge()?,
                None => (false, Edge::none()),
            };
            any |= requires;
            edges.push(edge);
        }
        if !any {
            return Ok(None);
        }
        Ok(Some(Recorder { edges, inputs: inputs.iter().map(|t| input_meta(*t)).collect(), saved: Vec::new(), values: Vec::new(), to_pack: Vec::new() }))
    }

    /// For an in-place op on `self_` with further `operands`. Checks the in-place rules first
    /// (an error here means nothing was written); edge 0 is self's history before the write.
    pub fn inplace(self_: &Tensor, operands: &[Option<&Tensor>]) -> Result<Option<Recorder>> {
        // (`should_record` over self and the operands, without collecting them first)
        let record = mode::is_grad_enabled() && (self_.requires_grad() || operands.iter().flatten().any(|t| t.requires_grad()));
        inplace::check_inplace(self_, record)?;
        if !record {
            return Ok(None);
        }
        let mut all: smallvec::SmallVec<[Option<&Tensor>; 4]> = smallvec::smallvec![Some(self_)];
        all.extend_from_slice(operands);
        Recorder::new(&all)
    }

    /// Keeps only the edges of inputs that require grad (torch's autograd fallback for ops
    /// without a derivative collects no others).
    pub fn without_unused_edges(mut self) -> Recorder {
        let keep: Vec<bool> = self.edges.iter().map(|e| e.is_some()).collect();
        let mut k = keep.iter();
        self.inputs.retain(|_| *k.next().unwrap_or(&true));
        self.edges.retain(|e| e.is_some());
        self
    }

    /// Does input `i`'s gradient need computing?
    pub fn needs(&self, i: usize) -> bool {
        self.edges.get(i).is_some_and(|e| e.is_some())
    }

    pub fn any_needs(&self) -> bool {
        self.edges.iter().any(|e| e.is_some())
    }

    /// Saves a forward input under torch's name (`self`, `other`, `mat2`...).
    pub fn save(&mut self, name: &'static str, t: &Tensor) -> Result<()> {
        let s = SavedTensor::unpacked_input(t)?;
        self.defer_pack(t);
        self.saved.push((name, s));
        Ok(())
    }

    fn defer_pack(&mut self, t: &Tensor) {
        if super::saved_hooks::current().is_some() {
            self.to_pack.push((self.saved.len(), t.clone()));
        }
    }

    /// Saves a Python number operand, which reaches the formula as a 0-d tensor (torch's
    /// wrapped number: kept as is, never shown to saved-tensor hooks).
    pub fn save_number(&mut self, name: &'static str, t: &Tensor) {
        self.saved.push((name, SavedTensor::number(t)));
    }

    /// Saves output `nr` of this op (the `result` of derivatives.yaml).
    pub fn save_output(&mut self, name: &'static str, t: &Tensor, nr: usize) {
        self.defer_pack(t);
        self.saved.push((name, SavedTensor::output(t, nr)));
    }

    /// A non-tensor argument shown as `grad_fn._saved_<name>`.
    pub fn value(&mut self, name: &'static str, v: impl ToString) {
        self.values.push((name, SavedValue::Text(v.to_string())));
    }

    /// A tensor torch's node would save had its input needed a gradient (derivatives.yaml
    /// guards the save by that input): `grad_fn._saved_<name>` reads None, as in torch.
    pub fn not_saved(&mut self, name: &'static str) {
        self.values.push((name, SavedValue::Absent));
    }

    /// Non-tensor arguments already typed (`SavedValue::Int`, `Ints`): no text made per call.
    pub fn values(&mut self, vs: ViewValues) {
        self.values.extend(vs);
    }

    fn node(self, name: &'static str, num_outputs: usize, formula: Formula) -> (Arc<Node>, Vec<(usize, Tensor)>) {
        let body = FnBackward { saved: self.saved, values: self.values, formula };
        let node = Node::new(name, self.edges, self.inputs, num_outputs, Body::Fn(body));
        node.body().link_producer(&node);
        (node, self.to_pack)
    }

    /// Records an out-of-place op: each floating output becomes output i of the new node. A
    /// non-floating main output cannot join a graph (torch: "Autograd not support dtype"); that
    /// happens when an integer tensor came to require grad through an in-place op with a
    /// requires-grad operand. Integer side outputs (indices) are simply not differentiable.
    pub fn finish(self, name: &'static str, outputs: &[&Tensor], formula: Formula) -> Result<Arc<Node>> {
        if let Some(o) = outputs.first() {
            if !o.dtype().is_floating() {
                return Err(crate::Error::Runtime(format!("Autograd not support dtype: {}", o.dtype().scalar_type_name())));
            }
        }
        let (node, to_pack) = self.node(name, outputs.len(), formula);
        for (i, o) in outputs.iter().enumerate() {
            if o.dtype().is_floating() {
                o.set_gradient_edge(node.clone(), i);
            }
        }
        pack_saved(&node, to_pack)?;
        Ok(node)
    }

    /// Records a view op whose outputs are views of the input (multi-output ops mark them so
    /// they refuse in-place use, R38).
    pub fn finish_views(self, name: &'static str, outputs: &[&Tensor], formula: Formula) -> Result<Arc<Node>> {
        let multi = outputs.len() > 1 || name.starts_with("Split") || name.starts_with("Unbind");
        let node = self.finish(name, outputs, formula)?;
        if multi {
            for o in outputs {
                mark_creation(o, CreationMeta::MultiOutputNode);
            }
        }
        Ok(node)
    }

    /// Records an in-place op on `self_` (already written): its history is rebased onto the
    /// new node (R28) or, for a view, onto a CopySlices node of its base (R32).
    pub fn finish_inplace(self, name: &'static str, self_: &Tensor, formula: Formula) -> Result<()> {
        let (node, to_pack) = self.node(name, 1, formula);
        inplace::rebase_history(self_, node.clone())?;
        if self_.is_view() && node.body().saves_output() {
            // torch saves the result after the rebase, reading the view's (regenerated) grad_fn
            if let Some(view_fn) = self_.grad_fn()? {
                node.body().name_outputs_by(&view_fn);
            }
        }
        pack_saved(&node, to_pack)
    }
}

/// Hands the node's saved tensors to the active pack hook once its outputs carry the node
/// (torch packs `result` after `set_history`), in torch's order: inputs by name, then outputs
/// (`saved_order`). The hook runs without the node's lock held: it may look at the node.
fn pack_saved(node: &Arc<Node>, mut to_pack: Vec<(usize, Tensor)>) -> Result<()> {
    if to_pack.is_empty() {
        return Ok(());
    }
    let keys: Vec<_> = {
        let body = node.body();
        let saved = body.saved();
        to_pack.iter().map(|(i, _)| saved_order(saved[*i].0, saved[*i].1)).collect()
    };
    let mut order: Vec<usize> = (0..to_pack.len()).collect();
    order.sort_by_key(|&k| keys[k]);
    let mut items: Vec<Option<(usize, Tensor)>> = to_pack.drain(..).map(Some).collect();
    for k in order {
        let (i, t) = items[k].take().expect("each saved tensor packed once");
        let is_output = node.body().saved()[i].1.is_output();
        if let Some(p) = PackedTensor::pack(&t, is_output)? {
            node.body().install_packed(i, p);
        }
    }
    Ok(())
}

/// The order torch's generated nodes give their saved tensors (packing and unpacking): the
/// saved inputs by name, then the saved outputs (`result`, `result1`, ... in derivatives.yaml).
pub fn saved_order(name: &'static str, s: &SavedTensor) -> (bool, &'static str) {
    (s.is_output() || name.starts_with("result"), name)
}

/// Sets how a view was created (multi-output ops, custom Functions).
pub fn mark_creation(t: &Tensor, creation: CreationMeta) {
    let mut m = t.meta.lock();
    if let Some(v) = m.view.as_mut() {
        // Multi-output and custom-Function outputs are marked whatever grad mode made them
        // (a custom forward runs under no_grad); inference-mode views stay what they are.
        if v.creation != CreationMeta::InferenceMode {
            v.creation = creation;
        }
    }
}

/// The non-tensor arguments a view's node shows as `grad_fn._saved_<name>` (torch's names and
/// values for that view: `dim`, `start`, `self_sym_sizes`, ...). The view ops pass a closure
/// that makes them, called only when a node is recorded (a view under no_grad pays nothing).
pub type ViewValues = Vec<(&'static str, SavedValue)>;

/// A one-output view whose backward is one of torch's ops (`slice_backward`, `select_backward`,
/// `diagonal_backward`): the gradient goes into zeros shaped like the input through the same
/// view, as `record_view` does, and when a graph of the backward is built that value is one node,
/// `backward_name` (SliceBackwardBackward0, ...), whose derivative is the same view of the
/// incoming gradient, recorded as the forward view was (so third derivatives flow too).
pub fn record_view_with_backward_op(
    name: &'static str,
    backward_name: &'static str,
    input: &Tensor,
    output: &Tensor,
    values: impl FnOnce() -> ViewValues,
    view_fn: Arc<dyn Fn(&Tensor) -> Result<Vec<Tensor>> + Send + Sync>,
) -> Result<()> {
    let Some(mut rec) = Recorder::new(&[Some(input)])? else { return Ok(()) };
    let values = values();
    rec.values = values.clone();
    let values = Arc::new(values);
    let (shape, dtype, device) = (input.shape().to_vec(), input.dtype(), input.device());
    let formula: Formula = Box::new(move |ctx| {
        let Some(g) = ctx.grads[0].as_ref() else { return Ok(vec![None]) };
        let scatter = || {
            let grad_input = crate::ops::for_autograd::zeros_raw(&shape, dtype, device)?;
            crate::ops::for_autograd::copy_(&view_fn(&grad_input)?[0], g)?;
            Ok(grad_input)
        };
        let view = view_fn.clone();
        let values = values.clone();
        let gi = backward_op(&[Some(g)], scatter, |mut rec, out| {
            // torch's slice_backward (...) keeps the view's arguments, not the input's shape
            rec.values(values.iter().filter(|(k, _)| *k != "self_sym_sizes").cloned().collect());
            let values = values.clone();
            rec.finish(backward_name, &[out], Box::new(move |c| {
                let gg = c.grad();
                let v = view(gg)?.remove(0);
                record_view_joined(name, gg, &[&v], || (*values).clone(), view.clone(), None)?;
                Ok(vec![Some(v)])
            }))?;
            Ok(())
        })?;
        Ok(vec![Some(gi)])
    });
    rec.finish_views(name, &[output], formula)?;
    Ok(())
}

/// Records a view op whose backward is "scatter the gradient into zeros shaped like the input
/// through the same view" (slice, select, narrow, diagonal, as_strided, unbind, split...).
/// `view_fn` must map a fresh contiguous tensor shaped like the input to the same view.
pub fn record_view(
    name: &'static str,
    input: &Tensor,
    outputs: &[&Tensor],
    view_fn: Arc<dyn Fn(&Tensor) -> Result<Vec<Tensor>> + Send + Sync>,
) -> Result<()> {
    record_view_joined(name, input, outputs, ViewValues::new, view_fn, None)
}

/// How the pieces' gradients of a multi-output view join when a graph of the backward is built:
/// torch's split_backward / unbind_backward are `cat` / `stack` of every piece's gradient (zeros
/// where a piece has none), so that graph shows CatBackward0 / StackBackward0.
pub type JoinGrads = Arc<dyn Fn(&[Tensor]) -> Result<Tensor> + Send + Sync>;

/// `record_view` for the pieces of split / chunk / unbind, their gradients joined by `join` (a
/// recorded op) when a graph of the backward is built, and scattered into zeros otherwise (one
/// buffer, no zero pieces).
pub fn record_view_joined(
    name: &'static str,
    input: &Tensor,
    outputs: &[&Tensor],
    values: impl FnOnce() -> ViewValues,
    view_fn: Arc<dyn Fn(&Tensor) -> Result<Vec<Tensor>> + Send + Sync>,
    join: Option<JoinGrads>,
) -> Result<()> {
    let multi = outputs.len() > 1 || name.starts_with("Split") || name.starts_with("Unbind");
    let Some(mut rec) = Recorder::new(&[Some(input)])? else {
        // Unrecorded pieces of a multi-output view still refuse in-place use later (R41).
        if multi && mode::is_grad_enabled() {
            for o in outputs {
                mark_creation(o, CreationMeta::MultiOutputNode);
            }
        }
        return Ok(());
    };
    rec.values = values();
    let shape = input.shape().to_vec();
    let dtype = input.dtype();
    let device = input.device();
    let n = outputs.len();
    let piece_shapes: Vec<Vec<usize>> = outputs.iter().map(|o| o.shape().to_vec()).collect();
    let formula: Formula = Box::new(move |ctx| {
        if let Some(join) = &join {
            if should_record(&ctx.grads.iter().map(Option::as_ref).collect::<Vec<_>>()) {
                let pieces = (0..n)
                    .map(|i| match &ctx.grads[i] {
                        Some(g) => Ok(g.clone()),
                        None => crate::ops::for_autograd::zeros_raw(&piece_shapes[i], dtype, device),
                    })
                    .collect::<Result<Vec<_>>>()?;
                return Ok(vec![Some(join(&pieces)?)]);
            }
        }
        let grad_input = crate::ops::for_autograd::zeros_raw(&shape, dtype, device)?;
        let parts = view_fn(&grad_input)?;
        for (i, part) in parts.iter().enumerate().take(n) {
            if let Some(g) = &ctx.grads[i] {
                crate::ops::for_autograd::copy_(part, g)?;
            }
        }
        Ok(vec![Some(grad_input)])
    });
    rec.finish_views(name, outputs, formula)?;
    Ok(())
}
