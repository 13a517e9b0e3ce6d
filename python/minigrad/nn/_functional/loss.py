"""`minigrad.nn.functional`: the loss family (filled in by its own change)."""

__all__: list[str] = []
