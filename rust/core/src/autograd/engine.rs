//! The backward engine: runs the graph from the roots' gradients to the leaves.
//!
//! One pass: find every node reachable from the roots and count how many edges lead into each
//! (its dependencies); start with the roots; repeatedly take the ready node created last (the
//! largest sequence number, as torch does), run its hooks and formula, and add each result into
//! the input buffer of the node it flows to. A node becomes ready when its last dependency has
//! delivered. With `inputs` (autograd.grad, backward(inputs=...)) only nodes on a path to an
//! input run, and the gradient flowing into each input's edge is captured (R20, R21).

use super::accumulate;
use super::mode::{self, GradModeGuard};
use super::node::{Edge, Node};
use crate::error::{Error, Result};
use crate::ops::for_autograd as ops;
use crate::tensor::Tensor;
use std::cell::Cell;
use std::collections::{BinaryHeap, HashMap};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

static NEXT_GRAPH_TASK: AtomicI64 = AtomicI64::new(0);
thread_local! {
    static CURRENT_GRAPH_TASK: Cell<i64> = const { Cell::new(-1) };
}

/// The id of the backward pass running on this thread, -1 outside one (torch's
/// `_current_graph_task_id`; checkpointing recomputes once per pass).
pub fn current_graph_task_id() -> i64 {
    CURRENT_GRAPH_TASK.with(|c| c.get())
}

/// Marks this thread as running a new backward pass; the outer pass is current again on drop.
struct GraphTaskGuard(i64);
impl GraphTaskGuard {
    fn enter() -> GraphTaskGuard {
        let id = NEXT_GRAPH_TASK.fetch_add(1, Ordering::Relaxed);
        GraphTaskGuard(CURRENT_GRAPH_TASK.with(|c| c.replace(id)))
    }
}
impl Drop for GraphTaskGuard {
    fn drop(&mut self) {
        CURRENT_GRAPH_TASK.with(|c| c.set(self.0));
    }
}

type Key = *const Node;

fn key(n: &Arc<Node>) -> Key {
    Arc::as_ptr(n)
}

pub struct BackwardRequest<'a> {
    /// Root edges and the gradients flowing into them.
    pub roots: Vec<(Edge, Tensor)>,
    /// Edges whose incoming gradient is wanted (empty: run the whole graph).
    pub inputs: &'a [Edge],
    pub keep_graph: bool,
    pub create_graph: bool,
    /// backward(): leaves accumulate into `.grad`; grad(): gradients are returned instead.
    pub accumulate: bool,
}

struct Ready(u64, Arc<Node>);
impl PartialEq for Ready {
    fn eq(&self, o: &Self) -> bool {
        self.0 == o.0
    }
}
impl Eq for Ready {}
impl PartialOrd for Ready {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Ready {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.0.cmp(&o.0)
    }
}

