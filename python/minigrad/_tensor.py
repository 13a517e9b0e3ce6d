"""`minigrad.Tensor`: the Python face of the Rust tensor.

`_C.TensorBase` (Rust) owns storage, layout, version counter, views and every kernel. This
class adds what is not an op: the `grad` property, conversions (to, float, numpy, item, ...), the
Python number and NumPy protocols, and repr. Op wrappers (math, reductions, linear algebra,
indexing, operators) are defined once each in `minigrad._ops` and registered on this class from
there; `minigrad.autograd` registers `backward` and `register_hook` (docs/architecture.md).
"""

import warnings

import numpy as _np

from . import _C
from ._creation import from_numpy
from ._device import CPU, check_device, device as _device
from ._formatting import tensor_repr, type_name


class Tensor(_C.TensorBase):
    """A strided view onto shared storage, with a version counter (see docs/tensors.md)."""

    # NumPy defers binary operators to tensors (`np.float64(2) * t` is a tensor), as with torch
    __array_priority__ = 1000

    # ----- autograd state (backward and register_hook are registered by minigrad.autograd) -----

    @property
    def grad(self):
        """The accumulated gradient (leaves, and non-leaves that called retain_grad())."""
        if not self.is_leaf and not self.retains_grad and self.requires_grad:
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

    def __array_wrap__(self, array, context=None, return_scalar=False):
        """Results of NumPy functions on tensors come back as tensors (`np.sin(t)`)."""
        return from_numpy(_np.ascontiguousarray(array) if array.ndim else _np.asarray(array))

    # ----- conversions -----

    @property
    def device(self):
        kind, index = _C.device_of(self)
        return CPU if kind == "cpu" else _device(kind, index)

    @property
    def is_cuda(self):
        return _C.device_of(self)[0] == "cuda"

    @property
    def is_cpu(self):
        return _C.device_of(self)[0] == "cpu"

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
        out = self
        if dev is not None:
            target = check_device(dev)
            out = _C.to_device(self, target.type, target.index)
        if dtype is None:
            return out.clone() if copy and out is self else out
        return _C.to_dtype_(out, dtype, copy and out is self)

    def cpu(self, memory_format=None):
        return _C.to_device(self, "cpu")

    def cuda(self, device=None, non_blocking=False, memory_format=None):
        if isinstance(device, int) and not isinstance(device, bool):
            device = f"cuda:{device}"
        target = check_device(device if device is not None else "cuda")
        if target.type != "cuda":
            raise RuntimeError("Invalid device, must be cuda device")
        return _C.to_device(self, "cuda", target.index)

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

    def half(self):
        return _C.to_dtype_(self, _C.float16)

    def bfloat16(self):
        return _C.to_dtype_(self, _C.bfloat16)

    def byte(self):
        return _C.to_dtype_(self, _C.uint8)

    def char(self):
        return _C.to_dtype_(self, _C.int8)

    def short(self):
        return _C.to_dtype_(self, _C.int16)

    def numpy(self, *, force=False):
        """Shares memory with the tensor (no copy), as torch's does for CPU tensors."""
        _check_host(self)
        return _C.to_numpy(self)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        """A DLPack capsule sharing this tensor's memory (consumers: torch, NumPy, CuPy)."""
        if dl_device is not None and tuple(dl_device) != self.__dlpack_device__():
            raise BufferError(f"minigrad: cannot export a {self.device} tensor to DLPack device {tuple(dl_device)}")
        source = self.clone() if copy else self
        return _C.to_dlpack(source)

    @property
    def __cuda_array_interface__(self):
        """CUDA Array Interface (version 2) of a cuda tensor, for CuPy, Numba and friends: shares
        memory, as torch's does. CPU tensors have none (AttributeError, so hasattr is False)."""
        if not self.is_cuda:
            raise AttributeError(
                f"Can't get __cuda_array_interface__ on non-CUDA tensor type: {self.type()} "
                "If CUDA data is required use tensor.cuda() to copy tensor to device memory."
            )
        if self.requires_grad:
            raise RuntimeError(
                "Can't get __cuda_array_interface__ on Variable that requires grad. If gradients aren't "
                "required, use var.detach() to get Variable that doesn't require grad."
            )
        typestr = {"float32": "<f4", "float64": "<f8", "int32": "<i4", "int64": "<i8", "bool": "|b1", "float16": "<f2",
                   "bfloat16": "<V2", "uint8": "|u1", "int8": "|i1", "int16": "<i2"}[str(self.dtype).split(".")[-1]]
        itemsize = self.element_size()
        strides = None if self.is_contiguous() else tuple(s * itemsize for s in self.stride())
        data_ptr = self.data_ptr() if self.numel() else 0
        return {"typestr": typestr, "shape": tuple(self.shape), "strides": strides, "data": (data_ptr, False), "version": 2}

    def __dlpack_device__(self):
        """(DLPack device type, index): (1, 0) for the CPU, (2, i) for cuda:i."""
        return _C.dlpack_device(self)

    def __array__(self, dtype=None, copy=None):
        _check_host(self)
        arr = _C.to_numpy(self)
        if dtype is not None and arr.dtype != dtype:
            return arr.astype(dtype)
        return arr.copy() if copy else arr

    def item(self):
        if self.numel() != 1:
            raise RuntimeError(f"a Tensor with {self.numel()} elements cannot be converted to Scalar")
        # read the one element directly: a view (reshape) would apply the view rules, and torch's
        # item() reads a stale multi-output view (unbind's outputs after an in-place op) fine
        value = self.tolist()
        while isinstance(value, list):
            value = value[0]
        return value

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

    def __hash__(self):
        return id(self)

    def __reduce_ex__(self, proto):
        raise TypeError("minigrad tensors are not picklable; use minigrad.save (safetensors)")


def _check_host(t):
    """NumPy reads host memory only: torch's TypeError for a tensor on a GPU."""
    kind, index = _C.device_of(t)
    if kind != "cpu":
        raise TypeError(
            f"can't convert {kind}:{index} device type tensor to numpy. Use Tensor.cpu() to copy the tensor to host memory first."
        )
