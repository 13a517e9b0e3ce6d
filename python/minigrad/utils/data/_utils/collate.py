"""Collating samples into batches: `default_collate` (stack tensors, arrays and numbers along a new
first dimension, recursing into dicts, tuples, lists and namedtuples) and `default_convert` (turn
arrays and NumPy scalars into tensors, no batching). torch's rules, dtypes and error texts:

* tensors -> `stack(batch, 0)`; NumPy arrays -> `as_tensor` each (zero copy), then stacked;
* NumPy scalars -> `as_tensor(batch)`; Python floats -> float64; Python ints -> int64 (bools -> bool);
* str and bytes -> the list unchanged;
* a Mapping -> the same kind of mapping of collated values; a namedtuple -> the same namedtuple;
  a tuple -> a *list* of collated fields (torch's backwards compatibility), another sequence -> the
  same kind of sequence; every sample must have the same length.

`collate(batch, collate_fn_map=...)` is the engine; `default_collate_fn_map` maps element types to
the functions above, so a custom collate can extend it (`{MyType: fn, **default_collate_fn_map}`).
"""

import collections
import copy
import re

import numpy as np

__all__ = [
    "collate", "collate_float_fn", "collate_int_fn", "collate_numpy_array_fn", "collate_numpy_scalar_fn",
    "collate_str_fn", "collate_tensor_fn", "default_collate", "default_collate_err_msg_format",
    "default_collate_fn_map", "default_convert",
]

np_str_obj_array_pattern = re.compile(r"[SaUO]")

default_collate_err_msg_format = (
    "default_collate: batch must contain tensors, numpy arrays, numbers, dicts or lists; found {}"
)


def _as_tensor(data):
    from ...._creation import as_tensor
    if isinstance(data, list) and data and all(isinstance(d, np.bool_) for d in data):
        # minigrad.as_tensor cannot read a list of numpy.bool_ scalars yet; an array holds the same values
        data = np.array(data, dtype=np.bool_)
    return as_tensor(data)


def _Tensor():
    from ...._tensor import Tensor
    return Tensor


def default_convert(data):
    """NumPy arrays (not of strings or objects) and scalars become tensors, recursively through
    mappings and sequences; tensors and everything else are returned as they are."""
    elem_type = type(data)
    if isinstance(data, _Tensor()):
        return data
    if elem_type.__module__ == "numpy" and elem_type.__name__ not in ("str_", "string_"):
        if elem_type.__name__ == "ndarray" and np_str_obj_array_pattern.search(data.dtype.str) is not None:
            return data
        return _as_tensor(data)
    if isinstance(data, collections.abc.Mapping):
        try:
            if isinstance(data, collections.abc.MutableMapping):
                clone = copy.copy(data)
                clone.update({key: default_convert(data[key]) for key in data})
                return clone
            return elem_type({key: default_convert(data[key]) for key in data})
        except TypeError:  # the mapping type cannot be built from a dict
            return {key: default_convert(data[key]) for key in data}
    if isinstance(data, tuple) and hasattr(data, "_fields"):  # namedtuple
        return elem_type(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]  # torch's backwards compatibility
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        try:
            if isinstance(data, collections.abc.MutableSequence):
                clone = copy.copy(data)
                for i, d in enumerate(data):
                    clone[i] = default_convert(d)
                return clone
            return elem_type([default_convert(d) for d in data])
        except TypeError:
            return [default_convert(d) for d in data]
    return data


def collate(batch, *, collate_fn_map=None):
    """Collates a list of samples by the type of the first one (see the module docstring)."""
    elem = batch[0]
    elem_type = type(elem)

    if collate_fn_map is not None:
        if elem_type in collate_fn_map:
            return collate_fn_map[elem_type](batch, collate_fn_map=collate_fn_map)
        for collate_type in collate_fn_map:
            if isinstance(elem, collate_type):
                return collate_fn_map[collate_type](batch, collate_fn_map=collate_fn_map)

    if isinstance(elem, collections.abc.Mapping):
        try:
            if isinstance(elem, collections.abc.MutableMapping):
                clone = copy.copy(elem)
                clone.update({key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem})
                return clone
            return elem_type({key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem})
        except TypeError:
            return {key: collate([d[key] for d in batch], collate_fn_map=collate_fn_map) for key in elem}
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # namedtuple
        return elem_type(*(collate(samples, collate_fn_map=collate_fn_map) for samples in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        it = iter(batch)
        elem_size = len(next(it))
        if not all(len(e) == elem_size for e in it):
            raise RuntimeError("each element in list of batch should be of equal size")
        transposed = list(zip(*batch))
        if isinstance(elem, tuple):
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]
        try:
            if isinstance(elem, collections.abc.MutableSequence):
                clone = copy.copy(elem)
                for i, samples in enumerate(transposed):
                    clone[i] = collate(samples, collate_fn_map=collate_fn_map)
                return clone
            return elem_type([collate(samples, collate_fn_map=collate_fn_map) for samples in transposed])
        except TypeError:
            return [collate(samples, collate_fn_map=collate_fn_map) for samples in transposed]

    raise TypeError(default_collate_err_msg_format.format(elem_type))


def collate_tensor_fn(batch, *, collate_fn_map=None):
    from ...._ops.linalg import stack
    return stack(batch, 0)


def collate_numpy_array_fn(batch, *, collate_fn_map=None):
    elem = batch[0]
    if np_str_obj_array_pattern.search(elem.dtype.str) is not None:
        raise TypeError(default_collate_err_msg_format.format(elem.dtype))
    return collate([_as_tensor(b) for b in batch], collate_fn_map=collate_fn_map)


def collate_numpy_scalar_fn(batch, *, collate_fn_map=None):
    return _as_tensor(batch)


def collate_float_fn(batch, *, collate_fn_map=None):
    from ...._C import float64
    from ...._creation import tensor
    return tensor(batch, dtype=float64)


def collate_int_fn(batch, *, collate_fn_map=None):
    from ...._creation import tensor
    return tensor(batch)


def collate_str_fn(batch, *, collate_fn_map=None):
    return batch


def _default_map():
    from ...._tensor import Tensor
    return {
        Tensor: collate_tensor_fn,
        np.ndarray: collate_numpy_array_fn,
        (np.bool_, np.number, np.object_): collate_numpy_scalar_fn,
        float: collate_float_fn,
        int: collate_int_fn,
        str: collate_str_fn,
        bytes: collate_str_fn,
    }


default_collate_fn_map = _default_map()


def default_collate(batch):
    """Stacks a list of samples into a batch: see the module docstring for the rules."""
    return collate(batch, collate_fn_map=default_collate_fn_map)
