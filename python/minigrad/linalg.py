"""`minigrad.linalg`, torch.linalg's names that minigrad has: `cross` (dim=-1 by default, where
`minigrad.cross` takes the first dim of size 3)."""

from ._ops.cross import linalg_cross as cross

__all__ = ["cross"]
