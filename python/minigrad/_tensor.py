"""`minigrad.Tensor`: the Python face of the Rust tensor.

`_C.TensorBase` (Rust) owns storage, layout, version counter, views and every kernel. This
class adds the Pythonic surface: methods named as in torch, operators, conversions, repr.
Elementwise methods are generated from one table, so each op is named exactly once.
Other op families arrive as mixins (reductions, linear algebra, indexing), one file each.
"""

import numpy as _np

from . import _C
from ._device import CPU, check_device
from ._formatting import tensor_repr, type_name
from ._mixins import MIXINS

# name -> kernel op name, for ops with an in-place `_` variant and a module-level function.
# (silu and gelu are kernels of `_C.unary` too, but torch has them only in nn.functional.)
UNARY_OPS = {
    "neg": "neg", "negative": "neg", "abs": "abs", "absolute": "abs", "sign": "sign",
    "exp": "exp", "log": "log", "log1p": "log1p", "expm1": "expm1", "sqrt": "sqrt",
    "rsqrt": "rsqrt", "sin": "sin", "cos": "cos", "tanh": "tanh", "sigmoid": "sigmoid",
    "relu": "relu", "reciprocal": "reciprocal", "floor": "floor",
    "ceil": "ceil", "round": "round", "trunc": "trunc", "logical_not": "logical_not",
    "bitwise_not": "bitwise_not",
}

BINARY_OPS = {
    "mul": "mul", "multiply": "mul", "true_divide": "div", "floor_divide": "div_floor",
    "remainder": "remainder", "pow": "pow", "maximum": "maximum", "minimum": "minimum",
    "bitwise_and": "bitwise_and", "bitwise_or": "bitwise_or", "bitwise_xor": "bitwise_xor",
    "eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge",
    "greater": "gt", "greater_equal": "ge", "less": "lt", "less_equal": "le", "not_equal": "ne",
}

# Python operator -> kernel op name; each also gets its reflected (__r*__) and in-place (__i*__) form.
OPERATORS = {
    "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "div_floor",
    "mod": "remainder", "pow": "pow", "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
}


def _named(f, name):
    f.__name__, f.__qualname__ = name, f"Tensor.{name}"
    return f


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
        return _C.binary_(self, other, op, None, name + "_")

    return _named(method, name), _named(method_, name + "_")


# Binary ops torch has no in-place method for.
NO_INPLACE = {"maximum", "minimum"}
# Binary ops whose `other` must be a tensor (no Python numbers).
TENSOR_OTHER = {"maximum", "minimum"}


def _not_implemented_on_type_error(f):
    """torch's operators answer NotImplemented to operands they cannot take, so Python can try the
    other operand (and words the final TypeError itself)."""

    def wrapper(self, other):
        try:
            return f(self, other)
        except TypeError:
            return NotImplemented

    wrapper.__name__ = f.__name__
    return wrapper


def _operator(op):
    def forward(self, other):
        return _C.binary(self, other, op)

    def reflected(self, other):
        if op == "div":
            # torch computes `number / x` as `x.reciprocal() * number`
            return _C.binary(_C.unary(self, "reciprocal"), other, "mul")
        return _C.binary(other, self, op)

    def inplace(self, other):
        return _C.binary_(self, other, op)

    return tuple(_not_implemented_on_type_error(f) for f in (forward, reflected, inplace))


