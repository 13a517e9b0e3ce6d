"""What a graph saved for backward, read without the version check, and which seen writes moved a
saved tensor after it was saved.

Every node reachable from the outputs runs in backward and unpacks everything it saved, so a save
whose version moved (a *stale* save) makes backward raise torch's "modified by an inplace
operation" error. `grad_fn._saved_unchecked(name)` gives the saved tensor (a detached alias: same
memory, same version counter), the version it was saved at, and whether it was the node's own
output (`result`) or one of its inputs.
"""

from dataclasses import dataclass, field


@dataclass
class Save:
    node: str                 # the saving node's name: "SigmoidBackward0"
    name: str                 # what it saved: "result", "self", "other", ...
    is_output: bool           # the node's own output (torch's `result`), else one of its inputs
    saved_version: int
    version: int              # the tensor's version now
    description: str          # "float32 [64, 128]"
    nbytes: int
    writers: list = field(default_factory=list)  # indices of the seen calls that moved it since
    by_writer: list = field(default_factory=list)  # of those, the calls whose own node saved it

    @property
    def stale(self):
        return self.version != self.saved_version

    def what(self):
        kind = "its result" if self.is_output else f"its input `{self.name}`"
        return f"{self.node} saved {kind} ({self.description}) at version {self.saved_version}"

    def as_dict(self):
        return {"node": self.node, "name": self.name, "is_output": self.is_output,
                "saved_version": self.saved_version, "version": self.version,
                "description": self.description, "nbytes": self.nbytes, "writers": list(self.writers)}


def graph_nodes(roots):
    """The nodes reachable from the tensors' grad_fns, each once, in breadth-first order."""
    seen, order = set(), []
    frontier = [t.grad_fn for t in roots if t.grad_fn is not None]
    keep = []  # the node objects, so that their ids stay theirs during the walk
    while frontier:
        node = frontier.pop(0)
        if id(node) in seen:
            continue
        seen.add(id(node))
        keep.append(node)
        order.append(node)
        frontier.extend(child for child, _ in node.next_functions if child is not None)
    return order


def stale_saves(roots, calls=()):
    """The stale saves of the graph behind `roots`. With `calls` whose `target` is kept, each
    save lists the calls that wrote into its tensor after it was saved (same version counter,
    version after the call in (saved, now])."""
    writes = [c for c in calls if c.target is not None and c.version_after is not None
              and c.version_after != c.version_before]
    out = []
    for node in graph_nodes(roots):
        if not hasattr(node, "_saved_unchecked"):
            continue
        for name in node._saved_names():
            found = node._saved_unchecked(name)
            if found is None:
                continue
            tensor, saved_version, is_output = found
            if tensor._version == saved_version:
                continue
            save = Save(
                node=type(node).__name__, name=name, is_output=is_output, saved_version=saved_version,
                version=tensor._version, description=f"{str(tensor.dtype).split('.')[-1]} {list(tensor.shape)}",
                nbytes=tensor.numel() * tensor.element_size(),
            )
            for c in writes:
                if saved_version < c.version_after <= save.version and tensor._shares_version_counter(c.target):
                    save.writers.append(c.index)
                    if c.node_after is node:
                        save.by_writer.append(c.index)
            out.append(save)
    return out
