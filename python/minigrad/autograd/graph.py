"""Graph introspection: nodes (`grad_fn` objects), gradient edges, hook handles.

Every node is an instance of a class named after it (`MulBackward0`, `AccumulateGrad`,
`CopySlices`), a subclass of `Node`; `name()` gives torch's C++-style name
(`torch::autograd::CopySlices`), `next_functions` the `(node or None, input_nr)` pairs. Saved-tensor hooks (`saved_tensors_hooks`,
`save_on_cpu`, `disable_saved_tensors_hooks`) live in `saved_tensors.py` and are exported here,
where torch has them."""

import ast
from collections import namedtuple

from .. import _C
from .saved_tensors import disable_saved_tensors_hooks, save_on_cpu, saved_tensors_hooks

__all__ = [
    "Node", "GradientEdge", "get_gradient_edge", "RemovableHandle", "saved_tensors_hooks", "save_on_cpu",
    "disable_saved_tensors_hooks",
]


class Node(_C._NodeBase):
    """A backward node of the graph (torch.autograd.graph.Node)."""

    @property
    def metadata(self):
        d = self.__dict__.get("_metadata")
        if d is None:
            d = self.__dict__["_metadata"] = {}
        return d

    def register_hook(self, fn):
        """`fn(grad_inputs, grad_outputs)` after the node ran; may return new grad_inputs."""
        return RemovableHandle(self, _C._NodeBase.register_hook(self, fn))

    def register_prehook(self, fn):
        """`fn(grad_outputs)` before the node runs; may return new grad_outputs."""
        return RemovableHandle(self, _C._NodeBase.register_prehook(self, fn))

    def __getattr__(self, name):
        if name.startswith("_saved_"):
            names = self._saved_names()
            if name[7:] in names:
                v = self._saved(name[7:])
                return _saved_value(v) if isinstance(v, str) else v
        if name.startswith("_raw_saved_"):
            raw = self._raw_saved(name[11:])
            if raw is not None:
                return raw
        raise AttributeError(f"'{type(self).__name__}' object has no attribute '{name}'")

    def __repr__(self):
        return f"<{type(self).__name__} object at {hex(id(self))}>"


def _saved_value(text):
    """A saved non-tensor argument as torch shows it: the core keeps it as Python literal text
    (ints, floats, True/False, None, tuples), read back here; a float the core printed as `inf`
    or `NaN` becomes that float; any other text is a string argument (gelu's `approximate`)."""
    try:
        v = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        try:
            return float(text)
        except ValueError:
            return text
    return tuple(v) if isinstance(v, list) else v


_classes = {}


def _node_class(name):
    """The Python class for node name `name` (cached): `torch::autograd::CopySlices` -> CopySlices."""
    cls = _classes.get(name)
    if cls is None:
        short = name.rsplit("::", 1)[-1]
        cls = _classes[name] = type(short, (Node,), {"__module__": "minigrad.autograd.graph"})
    return cls


_C._set_node_factory(_node_class)

GradientEdge = namedtuple("GradientEdge", ["node", "output_nr"])


def get_gradient_edge(tensor):
    """The edge gradient for `tensor` flows into: (grad_fn, output_nr) or its AccumulateGrad."""
    node, nr = tensor._gradient_edge()
    if node is None:
        raise RuntimeError("It is not possible to get the gradient edge for a Tensor that does not require gradients")
    return GradientEdge(node, nr)


class RemovableHandle:
    """Returned by register_hook; `remove()` unregisters the hook."""

    def __init__(self, owner, hook_id):
        self._owner = owner
        self.id = hook_id

    def remove(self):
        if self._owner is not None:
            self._owner._remove_hook(self.id)
            self._owner = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()
