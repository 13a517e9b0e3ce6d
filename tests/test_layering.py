"""The import layering of the Python package (docs/architecture.md, "The Python package: layers").

Every module under python/minigrad is parsed with `ast`, and every import in it is an edge to the
module it names: module-level imports, imports inside functions (they are how cycles hide), and
`importlib.import_module` with a constant name. Importing `minigrad.a.b` also runs the package
`minigrad.a`, so that is an edge too, unless the importer is itself inside `minigrad.a` (then the
package is already being imported). `from pkg import name`, where `name` is not a submodule, reads
an attribute of `pkg`: an edge to `pkg`, even when `pkg` is the importer's own package.

The test fails on
* an import that points up LAYERS (a lower layer importing a higher one),
* any import cycle among the package's modules, inside one layer too.
A lower layer that needs an object of a higher one at runtime gets it through a hook set from above
(`_C._set_classes(Tensor, Size)` in the package root, `_ops.registry` attaching methods to Tensor).
"""

import ast
from pathlib import Path

PACKAGE = "minigrad"
ROOT = Path(__file__).resolve().parents[1] / "python" / PACKAGE

# Bottom to top. A module belongs to the layer of the longest entry that is its name or a dotted
# prefix of it ("minigrad.nn" covers minigrad.nn.modules.linear); the package root "minigrad"
# matches only itself. Modules that match no entry sit above every layer listed here.
LAYERS = [
    # the Rust extension: imports nothing from the package (it gets Tensor/Size via _set_classes)
    ["minigrad._C"],
    # exception classes torch has beyond the builtins; the CuPy driver of the CUDA backend and its
    # NVRTC compile with the disk cache; whether a GPU is usable, and what is missing when not
    # (CuPy, a driver, the engine's backend)
    ["minigrad._errors", "minigrad._cuda_driver", "minigrad._cuda_compile", "minigrad._cuda_probe"],
    # helpers with no tensor class: devices, Size, repr and print options, torch's type names
    ["minigrad._device", "minigrad._size", "minigrad._formatting"],
    # factories: the core builds each result as the class registered with _C._set_classes
    ["minigrad._creation"],
    # seedable random streams for shuffling (Generator, randperm)
    ["minigrad._random", "minigrad.random"],
    # the Tensor class: attributes, conversions, NumPy protocol, repr
    ["minigrad._tensor"],
    # the registry that attaches op wrappers to Tensor and collects the module-level functions
    ["minigrad._ops.registry"],
    # the op families (elementwise, views, reduce, linalg, indexing), each op's wrappers once;
    # minigrad.linalg re-exports torch.linalg's names among them
    ["minigrad._ops", "minigrad.linalg"],
    # autograd: backward/grad, grad modes, Function, graph introspection, anomaly mode, gradcheck
    ["minigrad.autograd"],
    # functional transforms (grad, vjp) over autograd; utils: pytrees, datasets and loaders
    ["minigrad.utils"],
    ["minigrad.func"],
    # nn; torch's module-level selu/celu are nn.functional's ops without `inplace`
    ["minigrad.nn", "minigrad._torch_activations"],
    ["minigrad.optim"],
    ["minigrad.memory", "minigrad.serialization", "minigrad.cuda"],
    # the in-place auditor: wraps Tensor's methods through the registry for one audit
    ["minigrad.inplace"],
    # the public namespace: `import minigrad`
    ["minigrad"],
    # programs and tools built on the public API
    ["minigrad.bench", "minigrad.__main__", "minigrad._kernels_cli", "minigrad.testing", "minigrad.viz"],
]

# Deliberate upward imports, each with its reason. Listed edges are left out of both checks; an
# entry that no longer matches an import fails the test, so the list cannot go stale.
ALLOWED = {
    ("minigrad.autograd.gradcheck", "minigrad"): (
        "gradcheck is written against the public API so that the very same file checks torch "
        "(tests load it standalone with _LIBRARY = torch, or with sys.modules['minigrad'] = torch); "
        "its `import minigrad` runs when a check runs, inside _lib(), never at import"
    ),
}


def _modules(root=ROOT):
    """{module name: (path, is_package)} for every .py file, and the compiled extension."""
    found = {f"{PACKAGE}._C": (None, False)}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = (path, is_package)
    return found


def _ancestors(name):
    """minigrad.a.b -> [minigrad, minigrad.a]"""
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _edges(modules):
    """{(importer, imported): line numbers}, as the module docstring describes."""
    edges = {}

    for importer, (path, is_package) in modules.items():
        if path is None:
            continue
        package = importer if is_package else importer.rpartition(".")[0]
        inside = set(_ancestors(importer)) | ({importer} if is_package else set())

        def add(target, line):
            lines = edges.setdefault((importer, target), [])
            if target != importer and line not in lines:
                lines.append(line)

        def import_module(name, line):
            """`import name`: the module and the packages above it that are not being imported already."""
            if name != PACKAGE and not name.startswith(PACKAGE + "."):
                return
            while name not in modules:  # `import minigrad.x.attr`-like names: the longest module
                name = name.rpartition(".")[0]
            for p in _ancestors(name) + [name]:
                if p not in inside or p == name:
                    add(p, line)

        def resolve(level, module):
            if not level:
                return module
            base = package
            for _ in range(level - 1):
                base = base.rpartition(".")[0]
            return f"{base}.{module}" if module else base

        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    import_module(alias.name, node.lineno)
            elif isinstance(node, ast.ImportFrom):
                base = resolve(node.level, node.module)
                if base != PACKAGE and not base.startswith(PACKAGE + "."):
                    continue
                for p in _ancestors(base):
                    if p not in inside:
                        add(p, node.lineno)
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    if sub in modules:
                        add(sub, node.lineno)
                        if base not in inside:
                            add(base, node.lineno)
                    else:
                        add(base, node.lineno)
            elif isinstance(node, ast.Call) and _is_import_module(node.func):
                if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
                    name = node.args[0].value
                    if name.startswith("."):
                        level = len(name) - len(name.lstrip("."))
                        name = resolve(level, name.lstrip(".") or None)
                    import_module(name, node.lineno)
    return edges


