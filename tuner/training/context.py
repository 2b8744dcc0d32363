"""The `ctx` a training loop gets: what differs between one in-process worker and a rank of a DDP run.

Every trial runs a `train_loop(config, ctx)`: tuner's own loop over a space's model, data, loss and
metrics (`tuner/training/loop.py`), or a space module's own. The loop never calls Ray: the context hands it
the device, its rank's share of the data, DDP wrapping, sums across ranks, the checkpoint to resume
from and a `report` that records an epoch's metrics and checkpoint. Whoever runs the loop (a Tune
trial, a Ray Train worker, the smoke step, a test) builds the context with a `report` function of
its own; this module imports neither Ray nor anything that does, so the loop runs wherever torch does.

Distribution is torch's own: when `torch.distributed` is initialised (Ray Train does it for
multi-worker trials) the context shards data with a seeded `DistributedSampler` and sums with
`all_reduce`, and the trial's parallel strategy (`tuner/training/parallel/`: ddp, dp, fsdp or pipeline) wraps
the model, runs a step and gathers the checkpoint state.
"""

import itertools
import math
import numbers
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.utils.data import (
    DataLoader,
    DistributedSampler,
    RandomSampler,
    default_collate,
)

from tuner.data.splits import Split, Splits, TensorPair, is_tensor_pair, split_size
from tuner.training import devices, gpu_memory, model_costs, precision
from tuner.training.batches import SlicedBatches
from tuner.training.config_reads import RESULT_KEY, ReadTrackingConfig
from tuner.training.parallel import strategy

CHECKPOINT_FILE = "checkpoint.pt"
# A tensor split is moved to the GPU whole when it takes at most this share of the memory the process
# may still allocate there; the rest is for the model, its activations and the optimizer.
DEVICE_DATA_SHARE = 0.25
# What a report function receives: the epoch's metrics, and on rank 0 a directory holding the
# checkpoint (None when there is none); it must copy what it keeps, the directory goes afterwards.
ReportFn = Callable[[dict[str, Any], str | None], None]


def load_checkpoint(directory: str, device: torch.device) -> dict[str, Any]:
    """What `TrialContext.report` saved: {"state": the loop's checkpoint, "epoch", "trial_id"}."""
    # weights_only=False: the state is the loop's own objects (any picklable), written by tuner itself.
    return torch.load(Path(directory) / CHECKPOINT_FILE, map_location=device, weights_only=False)


