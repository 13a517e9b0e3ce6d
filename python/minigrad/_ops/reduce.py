"""Reductions and softmax (sum, mean, prod, max/min, amax/amin, argmax/argmin, var/std, norm,
logsumexp, all/any, count_nonzero, softmax/log_softmax): each written once, as the Tensor method,
and registered with its module function (`minigrad.sum(input, ...)` is `input.sum(...)`).

This file resolves torch's overloads (`max()`, `max(dim)`, `max(other)`; `var(dim, unbiased)`
vs `var(dim, correction=)`; ...) and raises torch's TypeErrors for argument mistakes; the work
and every value error happen in `_C` (rust/py/src/reduce.rs -> rust/core/src/ops/reduce.rs).
"""

import builtins
import functools
import numbers
import operator
import os
import sys
import warnings

from .. import _C
from .._tensor import Tensor
from ._args import scalar_name, wrap_dim
from .registry import _forward as _generic_forward
from .registry import add_function, function, method

# "Not passed", told apart from an explicit None (torch's overloads care: sum(dim=None,
# keepdim=True) is fine, sum(keepdim=True) is not).
_MISSING = object()


class _BadArgs(Exception):
    """Raised inside a method when no torch overload accepts the arguments."""


def _type_name(v):
    return type(v).__name__


def _arg_desc(args, kwargs):
    # torch's spelling, quirks included: "(tuple)", "(int, keepdim=int)", "(keepdim=bool, )".
    parts = [_type_name(a) for a in args] + [f"{k}={_type_name(v)}" for k, v in kwargs.items()]
    text = "".join(p + ", " for p in parts)
    return "(" + (text[:-2] if args else text) + ")"


def _overloads(*options, positional=None, function=False):
    """Decorates a method whose torch signature has these overloads: argument mistakes raise
    torch's TypeError ("received an invalid combination of arguments" or, for a single
    signature, "unexpected keyword argument" / "missing required positional arguments" / "takes
    from lo to hi positional arguments", with `positional` = (lo, hi) as torch counts them). A
    `function` (not a method) counts its input among the arguments it got."""

    def decorate(fn):
        name = fn.__name__

        @functools.wraps(fn)
        def method(self, *args, **kwargs):
            try:
                return fn(self, *args, **kwargs)
            except _BadArgs:
                pass
            except TypeError as e:
                # Only a call that Python could not bind (no frame inside `fn`) is ours to reword.
                if e.__traceback__ is None or e.__traceback__.tb_next is not None:
                    raise
                if len(options) == 1:
                    raise TypeError(_single_signature_message(name, str(e), positional, len(args))) from None
            got = _arg_desc((self, *args) if function else args, kwargs)
            lines = "".join(f" * {o}\n" for o in options)
            raise TypeError(f"{name}() received an invalid combination of arguments - got {got}, but expected one of:\n{lines}")

        return method

    return decorate


def _single_signature_message(name, python_message, positional, given):
    """Python's binding error for a one-signature method, in torch's words."""
    if "positional argument" in python_message and " were given" in python_message and positional:
        lo, hi = positional
        return f"{name}() takes from {lo} to {hi} positional arguments but {given} were given"
    if "unexpected keyword argument" in python_message:
        return f"{name}() got an unexpected keyword argument {python_message.rsplit(' ', 1)[-1]}"
    if "required positional argument" in python_message:
        missing = [w.strip("',") for w in python_message.split(":", 1)[1].replace(" and ", ",").split(",")]
        missing = [m.strip(" '") for m in missing if m.strip(" '")]
        names = ", ".join(f'"{m}"' for m in missing)
        return f"{name}() missing {len(missing)} required positional arguments: {names}"
    return f"{name}(): {python_message.split(': ', 1)[-1]}"


def _is_int(v):
    if type(v) is int:  # the common case first: the checks below cost ~0.4 us per call
        return True
    if isinstance(v, _C.TensorBase):  # a 0-d integer tensor, read with __index__ as in torch
        return v.dim() == 0 and not v.dtype.is_floating_point and not str(v.dtype).endswith("bool")
    return isinstance(v, numbers.Integral) and not isinstance(v, bool) and type(v).__name__ != "bool_"


def _dims(dim):
    """torch's `int[1]? dim`: None, an int, or a tuple/list of ints -> None or a list."""
    if dim is None:
        return None
    if type(dim) is int:
        return [dim]
    if _is_int(dim):
        return [int(dim)]
    if isinstance(dim, (tuple, list)) and builtins.all(_is_int(d) for d in dim):  # (`all` is the op, below)
        return [int(d) for d in dim]
    raise _BadArgs


