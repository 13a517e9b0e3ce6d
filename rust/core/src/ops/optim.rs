//! Fused optimizer steps: one call per parameter group runs SGD or Adam/AdamW over every
//! parameter, its gradient and its state buffers, one pass per tensor (one kernel launch per
//! group on a GPU), instead of the chain of in-place ops torch's for-loop step issues from Python.
//!
//! The numbers are the for-loop's (kernels/optim.rs says how each op is matched) and so are the
//! version counters: each written tensor's `_version` moves by the number of in-place ops
//! torch's own step makes on it (`torch_bumps`), or not at all, as torch's `fused=True` kernels.
//! Nothing is recorded: torch steps under `no_grad`, and a step with grad mode on raises the
//! in-place error a leaf gets there.

use crate::device::backend_for;
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::ops::copy::{contiguous_copy, copy_kernel};
use crate::ops::write::{overlap, write, write_many, Overlap, PARTIAL_OVERLAP};
use crate::tensor::Tensor;

pub use crate::kernels::optim::{Adam, Rule, Sgd};

/// One parameter's share of a group step, as a backend receives it: every tensor contiguous, of
/// the parameter's shape and float dtype, on the backend's device, no two sharing memory.
pub struct Slot {
    pub param: Tensor,
    pub grad: Tensor,
    /// SGD: `[momentum_buffer]` with momentum, else empty. Adam: `[exp_avg, exp_avg_sq]`, and
    /// `max_exp_avg_sq` with amsgrad.
    pub state: Vec<Tensor>,
    /// SGD: the momentum buffer is new, set it to the (decayed) gradient.
    pub first: bool,
    /// Adam: `lr / (1 - beta1^t)` and `(1 - beta2^t) ** 0.5` at this parameter's step `t`.
    pub step_size: f64,
    pub bc2_sqrt: f64,
}

fn runtime(msg: String) -> Error {
    Error::Runtime(msg)
}

/// A slot's tensors agree with its parameter and share no memory.
fn check_slot(s: &Slot) -> Result<()> {
    let p = &s.param;
    if !matches!(p.dtype(), DType::Float32 | DType::Float64) && !p.dtype().is_narrow() {
        return Err(runtime(format!("minigrad: the fused optimizer step needs floating point parameters, got {}", p.dtype().name())));
    }
    let all: Vec<&Tensor> = std::iter::once(&s.grad).chain(&s.state).collect();
    for t in &all {
        if t.shape() != p.shape() {
            return Err(runtime(format!("The size of tensor a ({:?}) must match the size of tensor b ({:?})", p.shape(), t.shape())));
        }
        if t.dtype() != p.dtype() {
            return Err(runtime(format!("expected dtype {} for every tensor of an optimizer step, got {}", p.dtype().name(), t.dtype().name())));
        }
    }
    let every: Vec<&Tensor> = std::iter::once(p).chain(all).collect();
    for (i, a) in every.iter().enumerate() {
        for b in &every[i + 1..] {
            if overlap(a, b) != Overlap::No {
                return Err(runtime(PARTIAL_OVERLAP.into()));
            }
        }
    }
    Ok(())
}

/// Grad mode on: a leaf that requires grad cannot be written in place (torch's error); anything
/// else would have to be recorded, which a step never is.
fn check_not_recorded(p: &Tensor) -> Result<()> {
    let record = crate::autograd::should_record(&[Some(p)]);
    crate::autograd::check_inplace(p, record)?;
    if record {
        return Err(runtime("minigrad: an optimizer step is not differentiable; run it under no_grad()".into()));
    }
    Ok(())
}

/// Runs `rule` over every slot, one backend call per device, as one write: `bumps` lists every
/// tensor written (params and state) with the count its version moves by once everything ran.
fn run(rule: Rule, slots: Vec<Slot>, bumps: &[(Tensor, u32)]) -> Result<()> {
    let dsts: Vec<(&Tensor, u32)> = bumps.iter().map(|(t, n)| (t, *n)).collect();
    write_many(&dsts, || {
        for group in by_device(slots) {
            run_group(rule, group)?;
        }
        Ok(())
    })
}

