"""Non-reentrant checkpointing, built on saved-tensor hooks as torch builds it.

During the checkpointed forward, `_checkpoint_hook` packs every saved tensor as an empty
`_Holder` (the tensor itself is dropped: that is the memory saved) and records its metadata. The
first time backward unpacks one of them, the frame re-runs the function from its saved inputs
under `_recomputation_hook`, whose pack hook files the i-th tensor saved by the re-run under the
i-th holder, and stops the re-run as soon as every holder is filled (early stop). Each unpack
hands out its recomputed tensor once and forgets it, so recomputed activations live only until
backward used them. The bookkeeping is per backward pass (graph task id), so a second backward
with retain_graph=True recomputes again.

Nested checkpoints follow torch's rules: a saved tensor belongs to the innermost checkpoint, and
the inputs of an inner checkpoint are saved (`_make_saved_tensor`) through the outer one's hooks,
so unpacking them recomputes the outer one first.
"""

import uuid
import weakref
from collections import defaultdict

from .. import _C
from ..autograd.grad_mode import enable_grad, no_grad
from ..autograd.saved_tensors import saved_tensors_hooks

__all__ = ["CheckpointError"]


class CheckpointError(RuntimeError):
    pass


# torch ends these messages with a tip about `debug=True` and torch.compile; minigrad has
# neither (docs/divergences.md), so its messages end after torch's first paragraph.
_debug_tip_msg = ""


def _internal_assert(cond):
    if not cond:
        raise AssertionError(
            "Something went unexpectedly wrong in activation checkpoint. "
            "Please report this bug by filing an issue to PyTorch."
        )


def _default_meta_extractor(x):
    return {"shape": x.shape, "dtype": x.dtype, "device": x.device}


_allowed_determinism_checks_to_fns = {
    "default": _default_meta_extractor,
    "none": lambda _: None,
}


class _Handle:
    pass


class _Holder:
    """What the graph keeps for one checkpointed saved tensor: a handle per backward pass."""

    def __init__(self):
        self.handles = {}


class _StopRecomputationError(Exception):
    pass


class _CheckpointFrame:
    """One checkpointed call: how to re-run it, its saved inputs, and what each pass recomputed."""

    def __init__(self, recompute_fn, early_stop, metadata_fn):
        self.recompute_fn = recompute_fn
        self.saved_args = []
        self.weak_holders = []
        # per pass: handle -> recomputed tensor (entries go with the holder, Rule 4 in torch)
        self.recomputed = defaultdict(weakref.WeakKeyDictionary)
        self.recomp_counter = defaultdict(int)
        self.is_recomputed = defaultdict(bool)
        self.early_stop = early_stop
        self.metadata_fn = metadata_fn
        self.x_metadatas = []
        self.forward_completed = False
        self.ignore_saved_mismatch = False

    def save_inputs(self, *args):
        # saved like any saved tensor: version-checked, and packed by an enclosing checkpoint
        self.saved_args = [_C._make_saved_tensor(a, False) if isinstance(a, _C.TensorBase) else a for a in args]

    def get_inputs(self):
        return [a.unpack() if isinstance(a, _C.SavedTensor) else a for a in self.saved_args]

    def check_recomputed_tensors_match(self, gid):
        if self.ignore_saved_mismatch:
            return
        if not len(self.weak_holders) == self.recomp_counter[gid]:
            raise CheckpointError(
                "minigrad.utils.checkpoint: A different number of tensors was saved "
                "during the original forward and recomputation.\n"
                f"Number of tensors saved during forward: {len(self.weak_holders)}\n"
                f"Number of tensors saved during recomputation: {self.recomp_counter[gid]}.\n"
                f"{_debug_tip_msg}"
            )
        nb_meta_different = []
        for idx, weak_holder in enumerate(self.weak_holders):
            holder = weak_holder()
            if holder is None:
                continue
            _internal_assert(gid in holder.handles)
            _internal_assert(holder.handles[gid] is not None)
            _internal_assert(holder.handles[gid] in self.recomputed[gid])
            x_meta = self.x_metadatas[idx]
            recomputed_x = self.recomputed[gid][holder.handles[gid]]
            if x_meta != self.metadata_fn(recomputed_x):
                nb_meta_different.append((idx, x_meta, self.metadata_fn(recomputed_x)))
        if nb_meta_different:
            mismatched = ""
            for idx, x_meta, recomputed_meta in nb_meta_different:
                mismatched += (f"tensor at position {idx}:\n"
                               f"saved metadata: {x_meta}\n"
                               f"recomputed metadata: {recomputed_meta}\n")
            raise CheckpointError(
                "minigrad.utils.checkpoint: Recomputed values for the following tensors "
                "have different metadata than during the forward pass.\n"
                f"{mismatched}.\n"
                f"{_debug_tip_msg}"
            )


