"""Views torch builds from other views, built the same way here so the graph shows torch's nodes:
`movedim`/`moveaxis` (a permute: PermuteBackward0), `swapdims` (transpose; `swapdims_`:
transpose_, TransposeBackward1), `broadcast_to` (expand), `unflatten` (a view: ViewBackward0),
`tensor_split` and `hsplit`/`vsplit`/`dsplit` (slices: one SliceBackward0 per piece), `meshgrid`
(a view and an expand per grid), and `broadcast_shapes` (the shape arithmetic alone). Argument
checks and errors are torch's (ATen's TensorShape.cpp, torch._refs), in its words.
"""

import warnings
from collections.abc import Sequence

from .. import _C
from .._size import Size
from ._args import int_arg, ints_arg, is_int, scalar_name, tensor_arg, type_name, wrap_dim
from .registry import add_function, function, method


def _fit(*values):
    """The ints unchanged, or torch's refusal of one past int64 (its parser's, before any check)."""
    for v in values:
        for x in v if isinstance(v, list) else [v]:
            if not -2**63 <= x < 2**63:
                raise OverflowError("Overflow when unpacking long long")
            if x == -2**63 and isinstance(v, list):  # a SymInt list reserves it
                raise RuntimeError(f"IntArrayRef contains an int that cannot be represented as a SymInt: {x}")
    return values if len(values) > 1 else values[0]


# Most pieces tensor_split makes: each is a tensor object (a few hundred bytes), so 2^31 of them
# would not fit in memory either way.
_MOST_PIECES = 2**31


def _listed(values):
    return "[" + ", ".join(str(v) for v in values) + "]"


@method("moveaxis", function=True)
def movedim(self, source, destination):
    """Dims `source` moved to positions `destination`, the others keeping their order."""
    op = "movedim"
    # torch's two overloads: (int, int) or (tuple of ints, tuple of ints), never one of each
    if is_int(source) and is_int(destination):
        src, dst = ([v] for v in _fit(int(source), int(destination)))
    elif isinstance(source, (list, tuple)) and isinstance(destination, (list, tuple)):
        src, dst = ints_arg(op, "source", 1, source, single=False), ints_arg(op, "destination", 2, destination, single=False)
        src, dst = _fit(src, dst)
    else:
        raise TypeError(
            f"movedim() received an invalid combination of arguments - got ({type_name(source)}, "
            f"{type_name(destination)}), but expected one of: (int source, int destination), "
            "(tuple of ints source, tuple of ints destination)"
        )
    if len(src) != len(dst):
        raise RuntimeError(
            f"movedim: Invalid source or destination dims: source ({_listed(src)} dims) should contain the same "
            f"number of dims as destination ({_listed(dst)} dims)"
        )
    n = self.dim()
    wrapped_src, wrapped_dst = [wrap_dim(d, n) for d in src], [wrap_dim(d, n) for d in dst]
    if n == 0:
        return self.permute(())
    for name, given, wrapped in (("source", src, wrapped_src), ("destination", dst, wrapped_dst)):
        if len(set(wrapped)) != len(wrapped):
            raise RuntimeError(f"movedim: repeated dim in `{name}` ({_listed(given)})")
    order = [-1] * n
    for s, d in zip(wrapped_src, wrapped_dst):
        order[d] = s
    rest = iter(d for d in range(n) if d not in wrapped_src)
    order = [o if o != -1 else next(rest) for o in order]
    return self.permute(order)


@method(function=True)
def swapdims(self, dim0, dim1):
    """`transpose(dim0, dim1)` under NumPy's other name."""
    return self.transpose(*_fit(int_arg("swapdims", "dim0", 1, dim0), int_arg("swapdims", "dim1", 2, dim1)))


@method()
def broadcast_to(self, *args, size=None):
    """`self` expanded to `size` (a view: ExpandBackward0; -1 keeps a dim's size)."""
    if size is not None:
        if args:
            raise TypeError("broadcast_to() got multiple values for argument 'size'")
        if not isinstance(size, (tuple, list)):  # by keyword, one int is not a size
            raise TypeError(f"broadcast_to(): argument 'size' must be tuple of ints, not {type_name(size)}")
        args = (size,)
    if not args:
        raise TypeError('broadcast_to() missing 1 required positional arguments: "size"')
    if len(args) > 1 and isinstance(args[0], bool):  # torch's parser takes varargs after an int only
        raise TypeError(f"broadcast_to() takes 1 positional argument but {len(args)} were given")
    for i, v in enumerate(args if len(args) > 1 else ()):  # every element's type before any value
        if not (is_int(v) or isinstance(v, (bool, _C.TensorBase))):
            raise TypeError(
                f"broadcast_to(): argument 'size' failed to unpack the object at pos {i + 1} with error "
                f'"type must be tuple of ints,but got {type_name(v)}"'
            )
    return self.expand(*args)  # torch's parser reads broadcast_to's size as expand's


def _broadcast_to_function(input, size):
    tensor_arg("broadcast_to", "input", 1, input)
    if not isinstance(size, (tuple, list)):  # the function takes no single int (the method does)
        raise TypeError(f"broadcast_to(): argument 'size' (position 2) must be tuple of ints, not {type_name(size)}")
    return input.expand(size)


