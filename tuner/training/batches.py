"""Mini-batches of in-memory tensors, cut by indexing instead of collating one sample at a time.

`DataLoader(TensorDataset(x, y), batch_size, sampler=sampler)` fetches every sample separately and
stacks them again; for data that is already one tensor in memory, `x[indices]` builds the same
batch in a single gather. The sampler still decides the order, so a seeded `DistributedSampler`
keeps its meaning: each rank its own shard, `set_epoch` reshuffles.

Tensors already on the GPU (the training context moves a split there once per trial when it fits)
are cut there, with the order on the GPU too, so no batch crosses from the host. Tensors left on the
host can be gathered straight into pinned memory, whose copy to the GPU need not wait.
"""

import math
from collections.abc import Iterator
from typing import Protocol

import torch


class IndexOrder(Protocol):
    """What a sampler is to these batches: the sample indices in order, and how many there are
    (a DistributedSampler, or a plain range)."""

    def __iter__(self) -> Iterator[int]: ...

    def __len__(self) -> int: ...


class SlicedBatches:
    """The batches `DataLoader(TensorDataset(x, y), batch_size, sampler=sampler)` yields, equal tensors in the
    same order, with the last batch short when `batch_size` does not divide the sampler's length."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor, sampler: IndexOrder, batch_size: int, pin: bool = False):
        if len(x) != len(y):
            raise ValueError(f"x and y must have the same length, got {len(x)} and {len(y)}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if x.device != y.device:
            raise ValueError(f"x and y must be on one device, got {x.device} and {y.device}")
        self.x, self.y, self.sampler, self.batch_size, self.pin = x, y, sampler, batch_size, pin

    def __len__(self) -> int:
        return math.ceil(len(self.sampler) / self.batch_size)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        # The order is drawn when iteration starts, as DataLoader does, so a set_epoch() called
        # between epochs takes effect.
        order = torch.tensor(list(self.sampler), dtype=torch.long, device=self.x.device)
        for start in range(0, len(order), self.batch_size):
            indices = order[start : start + self.batch_size]
            yield self._gather(self.x, indices), self._gather(self.y, indices)

    def _gather(self, tensor: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
        if not self.pin:
            return tensor[indices]
        pinned = torch.empty((len(indices), *tensor.shape[1:]), dtype=tensor.dtype, pin_memory=True)
        return torch.index_select(tensor, 0, indices, out=pinned)
