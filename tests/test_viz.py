"""minigrad.viz.to_dot draws the graph torch builds for the same program: the same node names and
edges, leaves with their shapes, saved tensors with their versions, stale saves (those torch's
backward refuses) in red, views marked."""

import re
import shutil
import sys

import pytest
import torch

import minigrad as mg
from minigrad import viz

NODE = re.compile(r'^\s*(\w+) \[(.*)\];$')
EDGE = re.compile(r'^\s*(\w+) -> (\w+)(?: \[(.*)\])?;$')


def parse(dot):
    """{node id: (label lines, attribute text)} and [(from, to, attribute text)] of to_dot's output."""
    nodes, edges = {}, []
    for line in dot.splitlines():
        if m := EDGE.match(line):
            edges.append((m[1], m[2], m[3] or ""))
        elif (m := NODE.match(line)) and m[1] not in ("node", "edge"):
            label = re.search(r'label="((?:[^"\\]|\\.)*)"', m[2])[1]
            nodes[m[1]] = (label.split("\\n"), m[2])
    return nodes, edges


def dot_structure(tensor):
    """Node names and (node, next node) name pairs of the drawn graph, sorted."""
    nodes, edges = parse(viz.to_dot(tensor))
    fn = {k: v[0][0] for k, v in nodes.items() if k.startswith("n")}
    return sorted(fn.values()), sorted((fn[a], fn[b]) for a, b, _ in edges if a in fn and b in fn)


def torch_structure(tensor):
    """The same, walked over torch's graph."""
    order, seen, edges = [tensor.grad_fn], {id(tensor.grad_fn)}, []
    for node in order:  # grows while walking: breadth first
        for child, _ in node.next_functions:
            if child is not None:
                edges.append((type(node).__name__, type(child).__name__))
                if id(child) not in seen:
                    seen.add(id(child))
                    order.append(child)
    return sorted(type(n).__name__ for n in order), sorted(edges)


def notes(tensor):
    """Labels and attributes of the saved-tensor notes, by the node they hang on."""
    nodes, edges = parse(viz.to_dot(tensor))
    return [(nodes[b][0][0], nodes[a][0], nodes[a][1]) for a, b, _ in edges if a.startswith("s")]


def both(f):
    return f(mg), f(torch)


def small(L):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    w = L.tensor([0.5, -1.0, 2.0], requires_grad=True)
    return (x * w).exp().sum(), x, w


def test_small_graph_has_torchs_nodes_and_edges():
    (m, mx, _), (t, _, _) = both(small)
    assert dot_structure(m) == torch_structure(t)
    nodes, edges = parse(viz.to_dot(m))
    assert nodes["tensor"][0][:2] == ["tensor float32 []", "_version 0"]
    assert ("tensor", "n0", "") in edges and nodes["n0"][0][0] == "SumBackward0"
    leaves = [v[0] for v in nodes.values() if v[0][0] == "AccumulateGrad"]
    assert leaves == [["AccumulateGrad", "leaf float32 [3]", "grad None"]] * 2
    # a leaf's node shows its .grad once there is one
    m.backward(retain_graph=True)
    assert mx.grad is not None
    nodes, _ = parse(viz.to_dot(m))
    assert [v[0][2] for v in nodes.values() if v[0][0] == "AccumulateGrad"] == ["grad float32 [3]"] * 2


def test_saved_tensors_are_torchs_with_their_versions():
    (m, _, _), (t, _, _) = both(small)
    mul_t = t.grad_fn.next_functions[0][0].next_functions[0][0]
    torch_saved = sorted(a[len("_saved_"):] for a in dir(mul_t)
                         if a.startswith("_saved_") and isinstance(getattr(mul_t, a), torch.Tensor))
    saved = [(name, lines) for name, lines, _ in notes(m) if name == "MulBackward0"]
    assert sorted(lines[0] for _, lines in saved) == torch_saved == ["other", "self"]
    assert all(lines[1:] == ["float32 [3]", "saved at version 0, now 0"] for _, lines in saved)
    exp = [lines for name, lines, _ in notes(m) if name == "ExpBackward0"]
    assert exp == [["result", "float32 [3]", "saved at version 0, now 0"]]
    assert "red" not in viz.to_dot(m)


def stale(L):
    x = L.tensor([1.0, 2.0, 3.0], requires_grad=True)
    b = (x * 1).exp()
    b.add_(1)  # ExpBackward0 saved b (its result): now one version ahead
    return b


def test_stale_saved_tensor_is_red_where_torch_backward_raises():
    m, t = both(stale)
    assert dot_structure(m) == torch_structure(t)
    red = [(name, lines) for name, lines, attrs in notes(m) if "color=red" in attrs]
    assert red == [("ExpBackward0", ["result", "float32 [3]", "saved at version 0, now 1", "stale: backward will raise"])]
    with pytest.raises(RuntimeError, match=r"is at version 1; expected version 0 instead"):
        t.sum().backward()  # torch refuses exactly what is drawn red, with the same two versions
    assert re.search(r"s\d+ -> n\d+ \[style=dotted, arrowhead=none, color=red\];", viz.to_dot(m))


