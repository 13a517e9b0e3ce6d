"""Elementwise ops: unary and binary math, comparisons, logical and bitwise ops, clamp, where,
masked_fill, fills (fill_, zero_, copy_, uniform_, normal_) and the Python operators.

Mechanical wrappers come from tables, so each op is named exactly once: a UNARY_OPS entry gives
Tensor.<name>, Tensor.<name>_, minigrad.<name> and (unless torch has it only as a method)
minigrad.<name>_; a BINARY_OPS entry gives Tensor.<name>, Tensor.<name>_ (unless NO_INPLACE),
minigrad.<name> and (INPLACE_FUNCTION) minigrad.<name>_; an OPERATORS entry gives __<op>__,
__r<op>__ and __i<op>__. The ops with extra arguments (alpha, rounding_mode, min/max, ...) are
written once below and registered the same way.
Everything calls _C (rust/py/src/elementwise.rs -> rust/core/src/ops/unary.rs, binary.rs, copy.rs).
"""

import numbers

from .. import _C
from .._formatting import type_name
from .registry import add_function, add_method, forward, function, method

# name -> kernel op name, for ops with an in-place `_` variant and a module-level function.
# (silu and gelu are kernels of `_C.unary` too, but torch has them only in nn.functional.)
UNARY_OPS = {
    "neg": "neg", "negative": "neg", "abs": "abs", "absolute": "abs", "sign": "sign",
    "exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1", "sqrt": "sqrt",
    "rsqrt": "rsqrt", "sin": "sin", "cos": "cos", "tanh": "tanh", "sigmoid": "sigmoid",
    "relu": "relu", "reciprocal": "reciprocal", "floor": "floor",
    "ceil": "ceil", "round": "round", "trunc": "trunc", "logical_not": "logical_not",
    "bitwise_not": "bitwise_not", "tan": "tan", "asin": "asin", "arcsin": "asin", "acos": "acos",
    "arccos": "acos", "atan": "atan", "arctan": "atan", "sinh": "sinh", "cosh": "cosh", "asinh": "asinh",
    "arcsinh": "asinh", "acosh": "acosh", "arccosh": "acosh", "atanh": "atanh", "arctanh": "atanh",
    "log2": "log2", "log10": "log10", "exp2": "exp2", "erf": "erf", "erfc": "erfc", "erfinv": "erfinv",
    "frac": "frac", "deg2rad": "deg2rad", "rad2deg": "rad2deg", "sinc": "sinc",
}

# Unary ops whose in-place form torch has only as a method.
METHOD_ONLY_INPLACE = {"absolute", "sign", "logical_not", "bitwise_not", "erfinv"}

BINARY_OPS = {
    "mul": "mul", "multiply": "mul", "true_divide": "div", "floor_divide": "floor_divide",
    "remainder": "remainder", "pow": "pow", "maximum": "maximum", "minimum": "minimum",
    "atan2": "atan2", "arctan2": "atan2", "hypot": "hypot", "fmod": "fmod", "copysign": "copysign",
    "xlogy": "xlogy", "logaddexp": "logaddexp", "logaddexp2": "logaddexp2",
    "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor",
    "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
    "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le", "not_equal": "ne",
}

# Binary ops torch has no in-place method for.
NO_INPLACE = {"maximum", "minimum", "logaddexp", "logaddexp2"}
# Binary ops whose `other` must be a tensor (no Python numbers).
TENSOR_OTHER = {"maximum", "minimum", "atan2", "arctan2", "hypot", "logaddexp", "logaddexp2"}
# Binary ops whose in-place form torch also has as a module function (`torch.xlogy_(x, y)`).
INPLACE_FUNCTION = {"xlogy"}
# Binary ops whose module function also takes a number as `input` (maximum/minimum take tensors only).
NUMBER_INPUT = {
    "add", "sub", "subtract", "mul", "multiply", "div", "divide", "true_divide", "floor_divide", "remainder",
    "pow", "bitwise_and", "bitwise_or", "bitwise_xor", "xlogy",
}

# Binary ops whose module function refuses two numbers (torch has no such overload for them).
NO_TWO_NUMBERS = {"remainder", "pow", "bitwise_and", "bitwise_or", "bitwise_xor", "xlogy"}

# Python operator -> kernel op name; each also gets its reflected (__r*__) and in-place (__i*__) form.
OPERATORS = {
    "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_divide",
    "mod": "remainder", "pow": "pow", "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
}


def _named(f, name):
    f.__name__, f.__qualname__ = name, f"Tensor.{name}"
    return f


# ----- generated from the tables -----

def _unary_method(name, op):
    def method(self):
        return _C.unary(self, op)

    def method_(self):
        return _C.unary_(self, op)

    _named(method, name), _named(method_, name + "_")
    method.__doc__ = f"Elementwise {name}; see torch.Tensor.{name}."
    method_.__doc__ = f"In-place {name}: writes into self through the one write path; bumps _version."
    return method, method_


