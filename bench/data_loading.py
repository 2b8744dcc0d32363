"""Batch iteration over in-memory tensors: the training loop's DataLoader against tensor slicing, in one invocation.

    python bench/data_loading.py [--batch-sizes 32 256] [--samples 120000] [--rounds 3]

For scikit-learn's digits (the project's tensors, 1437 x 1x8x8 float32) and an MNIST-sized set
(60000 x 1x28x28 uint8, random pixels from a seeded generator: a loader only moves bytes), compares
  dataloader      DataLoader(TensorDataset, batch_size, sampler=DistributedSampler), as tuner/training/context.py would,
  sliced          tuner.training.batches.SlicedBatches: x[indices] over the same sampler's order,
  dataloader w=2  the same DataLoader with num_workers=2 and persistent_workers,
all with one rank's seeded sampler and set_epoch before every epoch, and nothing done with a batch.
Each measurement runs whole epochs until it has yielded at least --samples samples; the variants
take turns, one measurement each per round, and the table gives each one's median round. Before
timing, it checks that dataloader and sliced yield identical batches over two epochs, and it warms
every variant with one epoch (which is where the workers start).
"""

import argparse
import math
import statistics
import time
from collections.abc import Callable, Iterable

import pandas as pd
import torch
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from tuner import data
from tuner.training.batches import SlicedBatches

SEED = 0
Batches = Iterable[tuple[torch.Tensor, torch.Tensor]]
VARIANTS: dict[str, Callable[[torch.Tensor, torch.Tensor, DistributedSampler, int], Batches]] = {
    "dataloader": lambda x, y, sampler, bs: DataLoader(TensorDataset(x, y), batch_size=bs, sampler=sampler),
    "sliced": lambda x, y, sampler, bs: SlicedBatches(x, y, sampler, bs),
    "dataloader w=2": lambda x, y, sampler, bs: DataLoader(
        TensorDataset(x, y), batch_size=bs, sampler=sampler, num_workers=2, persistent_workers=True
    ),
}


def datasets() -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    digits = data.digits()
    generator = torch.Generator().manual_seed(SEED)
    mnist_x = torch.randint(0, 256, (60000, 1, 28, 28), dtype=torch.uint8, generator=generator)
    mnist_y = torch.randint(0, 10, (60000,), generator=generator)
    return {"digits": digits.train, "mnist-sized": (mnist_x, mnist_y)}


def sampler_for(n: int) -> DistributedSampler:
    return DistributedSampler(range(n), num_replicas=1, rank=0, shuffle=True, seed=SEED)


def run_epochs(batches: Batches, sampler: DistributedSampler, first_epoch: int, epochs: int) -> tuple[int, int]:
    n_batches = n_samples = 0
    for epoch in range(first_epoch, first_epoch + epochs):
        sampler.set_epoch(epoch)
        for _, y in batches:
            n_batches += 1
            n_samples += len(y)
    return n_batches, n_samples


def check_identical(x: torch.Tensor, y: torch.Tensor, batch_size: int) -> None:
    loader_sampler, sliced_sampler = sampler_for(len(y)), sampler_for(len(y))
    loader = VARIANTS["dataloader"](x, y, loader_sampler, batch_size)
    sliced = VARIANTS["sliced"](x, y, sliced_sampler, batch_size)
    for epoch in (1, 2):
        loader_sampler.set_epoch(epoch)
        sliced_sampler.set_epoch(epoch)
        expected, actual = list(loader), list(sliced)
        same = len(expected) == len(actual) and all(
            ex.dtype == ax.dtype and torch.equal(ex, ax) and torch.equal(ey, ay)
            for (ex, ey), (ax, ay) in zip(expected, actual)
        )
        if not same:
            raise SystemExit(f"sliced batches differ from the DataLoader's (batch {batch_size}, epoch {epoch})")


def measure(
    x: torch.Tensor, y: torch.Tensor, batch_size: int, epochs: int, rounds: int
) -> dict[str, list[tuple[float, float]]]:
    """(batches/s, samples/s) of every variant in every round. The loaders, and with them the persistent
    workers, end on return, so they don't compete with the next configuration's."""
    made = {}
    for label, make in VARIANTS.items():
        sampler = sampler_for(len(y))
        made[label] = (make(x, y, sampler, batch_size), sampler)
        run_epochs(*made[label], first_epoch=0, epochs=1)
    rates: dict[str, list[tuple[float, float]]] = {label: [] for label in made}
    for round_ in range(rounds):
        for label, (batches, sampler) in made.items():
            started = time.perf_counter()
            n_batches, n_samples = run_epochs(batches, sampler, 1 + round_ * epochs, epochs)
            elapsed = time.perf_counter() - started
            rates[label].append((n_batches / elapsed, n_samples / elapsed))
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-sizes", type=int, nargs="+", default=[32, 256])
    parser.add_argument("--samples", type=int, default=120000, help="at least this many samples per measurement")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    rows = []
    for name, (x, y) in datasets().items():
        for batch_size in args.batch_sizes:
            check_identical(x, y, batch_size)
            rates = measure(x, y, batch_size, math.ceil(args.samples / len(y)), args.rounds)
            baseline = statistics.median(s for _, s in rates["dataloader"])
            for label, measured in rates.items():
                samples_per_s = statistics.median(s for _, s in measured)
                rows.append(
                    {
                        "dataset": name,
                        "batch_size": batch_size,
                        "variant": label,
                        "batches_per_s": statistics.median(b for b, _ in measured),
                        "samples_per_s": samples_per_s,
                        "vs_dataloader": samples_per_s / baseline,
                    }
                )
            print(f"{name}, batch {batch_size}: done", flush=True)

    print(
        f"\n{args.rounds} rounds, >= {args.samples} samples per measurement, {torch.get_num_threads()} torch "
        f"threads; dataloader and sliced yielded identical batches (checked over 2 epochs each)\n"
    )
    print(pd.DataFrame(rows).to_markdown(index=False, floatfmt=("", "", "", ".1f", ".0f", ".2f")))


if __name__ == "__main__":
    main()
