"""Saved-tensor hooks: see, move or replace what backward keeps (torch.autograd.graph's
`saved_tensors_hooks`, `save_on_cpu`, `disable_saved_tensors_hooks`).

While `saved_tensors_hooks(pack, unpack)` is active, every tensor an op saves for backward is
given to `pack` (the very tensor, with its `_version` and `grad_fn`, under no_grad), and the
graph keeps whatever `pack` returns instead. When backward (or `grad_fn._saved_<name>`) needs it,
`unpack` gets that object back and must return a tensor. The core calls the hooks where it saves
(`rust/core/src/autograd/saved_hooks.rs`); the pair is per thread and only the innermost pair
applies. As in torch, a tensor held by hooks is not version-checked at backward: a pack hook that
returns the tensor itself lets a later in-place change reach backward silently, one that returns
a copy keeps the original values."""

import contextlib

from .. import _C
from .._creation import empty

__all__ = ["saved_tensors_hooks", "save_on_cpu", "disable_saved_tensors_hooks"]


class saved_tensors_hooks:
    """Context manager: `pack_hook(tensor) -> Any` runs each time a tensor is saved for backward,
    `unpack_hook(packed) -> Tensor` each time backward needs it back. Nestable (the innermost pair
    applies); Python numbers saved by ops (`a * 2`) are not shown to the hooks."""

    def __init__(self, pack_hook, unpack_hook):
        self.pack_hook = pack_hook
        self.unpack_hook = unpack_hook

    def __enter__(self):
        _C._push_saved_tensors_default_hooks(self.pack_hook, self.unpack_hook)

    def __exit__(self, *args):
        _C._pop_saved_tensors_default_hooks()


class save_on_cpu(saved_tensors_hooks):
    """Saved tensors are kept on the CPU and moved back to their device for backward. minigrad
    tensors live on the CPU, so this keeps the tensor itself (as torch does for CPU tensors):
    like identity hooks, it turns the version check off. `pin_memory=True` packs a copy (there
    is no pinned memory to use without a GPU, as in torch on a machine without CUDA)."""

    def __init__(self, pin_memory=False, device_type="cuda"):
        def pack_to_cpu(tensor):
            if not pin_memory:
                return (tensor.device, tensor.cpu())
            packed = empty(tensor.size(), dtype=tensor.dtype)
            packed.copy_(tensor)
            return (tensor.device, packed)

        def unpack_from_cpu(packed):
            device, tensor = packed
            return tensor.to(device, non_blocking=pin_memory)

        super().__init__(pack_to_cpu, unpack_from_cpu)


@contextlib.contextmanager
def disable_saved_tensors_hooks(error_message):
    """Turns saved-tensor hooks off inside the block: entering `saved_tensors_hooks` there (or
    entering this while hooks are active) raises RuntimeError(error_message)."""
    maybe_prev_message = None
    try:
        maybe_prev_message = _C._saved_tensors_hooks_get_disabled_error_message()
        _C._saved_tensors_hooks_disable(error_message)
        yield
    finally:
        if maybe_prev_message is None:
            _C._saved_tensors_hooks_enable()
        else:
            _C._saved_tensors_hooks_disable(maybe_prev_message)