def _flag(v, default=False):
    if v is _MISSING:
        return default
    if not isinstance(v, bool):
        raise _BadArgs
    return v


def _dtype(dtype):
    if dtype is not None and not isinstance(dtype, _C.dtype):
        raise _BadArgs
    return dtype


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # python/minigrad


def _warn_at_caller(message):
    """A UserWarning attributed to the first frame outside minigrad (torch's TORCH_WARN shows
    the user's line)."""
    level, frame = 2, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, UserWarning, stacklevel=level)


def _argument_error(name, arg, position, expected, value):
    return TypeError(f"{name}(): argument '{arg}' (position {position}) must be {expected}, not {_type_name(value)}")


class _NamedPair(tuple):
    """A pair with two field names, printed as torch prints its `return_types`."""

    __slots__ = ()
    _fields = ("", "")
    n_fields = n_sequence_fields = 2
    n_unnamed_fields = 0

    def __new__(cls, pair):
        return super().__new__(cls, pair)

    def __repr__(self):
        first, second = self._fields
        return f"minigrad.return_types.{type(self).__name__}(\n{first}={self[0]!r},\n{second}={self[1]!r})"


class return_types:
    """Named results like `torch.return_types`: tuples with `.values` and `.indices` (or, for
    aminmax, `.min` and `.max`)."""

    class _ValuesIndices(_NamedPair):
        __slots__ = ()
        _fields = ("values", "indices")
        values = property(operator.itemgetter(0))
        indices = property(operator.itemgetter(1))

    class max(_ValuesIndices):
        __slots__ = ()

    class min(_ValuesIndices):
        __slots__ = ()

    class aminmax(_NamedPair):
        __slots__ = ()
        _fields = ("min", "max")
        min = property(operator.itemgetter(0))
        max = property(operator.itemgetter(1))


for _cls in (return_types.max, return_types.min, return_types.aminmax):
    _cls.__module__ = "minigrad.return_types"
    _cls.__qualname__ = _cls.__name__

add_function("return_types", return_types)  # `minigrad.return_types`, like torch.return_types

_MAX_OPTIONS = ("()", "(Tensor other)", "(int dim, bool keepdim = False)")
_SUM_OPTIONS = (
    "(*, minigrad.dtype dtype = None)",
    "(tuple of ints dim, bool keepdim = False, *, minigrad.dtype dtype = None)",
)
_VAR_OPTIONS = (
    "(tuple of ints dim, bool unbiased = True, bool keepdim = False)",
    "(tuple of ints dim = None, *, Number correction = None, bool keepdim = False)",
    "(bool unbiased = True)",
)
_VAR_FUNCTION_OPTIONS = tuple(o.replace("(", "(Tensor input, ", 1).replace(", )", ")") for o in _VAR_OPTIONS)
_ALL_OPTIONS = ("()", "(tuple of ints dim = None, bool keepdim = False)", "(int dim, bool keepdim = False)")


def _sum_like(self, op, dim, keepdim, dtype):
    if dim is _MISSING:
        if keepdim is not _MISSING:
            raise _BadArgs
        return _C.reduce(self, op, None, False, _dtype(dtype))
    return _C.reduce(self, op, _dims(dim), _flag(keepdim), _dtype(dtype))


def _common_calls(op):
    """Decorates sum/mean (already wrapped by `_overloads`): the common calls, `x.sum()`,
    `x.sum(d)`, `x.sum(d, k)` and `x.sum(dim=d)` / `x.sum(dim=d, keepdim=k)` with an int `d` and
    a bool `k`, go straight to `_C.reduce`; any other call goes to the wrapped method with its
    arguments as given (so every check and error message is the same). The wrapper forwarding
    `*args, **kwargs` and the helpers cost about 0.5 us a call, a tenth of a 1e5-element sum."""

    def decorate(slow):
        reduce = _C.reduce

        @functools.wraps(slow)
        def method(self, *args, **kwargs):
            if kwargs:
                if not args and len(kwargs) <= 2:
                    dim, keepdim = kwargs.get("dim", _MISSING), kwargs.get("keepdim", False)
                    if type(dim) is int and type(keepdim) is bool and len(kwargs) == 1 + ("keepdim" in kwargs):
                        return reduce(self, op, [dim], keepdim, None)
            elif not args:
                return reduce(self, op, None, False, None)
            elif type(args[0]) is int and (len(args) == 1 or (len(args) == 2 and type(args[1]) is bool)):
                return reduce(self, op, [args[0]], len(args) == 2 and args[1], None)
            return slow(self, *args, **kwargs)

        return method

    return decorate