class _recomputation_hook(saved_tensors_hooks):
    """Active while a frame re-runs its function: files what the re-run saves under the holders."""

    def __init__(self, target_frame_ref, gid):
        def pack_hook(x):
            x = x.detach() if x.requires_grad else x
            target_frame = target_frame_ref()
            _internal_assert(target_frame is not None)
            recomp_idx = target_frame.recomp_counter[gid]
            target_frame.recomp_counter[gid] += 1
            if recomp_idx >= len(target_frame.weak_holders):
                _internal_assert(not target_frame.early_stop)
                if not target_frame.forward_completed:
                    # backward inside the checkpointed function with early stop off
                    target_frame.ignore_saved_mismatch = True
                    return x
                raise CheckpointError(
                    "minigrad.utils.checkpoint: trying to save more tensors during "
                    "recomputation than during the original forward pass.\n"
                    f"{_debug_tip_msg}"
                )
            holder = target_frame.weak_holders[recomp_idx]()
            # a holder already cleared (a backward inside the forward) needs nothing
            if holder is not None:
                _internal_assert(holder.handles.get(gid, None) is None)
                holder.handles[gid] = _Handle()
                target_frame.recomputed[gid][holder.handles[gid]] = x
            if target_frame.early_stop and target_frame.recomp_counter[gid] == len(target_frame.weak_holders):
                raise _StopRecomputationError
            return x

        def unpack_hook(x):
            return x

        super().__init__(pack_hook, unpack_hook)


class _checkpoint_hook(saved_tensors_hooks):
    """Active during the checkpointed forward: keeps a holder instead of each saved tensor."""

    def __init__(self, frame):
        def pack_hook(x):
            holder = _Holder()
            frame.weak_holders.append(weakref.ref(holder))
            if frame.metadata_fn is not None:
                with no_grad():
                    frame.x_metadatas.append(frame.metadata_fn(x))
            return holder

        def unpack_hook(holder):
            gid = _C._current_graph_task_id()
            if gid == -1:
                # unpacked outside a backward pass (grad_fn._saved_*): a one-off id
                gid = int(uuid.uuid4())
            if not frame.is_recomputed[gid]:
                args = frame.get_inputs()
                try:
                    with _recomputation_hook(weakref.ref(frame), gid), enable_grad():
                        frame.recompute_fn(*args)
                except _StopRecomputationError:
                    pass
                frame.is_recomputed[gid] = True
                frame.check_recomputed_tensors_match(gid)
            _internal_assert(gid in holder.handles)
            if holder.handles[gid] is None:
                raise CheckpointError(
                    "minigrad.utils.checkpoint: Unpack is being triggered for a tensor that was already "
                    "unpacked once. If you are calling ctx.saved_tensors in backward, make sure "
                    "to do so only once. Otherwise please open an issue with details on your use case."
                )
            _internal_assert(holder.handles[gid] in frame.recomputed[gid])
            ret = frame.recomputed[gid][holder.handles[gid]]
            holder.handles[gid] = None
            return ret

        super().__init__(pack_hook, unpack_hook)
