"""Layouts: the same view steps applied to a tensor of either library (or to a NumPy array).

A layout is a sequence of steps, plain tuples so that a failing hypothesis example prints them:

    ("offset",)                  x.select(0, 1)        (the base has an extra leading dim of 2)
    ("permute", perm)            x.permute(*perm)      (transposed when perm reverses two dims)
    ("step", d, k)               x[..., ::k, ...]      (a strided slice along dim d)
    ("expand", d, n)             x.expand(...)         (dim d, of size 1 in the base, to size n)
    ("strided", size, stride, offset)   x.as_strided(size, stride, offset)  (on a 1-D base)

`layout_base_shape(shape, layout)` is the shape of the base that `layout` turns into `shape`;
`TensorSpec(base, layout)` is a base array plus a layout: `.build(lib)` gives the tensor in either
library, with equal values, strides and storage offset."""

from dataclasses import dataclass

import numpy as np

from ._dtypes import dtype_name


def _slice_key(d, k):
    return (slice(None),) * d + (slice(None, None, k),)


def _expanded_shape(shape, d, n):
    return tuple(n if i == d else s for i, s in enumerate(shape))


def layout_base_shape(shape, layout):
    """The shape to allocate so that applying `layout` to it yields `shape`."""
    shape = list(shape)
    for step in reversed(list(layout)):
        kind = step[0]
        if kind == "step":
            _, d, k = step
            shape[d] = shape[d] * k
        elif kind == "permute":
            inverse = [0] * len(step[1])
            for i, p in enumerate(step[1]):
                inverse[p] = i
            shape = [shape[inverse[i]] for i in range(len(shape))]
        elif kind == "offset":
            shape = [2] + shape
        elif kind == "expand":
            shape[step[1]] = 1
        elif kind == "strided":
            raise ValueError("a ('strided', ...) step applies to a 1-D base of any length; it has no base shape")
        else:
            raise ValueError(f"unknown layout step {step!r}")
    return tuple(shape)


def apply_layout(t, layout):
    """Applies the view steps of `layout` to `t`, a minigrad or torch tensor; returns the view."""
    for step in layout:
        kind = step[0]
        if kind == "offset":
            t = t.select(0, 1)
        elif kind == "permute":
            t = t.permute(*step[1])
        elif kind == "step":
            t = t[_slice_key(step[1], step[2])]
        elif kind == "expand":
            t = t.expand(*_expanded_shape(tuple(t.shape), step[1], step[2]))
        elif kind == "strided":
            t = t.as_strided(tuple(step[1]), tuple(step[2]), step[3])
        else:
            raise ValueError(f"unknown layout step {step!r}")
    return t


def apply_layout_numpy(a, layout):
    """The same steps on a NumPy array (a view of it): the values the built tensor holds."""
    for step in layout:
        kind = step[0]
        if kind == "offset":
            a = a[1]
        elif kind == "permute":
            a = a.transpose(step[1])
        elif kind == "step":
            a = a[_slice_key(step[1], step[2])]
        elif kind == "expand":
            a = np.broadcast_to(a, _expanded_shape(a.shape, step[1], step[2]))
        elif kind == "strided":
            _, size, stride, offset = step
            flat = a.reshape(-1)[offset:]
            a = np.lib.stride_tricks.as_strided(flat, tuple(size), tuple(s * a.itemsize for s in stride))
        else:
            raise ValueError(f"unknown layout step {step!r}")
    return a


@dataclass(frozen=True, eq=False)
class TensorSpec:
    """A tensor described without a library: `base` values (a NumPy array) and a `layout`.

    `spec.build(lib)` makes the tensor in `lib` (minigrad or torch): `lib.from_numpy` of a copy of
    `base`, then the layout's view steps, so both libraries get the same values, strides and
    storage offset, and a fresh version counter (`_version == 0`)."""

    base: np.ndarray
    layout: tuple = ()

    def build(self, lib):
        return apply_layout(lib.from_numpy(np.array(self.base, copy=True)), self.layout)

    def numpy(self):
        return np.array(apply_layout_numpy(self.base, self.layout), copy=True)

    @property
    def shape(self):
        return apply_layout_numpy(self.base, self.layout).shape

    @property
    def dtype(self):
        return dtype_name(self.base.dtype)

    def __repr__(self):
        layout = f", layout={list(self.layout)}" if self.layout else ""
        return f"TensorSpec({self.dtype} {list(self.shape)}{layout})"


def spec_of_tensor(t):
    """The TensorSpec of a minigrad or torch tensor: its values, strides and storage offset
    (elements of the storage outside the view are zeros)."""
    values = np.array(t.detach().cpu().numpy())
    size, stride, offset = tuple(t.shape), tuple(t.stride()), t.storage_offset()
    contiguous = all(
        st == int(np.prod(size[i + 1:], dtype=np.int64)) for i, st in enumerate(stride) if size[i] > 1
    )
    if contiguous and offset == 0:
        return TensorSpec(np.ascontiguousarray(values))
    if 0 in size:
        extent = offset
        index = np.zeros(0, dtype=np.int64)
    else:
        extent = offset + 1 + sum((n - 1) * s for n, s in zip(size, stride))
        index = np.full((), offset, dtype=np.int64)
        for n, s in zip(size, stride):
            index = np.add.outer(index, np.arange(n, dtype=np.int64) * s)
        index = index.reshape(-1)
    base = np.zeros(extent, dtype=values.dtype)
    base[index] = values.reshape(-1)
    return TensorSpec(base, (("strided", size, stride, offset),))