def _max_min(self, is_max, dim, keepdim, other):
    name = "max" if is_max else "min"
    if other is not _MISSING:
        if dim is not _MISSING or keepdim is not _MISSING or not isinstance(other, _C.TensorBase):
            raise _BadArgs
        return _C.binary(self, other, "maximum" if is_max else "minimum")
    if dim is _MISSING:
        if keepdim is not _MISSING:
            raise _BadArgs
        return _C.reduce(self, "max_all" if is_max else "min_all")
    if isinstance(dim, _C.TensorBase):
        if keepdim is not _MISSING:
            raise _argument_error(name, "dim", 1, "int", dim)
        return _C.binary(self, dim, "maximum" if is_max else "minimum")
    if not _is_int(dim):
        raise _BadArgs
    values, indices = _C.max_dim(self, int(dim), _flag(keepdim), is_max)
    return (return_types.max if is_max else return_types.min)((values, indices))


def _var_std(self, sqrt, dim, unbiased, keepdim, correction, with_mean=False):
    if with_mean and not isinstance(self, _C.TensorBase):  # the functions var_mean / std_mean
        op = "std_mean" if sqrt else "var_mean"
        raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {_type_name(self)}")
    if isinstance(dim, bool):
        # The (bool unbiased) overload: var(False).
        if unbiased is not _MISSING or keepdim is not _MISSING or correction is not _MISSING:
            raise _BadArgs
        dim, unbiased = _MISSING, dim
    if unbiased is not _MISSING:
        if correction is not _MISSING or not isinstance(unbiased, bool):
            raise _BadArgs
        if dim is _MISSING and keepdim is not _MISSING:
            raise _BadArgs
        corr = 1.0 if unbiased else 0.0
    elif correction is _MISSING or correction is None:
        corr = 1.0
    elif isinstance(correction, numbers.Real):
        corr = float(correction)
    else:
        raise _BadArgs
    dims = None if dim is _MISSING else _dims(dim)
    *outs, warning = (_C.var_mean if with_mean else _C.var)(self, dims, corr, _flag(keepdim), sqrt)
    if warning is not None:
        _warn_at_caller(warning)
    return tuple(outs) if with_mean else outs[0]


def _softmax(self, name, dim, dtype, log):
    if dim is _MISSING:
        raise TypeError(f'{name}() missing 1 required positional arguments: "dim"')
    if not _is_int(dim):
        raise _argument_error(name, "dim", 1, "int", dim)
    if dtype is not None and not isinstance(dtype, _C.dtype):
        raise _argument_error(name, "dtype", 2, "torch.dtype", dtype)
    return _C.softmax(self, int(dim), dtype, log)


@method(function=True)
@_common_calls("sum")
@_overloads(*_SUM_OPTIONS)
def sum(self, dim=_MISSING, keepdim=_MISSING, *, dtype=None):
    """Sum over `dim` (int, tuple, or None/() for all); ints and bool sum to int64."""
    return _sum_like(self, "sum", dim, keepdim, dtype)


@method(function=True)
@_common_calls("mean")
@_overloads(*_SUM_OPTIONS)
def mean(self, dim=_MISSING, keepdim=_MISSING, *, dtype=None):
    """Mean over `dim`; floating inputs (or a floating `dtype=`) only."""
    return _sum_like(self, "mean", dim, keepdim, dtype)


def _nan_args(op, dim, keepdim, dtype):
    """nansum / nanmean's one signature, `(int[1]? dim=None, bool keepdim=False, *, dtype=None)`,
    checked in torch's order and words."""
    if dim is not None and not _is_int(dim):
        if not isinstance(dim, (tuple, list)):
            raise _argument_error(op, "dim", 1, "tuple of ints", dim)
        for i, d in enumerate(dim):
            if not _is_int(d):
                raise TypeError(f"{op}(): argument 'dim' (position 1) must be tuple of ints, but found element of "
                                f"type {_type_name(d)} at pos {i}")
    if not isinstance(keepdim, bool):
        raise _argument_error(op, "keepdim", 2, "bool", keepdim)
    if dtype is not None and not isinstance(dtype, _C.dtype):
        raise TypeError(f"{op}(): argument 'dtype' must be torch.dtype, not {_type_name(dtype)}")
    return _dims(dim), keepdim, dtype


