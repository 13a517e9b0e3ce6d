"""Ops that move elements: flip, rot90, roll, tril/triu (and tril_/triu_), repeat, tile. The methods
take sizes as varargs (`x.flip(0, 1)`, `x.repeat(2, 3)`) as torch's do; the functions take a
tuple. The work and every value error are in `_C` (rust/py/src/composite.rs ->
rust/core/src/ops/shape_ops.rs)."""

from .. import _C
from ._args import MISSING, int_arg, ints_arg, required, varargs_ints
from .linalg import _method_and_function, _need_tensor
from .registry import add_function, method


def _sizes_method(op, name, args, kwargs):
    """A method's `*sizes`, or `name=` given by keyword."""
    if kwargs:
        if args or set(kwargs) != {name}:
            raise TypeError(f"{op}() got an unexpected keyword argument '{next(k for k in kwargs if k != name or args)}'")
        return ints_arg(op, name, None, kwargs[name])
    if not args:
        raise TypeError(f'{op}() missing 1 required positional arguments: "{name}"')
    return varargs_ints(op, name, 1, args)


@method()
def flip(self, *dims, **kwargs):
    """A copy with the order of the elements along each of `dims` reversed."""
    return _C.flip(self, _sizes_method("flip", "dims", dims, kwargs))


def _flip_function(input, dims=MISSING):
    _need_tensor("flip", "input", 1, input)
    return _C.flip(input, ints_arg("flip", "dims", 2, required("flip", "dims", dims), single=False))


_flip_function.__name__ = _flip_function.__qualname__ = "flip"
add_function("flip", _flip_function)


@_method_and_function
def rot90(shift):
    def rot90(input, k=1, dims=(0, 1)):
        """Rotated by 90 degrees k times in the plane of `dims`, from dims[0] towards dims[1]."""
        if shift:
            _need_tensor("rot90", "input", 1, input)
        k = int_arg("rot90", "k", 1 + shift, k)
        return _C.rot90(input, k, ints_arg("rot90", "dims", 2 + shift, dims, single=False))

    return rot90


@_method_and_function
def roll(shift):
    def roll(input, shifts=MISSING, dims=()):
        """Elements shifted along `dims` (wrapping around); with no dims, over the flattened
        tensor."""
        if shift:
            _need_tensor("roll", "input", 1, input)
        shifts = ints_arg("roll", "shifts", 1 + shift, required("roll", "shifts", shifts))
        return _C.roll(input, shifts, ints_arg("roll", "dims", 2 + shift, dims))

    return roll


def _triangle(op, upper):
    @_method_and_function
    def make(shift):
        def tri(input, diagonal=0):
            if shift:
                _need_tensor(op, "input", 1, input)
            return _C.tri(input, int_arg(op, "diagonal", 1 + shift, diagonal), upper, False)

        tri.__name__ = op
        tri.__doc__ = f"The {'upper' if upper else 'lower'} triangle of the last two dims (from `diagonal`), the rest zero."
        return tri

    def tri_(self, diagonal=0):
        return _C.tri(self, int_arg(op + "_", "diagonal", 1, diagonal), upper, True)

    tri_.__name__ = op + "_"
    tri_.__doc__ = f"In-place {op}."
    method()(tri_)
    return make


tril = _triangle("tril", False)
triu = _triangle("triu", True)


@method()
def repeat(self, *repeats, **kwargs):
    """The tensor repeated `repeats[i]` times along dim i (leading dims added as needed)."""
    return _C.repeat(self, _sizes_method("repeat", "repeats", repeats, kwargs), False)


@method()
def tile(self, *dims, **kwargs):
    """repeat, with `dims` padded by leading ones to the tensor's rank."""
    return _C.repeat(self, _sizes_method("tile", "dims", dims, kwargs), True)


def _tile_function(input, dims=MISSING):
    _need_tensor("tile", "input", 1, input)
    return _C.repeat(input, ints_arg("tile", "dims", 2, required("tile", "dims", dims), single=False), True)


_tile_function.__name__ = _tile_function.__qualname__ = "tile"
add_function("tile", _tile_function)