def test_saves_freed_by_backward_are_shown_as_freed():
    (m, _, _), (t, _, _) = both(small)
    m.backward()
    t.backward()
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        t.grad_fn.next_functions[0][0]._saved_result  # torch freed them as well
    assert {tuple(lines) for _, lines, _ in notes(m)} == {("result", "freed by backward"),
                                                         ("self", "freed by backward"),
                                                         ("other", "freed by backward")}


def views(L):
    x = L.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
    y = x * 1
    y[0].mul_(2)  # in place on a view: y's history goes through CopySlices
    v = y.t()
    return v * v, v


def test_views_are_marked():
    (m, mv), (t, _) = both(views)
    assert dot_structure(m) == torch_structure(t)
    assert "CopySlices" in dot_structure(m)[0]
    nodes, _ = parse(viz.to_dot(m))
    labels = {v[0][0]: (v[0], v[1]) for v in nodes.values()}
    assert labels["TBackward0"][0][1] == "view" and "style=dashed" in labels["TBackward0"][1]
    assert labels["CopySlices"][0][1] == "in-place on a view"
    # the saved factors of v * v are views of y; what x * 1 saved (the number 1) is not
    saved = sorted((lines[0], lines[1], "view" in lines) for name, lines, _ in notes(m) if name == "MulBackward0")
    assert saved == [("other", "float32 [2, 2]", True), ("other", "int64 []", False), ("self", "float32 [2, 2]", True)]
    assert parse(viz.to_dot(mv))[0]["tensor"][0][1] == "view of float32 [2, 2]"


def mlp(L):
    """The model of examples/mlp_digits.py (defined inside its main())."""
    nn = L.nn
    return nn.Sequential(
        nn.Linear(64, 128), nn.ReLU(inplace=True), nn.Linear(128, 64), nn.ReLU(inplace=True), nn.Linear(64, 10),
    )


def test_mlp_digits_model_graph_matches_torch_and_has_no_stale_saves():
    torch.manual_seed(0)
    t_model, m_model = mlp(torch), mlp(mg)
    m_model.load_state_dict({k: mg.tensor(v.numpy()) for k, v in t_model.state_dict().items()})
    x = torch.randn(8, 64)
    y = torch.randint(0, 10, (8,))
    t_loss = torch.nn.functional.cross_entropy(t_model(x), y)
    m_loss = mg.nn.functional.cross_entropy(m_model(mg.tensor(x.numpy())), mg.tensor(y.numpy()))
    assert dot_structure(m_loss) == torch_structure(t_loss)
    nodes, _ = parse(viz.to_dot(m_loss))
    leaf_shapes = sorted(v[0][1] for v in nodes.values() if v[0][0] == "AccumulateGrad")
    assert leaf_shapes == sorted(f"leaf float32 {list(p.shape)}" for p in t_model.parameters())
    assert not any("color=red" in attrs for _, _, attrs in notes(m_loss))
    t_loss.backward()  # ReLU(inplace=True) after Linear is safe: torch agrees


def test_inplace_relu_after_sigmoid_is_drawn_stale():
    def model_loss(L):
        L.manual_seed(0)
        model = L.nn.Sequential(L.nn.Linear(4, 3), L.nn.Sigmoid(), L.nn.ReLU(inplace=True))
        return model(L.ones(2, 4)).sum()

    m, t = both(model_loss)
    assert dot_structure(m) == torch_structure(t)
    red = [(name, lines[0]) for name, lines, attrs in notes(m) if "color=red" in attrs]
    assert red == [("SigmoidBackward0", "result")]
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        t.backward()


def test_tensor_without_graph():
    assert parse(viz.to_dot(mg.ones(2)))[0]["tensor"][0][2] == "no graph (requires_grad=False)"
    assert parse(viz.to_dot(mg.ones(2, requires_grad=True)))[0]["tensor"][0][2] == "leaf, requires_grad"


# ----- draw -----

def test_draw_dot_file_needs_no_graphviz(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)
    monkeypatch.setenv("PATH", str(tmp_path))
    m, _, _ = small(mg)
    path = viz.draw(m, tmp_path / "g.dot")
    assert path.read_text() == viz.to_dot(m)


def test_draw_without_dot_program_raises_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "graphviz", None)  # the package is not installed
    monkeypatch.setenv("PATH", str(tmp_path))  # and no `dot` on the PATH
    m, _, _ = small(mg)
    with pytest.raises(RuntimeError, match=r"Graphviz's `dot` program, which was not found"):
        viz.draw(m, tmp_path / "g.svg")


@pytest.mark.skipif(shutil.which("dot") is None, reason="rendering needs Graphviz's `dot` program, not installed here")
def test_draw_renders_svg(tmp_path):
    m = stale(mg)
    path = viz.draw(m, tmp_path / "g.svg")
    svg = path.read_text()
    assert svg.lstrip().startswith("<?xml") or "<svg" in svg
    assert "ExpBackward0" in svg and "stale: backward will raise" in svg
