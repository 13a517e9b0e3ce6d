"""dtypes by name: the names are the same in both libraries (`getattr(lib, "float32")`)."""

import numpy as np

DTYPE_NAMES = ("float32", "float64", "int64", "int32", "bool")
FLOAT_DTYPE_NAMES = ("float32", "float64")
INT_DTYPE_NAMES = ("int64", "int32")

# torch.testing.assert_close's defaults: (rtol, atol) per dtype; other dtypes compare exactly
TORCH_TOLERANCES = {"float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}


def dtype_name(dt):
    """`minigrad.float32`, `torch.float32`, `np.float32` -> "float32"."""
    if isinstance(dt, (np.dtype, type)):
        return "bool" if np.dtype(dt) == np.bool_ else np.dtype(dt).name
    return str(dt).split(".")[-1]


def numpy_dtype(name):
    return np.dtype(np.bool_ if name == "bool" else name)


def is_float(name):
    return name in FLOAT_DTYPE_NAMES
