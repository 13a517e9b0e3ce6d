"""`minigrad.Size`: the tuple subclass `shape` and `size()` return, printed like torch.Size.
Slicing, `+` and `*` give a Size again, as torch's do."""

import operator


class Size(tuple):
    __slots__ = ()

    def __new__(cls, sizes=()):
        fast = super().__new__(cls, sizes)
        if all(type(d) is int for d in fast):
            return fast
        items = []
        for i, d in enumerate(sizes):
            if not hasattr(type(d), "__index__") or isinstance(d, float):  # a bool is an int here, as in torch
                raise TypeError(f"minigrad.Size() takes an iterable of 'int' (item {i} is '{type(d).__name__}')")
            items.append(operator.index(d))
        return super().__new__(cls, items)

    def __repr__(self):
        return f"minigrad.Size([{', '.join(str(d) for d in self)}])"

    __str__ = __repr__

    def __getitem__(self, item):
        r = super().__getitem__(item)
        return Size(r) if isinstance(item, slice) else r

    def __add__(self, other):
        if not isinstance(other, tuple):
            raise TypeError(f"can only concatenate tuple (not {type(other).__name__}) to minigrad.Size")
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other):
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(other) + tuple(self))

    def __mul__(self, n):
        return Size(tuple(self) * n)

    __rmul__ = __mul__

    def numel(self):
        n = 1
        for d in self:
            n *= d
        return n

    def __reduce__(self):
        return (Size, (tuple(self),))