/// Runs `rule` over `slots`, all on one device. Slots with a non-contiguous tensor run on
/// contiguous copies whose results are copied back.
fn run_group(rule: Rule, slots: Vec<Slot>) -> Result<()> {
    let mut refs: Vec<&Tensor> = Vec::new();
    for s in &slots {
        refs.push(&s.param);
        refs.push(&s.grad);
        refs.extend(&s.state);
    }
    let backend = backend_for(&refs)?;
    // (the written originals, their contiguous stand-ins) of the slots that need copies
    let mut staged: Vec<(Vec<Tensor>, Vec<Tensor>)> = Vec::new();
    let mut run = Vec::with_capacity(slots.len());
    for s in slots {
        let dense = s.param.is_contiguous() && s.grad.is_contiguous() && s.state.iter().all(Tensor::is_contiguous);
        if dense {
            run.push(s);
            continue;
        }
        let dense_copy = |t: &Tensor| contiguous_copy(t, t.dtype());
        let copy = Slot {
            param: dense_copy(&s.param)?,
            grad: dense_copy(&s.grad)?,
            state: s.state.iter().map(dense_copy).collect::<Result<_>>()?,
            ..s
        };
        let written = std::iter::once(&copy.param).chain(&copy.state).cloned().collect();
        staged.push((std::iter::once(s.param).chain(s.state).collect(), written));
        run.push(copy);
    }
    backend.optim_step(rule, &run)?;
    for (originals, copies) in &staged {
        for (t, c) in originals.iter().zip(copies) {
            copy_kernel(t, c)?;
        }
    }
    Ok(())
}

/// `torch.optim.SGD`'s step over one group: `bufs[i]` is parameter i's momentum buffer (None
/// before its first step with momentum). Returns the buffers, the new ones made here (as
/// torch's `clone(grad)`, with a fresh version counter). `torch_bumps`: the for-loop's version
/// counts (param +1, an existing buffer +2), else none (torch's `fused=True`).
pub fn sgd_step(params: &[Tensor], grads: &[Tensor], bufs: &[Option<Tensor>], h: Sgd, torch_bumps: bool) -> Result<Vec<Option<Tensor>>> {
    if grads.len() != params.len() || bufs.len() != params.len() {
        return Err(runtime("minigrad: sgd_step wants as many gradients and buffers as parameters".into()));
    }
    let mut slots = Vec::with_capacity(params.len());
    let mut bumps = Vec::new();
    let mut out = Vec::with_capacity(params.len());
    for ((p, g), b) in params.iter().zip(grads).zip(bufs) {
        check_not_recorded(p)?;
        let (state, first) = match (h.momentum != 0.0, b) {
            (false, _) => (vec![], false),
            (true, Some(b)) => (vec![b.clone()], false),
            (true, None) => (vec![Tensor::empty_on(g.shape(), g.dtype(), g.device())?], true),
        };
        let k = u32::from(torch_bumps);
        bumps.push((p.clone(), k));
        bumps.extend(state.iter().map(|t| (t.clone(), if first { 0 } else { 2 * k })));
        out.push(state.first().cloned());
        let slot = Slot { param: p.clone(), grad: g.clone(), state, first, step_size: 0.0, bc2_sqrt: 1.0 };
        check_slot(&slot)?;
        slots.push(slot);
    }
    run(Rule::Sgd(h), slots, &bumps)?;
    Ok(out)
}

