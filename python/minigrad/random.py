"""`minigrad.random`: the global generator's seed and state, and `fork_rng` (torch.random)."""

from ._creation import manual_seed
from ._random import fork_rng, get_rng_state, set_rng_state

__all__ = ["manual_seed", "fork_rng", "get_rng_state", "set_rng_state"]
