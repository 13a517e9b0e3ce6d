"""`minigrad.nn.functional`: the conv family (filled in by its own change)."""

__all__: list[str] = []
