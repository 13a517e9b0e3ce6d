"""Flatten and Unflatten (torch.nn.modules.flatten)."""

from .module import Module

__all__ = ["Flatten", "Unflatten"]


class Flatten(Module):
    """Flattens dims start_dim..end_dim (default: all but the batch dim)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, input):
        return input.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return f"start_dim={self.start_dim}, end_dim={self.end_dim}"


class Unflatten(Module):
    """Splits dim `dim` into `unflattened_size` (a view where possible, as torch's unflatten)."""

    def __init__(self, dim, unflattened_size):
        super().__init__()
        if isinstance(dim, int):
            self._require_tuple_int(unflattened_size)
        else:
            raise TypeError("invalid argument type for dim parameter")
        self.dim = dim
        self.unflattened_size = unflattened_size

    def _require_tuple_int(self, input_size):
        if isinstance(input_size, (tuple, list)):
            for idx, elem in enumerate(input_size):
                if not isinstance(elem, int):
                    raise TypeError(
                        "unflattened_size must be tuple of ints, " + f"but found element of type {type(elem).__name__} at pos {idx}"
                    )
            return
        raise TypeError(f"unflattened_size must be a tuple of ints, but found type {type(input_size).__name__}")

    def forward(self, input):
        dim = self.dim if self.dim >= 0 else self.dim + input.dim()
        shape = tuple(input.shape)
        return input.view(*shape[:dim], *self.unflattened_size, *shape[dim + 1:])

    def extra_repr(self):
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