@method(function=True)
def nansum(self, dim=None, keepdim=False, *, dtype=None):
    """Sum over `dim` with every NaN counted as 0 (NansumBackward0: a NaN's gradient is 0)."""
    dims, keepdim, dtype = _nan_args("nansum", dim, keepdim, dtype)
    return _C.reduce(self, "nansum", dims, keepdim, dtype)


@method(function=True)
def nanmean(self, dim=None, keepdim=False, *, dtype=None):
    """Mean over `dim` of the elements that are not NaN, composed as ATen composes it:
    `nansum(...) / (count of non-NaN)` (DivBackward0 over NansumBackward0)."""
    dims, keepdim, dtype = _nan_args("nanmean", dim, keepdim, dtype)
    if not self.dtype.is_floating_point:
        raise RuntimeError("nanmean(): expected input to have floating point or complex dtype but got "
                           f"{scalar_name(self.dtype)}")
    if dtype is not None and not dtype.is_floating_point:
        raise RuntimeError("nanmean(): could not infer output dtype. Optional dtype must be either a floating point "
                           f"or complex dtype. Got: {scalar_name(dtype)}")
    factor = _C.reduce(self.isnan().logical_not_(), "sum", dims, keepdim)
    return _C.reduce(self, "nansum", dims, keepdim, dtype).div(factor)


@method(function=True)
@_overloads("(*, minigrad.dtype dtype = None)", "(int dim, bool keepdim = False, *, minigrad.dtype dtype = None)")
def prod(self, dim=_MISSING, keepdim=_MISSING, *, dtype=None):
    """Product of all elements, or along one int `dim`."""
    if dim is _MISSING:
        if keepdim is not _MISSING:
            raise _BadArgs
        return _C.prod(self, None, False, _dtype(dtype))
    if not _is_int(dim):
        raise _BadArgs
    return _C.prod(self, int(dim), _flag(keepdim), _dtype(dtype))


@method(function=True)
@_overloads(*_MAX_OPTIONS)
def max(self, dim=_MISSING, keepdim=_MISSING, *, other=_MISSING):
    """max() -> 0-d; max(dim, keepdim) -> (values, indices); max(other) -> maximum."""
    return _max_min(self, True, dim, keepdim, other)


@method(function=True)
@_overloads(*_MAX_OPTIONS)
def min(self, dim=_MISSING, keepdim=_MISSING, *, other=_MISSING):
    """min() -> 0-d; min(dim, keepdim) -> (values, indices); min(other) -> minimum."""
    return _max_min(self, False, dim, keepdim, other)


@method(function=True)
@_overloads("(tuple of ints dim = (), bool keepdim = False)", positional=(0, 2))
def amax(self, dim=(), keepdim=False):
    """Maximum over `dim` (int or tuple; () means all), NaN-propagating, no indices."""
    return _amax_amin(self, "amax", dim, keepdim)


@method(function=True)
@_overloads("(tuple of ints dim = (), bool keepdim = False)", positional=(0, 2))
def amin(self, dim=(), keepdim=False):
    """Minimum over `dim` (int or tuple; () means all), NaN-propagating, no indices."""
    return _amax_amin(self, "amin", dim, keepdim)


@method(function=True)
@_overloads("(int dim = None, bool keepdim = False)", positional=(0, 2))
def argmax(self, dim=None, keepdim=False):
    """Index of the first maximum along `dim`, or the flat index when dim is None."""
    return _arg(self, "argmax", dim, keepdim)


@method(function=True)
@_overloads("(int dim = None, bool keepdim = False)", positional=(0, 2))
def argmin(self, dim=None, keepdim=False):
    """Index of the first minimum along `dim`, or the flat index when dim is None."""
    return _arg(self, "argmin", dim, keepdim)


@method(function=True)
@_overloads(*_VAR_OPTIONS)
def var(self, dim=_MISSING, unbiased=_MISSING, keepdim=_MISSING, *, correction=_MISSING):
    """Variance over `dim` with `correction` (default 1; legacy `unbiased`)."""
    return _var_std(self, False, dim, unbiased, keepdim, correction)


