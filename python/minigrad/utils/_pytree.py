"""A small pytree: nested tuples, lists, dicts and namedtuples with anything else as leaves (None
included), as torch.utils._pytree treats them. `minigrad.func` flattens its arguments and results
with it; `treespec_pprint` prints a structure the way torch's error messages do (`(*, [*, *])`)."""

__all__ = ["TreeSpec", "LeafSpec", "tree_flatten", "tree_unflatten", "tree_map", "treespec_pprint"]


def _is_namedtuple(obj):
    return isinstance(obj, tuple) and hasattr(obj, "_fields")


class TreeSpec:
    """The structure of a pytree: a container type, its context (dict keys, namedtuple fields) and
    one spec per child. A leaf is `LeafSpec()`."""

    def __init__(self, type_, context, children):
        self.type = type_
        self.context = context
        self.children_specs = list(children)
        self.num_leaves = sum(c.num_leaves for c in self.children_specs)

    def is_leaf(self):
        return False

    def __eq__(self, other):
        return (isinstance(other, TreeSpec) and self.type is other.type and self.context == other.context
                and self.children_specs == other.children_specs)

    def unflatten(self, leaves):
        return tree_unflatten(leaves, self)

    def __repr__(self):
        return f"TreeSpec({self.type.__name__}, {self.context}, {self.children_specs})"


class LeafSpec(TreeSpec):
    def __init__(self):
        self.type = None
        self.context = None
        self.children_specs = []
        self.num_leaves = 1

    def is_leaf(self):
        return True

    def __eq__(self, other):
        return isinstance(other, LeafSpec)

    def __repr__(self):
        return "*"


def _children(obj):
    """(type, context, children) for a container, or None for a leaf."""
    if _is_namedtuple(obj):
        return type(obj), type(obj)._fields, list(obj)
    if isinstance(obj, (tuple, list)):
        return type(obj), None, list(obj)
    if isinstance(obj, dict):
        keys = list(obj)
        return type(obj), keys, [obj[k] for k in keys]
    return None


def tree_flatten(tree):
    """(leaves, spec), leaves in depth-first order."""
    leaves = []

    def walk(node):
        parts = _children(node)
        if parts is None:
            leaves.append(node)
            return LeafSpec()
        type_, context, children = parts
        return TreeSpec(type_, context, [walk(c) for c in children])

    spec = walk(tree)
    return leaves, spec


def tree_unflatten(leaves, spec):
    it = iter(leaves)

    def build(s):
        if s.is_leaf():
            return next(it)
        children = [build(c) for c in s.children_specs]
        if _is_namedtuple_type(s.type):
            return s.type(*children)
        if issubclass(s.type, dict):
            out = s.type()
            for k, v in zip(s.context, children):
                out[k] = v
            return out
        return s.type(children)

    leaves = list(leaves)
    if len(leaves) != spec.num_leaves:
        raise ValueError(
            f"treespec.unflatten(leaves): `leaves` has length {len(leaves)} but the spec refers to a pytree "
            f"that holds {spec.num_leaves} items ({spec})."
        )
    return build(spec)


def _is_namedtuple_type(t):
    return isinstance(t, type) and issubclass(t, tuple) and hasattr(t, "_fields")


def tree_map(fn, tree):
    leaves, spec = tree_flatten(tree)
    return tree_unflatten([fn(x) for x in leaves], spec)


def treespec_pprint(spec):
    """`*` for a leaf, then Python's own brackets: `(*,)`, `[*, *]`, `{'a': *}`, `P(a=*, b=*)`."""
    if spec.is_leaf():
        return "*"
    parts = [treespec_pprint(c) for c in spec.children_specs]
    if _is_namedtuple_type(spec.type):
        return f"{spec.type.__name__}(" + ", ".join(f"{k}={p}" for k, p in zip(spec.context, parts)) + ")"
    if issubclass(spec.type, dict):
        return "{" + ", ".join(f"{k!r}: {p}" for k, p in zip(spec.context, parts)) + "}"
    if issubclass(spec.type, list):
        return "[" + ", ".join(parts) + "]"
    if len(parts) == 1:
        return f"({parts[0]},)"
    return "(" + ", ".join(parts) + ")"