def _binary_method(name, op):
    def method(self, other):
        if name in TENSOR_OTHER and not isinstance(other, _C.TensorBase):
            raise TypeError(f"{name}(): argument 'other' (position 1) must be Tensor, not {type_name(other)}")
        return _C.binary(self, other, op, None, name)

    def method_(self, other):
        if name in TENSOR_OTHER and not isinstance(other, _C.TensorBase):
            raise TypeError(f"{name}_(): argument 'other' (position 1) must be Tensor, not {type_name(other)}")
        return _C.binary_(self, other, op, None, name + "_")

    return _named(method, name), _named(method_, name + "_")


def _binary_function(name, method):
    """`minigrad.<name>(input, other)` runs `method`; like torch, arithmetic also takes a number as
    `input` (NUMBER_INPUT), while maximum/minimum take tensors only."""
    number_input = name in NUMBER_INPUT

    def function(input, other, **kwargs):
        if name in NO_TWO_NUMBERS and not isinstance(input, _C.TensorBase) and not isinstance(other, _C.TensorBase):
            # torch has a (Number, Number) overload for the arithmetic ops only
            raise TypeError(f"{name}() received an invalid combination of arguments - got ({type_name(input)}, "
                            f"{type_name(other)}), but expected one of:\n * (Tensor input, Tensor other)\n"
                            " * (Number self, Tensor other)\n * (Tensor input, Number other)\n")
        if not (isinstance(input, _C.TensorBase) or (number_input and isinstance(input, numbers.Number))):
            raise TypeError(f"{name}(): argument 'input' (position 1) must be Tensor, not {type_name(input)}")
        if name in TENSOR_OTHER and not isinstance(other, _C.TensorBase):
            raise TypeError(f"{name}(): argument 'other' (position 2) must be Tensor, not {type_name(other)}")
        return method(input, other, **kwargs)

    function.__name__ = name
    function.__doc__ = f"minigrad.{name}(input, other, ...) is input.{name}(other, ...)."
    return function


def _operator(name):
    # Rust methods of TensorBase (rust/py/src/operators.rs): installed as __<op>__ they cost
    # no Python frame, and they answer NotImplemented to wrong arguments as torch's do.
    return (getattr(_C.TensorBase, f"_op_{name}"), getattr(_C.TensorBase, f"_op_r{name}"),
            getattr(_C.TensorBase, f"_op_i{name}"))


for _name, _op in UNARY_OPS.items():
    _m, _m_ = _unary_method(_name, _op)
    add_method(_name, _m)
    add_method(_name + "_", _m_)
    forward(_name)
    if _name not in METHOD_ONLY_INPLACE:
        forward(_name + "_")

for _name, _op in BINARY_OPS.items():
    _m, _m_ = _binary_method(_name, _op)
    add_method(_name, _m)
    if _name not in NO_INPLACE:
        add_method(_name + "_", _m_)
    if _name in INPLACE_FUNCTION:
        forward(_name + "_")
    add_function(_name, _binary_function(_name, _m))

for _name in OPERATORS:
    _f, _r, _i = _operator(_name)
    add_method(f"__{_name}__", _f)
    add_method(f"__r{_name}__", _r)
    add_method(f"__i{_name}__", _i)


# ----- arithmetic with alpha / rounding_mode (not table-driven: extra arguments) -----

@method()
def add(self, other, *, alpha=1):
    return _C.binary(self, other, "add", alpha, "add")


@method()
def add_(self, other, *, alpha=1):
    return _C.binary_(self, other, "add", alpha, "add_")


@method("subtract")
def sub(self, other, *, alpha=1):
    return _C.binary(self, other, "sub", alpha, "sub")


@method("subtract_")
def sub_(self, other, *, alpha=1):
    return _C.binary_(self, other, "sub", alpha, "sub_")


@method("divide")
def div(self, other, *, rounding_mode=None):
    return _C.binary(self, other, _div_op(rounding_mode), None, "div")


@method("divide_")
def div_(self, other, *, rounding_mode=None):
    return _C.binary_(self, other, _div_op(rounding_mode), None, "div_")


for _name, _m in (("add", add), ("sub", sub), ("subtract", sub), ("div", div), ("divide", div)):
    add_function(_name, _binary_function(_name, _m))


def _div_op(rounding_mode):
    if rounding_mode is None:
        return "div"
    if not isinstance(rounding_mode, str):
        raise TypeError(
            f"div() received an invalid combination of arguments - got (rounding_mode={type_name(rounding_mode)}), "
            "but expected one of:\n * (Tensor other)\n * (Tensor other, *, str rounding_mode)\n"
            " * (Number other, *, str rounding_mode)\n"
        )
    if rounding_mode == "floor":
        return "div_floor"
    if rounding_mode == "trunc":
        return "div_trunc"
    raise RuntimeError(
        "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '" + str(rounding_mode) + "'"
    )


# ----- logical ops (tensor operands only) -----

def _tensor_other(x, name):
    if not isinstance(x, _C.TensorBase):
        raise TypeError(f"{name}(): argument 'other' (position 1) must be Tensor, not {type_name(x)}")
    return x


@method(function=True)
def logical_and(self, other):
    return _C.binary(self, _tensor_other(other, "logical_and"), "logical_and")