_broadcast_to_function.__name__ = _broadcast_to_function.__qualname__ = "broadcast_to"
add_function("broadcast_to", _broadcast_to_function)


def _decided(answer):
    """A size comparison must give a bool (a tensor among the sizes gives a tensor: torch's
    `guard_or_false` refuses it with this AssertionError)."""
    if not isinstance(answer, bool):
        raise AssertionError(f"Expected bool, got {type(answer)}")
    return answer


@function
def broadcast_shapes(*shapes):
    """The shape tensors of these shapes would broadcast to, computed from the shapes alone (an
    int is a 1-d shape, None is skipped), as torch's `_broadcast_shapes` computes it."""
    shapes = tuple((s,) if isinstance(s, int) else s for s in shapes if s is not None)
    if not shapes:
        return Size([])
    for shape in shapes:
        if not isinstance(shape, Sequence):
            raise RuntimeError(f"Input shapes should be of type ints, a tuple of ints, or a list of ints, got {shape}")
    common = [1] * max(len(shape) for shape in shapes)
    for arg, shape in enumerate(shapes):
        for i in range(-1, -1 - len(shape), -1):
            if _decided(shape[i] == common[i]):
                continue
            if _decided(common[i] == 1):
                if shape[i] < 0:
                    raise ValueError("Attempting to broadcast a dimension with negative length!")
                common[i] = shape[i]
            if not _decided(shape[i] == 1) and not _decided(common[i] == shape[i]):
                raise RuntimeError(f"Attempting to broadcast a dimension of length {shape[i]} at {i}! Mismatching "
                                   f"argument at index {arg} had {shape}; but expected shape should be broadcastable "
                                   f"to {common}")
    return Size(common)


@method()
def swapdims_(self, dim0, dim1):
    """`transpose_(dim0, dim1)` under NumPy's other name (TransposeBackward1)."""
    return self.transpose_(*_fit(int_arg("swapdims_", "dim0", 1, dim0), int_arg("swapdims_", "dim1", 2, dim1)))


@method(function=True)
def unflatten(self, dim, sizes):
    """Dim `dim` viewed as `sizes` (one of them may be -1)."""
    op = "unflatten"
    dim = int_arg(op, "dim", 1, dim)
    sizes = ints_arg(op, "sizes", 2, sizes, single=False)  # parsed before the dim is checked, as torch
    dim, sizes = _fit(dim, sizes)
    d = wrap_dim(dim, self.dim())
    if not sizes:
        raise RuntimeError("unflatten: sizes must be non-empty")
    size = self.shape[d] if self.dim() else 1
    known = 1
    for s in sizes:
        if s != -1:
            known *= s
    if sizes.count(-1) > 1:
        raise RuntimeError("unflatten got an unexpected error:\nonly one dimension can be inferred")
    if (-1 in sizes and (known == 0 or size % known)) or (-1 not in sizes and known != size):
        raise RuntimeError(
            f"unflatten: Provided sizes {_listed(sizes)} don't multiply up to the size of dim {d} ({size}) in the "
            "input tensor"
        )
    shape = list(self.shape)
    return self.view(shape[:d] + sizes + shape[d + 1:])




@method(function=True)
def tensor_split(self, indices_or_sections, dim=0):
    """NumPy's array_split: `n` pieces as equal as can be (the first ones one longer), or the
    pieces between the given indices (clamped, as slices are)."""
    op = "tensor_split"
    dim = int_arg(op, "dim", 2, dim)
    spec = indices_or_sections
    if not isinstance(spec, _C.TensorBase) and not is_int(spec):
        spec = ints_arg(op, "indices", 1, spec, single=False)
    if self.dim() == 0:
        raise RuntimeError(f"{op} expected at least a 1-dimensional tensor, but got a tensor with 0 dims")
    if isinstance(spec, _C.TensorBase):
        if str(spec.dtype) != "minigrad.int64":
            raise RuntimeError(
                f"{op} expected tensor_indices_or_sections to have dtype of long, but got {scalar_name(spec.dtype)}"
            )
        if spec.dim() > 1:
            raise RuntimeError(
                f"{op} expected tensor_indices_or_sections to be a zero-dimensional or one-dimensional tensor, "
                f"but got a tensor with {spec.dim()} dims"
            )
        spec = int(spec.item()) if spec.dim() == 0 else [int(v) for v in spec.tolist()]
    dim, spec = _fit(dim, int(spec) if is_int(spec) else spec)
    d = wrap_dim(dim, self.dim())
    length = self.shape[d]
    if is_int(spec):
        n = int(spec)
        if n <= 0:
            raise RuntimeError(f"number of sections must be larger than 0, got {n}")
        if n > _MOST_PIECES:  # torch runs out of memory for its vector of results (std::bad_alloc)
            raise RuntimeError(f"tensor_split: {n} sections would be {n} tensors, more than memory can hold")
        base, extra = divmod(length, n)
        bounds, start = [], 0
        for i in range(n):
            stop = start + base + (i < extra)
            bounds.append((start, stop))
            start = stop
        return tuple(self.narrow(d, a, b - a) for a, b in bounds)
    bounds = zip([0] + list(spec), list(spec) + [length])
    return tuple(self._slice(d, a, b, 1) for a, b in bounds)


