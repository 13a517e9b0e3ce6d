"""`minigrad.nn.functional`: the norm family (filled in by its own change)."""

__all__: list[str] = []