/// Runs backward; returns the gradient captured for each of `req.inputs` (None if none arrived).
pub fn run_backward(req: BackwardRequest) -> Result<Vec<Option<Tensor>>> {
    let _grad_mode = GradModeGuard::new(req.create_graph);
    let _task = GraphTaskGuard::enter();

    // 1. Reachable nodes and dependency counts (iterative: graphs can be very deep).
    let mut nodes: HashMap<Key, Arc<Node>> = HashMap::new();
    let mut deps: HashMap<Key, usize> = HashMap::new();
    let mut stack: Vec<Arc<Node>> = Vec::new();
    for (e, _) in &req.roots {
        if let Some(n) = &e.node {
            if nodes.insert(key(n), n.clone()).is_none() {
                stack.push(n.clone());
            }
        }
    }
    while let Some(n) = stack.pop() {
        for e in &n.next {
            if let Some(c) = &e.node {
                *deps.entry(key(c)).or_insert(0) += 1;
                if nodes.insert(key(c), c.clone()).is_none() {
                    stack.push(c.clone());
                }
            }
        }
    }

    // 2. With inputs: which nodes must run (those with a path to an input), and the captures.
    // backward(inputs=...) on a leaf runs its AccumulateGrad instead of capturing.
    let mut captures: HashMap<Key, Vec<(usize, usize)>> = HashMap::new();
    let mut targets: HashMap<Key, bool> = HashMap::new();
    for (i, e) in req.inputs.iter().enumerate() {
        let Some(n) = &e.node else { continue };
        let runs_itself = req.accumulate && n.variable().is_some();
        if !runs_itself {
            captures.entry(key(n)).or_default().push((e.input_nr, i));
        }
        let t = targets.entry(key(n)).or_insert(false);
        *t |= runs_itself;
    }
    let needed = if req.inputs.is_empty() { None } else { Some(needed_nodes(&nodes, &targets)) };

    // 3. Seed the roots' buffers.
    let mut buffers: HashMap<Key, Vec<Option<Tensor>>> = HashMap::new();
    for (e, g) in req.roots {
        if let Some(n) = &e.node {
            check_differentiable(&g)?;
            add_to_buffer(&mut buffers, n, e.input_nr, g)?;
        }
    }
    let mut ready = BinaryHeap::new();
    let mut queued: HashMap<Key, ()> = HashMap::new();
    for n in nodes.values() {
        if buffers.contains_key(&key(n)) && deps.get(&key(n)).copied().unwrap_or(0) == 0 && queued.insert(key(n), ()).is_none() {
            ready.push(Ready(n.seq, n.clone()));
        }
    }

    // 4. Run.
    let mut captured: Vec<Option<Tensor>> = vec![None; req.inputs.len()];
    while let Some(Ready(_, node)) = ready.pop() {
        let k = key(&node);
        let mut grads = buffers.remove(&k).unwrap_or_else(|| vec![None; node.num_outputs.max(1)]);
        let runs = needed.as_ref().is_none_or(|set| set.get(&k).copied().unwrap_or(false));
        grads = call_tensor_hooks(&node, grads)?;
        if let Some(cs) = captures.get(&k) {
            for &(input_nr, i) in cs {
                captured[i] = grads.get(input_nr).cloned().flatten();
            }
        }
        let outputs = if runs && grads.iter().any(|g| g.is_some()) {
            call_node(&node, grads, req.keep_graph)?
        } else {
            vec![None; node.next.len()]
        };
        for (e, g) in node.next.iter().zip(outputs) {
            let Some(c) = &e.node else { continue };
            let ck = key(c);
            if let Some(g) = g {
                add_to_buffer(&mut buffers, c, e.input_nr, g)?;
            }
            let d = deps.get_mut(&ck).expect("counted in step 1");
            *d -= 1;
            if *d == 0 && queued.insert(ck, ()).is_none() {
                ready.push(Ready(c.seq, c.clone()));
            }
        }
    }

    // backward(inputs=[non-leaf]) accumulates into that tensor's `.grad`, as torch does.
    Ok(captured)
}

/// Marks every node from which a target can be reached (targets included).
fn needed_nodes(nodes: &HashMap<Key, Arc<Node>>, targets: &HashMap<Key, bool>) -> HashMap<Key, bool> {
    // A node is needed when it runs itself (AccumulateGrad target) or a child is needed or is a
    // capture target. Iterative post-order over the DAG.
    let mut state: HashMap<Key, bool> = HashMap::new();
    for root in nodes.values() {
        if state.contains_key(&key(root)) {
            continue;
        }
        let mut stack: Vec<(Arc<Node>, bool)> = vec![(root.clone(), false)];
        while let Some((n, expanded)) = stack.pop() {
            let k = key(&n);
            if state.contains_key(&k) {
                continue;
            }
            if !expanded {
                stack.push((n.clone(), true));
                for e in &n.next {
                    if let Some(c) = &e.node {
                        if !state.contains_key(&key(c)) {
                            stack.push((c.clone(), false));
                        }
                    }
                }
            } else {
                let mut need = targets.get(&k).copied().unwrap_or(false);
                for e in &n.next {
                    if let Some(c) = &e.node {
                        let ck = key(c);
                        need |= state.get(&ck).copied().unwrap_or(false) || targets.contains_key(&ck);
                    }
                }
                state.insert(k, need);
            }
        }
    }
    state
}

fn add_to_buffer(buffers: &mut HashMap<Key, Vec<Option<Tensor>>>, n: &Arc<Node>, input_nr: usize, g: Tensor) -> Result<()> {
    let buf = buffers.entry(key(n)).or_insert_with(|| vec![None; n.num_outputs.max(1)]);
    if input_nr >= buf.len() {
        buf.resize(input_nr + 1, None);
    }
    buf[input_nr] = Some(match buf[input_nr].take() {
        None => g,
        Some(old) => accumulate::add_gradients(old, g)?,
    });
    Ok(())
}

/// Tensor hooks registered on the node's outputs (R31), then `retain_grad` stores (always last).
fn call_tensor_hooks(node: &Node, mut grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
    let hooks: Vec<_> = node.read_hooks(|h| h.tensor_hooks.clone());
    for (nr, _, h) in hooks {
        if let Some(Some(g)) = grads.get(nr) {
            if let Some(new) = h(g)? {
                grads[nr] = Some(new);
            }
        }
    }
    // (read after the hooks ran: a hook may have asked for retain_grad)
    let retains: Vec<_> = node.read_hooks(|h| h.retains.clone());
    for (nr, meta) in retains {
        let (Some(meta), Some(Some(g))) = (meta.upgrade(), grads.get(nr)) else { continue };
        let mut m = meta.lock();
        let new = match m.grad.take() {
            None => crate::ops::for_autograd::clone_raw(g)?,
            Some(old) => ops::add_raw(&old, g)?,
        };
        m.grad = Some(new);
    }
    Ok(grads)
}

