import pytest
import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from tuner.training.batches import SlicedBatches

N = 101  # odd, so two ranks get padded shards of 51 and batch size 16 leaves a short last batch
BATCH = 16


@pytest.fixture(scope="module")
def tensors() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (N, 1, 8, 8), dtype=torch.uint8, generator=generator)
    y = torch.randint(0, 10, (N,), generator=generator)
    return x, y


def epochs_of(batches, sampler: DistributedSampler, epochs: range) -> list[list[tuple[torch.Tensor, torch.Tensor]]]:
    seen = []
    for epoch in epochs:
        sampler.set_epoch(epoch)
        seen.append(list(batches))
    return seen


def samplers(world_size: int, rank: int, seed: int = 3) -> tuple[DistributedSampler, DistributedSampler]:
    """Two identically seeded samplers, one per iterator, so neither can lean on the other's state."""
    return tuple(
        DistributedSampler(range(N), num_replicas=world_size, rank=rank, shuffle=True, seed=seed) for _ in range(2)
    )


@pytest.mark.parametrize("world_size", [1, 2])
def test_same_batches_as_the_dataloader_on_every_rank_and_epoch(tensors, world_size):
    x, y = tensors
    for rank in range(world_size):
        loader_sampler, sliced_sampler = samplers(world_size, rank)
        loader = DataLoader(TensorDataset(x, y), batch_size=BATCH, sampler=loader_sampler)
        sliced = SlicedBatches(x, y, sliced_sampler, BATCH)
        expected = epochs_of(loader, loader_sampler, range(1, 4))
        actual = epochs_of(sliced, sliced_sampler, range(1, 4))
        assert len(sliced) == len(loader) == len(expected[0])
        for expected_epoch, actual_epoch in zip(expected, actual, strict=True):
            assert len(actual_epoch) == len(expected_epoch)
            for (ex, ey), (ax, ay) in zip(expected_epoch, actual_epoch):
                assert ax.dtype == ex.dtype and ay.dtype == ey.dtype
                assert torch.equal(ax, ex) and torch.equal(ay, ey)
        shard = len(loader_sampler)
        assert [len(b[1]) for b in actual[0]] == [BATCH] * (shard // BATCH) + [shard % BATCH]


def test_set_epoch_reshuffles_and_ranks_see_disjoint_shards(tensors):
    # Guards the test above against passing on a sampler that ignores its epoch or rank.
    x, y = tensors
    y_ids = torch.arange(N)  # labels that name the sample, so batches show which samples they hold
    by_rank = []
    for rank in range(2):
        sampler = samplers(2, rank)[0]
        epochs = epochs_of(SlicedBatches(x, y_ids, sampler, BATCH), sampler, range(2))
        orders = [torch.cat([ids for _, ids in epoch]) for epoch in epochs]
        assert not torch.equal(orders[0], orders[1])
        by_rank.append(orders[0])
    assert set(by_rank[0].tolist()) | set(by_rank[1].tolist()) == set(range(N))
    assert len(set(by_rank[0].tolist()) & set(by_rank[1].tolist())) == 1  # the one padding repeat


def test_bad_arguments(tensors):
    x, y = tensors
    sampler = samplers(1, 0)[0]
    with pytest.raises(ValueError, match="batch_size must be >= 1"):
        SlicedBatches(x, y, sampler, 0)
    with pytest.raises(ValueError, match="same length"):
        SlicedBatches(x, y[:-1], sampler, BATCH)
