"""How one trial spreads over its devices: the space's `parallel` setting (or `--parallel`).

    ddp       DistributedDataParallel over the trial's `workers` Ray Train workers (gloo on CPU, NCCL
              on GPU); the default.
    dp        nn.DataParallel over the trial's GPUs in one process (`gpus_per_worker = N`, workers = 1),
              kept so its speed can be compared with DDP's on the user's own model.
    fsdp      fully sharded data parallel (torch's `fully_shard`) over the workers: each rank holds a
              shard of the parameters, gradients and optimizer state.
    pipeline  the model's layers split into one stage per worker, fed micro-batches by torch's GPipe
              schedule (`torch.distributed.pipelining`).

Each strategy is a small class (`tuner/training/parallel/strategy.py`) that the training context delegates to:
wrap the model, shard the data, run a step, and gather or restore the checkpoint state. Like the
context, nothing here imports Ray: Ray Train only starts the workers and their process group.
"""

from typing import TYPE_CHECKING

from tuner.lazy import resolve
from tuner.training.parallel.strategy import Strategy

if TYPE_CHECKING:
    import torch

STRATEGIES: dict[str, str] = {
    "ddp": "tuner.training.parallel.ddp:DistributedDataParallel",
    "dp": "tuner.training.parallel.data_parallel:DataParallel",
    "fsdp": "tuner.training.parallel.fsdp:FullyShardedDataParallel",
    "pipeline": "tuner.training.parallel.pipeline:Pipeline",
}
MULTI_WORKER = ("ddp", "fsdp", "pipeline")  # run as Ray Train workers, one process per rank
DEFAULT = "ddp"

__all__ = ["DEFAULT", "MULTI_WORKER", "STRATEGIES", "Strategy", "strategy"]


def strategy(name: str, *, rank: int, world_size: int, device: "torch.device") -> Strategy:
    """The strategy `name` for this rank. A process group of one (a 1-worker trial, the smoke step) has
    nothing to shard over: ddp and fsdp are then the plain single-process strategy."""
    if name not in STRATEGIES:
        raise ValueError(f"unknown parallel strategy {name!r}; choose one of {', '.join(STRATEGIES)}")
    if world_size == 1 and name in ("ddp", "fsdp"):
        return Strategy(rank=rank, world_size=world_size, device=device)
    return resolve(STRATEGIES[name])(rank=rank, world_size=world_size, device=device)
