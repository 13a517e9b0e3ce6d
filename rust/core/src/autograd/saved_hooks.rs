//! Saved-tensor hooks (torch's `saved_tensors_hooks` / `SavedTensorDefaultHooks`).
//!
//! While a pair of hooks is pushed, every tensor a node saves is handed to `pack` and the node
//! keeps only what `pack` returned; backward gets the tensor back from `unpack`. The core knows
//! nothing of the hooks' language: the bindings push an implementation of `PackHooks` that
//! calls Python. The stack is per thread (as torch's thread-local state) and only its top pair
//! is used, so nested contexts see the innermost pair. Hooks can be switched off with a message
//! (`disable_saved_tensors_hooks`): pushing hooks then fails with that message.

use super::mode::GradModeGuard;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use std::cell::RefCell;
use std::sync::Arc;

/// What `pack` returned; `unpack` turns it back into a tensor (it may be called many times).
pub trait Packed: Send + Sync {
    fn unpack(&self) -> Result<Tensor>;
}

/// A pack/unpack pair as pushed by `saved_tensors_hooks`.
pub trait PackHooks: Send + Sync {
    fn pack(&self, t: &Tensor) -> Result<Box<dyn Packed>>;
}

#[derive(Default)]
struct State {
    stack: Vec<Arc<dyn PackHooks>>,
    disabled: Option<String>,
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State::default());
}

/// Pushes a pair; refused while hooks are disabled (the error is the disabling message).
pub fn push(hooks: Arc<dyn PackHooks>) -> Result<()> {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        if let Some(msg) = &s.disabled {
            return Err(Error::Runtime(msg.clone()));
        }
        s.stack.push(hooks);
        Ok(())
    })
}

/// Pops the innermost pair (the bindings pop only what they pushed).
pub fn pop() -> Option<Arc<dyn PackHooks>> {
    STATE.with(|s| s.borrow_mut().stack.pop())
}

/// The pair a save made now would use: the innermost one, unless hooks are disabled.
pub fn current() -> Option<Arc<dyn PackHooks>> {
    STATE.with(|s| {
        let s = s.borrow();
        if s.disabled.is_some() {
            return None;
        }
        s.stack.last().cloned()
    })
}

/// Disables hooks with `message`. Like torch, the message is recorded first and then the call
/// fails if a pair is already active (the caller restores the previous message either way).
pub fn disable(message: String) -> Result<()> {
    STATE.with(|s| {
        let mut s = s.borrow_mut();
        s.disabled = Some(message.clone());
        if !s.stack.is_empty() {
            return Err(Error::Runtime(message));
        }
        Ok(())
    })
}

pub fn enable() {
    STATE.with(|s| s.borrow_mut().disabled = None)
}

pub fn disabled_message() -> Option<String> {
    STATE.with(|s| s.borrow().disabled.clone())
}

const PACK_MODIFIED_INPUT: &str = "A saved tensor pack hook is modifying its input in place. Tensors provided as input to pack hook cannot be modified by in-place operations as this can lead to unexpected side-effects. Please open an issue if you need to perform in-place operations on the input to a pack hook.";

/// Runs `pack` on `t` as torch does: with grad mode off, and refusing a hook that wrote into
/// its input (that would silently change what the forward computed).
pub fn pack_with(hooks: &dyn PackHooks, t: &Tensor) -> Result<Box<dyn Packed>> {
    let _no_grad = GradModeGuard::new(false);
    let before = t.version();
    let packed = hooks.pack(t)?;
    if t.version() != before {
        return Err(Error::Runtime(PACK_MODIFIED_INPUT.into()));
    }
    Ok(packed)
}
