"""`minigrad.utils`: the small pytree `minigrad.func` uses."""

__all__ = []
