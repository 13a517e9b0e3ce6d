"""`minigrad.Size`: the tuple subclass `shape` and `size()` return, printed like torch.Size."""


class Size(tuple):
    __slots__ = ()

    def __repr__(self):
        return f"minigrad.Size([{', '.join(str(d) for d in self)}])"

    def numel(self):
        n = 1
        for d in self:
            n *= d
        return n
