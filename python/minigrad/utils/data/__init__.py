"""`minigrad.utils.data`: torch.utils.data's datasets, samplers and single-process DataLoader.

    from minigrad.utils.data import DataLoader, TensorDataset
    loader = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True,
                        generator=minigrad.Generator().manual_seed(0))
    for xb, yb in loader: ...

Batching, lengths, `drop_last`, collation (structure and dtypes) and errors are torch's; shuffled
orders come from minigrad's random streams (reproducible, not torch's numbers). See docs/data.md.
"""

from .dataloader import DataLoader, _DatasetKind, default_collate, default_convert, get_worker_info
from .dataset import (
    ChainDataset, ConcatDataset, Dataset, IterableDataset, StackDataset, Subset, TensorDataset, random_split,
)
from .sampler import (
    BatchSampler, RandomSampler, Sampler, SequentialSampler, SubsetRandomSampler, WeightedRandomSampler,
)

__all__ = [
    "BatchSampler", "ChainDataset", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset",
    "RandomSampler", "Sampler", "SequentialSampler", "StackDataset", "Subset", "SubsetRandomSampler",
    "TensorDataset", "WeightedRandomSampler", "_DatasetKind", "default_collate", "default_convert",
    "get_worker_info", "random_split",
]