class Tensor(*MIXINS, _C.TensorBase):
    """A strided view onto shared storage, with a version counter (see docs/tensors.md)."""

    # NumPy defers binary operators to tensors (`np.float64(2) * t` is a tensor), as with torch
    __array_priority__ = 1000

    # ----- autograd -----

    @property
    def grad(self):
        """The accumulated gradient (leaves, and non-leaves that called retain_grad())."""
        if not self.is_leaf and not self.retains_grad and self.requires_grad:
            import warnings
            warnings.warn(
                "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its .grad attribute "
                "won't be populated during autograd.backward(). If you indeed want the .grad field to be populated "
                "for a non-leaf Tensor, use .retain_grad() on the non-leaf Tensor. If you access the non-leaf Tensor "
                "by mistake, make sure you access the leaf Tensor instead. See github.com/pytorch/pytorch/pull/30531 "
                "for more information.",
                UserWarning, stacklevel=2,
            )
        return self._grad

    @grad.setter
    def grad(self, value):
        self._grad = value

    @grad.deleter
    def grad(self):
        self._grad = None

    def backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
        """Accumulates d(self)/d(leaf) into every leaf's `.grad` (see minigrad.autograd.backward)."""
        from . import autograd
        autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)

    def register_hook(self, hook):
        """`hook(grad)` runs when this tensor's gradient is computed; it may return a new one."""
        from .autograd.graph import RemovableHandle
        return RemovableHandle(self, self._register_hook(hook))

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """Results of NumPy functions on tensors come back as tensors (`np.sin(t)`)."""
        from ._creation import from_numpy

        return from_numpy(_np.ascontiguousarray(array) if array.ndim else _np.asarray(array))

    # ----- arithmetic with alpha / rounding_mode (not table-driven: extra arguments) -----

    def add(self, other, *, alpha=1):
        return _C.binary(self, other, "add", alpha, "add")

    def add_(self, other, *, alpha=1):
        return _C.binary_(self, other, "add", alpha, "add_")

    def sub(self, other, *, alpha=1):
        return _C.binary(self, other, "sub", alpha, "sub")

    def sub_(self, other, *, alpha=1):
        return _C.binary_(self, other, "sub", alpha, "sub_")

    subtract, subtract_ = sub, sub_

    def div(self, other, *, rounding_mode=None):
        return _C.binary(self, other, _div_op(rounding_mode), None, "div")

    def div_(self, other, *, rounding_mode=None):
        return _C.binary_(self, other, _div_op(rounding_mode), None, "div_")

    divide, divide_ = div, div_

    def logical_and(self, other):
        return _C.binary(self, _tensor_other(other, "logical_and"), "logical_and")

    def logical_or(self, other):
        return _C.binary(self, _tensor_other(other, "logical_or"), "logical_or")

    def logical_xor(self, other):
        return _C.binary(self, _tensor_other(other, "logical_xor"), "logical_xor")

    def logical_and_(self, other):
        return _C.binary_(self, _tensor_other(other, "logical_and_"), "logical_and")

    def logical_or_(self, other):
        return _C.binary_(self, _tensor_other(other, "logical_or_"), "logical_or")

    def logical_xor_(self, other):
        return _C.binary_(self, _tensor_other(other, "logical_xor_"), "logical_xor")

    def square(self):
        # torch's square is pow(self, 2): a bool tensor squares to int64
        return _C.binary(self, 2, "pow", None, "square")

    def square_(self):
        return _C.binary_(self, 2, "pow", None, "square_")

    def clamp(self, min=None, max=None):
        return _C.clamp(self, min, max)

    def clamp_(self, min=None, max=None):
        return _C.clamp(self, min, max, True)

    clip, clip_ = clamp, clamp_

    def clamp_min(self, min):
        return _C.clamp(self, min, None, False, "clamp_min")

    def clamp_min_(self, min):
        return _C.clamp(self, min, None, True, "clamp_min")

    def clamp_max(self, max):
        return _C.clamp(self, None, max, False, "clamp_max")

    def clamp_max_(self, max):
        return _C.clamp(self, None, max, True, "clamp_max")

    def where(self, condition, other):
        return _C.where(condition, self, other)

    def masked_fill(self, mask, value):
        return _C.masked_fill(self, mask, value)

    def masked_fill_(self, mask, value):
        return _C.masked_fill(self, mask, value, True)

    def fill_(self, value):
        return _C.fill_(self, value)

    def zero_(self):
        return _C.zero_(self)

    def copy_(self, src, non_blocking=False):
        return _C.copy_(self, src, non_blocking)

    def uniform_(self, from_=0, to=1, *, generator=None):
        if from_ > to:
            raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={from_:g} > to={to:g}")
        return _C.random_(self, "uniform", float(from_), float(to))

    def normal_(self, mean=0, std=1, *, generator=None):
        if std < 0:
            raise RuntimeError(f"normal expects std >= 0.0, but found std {std:g}")
        return _C.random_(self, "normal", float(mean), float(std))

    # ----- transposes (properties, with torch's deprecation warnings) -----

    @property
    def T(self):
        n = self.dim()
        if n != 2 and n != 0:
            _warn_once(
                "The use of `x.T` on tensors of dimension other than 2 to reverse their shape is deprecated and it "
                "will throw an error in a future release. Consider `x.mT` to transpose batches of matrices or "
                "`x.permute(*minigrad.arange(x.ndim - 1, -1, -1))` to reverse the dimensions of a tensor."
            )
        if n == 0:
            _warn_once("Tensor.T is deprecated on 0-D tensors. This function is the identity in these cases.")
        return self.permute(tuple(range(n - 1, -1, -1)))

    @property
    def mT(self):
        if self.dim() == 0:
            _warn_once("Tensor.mT is deprecated on 0-D tensors. This function is the identity in these cases.")
            return self
        if self.dim() < 2:
            raise RuntimeError(f"tensor.mT is only supported on matrices or batches of matrices. Got {self.dim()}-D tensor.")
        return self.transpose(-2, -1)

    # ----- conversions -----

    @property
    def device(self):
        return CPU

    @property
    def is_cuda(self):
        return False

    def to(self, *args, **kwargs):
        """to(dtype) / to(device) / to(other) / to(device, dtype), as torch.Tensor.to."""
        dtype, dev, copy = kwargs.pop("dtype", None), kwargs.pop("device", None), kwargs.pop("copy", False)
        kwargs.pop("non_blocking", None)
        if kwargs:
            raise TypeError(f"to() got an unexpected keyword argument '{next(iter(kwargs))}'")
        for a in args:
            if isinstance(a, _C.dtype):
                dtype = a
            elif isinstance(a, _C.TensorBase):
                dtype, dev = a.dtype, a.device
            elif a is not None:
                dev = a
        check_device(dev)
        if dtype is None:
            return self.clone() if copy else self
        return _C.to_dtype_(self, dtype, copy)

    def cpu(self):
        return self

    def cuda(self, device=None):
        check_device(device if device is not None else "cuda")

    def type_as(self, other):
        if not isinstance(other, _C.TensorBase):
            raise TypeError(f"type_as(): argument 'other' (position 1) must be Tensor, not {type_name(other)}")
        return _C.to_dtype_(self, other.dtype)

    def float(self):
        return _C.to_dtype_(self, _C.float32)

    def double(self):
        return _C.to_dtype_(self, _C.float64)

    def long(self):
        return _C.to_dtype_(self, _C.int64)

    def int(self):
        return _C.to_dtype_(self, _C.int32)

    def bool(self):
        return _C.to_dtype_(self, _C.bool)

    def numpy(self, *, force=False):
        """Shares memory with the tensor (no copy), as torch's does for CPU tensors."""
        return _C.to_numpy(self)

    def __array__(self, dtype=None, copy=None):
        arr = _C.to_numpy(self)
        if dtype is not None and arr.dtype != dtype:
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        return self.reshape(()).tolist()

    def __bool__(self):
        if self.numel() == 0:
            raise RuntimeError("Boolean value of Tensor with no values is ambiguous")
        if self.numel() != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(self.item())

    def _python_scalar(self):
        if self.numel() != 1:
            raise ValueError("only one element tensors can be converted to Python scalars")
        return self.item()

    def __float__(self):
        return float(self._python_scalar())

    def __int__(self):
        return int(self._python_scalar())

    def __complex__(self):
        return complex(self._python_scalar())

    def __index__(self):
        if self.dtype.is_floating_point or self.numel() != 1:
            raise TypeError("only integer tensors of a single element can be converted to an index")
        return int(self.item())

    def __iter__(self):
        if self.dim() == 0:
            raise TypeError("iteration over a 0-d tensor")
        return iter(self.unbind(0))

    def __repr__(self):
        return tensor_repr(self, type(self) is Tensor)

    def __format__(self, spec):
        if self.dim() == 0 and type(self) is Tensor:
            return self.item().__format__(spec)
        return object.__format__(self, spec)

    # ----- operators (the table below adds add/sub/mul/... with reflected and in-place forms) -----

    def __neg__(self):
        return _C.unary(self, "neg")

    def positive(self):
        if self.dtype == _C.bool:
            raise RuntimeError("The `+` operator, on a bool tensor is not supported.")
        return self

    __pos__ = positive

    def __abs__(self):
        return _C.unary(self, "abs")

    def __invert__(self):
        if self.dtype.is_floating_point:
            raise TypeError("~ (operator.invert) is only implemented on integer and Boolean-type tensors")
        return _C.unary(self, "bitwise_not")

    @_not_implemented_on_type_error
    def __eq__(self, other):
        return _C.binary(self, other, "eq")

    @_not_implemented_on_type_error
    def __ne__(self, other):
        return _C.binary(self, other, "ne")

    @_not_implemented_on_type_error
    def __lt__(self, other):
        return _C.binary(self, other, "lt")

    @_not_implemented_on_type_error
    def __le__(self, other):
        return _C.binary(self, other, "le")

    @_not_implemented_on_type_error
    def __gt__(self, other):
        return _C.binary(self, other, "gt")

    @_not_implemented_on_type_error
    def __ge__(self, other):
        return _C.binary(self, other, "ge")

    def __hash__(self):
        return id(self)

    def __reduce_ex__(self, proto):
        raise TypeError("minigrad tensors are not picklable; use minigrad.save (safetensors)")


_WARNED = set()


def _warn_once(message):
    """torch's TORCH_WARN_ONCE: a UserWarning the first time in the process."""
    if message not in _WARNED:
        _WARNED.add(message)
        import warnings

        warnings.warn(message, UserWarning, stacklevel=3)


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


def _tensor_other(x, name):
    if not isinstance(x, _C.TensorBase):
        raise TypeError(f"{name}(): argument 'other' (position 1) must be Tensor, not {type_name(x)}")
    return x


for _name, _op in UNARY_OPS.items():
    _m, _m_ = _unary_method(_name, _op)
    setattr(Tensor, _name, _m)
    setattr(Tensor, _name + "_", _m_)

for _name, _op in BINARY_OPS.items():
    _m, _m_ = _binary_method(_name, _op)
    setattr(Tensor, _name, _m)
    if _name not in NO_INPLACE:
        setattr(Tensor, _name + "_", _m_)

for _name, _op in OPERATORS.items():
    _f, _r, _i = _operator(_op)
    setattr(Tensor, f"__{_name}__", _f)
    setattr(Tensor, f"__r{_name}__", _r)
    setattr(Tensor, f"__i{_name}__", _i)

_np  # numpy is imported so that `numpy()` works in frozen environments too
