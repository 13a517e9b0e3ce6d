"""Samplers: iterables of dataset keys (`SequentialSampler`, `RandomSampler`, `SubsetRandomSampler`,
`WeightedRandomSampler`) and of lists of keys (`BatchSampler`). Lengths, batching, argument checks and
error texts are torch's; the random orders come from minigrad's generators (see `minigrad._random`),
so they are reproducible under `minigrad.manual_seed` or a seeded `Generator` but differ from
torch's orders."""

import itertools
from typing import Generic, TypeVar

import numpy as np

from ... import _random

__all__ = [
    "BatchSampler", "RandomSampler", "Sampler", "SequentialSampler", "SubsetRandomSampler",
    "WeightedRandomSampler",
]

_T_co = TypeVar("_T_co", covariant=True)


class Sampler(Generic[_T_co]):
    """Base class: `__iter__` yields keys (or lists of keys); `__len__` is optional."""

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """A random permutation of the keys (each pass a new one), or `num_samples` keys drawn with
    replacement. Without a `generator`, each pass seeds a fresh one from the global stream."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.replacement, bool):
            raise TypeError(f"replacement should be a boolean value, but got replacement={self.replacement}")
        if not isinstance(self.num_samples, int) or self.num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={self.num_samples}")

    @property
    def num_samples(self):
        if self._num_samples is None:
            return len(self.data_source)
        return self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        if self.generator is None:
            generator = _random.Generator().manual_seed(_random._next_seed(None))
        else:
            generator = self.generator
        if self.replacement:
            for _ in range(self.num_samples // 32):
                yield from _random._randint(n, 32, generator)
            yield from _random._randint(n, self.num_samples % 32, generator)
        else:
            for _ in range(self.num_samples // n):
                yield from _random.randperm(n, generator=generator).tolist()
            yield from _random.randperm(n, generator=generator).tolist()[: self.num_samples % n]

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order (each pass a new one)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _random.randperm(len(self.indices), generator=self.generator).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


class WeightedRandomSampler(Sampler):
    """`num_samples` keys in [0, len(weights)) with probabilities proportional to `weights`."""

    def __init__(self, weights, num_samples, replacement=True, generator=None):
        from ..._creation import as_tensor
        from ..._C import float64
        if not isinstance(num_samples, int) or isinstance(num_samples, bool) or num_samples <= 0:
            raise ValueError(f"num_samples should be a positive integer value, but got num_samples={num_samples}")
        if not isinstance(replacement, bool):
            raise ValueError(f"replacement should be a boolean value, but got replacement={replacement}")
        weights_tensor = as_tensor(weights, dtype=float64)
        if len(weights_tensor.shape) != 1:
            raise ValueError(f"weights should be a 1d sequence but given weights have shape {tuple(weights_tensor.shape)}")
        self.weights = weights_tensor
        self.num_samples = num_samples
        self.replacement = replacement
        self.generator = generator

    def __iter__(self):
        # torch.multinomial's checks and method, on minigrad's stream
        w = self.weights.numpy()
        if self.replacement and self.num_samples > 1:  # torch's kernel for several draws with replacement
            if (w < 0).any():
                raise RuntimeError("invalid multinomial distribution (encountering probability entry < 0)")
            if not np.isfinite(w).all():
                raise RuntimeError("invalid multinomial distribution (encountering probability entry = infinity or NaN)")
        elif (w < 0).any() or not np.isfinite(w).all():
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if w.sum() <= 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if not self.replacement and self.num_samples > len(w):
            raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
        rng = _random._resolve(self.generator, "multinomial")._numpy()
        if self.replacement:
            picks = rng.choice(len(w), size=self.num_samples, replace=True, p=w / w.sum())
        else:  # the largest w / Exp(1) keys: a weighted draw without replacement (torch's method)
            picks = np.argsort(-(w / rng.exponential(size=len(w))), kind="stable")[: self.num_samples]
        yield from picks.tolist()

    def __len__(self):
        return self.num_samples


class BatchSampler(Sampler):
    """Groups the keys of `sampler` into lists of `batch_size` (the last one shorter, or dropped with
    `drop_last=True`)."""

    def __init__(self, sampler, batch_size, drop_last):
        if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
            raise ValueError(f"batch_size should be a positive integer value, but got batch_size={batch_size}")
        if not isinstance(drop_last, bool):
            raise ValueError(f"drop_last should be a boolean value, but got drop_last={drop_last}")
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        sampler_iter = iter(self.sampler)
        if self.drop_last:
            for batch in zip(*[sampler_iter] * self.batch_size):
                yield [*batch]
        else:
            batch = [*itertools.islice(sampler_iter, self.batch_size)]
            while batch:
                yield batch
                batch = [*itertools.islice(sampler_iter, self.batch_size)]

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size
