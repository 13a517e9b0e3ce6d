"""minigrad.viz: pictures of the autograd graph behind a tensor.

    from minigrad import viz
    print(viz.to_dot(loss))          # Graphviz DOT text
    viz.draw(loss, "graph.svg")      # rendered with Graphviz

One box per backward node, named as torch names it (`type(grad_fn).__name__`: `MulBackward0`,
`CopySlices`, ...); an edge from each node to every node in its `next_functions` (the direction
backward walks); `AccumulateGrad` leaves with the leaf's shape and its `.grad`'s shape; each saved
tensor as a note beside its node, with the version it was saved at and the version it is at now.
A saved tensor whose version moved (an in-place op changed it after it was saved: backward will
raise) is drawn in red. Views are marked: view nodes (`ViewBackward0`, `TBackward0`, ...) dashed,
`CopySlices` (an in-place op on a view) as such, and tensors that are views say "view of".

What the core exposes for saved tensors: `grad_fn._saved_names()` and `grad_fn._saved(name)`
(as `grad_fn._saved_<name>`), which unpacks the tensor with the version check. A current save
returns the tensor, whose `_version` is then also the version it was saved at; a stale one
raises torch's version error, whose text ("is at version N; expected version M instead") is
where the two versions are read from; a save freed by backward raises the "backward through the
graph a second time" error."""

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

__all__ = ["SavedTensorInfo", "saved_tensors", "to_dot", "draw", "VIEW_NODES"]

# torch's view functions' backward nodes (an output of these ops is a view of its input)
VIEW_NODES = frozenset({
    "AliasBackward0", "AsStridedBackward0", "DiagonalBackward0", "ExpandBackward0",
    "NarrowBackward0", "PermuteBackward0", "SelectBackward0", "SliceBackward0", "SplitBackward0",
    "SplitWithSizesBackward0", "SqueezeBackward0", "SqueezeBackward1", "SqueezeBackward2",
    "TBackward0", "TransposeBackward0", "UnbindBackward0", "UnfoldBackward0",
    "UnsqueezeBackward0", "ViewBackward0",
})

_STALE = re.compile(
    r"\[(?P<type>[\w.]+) \[(?P<shape>[\d, ]*)\]\](?:, which is output \d+ of \w+,)? "
    r"is at version (?P<now>\d+); expected version (?P<saved>\d+) instead"
)
_LEGACY = {"BoolTensor": "bool", "IntTensor": "int32", "LongTensor": "int64", "FloatTensor": "float32",
           "DoubleTensor": "float64"}
_FREED = "Trying to backward through the graph a second time"


@dataclass(frozen=True)
class SavedTensorInfo:
    """One thing a node saved for backward.

    state: "current" (readable, `tensor` set), "stale" (modified in place since it was saved),
    "freed" (released by backward), "value" (a saved non-tensor, in `value`) or "unreadable"
    (unpacking raised another error, in `error`). `saved_version`/`current_version` are known
    for current and stale tensors."""

    name: str
    state: str
    tensor: object = None
    value: object = None
    description: str = ""
    saved_version: int = None
    current_version: int = None
    is_view: bool = False
    error: str = ""

    @property
    def stale(self):
        return self.state == "stale"


def _describe_tensor(t):
    return f"{str(t.dtype).split('.')[-1]} {list(t.shape)}"


def saved_tensors(node):
    """What `node` (a grad_fn) saved for backward, as SavedTensorInfo, in the core's order."""
    names = node._saved_names() if hasattr(node, "_saved_names") else []
    out = []
    for name in names:
        try:
            v = node._saved(name)
        except RuntimeError as e:
            msg = str(e)
            m = _STALE.search(msg)
            if m:
                out.append(SavedTensorInfo(
                    name, "stale", description=f"{_LEGACY.get(m['type'].split('.')[-1], m['type'])} [{m['shape']}]",
                    saved_version=int(m["saved"]), current_version=int(m["now"]),
                ))
            elif msg.startswith(_FREED):
                out.append(SavedTensorInfo(name, "freed", description="freed by backward"))
            else:
                out.append(SavedTensorInfo(name, "unreadable", error=msg, description=msg.split(".")[0]))
            continue
        if hasattr(v, "_version") and hasattr(v, "shape"):
            out.append(SavedTensorInfo(
                name, "current", tensor=v, description=_describe_tensor(v),
                saved_version=v._version, current_version=v._version, is_view=v._base is not None,
            ))
        else:
            out.append(SavedTensorInfo(name, "value", value=v, description=str(v)))
    return out