def _is_import_module(func):
    return (isinstance(func, ast.Attribute) and func.attr == "import_module") or (
        isinstance(func, ast.Name) and func.id in ("import_module", "__import__")
    )


def layer_of(name):
    best, best_len = len(LAYERS), -1
    for i, entries in enumerate(LAYERS):
        for entry in entries:
            matches = name == entry or (entry != PACKAGE and name.startswith(entry + "."))
            if matches and len(entry) > best_len:
                best, best_len = i, len(entry)
    return best


def _cycles(nodes, edges):
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    graph = {n: sorted({b for (a, b) in edges if a == n}) for n in nodes}
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = [0]
    for start in sorted(nodes):
        if start in index:
            continue
        work = [(start, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = counter[0]
                counter[0] += 1
                stack.append(v)
                on_stack.add(v)
            if i < len(graph[v]):
                work.append((v, i + 1))
                w = graph[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on_stack:
                    low[v] = min(low[v], index[w])
                continue
            for w in graph[v]:
                if w in on_stack:
                    low[v] = min(low[v], low[w])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


MODULES = _modules()
EDGES = _edges(MODULES)


def _checked_edges():
    return {e: lines for e, lines in EDGES.items() if e not in ALLOWED}


def _where(importer, lines):
    path = MODULES[importer][0].relative_to(ROOT.parents[1])
    return ", ".join(f"{path}:{n}" for n in lines)


def test_every_import_points_down_the_layers():
    names = [" / ".join(entries) for entries in LAYERS]
    upward = [
        f"{a} (layer {layer_of(a)}: {names[layer_of(a)] if layer_of(a) < len(LAYERS) else 'unlisted'}) imports "
        f"{b} (layer {layer_of(b)}) at {_where(a, lines)}"
        for (a, b), lines in sorted(_checked_edges().items())
        if layer_of(b) > layer_of(a)
    ]
    assert not upward, "imports against the layer order (see LAYERS):\n" + "\n".join(upward)


def test_no_import_cycles():
    edges = _checked_edges()
    cycles = _cycles(set(MODULES), edges)
    described = []
    for component in cycles:
        path = _shortest_cycle(component, edges)
        described.append(f"{len(component)} modules ({', '.join(component)}); one cycle:\n" + "\n".join(
            f"    {a} -> {b} at {_where(a, edges[(a, b)])}" for a, b in zip(path, path[1:])))
    assert not cycles, "import cycles:\n" + "\n".join(described)


def _shortest_cycle(component, edges):
    """A shortest cycle through the first module of a strongly connected component (BFS)."""
    start = component[0]
    previous, frontier = {start: None}, [start]
    while frontier:
        following = []
        for a in frontier:
            for b in sorted(b for (x, b) in edges if x == a and b in component):
                if b == start:
                    chain = [a]
                    while chain[-1] != start:
                        chain.append(previous[chain[-1]])
                    return chain[::-1] + [start]
                if b not in previous:
                    previous[b] = a
                    following.append(b)
        frontier = following
    return [start]


def test_allowed_exceptions_are_still_needed():
    assert set(ALLOWED) <= set(EDGES), f"stale entries in ALLOWED: {sorted(set(ALLOWED) - set(EDGES))}"


def test_every_layer_entry_names_a_module():
    for entries in LAYERS:
        for entry in entries:
            assert entry in MODULES, f"LAYERS names {entry}, which is not a module of the package"


def test_the_edge_finder_sees_every_kind_of_import(tmp_path):
    """The parser itself, on a small package: function-local imports, import_module, parent
    packages, and `from package import attribute`."""
    package = tmp_path / PACKAGE
    (package / "sub").mkdir(parents=True)
    files = {
        "__init__.py": "from . import a\n",
        "a.py": "def f():\n    from .sub import b\n",
        "c.py": "import importlib\ndef g():\n    return importlib.import_module('.sub.b', __package__)\n",
        "d.py": "from . import some_attribute\n",
        "sub/__init__.py": "",
        "sub/b.py": "from .. import _C\nfrom . import e\n",
        "sub/e.py": "",
    }
    for name, text in files.items():
        (package / name).write_text(text)
    edges = set(_edges(_modules(package)))
    assert edges == {
        ("minigrad", "minigrad.a"),
        ("minigrad.a", "minigrad.sub"), ("minigrad.a", "minigrad.sub.b"),  # local; runs the package
        ("minigrad.c", "minigrad.sub"), ("minigrad.c", "minigrad.sub.b"),  # import_module
        ("minigrad.d", "minigrad"),  # an attribute of the (partly imported) package root
        ("minigrad.sub.b", "minigrad._C"), ("minigrad.sub.b", "minigrad.sub.e"),  # own package: no edge
    }