@method(function=True)
@_overloads(*_VAR_OPTIONS)
def std(self, dim=_MISSING, unbiased=_MISSING, keepdim=_MISSING, *, correction=_MISSING):
    """Standard deviation over `dim` with `correction` (default 1; legacy `unbiased`)."""
    return _var_std(self, True, dim, unbiased, keepdim, correction)


@method()
def aminmax(self, *args, dim=None, keepdim=False):
    """(min, max) over `dim` (None: every element) in one call, one node for both
    (AminmaxBackward0: each result's gradient shared among its ties)."""
    if args:  # keyword-only, in torch's words
        n = len(args)
        raise TypeError(f"aminmax() takes 0 positional arguments but {n} {'was' if n == 1 else 'were'} given")
    return _aminmax(self, dim, keepdim)


def _aminmax(x, dim, keepdim):
    if dim is not None and not _is_int(dim):
        raise TypeError(f"aminmax(): argument 'dim' must be int, not {_type_name(dim)}")
    if not isinstance(keepdim, bool):
        raise TypeError(f"aminmax(): argument 'keepdim' must be bool, not {_type_name(keepdim)}")
    return return_types.aminmax(_C.aminmax(x, None if dim is None else int(dim), keepdim))


def _aminmax_function(input, *, dim=None, keepdim=False):
    if not isinstance(input, _C.TensorBase):
        raise TypeError(f"aminmax(): argument 'input' (position 1) must be Tensor, not {_type_name(input)}")
    return _aminmax(input, dim, keepdim)


_aminmax_function.__name__ = _aminmax_function.__qualname__ = "aminmax"
add_function("aminmax", _aminmax_function)


@function
@_overloads(*_VAR_FUNCTION_OPTIONS, function=True)
def var_mean(input, dim=_MISSING, unbiased=_MISSING, keepdim=_MISSING, *, correction=_MISSING):
    """(variance, mean) over `dim`, one node for both (VarMeanBackward0); arguments as `var`'s."""
    return _var_std(input, False, dim, unbiased, keepdim, correction, with_mean=True)


@function
@_overloads(*_VAR_FUNCTION_OPTIONS, function=True)
def std_mean(input, dim=_MISSING, unbiased=_MISSING, keepdim=_MISSING, *, correction=_MISSING):
    """(standard deviation, mean) over `dim`, one node for both (StdMeanBackward0)."""
    return _var_std(input, True, dim, unbiased, keepdim, correction, with_mean=True)


@method(function=True)
def norm(self, p="fro", dim=None, keepdim=False, dtype=None):
    """torch.norm: vector norms of order p (2, 1, inf, -inf, 0, any number; 'fro' over at
    most two dims is the 2-norm) over `dim` (None: all)."""
    dims = None if dim is None else ([int(dim)] if _is_int(dim) else [int(d) for d in dim])
    if isinstance(p, str):
        if p == "fro" and (dim is None or _is_int(dim) or len(dims) <= 2):
            return _C.vector_norm(self, 2.0, dims, keepdim, dtype)
        return _matrix_norm(self, p, list(range(self.dim())) if dims is None else dims, keepdim, dtype)
    return _C.vector_norm(self, 2.0 if p is None else float(p), dims, keepdim, dtype)


@method(function=True)
@_overloads("(tuple of ints dim, bool keepdim = False)", positional=(1, 2))
def logsumexp(self, dim=_MISSING, keepdim=False):
    """log(sum(exp(x))) over `dim`, computed stably; integers compute in float32."""
    if dim is _MISSING:
        raise TypeError('logsumexp() missing 1 required positional arguments: "dim"')
    try:
        dims = _dims(dim)
    except _BadArgs:
        dims = None
    if dims is None:
        raise _argument_error("logsumexp", "dim", 1, "tuple of ints", dim)
    if not isinstance(keepdim, bool):
        raise _argument_error("logsumexp", "keepdim", 2, "bool", keepdim)
    return _C.reduce(self, "logsumexp", dims, keepdim)


@method(function=True)
@_overloads(*_ALL_OPTIONS)
def all(self, dim=None, keepdim=False):
    """True where every element along `dim` is nonzero (dim=() reduces nothing)."""
    return _C.reduce(self, "all", _dims(dim), _flag(keepdim))


@method(function=True)
@_overloads(*_ALL_OPTIONS)
def any(self, dim=None, keepdim=False):
    """True where some element along `dim` is nonzero (dim=() reduces nothing)."""
    return _C.reduce(self, "any", _dims(dim), _flag(keepdim))