fn call_node(node: &Arc<Node>, mut grads: Vec<Option<Tensor>>, keep_graph: bool) -> Result<Vec<Option<Tensor>>> {
    let pre: Vec<_> = node.read_hooks(|h| h.pre_hooks.iter().map(|(_, h)| h.clone()).collect());
    for h in pre {
        if let Some(new) = h(&grads)? {
            grads = new;
        }
    }
    let inputs_for_hooks = if node.read_hooks(|h| !h.post_hooks.is_empty()) { Some(grads.clone()) } else { None };
    let result = node.apply(grads).and_then(|outs| validate_outputs(node, outs));
    let mut outputs = match result {
        Ok(o) => o,
        Err(e) => {
            if mode::is_anomaly_enabled() {
                mode::push_warning(match &node.trace {
                    Some(trace) => format!("Error detected in {}. Traceback of forward call that caused the error:\n{}", node.name, trace),
                    // the node was recorded before anomaly mode was turned on
                    None => format!(
                        "Error detected in {}. No forward pass information available. Enable detect anomaly during forward pass for more information.",
                        node.name
                    ),
                });
            }
            return Err(e);
        }
    };
    if !keep_graph {
        node.release();
    }
    if let Some(grad_inputs) = inputs_for_hooks {
        let post: Vec<_> = node.read_hooks(|h| h.post_hooks.iter().map(|(_, h)| h.clone()).collect());
        for h in post {
            if let Some(new) = h(&outputs, &grad_inputs)? {
                outputs = new;
            }
        }
    }
    if mode::is_anomaly_enabled() && mode::is_anomaly_check_nan_enabled() {
        for (i, g) in outputs.iter().enumerate() {
            if let Some(g) = g {
                if g.dtype().is_floating() && crate::ops::for_autograd::has_nan(g)? {
                    return Err(Error::Runtime(format!("Function '{}' returned nan values in its {}th output.", node.name, i)));
                }
            }
        }
    }
    Ok(outputs)
}

/// torch's validate_outputs: one gradient per input, reduced to the input's shape when it was
/// broadcast, cast to the input's dtype.
fn validate_outputs(node: &Node, mut outs: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
    if node.variable().is_some() {
        return Ok(outs);
    }
    if outs.len() != node.next.len() {
        return Err(Error::Runtime(format!(
            "function {} returned an incorrect number of gradients (expected {}, got {})",
            node.name,
            node.next.len(),
            outs.len()
        )));
    }
    for (i, g) in outs.iter_mut().enumerate() {
        let (Some(t), Some(meta)) = (g.as_ref(), node.inputs.get(i)) else { continue };
        if !node.next[i].is_some() {
            // torch leaves a gradient for an input that needs none in place (node post-hooks,
            // e.g. a module's full backward hook, see it) and does not check it
            continue;
        }
        let mut t = t.clone();
        if t.shape() != meta.shape.as_slice() {
            if crate::shape::broadcast_shapes(&meta.shape, t.shape()).ok().as_deref() == Some(t.shape()) {
                t = crate::ops::for_autograd::sum_to(&t, &meta.shape)?;
            } else {
                return Err(Error::Runtime(format!(
                    "Function {} returned an invalid gradient at index {} - got {} but expected shape compatible with {}",
                    node.name,
                    i,
                    crate::error::fmt_shape(t.shape()),
                    crate::error::fmt_shape(&meta.shape)
                )));
            }
        }
        if t.dtype() != meta.dtype {
            t = crate::ops::for_autograd::to_dtype(&t, meta.dtype)?;
        }
        check_differentiable(&t)?;
        *g = Some(t);
    }
    Ok(outs)
}

/// A gradient must be floating point. Only torch's quirks reach this (an integer tensor given a
/// history by `fill_(float tensor that requires grad)`, then `backward()` on it): torch stops
/// there with an internal assertion, and so does minigrad, with torch's words.
fn check_differentiable(g: &Tensor) -> Result<()> {
    if g.dtype().is_floating() {
        return Ok(());
    }
    Err(Error::Runtime(
        "isDifferentiableType(grad.scalar_type()) INTERNAL ASSERT FAILED at \"/__w/pytorch/pytorch/torch/csrc/autograd/engine.cpp\":998, please report a bug to PyTorch. ".into(),
    ))
}

/// Runs an AccumulateGrad-like step for a captured non-leaf input of backward(inputs=...).
pub fn accumulate_into(t: &Tensor, g: Tensor) -> Result<()> {
    accumulate::accumulate(t, g)
}
