"""What a trial's model costs to run, measured by tuner for any model so that a search can trade accuracy
against it (`metric = ["val_acc", "latency_ms"]`, `constraints = ["params <= 2e6"]`):

    params       the model's parameters, all of them (frozen ones too; a shared one once), counted on
                 the whole model as the loop built it, before `ctx.prepare_model` wraps, shards or splits
                 it, so the count is the same under every parallel strategy and on every rank.
    latency_ms   the median wall time, in milliseconds, of one forward of one validation batch of the
                 trial's batch size, in eval mode without gradients, in the trial's precision, on its
                 device (synchronised on a GPU), after warm-up forwards. Over several ranks every rank
                 times the same forwards and the slowest rank's time counts: under fsdp and pipeline a
                 forward needs all ranks (each rank's batch is a batch of that size); under ddp each
                 rank times its own whole-model copy. On a GPU shared by packed trials the time
                 includes theirs: compare latencies within one run, not across machines or packings.
    gpu_peak_gib (tuner/training/gpu_memory.py, not here) the peak GPU memory; NaN on the CPU.

`ctx.report` adds `params` and `latency_ms` to every row once they are known, since Ray's searchers
and schedulers read a trial's metrics from its latest row. They are measured once per run of the loop
(again after a restore, in a fresh process): the latency costs WARMUP + REPEATS forwards of one batch
per trial, a few evaluation batches' worth. Imports no Ray, like the rest of the training layer.
"""

import statistics
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parameter import is_lazy

from tuner.training import devices
from tuner.training.result_keys import COSTS

PARAMS, LATENCY_MS = COSTS
WARMUP, REPEATS = 2, 5  # forwards: untimed, then timed
# A forward slower than this is timed 3 times after the one warm-up: its time varies less, relative to
# itself, than a fast one's, and 7 forwards of a large model on a CPU would be a noticeable share of a
# short trial (bench numbers in docs/results.md, "What the model costs").
SLOW_MS, SLOW_REPEATS = 100.0, 3


def count_params(model: nn.Module) -> int | None:
    """The model's parameters, all of them; None while a lazy module has not seen its first input."""
    parameters = list(model.parameters())  # each shared parameter once
    if any(is_lazy(parameter) for parameter in parameters):
        return None
    return sum(parameter.numel() for parameter in parameters)


def _slowest(times: torch.Tensor, device: torch.device, world_size: int) -> torch.Tensor:
    """Each entry's maximum over the ranks (every rank calls this with as many entries)."""
    if world_size == 1:
        return times
    slowest = times.to(device)
    dist.all_reduce(slowest, op=dist.ReduceOp.MAX)
    return slowest.cpu()


@torch.no_grad()
def latency_ms(
    model: nn.Module,
    inputs: Any,
    device: torch.device,
    *,
    autocast: Callable[[], AbstractContextManager[Any]] = nullcontext,
    world_size: int = 1,
) -> float | None:
    """The median of REPEATS timed forwards of `inputs` after WARMUP untimed ones (SLOW_REPEATS after
    one, for a forward slower than SLOW_MS), in eval mode (the model's mode is restored afterwards), in
    the precision `autocast` gives. With `world_size` > 1 every rank must call it: the ranks agree on
    the counts, and each forward's time is the slowest rank's; a rank with no batch (`inputs` None:
    fewer validation samples than ranks) only takes part in that. None when no rank timed a forward."""

    def forward() -> float:
        devices.synchronize(device)
        started = time.perf_counter()
        with autocast():
            model(inputs)
        devices.synchronize(device)
        return (time.perf_counter() - started) * 1000

    was_training = model.training
    model.eval()
    try:
        first = torch.tensor([forward() if inputs is not None else 0.0], dtype=torch.float64)
        slow = bool(_slowest(first, device, world_size).item() > SLOW_MS)
        warmup, repeats = (0, SLOW_REPEATS) if slow else (WARMUP - 1, REPEATS)
        for _ in range(warmup if inputs is not None else 0):
            forward()
        times = torch.tensor([forward() if inputs is not None else 0.0 for _ in range(repeats)], dtype=torch.float64)
    finally:
        model.train(was_training)
    times = _slowest(times, device, world_size)
    return statistics.median(times.tolist()) if bool((times > 0).all()) else None