@method(function=True)
@_overloads("(int dim = None)", "(tuple of ints dim)")
def count_nonzero(self, dim=None, *more_dims):
    """Number of nonzero elements over `dim` (None or (): all; also count_nonzero(0, 1)),
    as int64."""
    if more_dims:
        dim = (dim, *more_dims)
    return _C.reduce(self, "count_nonzero", _dims(dim))


@method()
@_overloads("(int dim, minigrad.dtype dtype = None)", positional=(1, 2))
def softmax(self, dim=_MISSING, dtype=None):
    """exp(x) / sum(exp(x)) along `dim`; `dtype` casts the input first."""
    if type(dim) is int and dtype is None:  # the common call, without the checks' ~0.3 us
        return _C.softmax(self, dim, None, False)
    return _softmax(self, "softmax", dim, dtype, False)


@method()
@_overloads("(int dim, minigrad.dtype dtype = None)", positional=(1, 2))
def log_softmax(self, dim=_MISSING, dtype=None):
    """x - logsumexp(x) along `dim`; `dtype` casts the input first."""
    if type(dim) is int and dtype is None:  # the common call, without the checks' ~0.3 us
        return _C.softmax(self, dim, None, True)
    return _softmax(self, "log_softmax", dim, dtype, True)


def _direct_function(name, log):
    """`minigrad.softmax` / `minigrad.log_softmax`: the common call (a Tensor and an int dim,
    positionally or as `dim=`) goes straight to `_C`, as the method does for it; any other call
    takes the generic forwarder (`minigrad.<name>(input, ...)` is `input.<name>(...)`), with its
    checks and torch's errors. The forwarder, the overload wrapper and the method cost ~0.9 us a
    call, which at 1e3 elements is a third of the op (softmax 1e3: 2.1 us against torch's 1.8)."""
    generic = _generic_forward(name)

    def function(*args, **kwargs):
        if not kwargs:
            if len(args) != 2:
                return generic(*args, **kwargs)
            input, dim = args
        elif len(args) == 1 and len(kwargs) == 1 and "dim" in kwargs:
            input, dim = args[0], kwargs["dim"]
        else:
            return generic(*args, **kwargs)
        if type(dim) is int and type(input) is Tensor:
            return _C.softmax(input, dim, None, log)
        return generic(*args, **kwargs)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = generic.__doc__
    return function


add_function("softmax", _direct_function("softmax", False))
add_function("log_softmax", _direct_function("log_softmax", True))


def _amax_amin(self, name, dim, keepdim):
    try:
        dims = _dims(dim)
    except _BadArgs:
        raise _argument_error(name, "dim", 1, "tuple of ints", dim) from None
    if not isinstance(keepdim, bool):
        raise _argument_error(name, "keepdim", 2, "bool", keepdim)
    return _C.reduce(self, name, [] if dims is None else dims, keepdim)


def _arg(self, name, dim, keepdim):
    if dim is not None and not _is_int(dim):
        raise _argument_error(name, "dim", 1, "int", dim)
    if not isinstance(keepdim, bool):
        raise _argument_error(name, "keepdim", 2, "bool", keepdim)
    return _C.argmax(self, None if dim is None else int(dim), keepdim, name == "argmax")


def _matrix_norm(self, ord, dims, keepdim, dtype):
    """linalg.matrix_norm's checks, in torch's order; only the nuclear norm would pass them."""
    name = "linalg.matrix_norm"
    if ord not in ("fro", "nuc"):
        raise RuntimeError(f"{name}: Order {ord} not supported.")
    if self.dim() < 2:
        raise RuntimeError(f"{name}: The input tensor A must have at least 2 dimensions.")
    if not self.dtype.is_floating_point:
        raise RuntimeError(f"{name}: Expected a floating point or complex tensor as input. Got {scalar_name(self.dtype)}")
    if len(dims) != 2:
        raise RuntimeError(f"{name}: dim must be a 2-tuple. Got " + " ".join(str(d) for d in dims))
    wrapped = [wrap_dim(d, self.dim()) for d in dims]
    if wrapped[0] == wrapped[1]:
        raise RuntimeError(f"{name}: dims must be different. Got ({wrapped[0]}, {wrapped[1]})")
    raise NotImplementedError("minigrad does not implement the nuclear norm (norm(p='nuc')); it needs an SVD")