def to_device(batch: Any, device: torch.device) -> Any:
    """Tensors moved to `device` (without waiting, from pinned memory), inside tuples, lists and dicts."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, (tuple, list)):
        return type(batch)(to_device(item, device) for item in batch)
    if isinstance(batch, dict):
        return {key: to_device(value, device) for key, value in batch.items()}
    return batch


def _free_bytes(device: torch.device) -> int | None:
    """What this process may still allocate on a GPU: the device's free memory, within the share the
    process is capped to (a packed trial); None for a device without such a limit (the CPU)."""
    if device.type != "cuda":
        return None
    free, total = torch.cuda.mem_get_info(device)
    fraction = torch.cuda.get_per_process_memory_fraction(device)
    if fraction < 1:
        free = min(free, int(fraction * total) - torch.cuda.memory_reserved(device))
    return max(free, 0)


def _metric_value(name: Any, value: Any) -> float | int | bool | str:
    if not isinstance(name, str):
        raise TypeError(f"ctx.report: metric names must be strings, got {name!r}")
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise TypeError(
                f"ctx.report: metric {name!r} is a tensor of shape {tuple(value.shape)}; report one "
                "number per metric (e.g. its .mean())"
            )
        return value.item()
    if isinstance(value, (bool, str, numbers.Integral)):
        return value if isinstance(value, (bool, str)) else int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise TypeError(f"ctx.report: metric {name!r} is a {type(value).__name__}; report numbers (or strings)")


def _empty_like(batch: Any) -> Any:
    """A batch of the same structure with no samples: what a rank with fewer evaluation batches runs."""
    if isinstance(batch, torch.Tensor):
        return batch[:0]
    if isinstance(batch, (tuple, list)):
        return type(batch)(_empty_like(item) for item in batch)
    if isinstance(batch, dict):
        return {key: _empty_like(value) for key, value in batch.items()}
    return batch


def _empty_pair(split: Split) -> Any:
    """A zero-length batch of a tensor pair, for a rank with no validation samples to pad with."""
    return split[0][:0], split[1][:0]


def _first_sample_batch(split: Split) -> Any:
    return default_collate([split[0]])


class _DeviceLoader:
    """A DataLoader's batches on the context's device, at most `max_batches` of them, with the sampler's
    epoch set first so a DistributedSampler reshuffles each epoch. With `pad_to`, empty batches follow
    until there are that many (`empty` gives one), so every rank runs as many forwards."""

    def __init__(
        self,
        loader: Iterable[Any],
        device: torch.device,
        epoch: Callable[[], int],
        max_batches: int | None,
        pad_to: int | None = None,
        empty: Callable[[], Any] | None = None,
    ):
        self.loader, self.device, self.epoch, self.max_batches = loader, device, epoch, max_batches
        self.pad_to, self.empty = pad_to, empty

    def __len__(self) -> int:
        count = len(self.loader)  # type: ignore[arg-type]
        count = count if self.max_batches is None else min(count, self.max_batches)
        return max(count, self.pad_to or 0)

    def __iter__(self) -> Iterator[Any]:
        sampler = getattr(self.loader, "sampler", None)
        if isinstance(sampler, DistributedSampler):
            sampler.set_epoch(self.epoch())
        count = 0
        for batch in itertools.islice(self.loader, self.max_batches):
            count += 1
            yield to_device(batch, self.device)
        if self.pad_to is not None and count < self.pad_to:
            assert self.empty is not None
            empty = to_device(_empty_like(self.empty()), self.device)
            for _ in range(self.pad_to - count):
                yield empty


@dataclass(frozen=True)
class LoopSetup:
    """How one run of a train_loop is set up, the same for every caller (a Tune trial, each Ray Train
    rank, the smoke step, a test): the budget, the seed, where it runs and how it spreads."""

    epochs: int
    seed: int  # the experiment's, unless the config has a `seed` of its own (run_trial_loop)
    device: torch.device
    parallel: str  # a name of tuner/settings/experiment.py STRATEGIES
    max_batches: int | None = None  # the smoke step stops each data pass after this many batches
    precision: str = "auto"  # a name of tuner/settings/experiment.py PRECISIONS (tuner/training/precision.py)
    # The CPU threads torch may use in this process: the trial's cpus_per_worker, so that packed trials
    # don't each start one thread per core. None leaves torch's own setting (the smoke step, in the driver).
    cpu_threads: int | None = None


class TrialContext:
    """`rank`, `world_size`, `device`, `epochs`, `seed`, `trial_id`, `data` (the space's Splits, or None),
    `parallel`, `precision`, `start_epoch` and `epoch`; `prepare_model`, `train_step`, `step`, `autocast`,
    `evaluation_model`, `batches`, `prepare_data_loader`, `get_state`, `set_state`, `restore`, `all_reduce`,
    `synchronize`, `measure_model` and `report`. Every rank calls `report` once per epoch; rank 0's
    checkpoint is saved."""

    def __init__(
        self,
        *,
        config: ReadTrackingConfig,
        setup: LoopSetup,
        data: Splits | None,
        trial_id: str,
        report: ReportFn,
        restored: dict[str, Any] | None = None,
    ):
        self.config, self.data, self.trial_id = config, data, trial_id
        self.epochs, self.seed, self.parallel = setup.epochs, setup.seed, setup.parallel
        self.device = devices.with_index(setup.device)  # torch's memory-fraction calls need the index
        self.max_batches = setup.max_batches
        self._report, self._restored = report, restored
        distributed = dist.is_available() and dist.is_initialized()
        self.rank = dist.get_rank() if distributed else 0
        self.world_size = dist.get_world_size() if distributed else 1
        self.precision = precision.resolve(setup.precision, self.device)
        # Tensor splits moved to the device, by the ids of their host tensors: (x, y, x there, y there).
        self._resident: dict[tuple[int, int], tuple[torch.Tensor, ...]] = {}
        self._loss_scaling = (
            precision.LossScaling(self.device, distributed=self.world_size > 1) if self.precision.scales_loss else None
        )
        self._strategy = strategy(self.parallel, rank=self.rank, world_size=self.world_size, device=self.device)
        self.start_epoch = restored["epoch"] + 1 if restored else 1
        self.epoch = self.start_epoch  # the epoch being trained: the next report is for it
        self._lineage = {"restored_from": restored["trial_id"], "restored_epoch": restored["epoch"]} if restored else {}
        gpu_memory.reset_peak(self.device)  # this trial's peak, not an earlier one's in the same process
        # `params` and `latency_ms` once measured (tuner/training/model_costs.py), added to every report.
        self.model_costs: dict[str, float | int] = {}

    def restore(self) -> Any | None:
        """The checkpoint to resume from (this trial's latest after a retry or resume, a PBT donor's after
        an exploit), exactly as a `report(..., checkpoint=...)` gave it; None for a fresh start."""
        return self._restored["state"] if self._restored else None

    def prepare_model(self, model: nn.Module) -> nn.Module:
        """The model on this rank's device as the trial's strategy runs it: wrapped in DDP or DataParallel,
        sharded by FSDP, or (pipeline) this rank's stage. Build the optimizer over the returned model's
        parameters, and evaluate with `evaluation_model` of it. Counts the whole model's `params` first,
        which every later report carries."""
        if (count := model_costs.count_params(model)) is not None:
            self.model_costs[model_costs.PARAMS] = count
        return self._strategy.prepare(model)

    def measure_model(self, model: nn.Module, inputs: Any) -> dict[str, float | int]:
        """Times forwards of `inputs` (one validation batch's `x`, from `ctx.batches(val, batch_size,
        shuffle=False)`) through `model` (the `evaluation_model`, or the loop's own net) as `latency_ms`,
        and counts its `params` unless `prepare_model` did; every later report carries both. Call it once
        per run, on every rank when there are several (a rank without a batch passes None); tuner's own
        loop does it after its first evaluation. Returns {"params": ..., "latency_ms": ...}, as measured."""
        if model_costs.PARAMS not in self.model_costs and self.world_size == 1:
            # Over several ranks the model here may be a shard or a stage: only prepare_model's counts.
            if (count := model_costs.count_params(model)) is not None:
                self.model_costs[model_costs.PARAMS] = count
        latency = model_costs.latency_ms(model, inputs, self.device, autocast=self.autocast, world_size=self.world_size)
        if latency is not None:
            self.model_costs[model_costs.LATENCY_MS] = latency
        return dict(self.model_costs)

    def evaluation_model(self, model: nn.Module) -> nn.Module:
        """What to evaluate a prepared model with, over `batches(..., shuffle=False)`: DDP's unwrapped
        module (ranks may hold different numbers of evaluation batches); under FSDP and pipeline the
        prepared model, whose forwards every rank runs together (a pipeline stage without the outputs
        gets None)."""
        return self._strategy.evaluation_model(model)

    def autocast(self) -> AbstractContextManager[Any]:
        """The trial's autocast (bf16 or fp16 as `precision` asks, on a GPU), or nothing, for a forward
        the loop runs itself (evaluation)."""
        return self.precision.autocast(self.device)

    def train_step(
        self, model: nn.Module, x: Any, y: Any, loss_fn: Callable[[Any, Any], torch.Tensor]
    ) -> torch.Tensor | None:
        """Forward (in the trial's precision), loss and backward of one batch on a prepared model; the loss,
        or None on a pipeline stage that computes none. The optimizer's zero_grad and step stay the
        loop's: step it with `ctx.step(optimizer)`, which fp16 needs."""
        if self._loss_scaling is None:
            return self._strategy.train_step(model, x, y, loss_fn, self.autocast())
        losses: list[torch.Tensor] = []  # unscaled, one per (micro-)batch
        scaled = self._loss_scaling.scaled(loss_fn, losses)
        if self._strategy.train_step(model, x, y, scaled, self.autocast()) is None:
            return None
        return losses[0] if len(losses) == 1 else torch.stack([loss.detach() for loss in losses]).mean()

    def step(self, optimizer: torch.optim.Optimizer) -> None:
        """`optimizer.step()`, except under fp16, where the gradients are unscaled first and a step whose
        gradients overflowed is skipped (torch's GradScaler)."""
        if self._loss_scaling is None:
            optimizer.step()
        else:
            self._loss_scaling.step(optimizer)

    def synchronize(self) -> None:
        """Wait until the device has run everything queued on it (a no-op on the CPU): call it before
        reading a clock, or a GPU's queued work goes uncounted."""
        devices.synchronize(self.device)

    def close(self) -> None:
        """Lets go of what the context holds in the process: the device copies of the data, fp16's hook."""
        self._resident.clear()
        if self._loss_scaling is not None:
            self._loss_scaling.close()

    def get_state(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None) -> Any:
        """{"model": ..., "optimizer": ...} of a prepared model, whole, as `report(checkpoint=...)` should
        save it: under FSDP gathered from the shards, under pipeline from every stage (None on ranks > 0).
        Every rank must call it."""
        return self._strategy.get_state(model, optimizer)

    def set_state(self, model: nn.Module, optimizer: torch.optim.Optimizer | None, state: Any) -> None:
        """Loads what `get_state` gave (e.g. `ctx.restore()`) into a prepared model and its optimizer; the
        optimizer keeps the hyperparameters it was built with, so a PBT mutation holds."""
        self._strategy.set_state(model, optimizer, state)

    def batches(self, split: Split, batch_size: int, shuffle: bool = True) -> Iterable[Any]:
        """This rank's batches of a split, on the device. `shuffle=True` (training): a seeded
        DistributedSampler reshuffled each epoch, so a resumed trial sees the order an uninterrupted one
        would, and `batch_size` is the global batch, split over the ranks. `shuffle=False`
        (evaluation): the split in order, each rank a disjoint share with no repeated samples."""
        n = split_size(split)
        shard, shards = self._strategy.data_shard
        pad_to = None
        if shuffle:
            # Any sized sequence of indices will do: the sampler only takes its len().
            indices: Any = range(n)
            sampler: Any = DistributedSampler(indices, num_replicas=shards, rank=shard, shuffle=True, seed=self.seed)
            sampler.set_epoch(self.epoch)
            per_rank = max(1, batch_size // shards)
        else:
            # DistributedSampler would pad the shards with repeated samples; striding does not.
            sampler, per_rank = range(shard, n, shards), batch_size
            if self._strategy.lockstep_evaluation and shards > 1:
                pad_to = math.ceil(math.ceil(n / shards) / per_rank)  # shard 0's count, the largest
                pad_to = pad_to if self.max_batches is None else min(pad_to, self.max_batches)
        if is_tensor_pair(split):
            # The batches DataLoader(TensorDataset) would give, cut from the tensors in one gather each:
            # on the device, where the split fits there, else gathered into pinned memory on a GPU host.
            pair = self._on_device(split)
            resident = pair is not None
            pair = pair or split
            loader: Iterable[Any] = SlicedBatches(
                pair[0], pair[1], sampler, per_rank, pin=not resident and self.device.type == "cuda"
            )
            empty: Callable[[], Any] = partial(_empty_pair, pair)
        else:
            loader = DataLoader(split, batch_size=per_rank, sampler=sampler, pin_memory=self.device.type == "cuda")
            empty = partial(_first_sample_batch, split)
        return _DeviceLoader(loader, self.device, lambda: self.epoch, self.max_batches, pad_to, empty)

    def _on_device(self, split: TensorPair) -> TensorPair | None:
        """The split's tensors on the device, moved once per trial (each epoch reuses them); None when
        they would take more than DEVICE_DATA_SHARE of the device memory left to this process."""
        x, y = split
        key = (id(x), id(y))
        if key not in self._resident:
            if x.device == self.device and y.device == self.device:
                return split
            free = _free_bytes(self.device)
            if free is not None and x.nbytes + y.nbytes > DEVICE_DATA_SHARE * free:
                return None
            # The host tensors are kept with their copies, so their ids stay theirs while the key is used.
            self._resident[key] = (x, y, x.to(self.device), y.to(self.device))
        return self._resident[key][2], self._resident[key][3]

    def prepare_data_loader(self, loader: DataLoader) -> Iterable[Any]:
        """A DataLoader of the loop's own, on the device; over several ranks, rebuilt with a seeded
        DistributedSampler (shuffling if the loader did) so each rank reads its own share."""
        shard, shards = self._strategy.data_shard
        if shards > 1 and not isinstance(loader.sampler, DistributedSampler):
            sampler: DistributedSampler[Any] = DistributedSampler(
                loader.dataset,
                num_replicas=shards,
                rank=shard,
                shuffle=isinstance(loader.sampler, RandomSampler),
                seed=self.seed,
            )
            loader = DataLoader(
                loader.dataset,
                batch_size=loader.batch_size,
                sampler=sampler,
                num_workers=loader.num_workers,
                collate_fn=loader.collate_fn,
                pin_memory=loader.pin_memory,
                drop_last=loader.drop_last,
                worker_init_fn=loader.worker_init_fn,
            )
        return _DeviceLoader(loader, self.device, lambda: self.epoch, self.max_batches)

    def all_reduce(self, value: Any) -> Any:
        """The sum over all ranks of a tensor (summed in place and returned) or a number."""
        if self.world_size == 1:
            return value
        if isinstance(value, torch.Tensor):
            dist.all_reduce(value, op=dist.ReduceOp.SUM)
            return value
        total = torch.tensor(float(value), dtype=torch.float64, device=self.device)
        dist.all_reduce(total, op=dist.ReduceOp.SUM)
        return total.item()

    def report(self, metrics: dict[str, Any], checkpoint: Any = None) -> None:
        """Record one epoch: `metrics` (numbers, named as the space's `metric` and `stop` refer to them)
        and, on rank 0, an optional checkpoint (any picklable object, e.g. state dicts), which `restore`
        gives back. Every rank must call it: under DDP it is a barrier."""
        row = {name: _metric_value(name, value) for name, value in metrics.items()}
        for name, value in self.model_costs.items():
            row.setdefault(name, value)  # the loop's own `params`, if it reports one, stays
        epoch = int(row.get("epoch", self.epoch))
        row.update({"epoch": epoch, "reported_at": time.time(), RESULT_KEY: self.config.reported(), **self._lineage})
        row.setdefault("world_size", self.world_size)
        row.setdefault("precision", self.precision.name)  # what the trial trained in: fp32 on a CPU
        row.setdefault("device", str(self.device))
        row.setdefault("gpu_peak_gib", gpu_memory.peak_gib(self.device))  # NaN on the CPU
        self._lineage = {}  # reported with the first epoch after a restore only
        with tempfile.TemporaryDirectory() as directory:
            saved = None
            if checkpoint is not None and self.rank == 0:
                torch.save(
                    {"state": checkpoint, "epoch": epoch, "trial_id": self.trial_id}, Path(directory) / CHECKPOINT_FILE
                )
                saved = directory
            self._report(row, saved)
        self.epoch = epoch + 1
