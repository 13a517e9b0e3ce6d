"""One pass of the audited program: forward and backward once, some calls flipped to their other
form, with what the allocator counted and what came out.

Every pass starts from the same place: the parameters and buffers as they were when the audit
began (restored in place under no_grad), their gradients cleared, fresh copies of the example
inputs, and minigrad's default generator seeded with the audit's seed (so dropout draws the same
mask in every pass). When the audit ends, the parameters, buffers and gradients are put back.
"""

import gc
from dataclasses import dataclass, field

import numpy as np

from .. import _C
from .._creation import manual_seed
from ..autograd.grad_mode import no_grad
from ..memory import allocated, track
from ..utils._pytree import tree_flatten
from ._calls import Recorder
from ._saves import stale_saves

VERSION_ERROR = "modified by an inplace operation"


@dataclass
class Pass:
    flip: frozenset
    calls: list = field(default_factory=list)
    outputs: list = field(default_factory=list)   # numpy copies of the tensor outputs, flattened
    grads: dict = field(default_factory=dict)     # "parameter fc.weight" / "example input 0" -> numpy or None
    forward_error: str = None
    backward_error: str = None
    stale: list = field(default_factory=list)      # Save records of the graph after forward
    held_bytes: int = 0   # allocated after forward minus before: what the graph and outputs hold
    peak_bytes: int = 0   # most bytes held at once during forward+backward, beyond the start

    @property
    def ok(self):
        return self.forward_error is None and self.backward_error is None

    @property
    def version_error(self):
        return self.backward_error is not None and VERSION_ERROR in self.backward_error


class Runner:
    def __init__(self, model, inputs, seed=0):
        self.model = model
        self.inputs = inputs
        self.seed = seed
        self.named_state = []
        if hasattr(model, "named_parameters"):
            self.named_state += [(f"parameter {n}", p) for n, p in model.named_parameters()]
        if hasattr(model, "named_buffers"):
            self.named_state += [(f"buffer {n}", b) for n, b in model.named_buffers() if b is not None]
        self._snapshot = [(t, t.detach().clone()) for _, t in self.named_state]
        self._grads = [(t, t.grad) for _, t in self.named_state if t.requires_grad]

    def run(self, flip=(), keep_targets=False):
        """One pass; `keep_targets` matches stale saves to the calls that wrote them (the written
        tensors are then held until forward ends, so that pass's byte counts are not used)."""
        self._reset()
        manual_seed(self.seed)
        inputs = [_fresh(x) for x in self.inputs]
        state = [(f"example input {i}", x) for i, x in enumerate(inputs) if isinstance(x, _C.TensorBase)]
        state += self.named_state
        rec = Recorder(flip, keep_targets, state, stop_code=_call_model.__code__)
        p = Pass(frozenset(flip))
        gc.collect()
        out = loss = None
        with track() as memory:
            start = allocated()
            with rec.active(self.model):
                try:
                    out = _call_model(self.model, inputs)
                except Exception as e:  # the program's own error: reported, not raised
                    p.forward_error = _first_line(e)
            p.held_bytes = allocated() - start
            roots = [t for t in tree_flatten(out)[0] if isinstance(t, _C.TensorBase)]
            p.stale = stale_saves(roots, rec.calls)
            for c in rec.calls:
                c.release()
            loss = _loss(roots) if p.forward_error is None else None
            if loss is not None:
                try:
                    loss.backward()
                except RuntimeError as e:
                    p.backward_error = _first_line(e)
            loss = None
        p.peak_bytes = memory.peak_delta_bytes
        p.calls = rec.calls
        p.outputs = [t.detach().numpy().copy() for t in roots]
        grads = [(f"example input {i}", x) for i, x in enumerate(inputs)
                 if isinstance(x, _C.TensorBase) and x.requires_grad]
        grads += [(n, t) for n, t in self.named_state if t.requires_grad]
        p.grads = {n: (None if t.grad is None else t.grad.numpy().copy()) for n, t in grads}
        del out, roots, inputs, state
        self._reset()
        return p

    def restore(self):
        """Puts back the parameters, buffers and gradients the audit found."""
        self._reset()
        for t, g in self._grads:
            t.grad = g

    def _reset(self):
        with no_grad():
            for t, copy in self._snapshot:
                t.copy_(copy)
        for _, t in self.named_state:
            if t.requires_grad:
                t.grad = None


def _call_model(model, inputs):
    """The audited call; where-finding stops at this frame (see Recorder._program_frame)."""
    return model(*inputs)


def _fresh(x):
    if not isinstance(x, _C.TensorBase):
        return x
    return x.detach().clone().requires_grad_(x.requires_grad)


def _loss(roots):
    """The sum of every output that requires grad (what backward starts from); None when none does."""
    total = None
    for t in roots:
        if t.requires_grad and t.is_floating_point():
            s = t.sum()
            total = s if total is None else total + s
    return total


def _first_line(error):
    """`Type: message`, the message's first line without torch's closing hint."""
    text = str(error).split("\n")[0].split(" Hint: ")[0]
    return f"{type(error).__name__}: {text}"


def compare(a, b, rtol, atol):
    """(same, where, max |difference|) of two passes' outputs and gradients."""
    if len(a.outputs) != len(b.outputs):
        return False, "the number of outputs", None
    pairs = [(f"output {i}", x, y) for i, (x, y) in enumerate(zip(a.outputs, b.outputs))]
    pairs += [(f"gradient of {n}", a.grads.get(n), b.grads.get(n)) for n in a.grads]
    for where, x, y in pairs:
        if x is None or y is None:
            if (x is None) != (y is None):
                return False, where, None
            continue
        if x.shape != y.shape or x.dtype != y.dtype:
            return False, where, None
        if not np.allclose(x, y, rtol=rtol, atol=atol, equal_nan=True):
            diff = np.abs(x.astype(np.float64) - y.astype(np.float64))
            return False, where, float(np.nanmax(diff)) if diff.size else None
    return True, None, 0.0