def _directional_split(op, dim, min_dims):
    def split(self, *indices_or_sections):
        # one int (sections) or one list of indices, or the indices as separate ints (torch's
        # int[] also unpacks a method's varargs: `x.hsplit(1, 2)`)
        if len(indices_or_sections) == 1:
            indices_or_sections = indices_or_sections[0]
        elif not indices_or_sections:
            raise TypeError(f'{op}() missing 1 required positional arguments: "indices_or_sections"')
        elif is_int(indices_or_sections[0]) and all(isinstance(v, bool) or is_int(v) for v in indices_or_sections):
            # unpacked varargs: the first must be an int (it picks the overload), later bools count
            indices_or_sections = [int(v) for v in indices_or_sections]
        else:
            indices_or_sections = ints_arg(op, "indices", 1, list(indices_or_sections), single=False)
        sections = is_int(indices_or_sections)
        if sections:
            indices_or_sections = _fit(int(indices_or_sections))
        elif isinstance(indices_or_sections, (list, tuple)):
            indices_or_sections = _fit(ints_arg(op, "indices", 1, indices_or_sections, single=False))
        else:  # the arguments are parsed before the tensor is looked at, as torch's
            raise TypeError(f"{op}(): argument 'indices' must be tuple of ints, not {type_name(indices_or_sections)}")
        if self.dim() < min_dims:
            raise RuntimeError(
                f"torch.{op} requires a tensor with at least {min_dims} dimension, but got a tensor with "
                f"{self.dim()} dimensions!"
            )
        d = dim if self.dim() > 1 or op != "hsplit" else 0
        if sections and (indices_or_sections == 0 or self.shape[d] % indices_or_sections):
            raise RuntimeError(
                f"torch.{op} attempted to split along dimension {d}, but the size of the dimension "
                f"{self.shape[d]} is not divisible by the split_size {indices_or_sections}!"
            )
        return tensor_split(self, indices_or_sections, d)

    split.__name__ = op
    split.__doc__ = f"`tensor_split` along dim {dim}{' (0 for a 1-D tensor)' if op == 'hsplit' else ''}, equal pieces only."
    return split


def _function_of(op, split):
    """`minigrad.<op>(input, indices_or_sections)`: one argument, no varargs (torch's function)."""
    def function(input, indices_or_sections):
        if not isinstance(input, _C.TensorBase):
            raise TypeError(f"{op}(): argument 'input' (position 1) must be Tensor, not {type_name(input)}")
        return split(input, indices_or_sections)

    function.__name__ = op
    function.__doc__ = split.__doc__
    return function


for _op, _dim, _min_dims in (("hsplit", 1, 1), ("vsplit", 0, 2), ("dsplit", 2, 3)):
    _split = method()(_directional_split(_op, _dim, _min_dims))
    add_function(_op, _function_of(_op, _split))


_MESHGRID_WARNED = []


@function
def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 0-d/1-d tensors: grid i is tensor i viewed along dim i and expanded
    to every tensor's length (ViewBackward0, ExpandBackward0). `indexing="ij"` (the default,
    with torch's warning when not given) or `"xy"` (the first two swapped, as NumPy)."""
    if len(tensors) == 1 and isinstance(tensors[0], (list, tuple)):
        tensors = tuple(tensors[0])
    if indexing is None:
        if not _MESHGRID_WARNED:
            _MESHGRID_WARNED.append(True)
            warnings.warn("torch.meshgrid: in an upcoming release, it will be required to pass the indexing argument.",
                          UserWarning, stacklevel=2)
        indexing = "ij"
    for i, t in enumerate(tensors):
        if not isinstance(t, _C.TensorBase):
            raise TypeError(f"expected Tensor as element {i} in argument 0, but got {type_name(t)}")
    if not tensors:
        raise RuntimeError("meshgrid expects a non-empty TensorList")
    for a, b in zip(tensors, tensors[1:]):
        if a.dtype != b.dtype:
            raise RuntimeError("meshgrid expects all tensors to have the same dtype")
        if a.device != b.device:
            raise RuntimeError("meshgrid expects all tensors to have the same device")
    refs = list(tensors)
    swap = False
    if indexing == "xy":
        swap = len(refs) >= 2
        if swap:
            refs[0], refs[1] = refs[1], refs[0]
    elif indexing != "ij":
        raise RuntimeError(f'torch.meshgrid: indexing must be one of "xy" or "ij", but received: {indexing}')
    for t in refs:
        if t.dim() > 1:
            raise RuntimeError(f"torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {t!r}")
    shape = [t.numel() for t in refs]
    grids = []
    for i, t in enumerate(refs):
        view_shape = [1] * len(refs)
        view_shape[i] = -1
        grids.append(t.view(view_shape).expand(shape))
    if swap:
        grids[0], grids[1] = grids[1], grids[0]
    return tuple(grids)
