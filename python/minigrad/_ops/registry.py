"""The registry: the one way an op's Python wrappers reach `minigrad.Tensor` and the `minigrad`
namespace.

Each op family module (elementwise.py, views.py, reduce.py, linalg.py, indexing.py) defines an
op's wrappers once and registers them here:

    @method("clip", function=True)      # Tensor.clamp and Tensor.clip, the same function, and
    def clamp(self, min=None, max=None): # minigrad.clamp / minigrad.clip (see `forward`)
        return _C.clamp(self, min, max)

`method` attaches a function to Tensor, `function` files a function as `minigrad.<name>`, and
`forward` makes the mechanical module function, `minigrad.<name>(input, ...)` is
`input.<name>(...)`. Registering a name twice is an error, so every wrapper has one home.
The package root exports FUNCTIONS. This module sits just above the Tensor class and imports no
op family (tests/test_layering.py).

`inplace_methods()` and `intercept()` serve the in-place auditor (`minigrad.inplace`): the first
lists the methods that write into `self` with their out-of-place twins, the second swaps in
wrappers for a `with` block, so the auditor sees (and can redirect) each call without any cost to
programs that do not audit.
"""

from contextlib import contextmanager

from .. import _C
from .._formatting import type_name
from .._tensor import Tensor

FUNCTIONS = {}
"""name -> the function exported as `minigrad.<name>`."""


def add_method(name, value):
    """Tensor.<name> = value (a function, property or constant), once per name."""
    if name in vars(Tensor):
        raise RuntimeError(f"minigrad.Tensor.{name} is registered twice")
    setattr(Tensor, name, value)


def add_function(name, value):
    """minigrad.<name> = value, once per name."""
    if name in FUNCTIONS:
        raise RuntimeError(f"minigrad.{name} is registered twice")
    FUNCTIONS[name] = value


def method(*aliases, function=False, name=None):
    """Decorator: the function becomes Tensor.<its name, or `name`> and Tensor.<alias> for each alias
    (the same function object, as `subtract = sub` in a class body); with `function=True`, each of
    those names also gets its forwarding `minigrad.<name>` (see `forward`)."""

    def register(fn):
        if name is not None:
            fn.__name__ = name
        fn.__qualname__ = f"Tensor.{fn.__name__}"
        for each in (fn.__name__, *aliases):
            add_method(each, fn)
            if function:
                forward(each)
        return fn

    return register


def function(fn):
    """Decorator: the function becomes `minigrad.<its name>`."""
    add_function(fn.__name__, fn)
    return fn


def forward(*names):
    """`minigrad.<name>(input, *args, **kwargs)` is `input.<name>(*args, **kwargs)`, after checking
    that `input` is a tensor, for each name (so the op itself is written once, as the method)."""
    for name in names:
        add_function(name, _forward(name))


def _forward(name):
    def function(*args, **kwargs):
        if args:
            input, args = args[0], args[1:]
        elif "input" in kwargs:
            input = kwargs.pop("input")
        else:
            raise TypeError(f"{name}() missing 1 required positional argument: 'input'")
        if not isinstance(input, _C.TensorBase):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type_name(input)}")
        return getattr(input, name)(*args, **kwargs)

    function.__name__ = name
    function.__doc__ = f"minigrad.{name}(input, ...) is input.{name}(...)."
    return function


# Methods ending in `_` that write no elements and bump no version (autograd flags only).
_NOT_WRITES = {"requires_grad_", "detach_"}


def inplace_methods():
    """{name: twin} for every Tensor method that writes into `self`: the `_` methods, the
    augmented operators (`__iadd__`, ...) and `__setitem__`; `twin` is the out-of-place method
    computing the same value into a new tensor (`relu_` -> `relu`, `__iadd__` -> `__add__`), or
    None where there is none (`fill_`, `copy_`, `__setitem__`)."""
    names = {n for cls in Tensor.__mro__ for n in vars(cls)}
    out = {}
    for name in sorted(names):
        if name.startswith("__i") and name.endswith("__") and name[3:-2] in _OPERATOR_NAMES:
            out[name] = f"__{name[3:-2]}__"
        elif name.endswith("_") and not name.startswith("_") and name not in _NOT_WRITES:
            twin = name[:-1]
            out[name] = twin if twin in names else None
    out["__setitem__"] = None
    return out


_OPERATOR_NAMES = {"add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "and", "or", "xor", "matmul"}
_active = []  # the interception in force (at most one)


@contextmanager
def intercept(names, hook):
    """Inside the block, `Tensor.<name>(self, *args, **kwargs)` for each name runs
    `hook(name, original, self, args, kwargs)` instead, where `original` is the method the
    block replaced; afterwards every name is what it was. One interception at a time (the
    wrappers are attributes of the one Tensor class, seen by every thread)."""
    if _active:
        raise RuntimeError("minigrad: an interception of Tensor methods is already active")
    own = {name: vars(Tensor).get(name, _ABSENT) for name in names}
    _active.append(hook)
    try:
        for name in names:
            setattr(Tensor, name, _wrapper(name, getattr(Tensor, name), hook))
        yield
    finally:
        for name, value in own.items():
            if value is _ABSENT:
                if name in vars(Tensor):
                    delattr(Tensor, name)
            else:
                setattr(Tensor, name, value)
        _active.clear()


_ABSENT = object()


def _wrapper(name, original, hook):
    def method(self, *args, **kwargs):
        return hook(name, original, self, args, kwargs)

    method.__name__ = name
    method.__qualname__ = f"Tensor.{name}"
    method.__doc__ = getattr(original, "__doc__", None)
    return method


def forwarding_code():
    """The code object of the `minigrad.<name>(input, ...)` forwarders, which a caller walking the
    stack treats as part of the call (`minigrad.relu_(x)` is `x.relu_()` called by the user)."""
    return _forward("_").__code__
