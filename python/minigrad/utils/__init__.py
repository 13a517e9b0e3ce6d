"""`minigrad.utils`: `data` (Dataset, DataLoader, samplers), `checkpoint` (activation
checkpointing), `hooks` (module backward hooks' machinery) and the small pytree `minigrad.func`
uses."""

from . import checkpoint, data, hooks  # noqa: F401

__all__ = ["checkpoint", "data", "hooks"]