@method(function=True)
def logical_or(self, other):
    return _C.binary(self, _tensor_other(other, "logical_or"), "logical_or")


@method(function=True)
def logical_xor(self, other):
    return _C.binary(self, _tensor_other(other, "logical_xor"), "logical_xor")


@method()
def logical_and_(self, other):
    return _C.binary_(self, _tensor_other(other, "logical_and_"), "logical_and")


@method()
def logical_or_(self, other):
    return _C.binary_(self, _tensor_other(other, "logical_or_"), "logical_or")


@method()
def logical_xor_(self, other):
    return _C.binary_(self, _tensor_other(other, "logical_xor_"), "logical_xor")


# ----- square, clamp -----

@method(function=True)
def square(self):
    # torch's square is pow(self, 2): a bool tensor squares to int64
    return _C.binary(self, 2, "pow", None, "square")


@method(function=True)
def square_(self):
    return _C.binary_(self, 2, "pow", None, "square_")


@method("clip", function=True)
def clamp(self, min=None, max=None):
    return _C.clamp(self, min, max)


@method("clip_", function=True)
def clamp_(self, min=None, max=None):
    return _C.clamp(self, min, max, True)


def _one_bound(name, arg, value):
    """clamp_min/clamp_max take a Tensor or a Number, never None (torch's parser error)."""
    if value is None:
        raise TypeError(
            f"{name}() received an invalid combination of arguments - got (NoneType), but expected one of:\n"
            f" * (Tensor {arg})\n      didn't match because some of the arguments have invalid types: (!NoneType!)\n"
            f" * (Number {arg})\n      didn't match because some of the arguments have invalid types: (!NoneType!)\n")
    return value


@method(function=True)
def clamp_min(self, min):
    return _C.clamp(self, _one_bound("clamp_min", "min", min), None, False, "clamp_min")


@method(function=True)
def clamp_min_(self, min):
    return _C.clamp(self, _one_bound("clamp_min_", "min", min), None, True, "clamp_min")


@method(function=True)
def clamp_max(self, max):
    return _C.clamp(self, None, _one_bound("clamp_max", "max", max), False, "clamp_max")


@method(function=True)
def clamp_max_(self, max):
    return _C.clamp(self, None, _one_bound("clamp_max_", "max", max), True, "clamp_max")


# ----- where, masked_fill -----

@method()
def where(self, condition, other):
    return _C.where(condition, self, other)


# torch.where's arguments come in another order than Tensor.where's, so the function is its own wrapper.
def _where_function(condition, *args):
    # torch.where(condition) alone is nonzero(condition, as_tuple=True)
    if not args and isinstance(condition, _C.TensorBase):
        return condition.nonzero(as_tuple=True)
    if len(args) != 2:
        raise TypeError(f"where() takes 1 or 3 positional arguments but {1 + len(args)} were given")
    return _C.where(condition, *args)


_where_function.__name__ = _where_function.__qualname__ = "where"
add_function("where", _where_function)


@method(function=True)
def masked_fill(self, mask, value):
    return _C.masked_fill(self, mask, value)


@method()
def masked_fill_(self, mask, value):
    return _C.masked_fill(self, mask, value, True)


@function
def result_type(tensor1, tensor2):
    """The dtype `tensor1 op tensor2` would have (torch's promotion rules). The operands'
    shapes take no part (torch does not broadcast here): each tensor of one or more dims stands
    in as an empty 1-d view of itself, a 0-d one as itself, so nothing is computed."""
    def proxy(t):
        return t.as_strided((0,), (1,)) if isinstance(t, _C.TensorBase) and t.dim() > 0 else t

    return _C.binary(proxy(tensor1), proxy(tensor2), "add").dtype


# ----- writes: fills, copies, random fills -----

@method(function=True)
def fill_(self, value):
    return _C.fill_(self, value)


@method(function=True)
def zero_(self):
    return _C.zero_(self)


@method()
def copy_(self, src, non_blocking=False):
    return _C.copy_(self, src, non_blocking)


@method()
def uniform_(self, from_=0, to=1, *, generator=None):
    if from_ > to:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={from_:g} > to={to:g}")
    return _C.random_(self, "uniform", float(from_), float(to))


@method()
def normal_(self, mean=0, std=1, *, generator=None):
    if std < 0:
        raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
    return _C.random_(self, "normal", float(mean), float(std))


# ----- unary operators and comparisons (the binary operators come from OPERATORS above) -----

@method(function=True)
def positive(self):
    if self.dtype == _C.bool:
        raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
    return self


add_method("__pos__", positive)


@method()
def __neg__(self):
    return _C.unary(self, "neg")


@method()
def __abs__(self):
    return _C.unary(self, "abs")


@method()
def __invert__(self):
    if self.dtype.is_floating_point:
        raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
    return _C.unary(self, "bitwise_not")


for _name in ("eq", "ne", "lt", "le", "gt", "ge"):
    add_method(f"__{_name}__", getattr(_C.TensorBase, f"_op_{_name}"))
