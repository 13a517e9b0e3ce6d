"""`minigrad.Generator`, `minigrad.default_generator` and `minigrad.randperm`.

A `Generator` is a private random stream that data loading can be seeded with
(`DataLoader(..., shuffle=True, generator=minigrad.Generator().manual_seed(0))`), as torch's. It is
a NumPy PCG64 stream, separate from the core's global generator (`minigrad.manual_seed`, which
`rand`, `randn`, `randint`, dropout and `nn.init` draw from). `default_generator` stands for that
global stream: seeding it seeds the core, and a permutation drawn "from" it takes one 63-bit seed
from the core's stream, then permutes with PCG64 seeded by that. So `minigrad.manual_seed(s)`
reproduces shuffles, and a seeded `Generator` reproduces them without touching the global stream.

Only `randperm`, the samplers and `random_split` read a `Generator`; the core's random ops accept
the `generator=` argument for torch compatibility and draw from the global stream (see
docs/divergences.md). The numbers differ from torch's (a different algorithm); the distributions
do not.
"""

import os

import numpy as np

from . import _C
from ._formatting import type_name

__all__ = ["Generator", "default_generator", "randperm", "get_rng_state", "set_rng_state", "fork_rng"]

_DEFAULT_SEED = 67280421310721  # what a fresh torch.Generator reports as its initial seed
_U64 = (1 << 64) - 1


def _check_seed(seed):
    seed = int(seed)
    if not -(1 << 63) <= seed <= _U64:
        raise RuntimeError("Overflow when unpacking long long")
    return seed & _U64  # negative seeds wrap, as torch's


class Generator:
    """A seedable random stream for `randperm`, samplers, `DataLoader` and `random_split`."""

    def __init__(self, device="cpu"):
        from ._device import device as _device
        self._device = _device(device)
        if self._device.type != "cpu":
            raise RuntimeError("minigrad.Generator: only CPU generators are supported")
        self.manual_seed(_DEFAULT_SEED)

    @property
    def device(self):
        return self._device

    def manual_seed(self, seed):
        """Seeds the stream; returns the generator (so `Generator().manual_seed(0)` is one)."""
        self._seed = _check_seed(seed)
        self._rng = np.random.Generator(np.random.PCG64(self._seed))
        return self

    def seed(self):
        """Seeds from the operating system's entropy; returns the seed."""
        s = int.from_bytes(os.urandom(8), "little") >> 1
        self.manual_seed(s)
        return s

    def initial_seed(self):
        return self._seed

    def _next_seed(self):
        """A 63-bit integer from this stream (what torch's `random_()` draws for derived seeds)."""
        return int(self._rng.integers(0, 1 << 63))

    def _numpy(self):
        return self._rng

    def __repr__(self):
        return f"<minigrad.Generator object at {hex(id(self))}>"


class _DefaultGenerator(Generator):
    """The global stream of the core, seen as a Generator."""

    def __init__(self):
        from ._device import device as _device
        self._device = _device("cpu")
        self._seed = _DEFAULT_SEED

    def manual_seed(self, seed):
        self._seed = _check_seed(seed)
        _C.manual_seed(int(seed))
        return self

    def _next_seed(self):
        return int(_C.randint(0, (1 << 63) - 1, (), None).item())

    def _numpy(self):
        return np.random.Generator(np.random.PCG64(self._next_seed()))

    def __repr__(self):
        return f"<minigrad.Generator object at {hex(id(self))}> (default_generator)"


default_generator = _DefaultGenerator()


def _resolve(generator, fn):
    if generator is None:
        return default_generator
    if not isinstance(generator, Generator):
        raise TypeError(f"{fn}(): argument 'generator' must be minigrad.Generator, not {type_name(generator)}")
    return generator


def randperm(n, *, generator=None, dtype=None, device=None, requires_grad=False):
    """A random permutation of 0..n-1 (int64), drawn from `generator` (default: the global stream)."""
    from ._creation import _check_dtype, empty, from_numpy
    from ._device import check_device
    if isinstance(n, _C.TensorBase) and n.dim() == 0 and not n.dtype.is_floating_point and not str(n.dtype).endswith("bool"):
        n = n.item()  # a 0-d integer tensor reads as an int (torch's __index__)
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise TypeError(f"randperm(): argument 'n' (position 1) must be int, not {type_name(n)}")
    n = int(n)
    if n < 0:
        raise RuntimeError(f"Trying to create tensor with negative dimension {n}: [{n}]")
    _check_dtype("randperm", dtype)
    check_device(device)
    # the result's memory is asked of minigrad's allocator first: a size past int64 or past
    # memory raises its RuntimeError (torch's), before NumPy would try (or fail differently)
    _checked = empty(n, dtype=_C.int64)
    del _checked  # (freed before NumPy allocates the permutation)
    perm = _resolve(generator, "randperm")._numpy().permutation(n).astype(np.int64)
    out = from_numpy(perm)
    if dtype is not None:
        out = out.to(dtype)
    if requires_grad:
        out.requires_grad_()
    return out


def _randint(high, n, generator):
    """n integers in [0, high) from `generator` (RandomSampler with replacement)."""
    return _resolve(generator, "randint")._numpy().integers(0, high, size=n).tolist()


def _next_seed(generator):
    """One 63-bit draw from `generator` or the global stream, as torch's
    `torch.empty((), dtype=torch.int64).random_(generator=g).item()`."""
    return _resolve(generator, "random_")._next_seed()


# ----- the global stream's state (torch.get_rng_state / set_rng_state / random.fork_rng) -----

def get_rng_state():
    """The global generator's whole state as a 1-d tensor of byte values (int64 until minigrad
    has uint8; 49 bytes: ChaCha12 seed, stream and position, not torch's 5056-byte MT state)."""
    from ._creation import tensor
    return tensor(list(_C._rng_state()), dtype=_C.int64)


def set_rng_state(new_state):
    """Restores a state returned by `get_rng_state`: the draws that followed it repeat."""
    if not isinstance(new_state, _C.TensorBase) or new_state.dtype not in (_C.int64, _C.int32):
        raise TypeError("RNG state must be a tensor returned by minigrad.get_rng_state()")
    values = new_state.reshape(-1).tolist()
    if any(not 0 <= v < 256 for v in values):
        raise RuntimeError("RNG state must hold byte values (0..255)")
    _C._set_rng_state(values)


def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type=None):
    """Context manager: the global generator's state is restored on exit (minigrad has one CPU
    stream, so `devices` has nothing to fork)."""
    import contextlib

    @contextlib.contextmanager
    def fork():
        if not enabled:
            yield
            return
        state = get_rng_state()
        try:
            yield
        finally:
            set_rng_state(state)
    return fork()