/// `torch.optim.Adam`/`AdamW`'s step over one group. `steps[i]` is parameter i's step counter (a
/// 0-d float tensor on the CPU, as torch keeps it), incremented here (one version bump, as
/// torch's `step_t += 1`); `max_exp_avg_sqs` is given with amsgrad. `torch_bumps`: the
/// for-loop's version counts (param +1, +1 more for AdamW's decay; exp_avg +1, exp_avg_sq +2,
/// max_exp_avg_sq +1), else none.
#[allow(clippy::too_many_arguments)]
pub fn adam_step(
    params: &[Tensor],
    grads: &[Tensor],
    exp_avgs: &[Tensor],
    exp_avg_sqs: &[Tensor],
    max_exp_avg_sqs: Option<&[Tensor]>,
    steps: &[Tensor],
    h: Adam,
    torch_bumps: bool,
) -> Result<()> {
    let n = params.len();
    if grads.len() != n || exp_avgs.len() != n || exp_avg_sqs.len() != n || steps.len() != n || max_exp_avg_sqs.is_some_and(|m| m.len() != n) {
        return Err(runtime("minigrad: adam_step wants one gradient, state and step per parameter".into()));
    }
    if h.amsgrad != max_exp_avg_sqs.is_some() {
        return Err(runtime("minigrad: adam_step wants max_exp_avg_sqs exactly when amsgrad is set".into()));
    }
    let mut slots = Vec::with_capacity(n);
    let mut bumps = Vec::new();
    for i in 0..n {
        let p = &params[i];
        check_not_recorded(p)?;
        let mut state = vec![exp_avgs[i].clone(), exp_avg_sqs[i].clone()];
        if let Some(m) = max_exp_avg_sqs {
            state.push(m[i].clone());
        }
        let slot = Slot { param: p.clone(), grad: grads[i].clone(), state, first: false, step_size: 0.0, bc2_sqrt: 1.0 };
        check_slot(&slot)?;
        slots.push(slot);
    }
    // every check has passed: count the steps, then compute each parameter's bias corrections
    // from its own count in double, as torch's Python does (`beta ** step`, `bc2 ** 0.5`)
    for (slot, step) in slots.iter_mut().zip(steps) {
        let t = increment(step)?;
        let bc1 = 1.0 - h.beta1.powf(t);
        let bc2 = 1.0 - h.beta2.powf(t);
        slot.step_size = h.lr / bc1;
        slot.bc2_sqrt = bc2.powf(0.5);
        let k = u32::from(torch_bumps);
        let decays = h.decoupled && h.weight_decay != 0.0;
        bumps.push((slot.param.clone(), if decays { 2 * k } else { k }));
        bumps.push((slot.state[0].clone(), k));
        bumps.push((slot.state[1].clone(), 2 * k));
        if let Some(m) = slot.state.get(2) {
            bumps.push((m.clone(), k));
        }
    }
    run(Rule::Adam(h), slots, &bumps)?;
    Ok(())
}

/// `step += 1` on a 0-d float counter (through the write path: one bump); returns the new count.
fn increment(step: &Tensor) -> Result<f64> {
    if step.ndim() != 0 || !step.dtype().is_floating() {
        return Err(runtime("minigrad: an Adam step counter must be a 0-d floating point tensor".into()));
    }
    write(step, &[], |_| {
        let t = step.item()?.to_f64() + 1.0;
        backend_for(&[step])?.fill(step, Scalar::Float(t))
    })?;
    Ok(step.item()?.to_f64())
}

/// Slots grouped by their parameter's device, in first-seen order (torch's foreach groups by
/// device too; each device runs its own kernel).
fn by_device(slots: Vec<Slot>) -> Vec<Vec<Slot>> {
    let mut groups: Vec<Vec<Slot>> = Vec::new();
    for s in slots {
        match groups.iter_mut().find(|g| g[0].param.device() == s.param.device()) {
            Some(g) => g.push(s),
            None => groups.push(vec![s]),
        }
    }
    groups
}

/// The CPU backend's `optim_step`: each slot's slices through the kernels crate.
pub(crate) fn cpu_kernel(rule: Rule, slots: &[Slot]) -> Result<()> {
    for s in slots {
        crate::dispatch_float!(s.param.dtype(), T => {
            let n = s.param.numel();
            let ptr = |t: &Tensor| t.data_ptr::<T>();
            // SAFETY: the op layer checked that every tensor of the slot is contiguous, of the
            // parameter's shape and dtype, on the CPU, and that no two share memory: each
            // pointer addresses `n` elements of its own.
            unsafe {
                match rule {
                    Rule::Sgd(h) => crate::kernels::optim::sgd::<T>(&h, n, ptr(&s.param), ptr(&s.grad), s.state.first().map(ptr), s.first),
                    Rule::Adam(h) => {
                        let st = crate::kernels::optim::AdamState { m: ptr(&s.state[0]), v: ptr(&s.state[1]), vmax: s.state.get(2).map(ptr) };
                        crate::kernels::optim::adam::<T>(&h, n, ptr(&s.param), ptr(&s.grad), st, s.step_size, s.bc2_sqrt)
                    }
                }
            }
        }, _ => return Err(runtime(format!("minigrad: no CPU optimizer kernel for {}", s.param.dtype().name()))));
    }
    Ok(())
}