def _quote(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _attrs(d):
    return ", ".join(f"{k}={v if k != 'label' else _quote(v)}" for k, v in d.items())


def _tensor_lines(t, what):
    lines = [f"{what} {_describe_tensor(t)}"]
    if t._base is not None:
        lines.append(f"view of {_describe_tensor(t._base)}")
    return lines


def _node_label_and_style(node, show_saved):
    name = type(node).__name__
    lines, attrs = [name], {"shape": "box"}
    if name == "AccumulateGrad":
        leaf = node.variable
        lines += _tensor_lines(leaf, "leaf")
        lines.append(f"grad {_describe_tensor(leaf.grad)}" if leaf.grad is not None else "grad None")
        attrs.update(style="filled", fillcolor="lightblue")
    elif name == "CopySlices":
        lines.append("in-place on a view")
        attrs.update(style="filled", fillcolor="lightyellow")
    elif name in VIEW_NODES:
        lines.append("view")
        attrs.update(style="dashed")
    saved = saved_tensors(node) if show_saved else []
    lines += [f"{s.name} = {s.description}" for s in saved if s.state == "value"]
    attrs["label"] = "\n".join(lines)
    return attrs, [s for s in saved if s.state != "value"]


def _saved_attrs(s):
    lines = [s.name, s.description]
    if s.is_view:
        lines.append("view")
    attrs = {"shape": "note", "fontsize": "10"}
    if s.state in ("current", "stale"):
        lines.append(f"saved at version {s.saved_version}, now {s.current_version}")
    if s.state == "stale":
        lines.append("stale: backward will raise")
        attrs.update(color="red", fontcolor="red")
    elif s.state in ("freed", "unreadable"):
        attrs.update(color="gray", fontcolor="gray")
    attrs["label"] = "\n".join(lines)
    return attrs


def to_dot(tensor, *, show_saved=True, name="autograd"):
    """Graphviz DOT text of the autograd graph behind `tensor` (see the module's docstring)."""
    out = [f"digraph {name} {{", '  node [fontname="Helvetica", fontsize=11];', '  edge [fontsize=9];']
    root = {"shape": "box", "style": "filled", "fillcolor": "palegreen"}
    lines = _tensor_lines(tensor, "tensor") + [f"_version {tensor._version}"]
    if tensor.grad_fn is None:
        lines.append("leaf, requires_grad" if tensor.requires_grad else "no graph (requires_grad=False)")
    root["label"] = "\n".join(lines)
    out.append(f"  tensor [{_attrs(root)}];")

    ids, order, keep = {}, [], []  # keep: the node objects, so their ids stay theirs
    if tensor.grad_fn is not None:
        frontier = [tensor.grad_fn]
        ids[id(tensor.grad_fn)] = "n0"
        keep.append(tensor.grad_fn)
        out.append("  tensor -> n0;")
        while frontier:
            node = frontier.pop(0)
            order.append(node)
            for child, _ in node.next_functions:
                if child is not None and id(child) not in ids:
                    ids[id(child)] = f"n{len(ids)}"
                    keep.append(child)
                    frontier.append(child)
    edges, saved_count = [], 0
    for node in order:
        nid = ids[id(node)]
        attrs, saved = _node_label_and_style(node, show_saved)
        out.append(f"  {nid} [{_attrs(attrs)}];")
        for s in saved:
            sid = f"s{saved_count}"
            saved_count += 1
            out.append(f"  {sid} [{_attrs(_saved_attrs(s))}];")
            style = 'style=dotted, arrowhead=none'
            if s.stale:
                style += ", color=red"
            out.append(f"  {sid} -> {nid} [{style}];")
        for child, input_nr in node.next_functions:
            if child is not None:
                label = f" [label={_quote(str(input_nr))}]" if input_nr else ""
                edges.append(f"  {nid} -> {ids[id(child)]}{label};")
    out += edges
    out.append("}")
    return "\n".join(out) + "\n"


_MISSING = (
    "minigrad.viz.draw renders with Graphviz's `dot` program, which was not found: install "
    "Graphviz (https://graphviz.org/download/, e.g. `apt install graphviz`); the Python package "
    "is optional (pip install 'minigrad[viz]'). minigrad.viz.to_dot(tensor) gives the DOT text "
    "without either, and a path ending in .dot is written without them."
)


def draw(tensor, path, *, format=None, show_saved=True):  # noqa: A002 (graphviz's name)
    """Renders the graph behind `tensor` to `path`; the format is `format` or the path's suffix
    (svg, png, pdf, ...; `.dot` writes the DOT text). Uses the `graphviz` Python package when it
    is installed, else runs `dot` directly; raises RuntimeError when Graphviz's `dot` is missing.
    Returns the path."""
    path = Path(path)
    fmt = (format or path.suffix.lstrip(".") or "svg").lower()
    dot = to_dot(tensor, show_saved=show_saved)
    if fmt == "dot":
        path.write_text(dot)
        return path
    try:
        import graphviz
    except ImportError:
        graphviz = None
    if graphviz is not None:
        try:
            data = graphviz.Source(dot).pipe(format=fmt)
        except graphviz.ExecutableNotFound as e:
            raise RuntimeError(_MISSING) from e
        path.write_bytes(data)
        return path
    exe = shutil.which("dot")
    if exe is None:
        raise RuntimeError(_MISSING)
    result = subprocess.run([exe, f"-T{fmt}", "-o", str(path)], input=dot.encode(), capture_output=True)
    if result.returncode != 0:
        raise RuntimeError(f"dot -T{fmt} failed: {result.stderr.decode(errors='replace').strip()}")
    return path
