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
from tuner.settings.experiment import STRATEGIES as NAMES
from tuner.training.parallel.strategy import Strategy

if TYPE_CHECKING:
    import torch

# The settings declare the names a space may give; each is one class here.
STRATEGIES: dict[str, str] = {
    "ddp": "tuner.training.parallel.ddp:DDPStrategy",
    "dp": "tuner.training.parallel.data_parallel:DataParallelStrategy",
    "fsdp": "tuner.training.parallel.fsdp:FSDPStrategy",
    "pipeline": "tuner.training.parallel.pipeline:PipelineStrategy",
}
assert tuple(STRATEGIES) == NAMES, "every strategy the settings name has a class here, and no other"

__all__ = ["STRATEGIES", "Strategy", "strategy"]


def strategy(name: str, *, rank: int, world_size: int, device: "torch.device") -> Strategy:
    """The strategy `name` for this rank. A process group of one (a 1-worker trial, the smoke step) has
    nothing to shard over: ddp and fsdp are then the plain single-process strategy."""
    if name not in STRATEGIES:
        raise ValueError(f"unknown parallel strategy {name!r}; choose one of {', '.join(STRATEGIES)}")
    if world_size == 1 and name in ("ddp", "fsdp"):
        return Strategy(rank=rank, world_size=world_size, device=device)
    return resolve(STRATEGIES[name])(rank=rank, world_size=world_size, device=device)
