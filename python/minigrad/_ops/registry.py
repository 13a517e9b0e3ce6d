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
"""

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
