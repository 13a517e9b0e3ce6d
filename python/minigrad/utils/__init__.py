"""`minigrad.utils`: `data` (Dataset, DataLoader, samplers) and the small pytree `minigrad.func` uses."""

from . import data  # noqa: F401

__all__ = ["data"]
