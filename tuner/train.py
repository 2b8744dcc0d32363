"""The one training loop every trial runs: in-process for one worker, on each Ray Train worker for DDP.

Everything that differs between those two cases (how to report, rank, device, DDP wrapping) lives in
`Runtime`, so the loop itself reads top to bottom like a plain PyTorch script.
"""

import math
import tempfile
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import ray
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DistributedSampler

from tuner import hyperparameters
from tuner.batches import SlicedBatches
from tuner.data.dataset import Dataset
from tuner.models.build import build as build_model

CHECKPOINT_FILE = "checkpoint.pt"
EVAL_BATCH = 1024


@dataclass(frozen=True)
class TrialSetup:
    """What every trial of an experiment shares; the per-trial part is the hyperparameter config."""

    model: str
    data: ray.ObjectRef  # -> Dataset, put in the object store once by the driver
    epochs: int
    seed: int
    workers: int
    cpus_per_worker: float
    gpus_per_worker: float
    experiment_path: str  # local path or pyarrow-fs URI of the experiment directory


@dataclass
class Runtime:
    trial_id: str  # written into checkpoints, so a restore can tell whose weights it loaded
    rank: int
    world_size: int
    device: torch.device
    report: Callable[[dict[str, Any], str | None], None]  # metrics, checkpoint directory (rank 0 only)
    restored: Any  # the checkpoint to resume from (tune.Checkpoint / ray.train.Checkpoint), or None
    wrap_model: Callable[[nn.Module], nn.Module]
    all_reduce: Callable[[torch.Tensor], torch.Tensor]


def make_optimizer(model: nn.Module, hp: dict[str, Any]) -> torch.optim.Optimizer:
    params, lr, wd = model.parameters(), hp["lr"], hp["weight_decay"]
    if hp["optimizer"] == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=hp["momentum"], weight_decay=wd)
    if hp["optimizer"] == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=wd)
    return torch.optim.Adam(params, lr=lr, weight_decay=wd)


@torch.no_grad()
def evaluate(model: nn.Module, data: Dataset, rt: Runtime) -> tuple[float, float]:
    """Exact validation loss and accuracy over the whole set, each rank scoring a disjoint shard.

    DistributedSampler would pad the shards with repeated samples; striding avoids that, and the
    unwrapped model is used because shards can differ by one batch, which DDP's forward would hang on.
    """
    model.eval()
    x_all, y_all = data.x_val[rt.rank :: rt.world_size], data.y_val[rt.rank :: rt.world_size]
    totals = torch.zeros(3, dtype=torch.float64, device=rt.device)  # loss sum, correct, count
    for start in range(0, len(y_all), EVAL_BATCH):
        x = x_all[start : start + EVAL_BATCH].to(rt.device)
        y = y_all[start : start + EVAL_BATCH].to(rt.device)
        with autocast(rt.device):
            logits = model(x)
        totals[0] += F.cross_entropy(logits.float(), y, reduction="sum")
        totals[1] += (logits.argmax(dim=1) == y).sum()
        totals[2] += len(y)
    loss_sum, correct, count = rt.all_reduce(totals).tolist()
    model.train()
    return loss_sum / count, correct / count


def autocast(device: torch.device):
    """bf16 autocast on GPU (no loss scaling needed); full precision on CPU."""
    return torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else nullcontext()


def train(config: dict[str, Any], setup: TrialSetup, rt: Runtime) -> None:
    hp = hyperparameters.resolve(config, setup.seed)
    torch.set_num_threads(max(1, int(setup.cpus_per_worker)))
    torch.manual_seed(hp["seed"])
    data: Dataset = ray.get(setup.data)

    raw_model = build_model(setup.model, data, hp).to(rt.device)
    optimizer = make_optimizer(raw_model, hp)
    start_epoch, lineage = 1, {}
    if rt.restored is not None:
        with rt.restored.as_directory() as ckpt_dir:
            state = torch.load(Path(ckpt_dir) / CHECKPOINT_FILE, map_location=rt.device)
        raw_model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        # The saved param groups carry the old lr/momentum/decay; `defaults` still holds this trial's
        # (PBT restarts a trial with a donor's checkpoint and a mutated config).
        for group in optimizer.param_groups:
            group.update(optimizer.defaults)
        start_epoch = state["epoch"] + 1
        lineage = {"restored_from": state["trial_id"], "restored_epoch": state["epoch"]}
    model = rt.wrap_model(raw_model)

    # The global batch is batch_size whatever the world size, so a config means the same optimisation.
    per_worker_batch = max(1, hp["batch_size"] // rt.world_size)
    sampler = DistributedSampler(range(len(data.y_train)), num_replicas=rt.world_size, rank=rt.rank, shuffle=True,
                                 seed=hp["seed"])
    # The batches DataLoader(TensorDataset) would give, in the same order, cut from the in-memory tensors
    # in one gather each instead of collated sample by sample; the loop moves every batch to the device.
    batches = SlicedBatches(data.x_train, data.y_train, sampler, per_worker_batch)

    for epoch in range(start_epoch, setup.epochs + 1):
        sampler.set_epoch(epoch)  # a resumed trial sees the same order as an uninterrupted one
        started = time.perf_counter()
        totals = torch.zeros(2, dtype=torch.float64, device=rt.device)  # loss sum, samples
        for x, y in batches:
            x, y = x.to(rt.device, non_blocking=True), y.to(rt.device, non_blocking=True)
            with autocast(rt.device):
                loss = F.cross_entropy(model(x).float(), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            totals += torch.stack([loss.detach().double() * len(y), torch.tensor(len(y), device=rt.device)])
        elapsed = time.perf_counter() - started
        loss_sum, samples = rt.all_reduce(totals).tolist()
        train_loss = loss_sum / samples
        diverged = not math.isfinite(train_loss)
        val_loss, val_acc = (math.nan, math.nan) if diverged else evaluate(raw_model, data, rt)
        metrics = {
            "epoch": epoch,
            "train_loss": train_loss,
            "val_loss": val_loss,
            "val_acc": val_acc,
            "world_size": rt.world_size,
            "samples_per_s": samples / elapsed,
            "diverged": diverged,
            "reported_at": time.time(),
            **lineage,
        }
        lineage = {}  # reported with the first epoch after a restore only
        with tempfile.TemporaryDirectory() as ckpt_dir:
            if rt.rank == 0:
                state = {"model": raw_model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": epoch,
                         "trial_id": rt.trial_id}
                torch.save(state, Path(ckpt_dir) / CHECKPOINT_FILE)
            rt.report(metrics, ckpt_dir if rt.rank == 0 else None)
        if diverged:
            return  # further epochs would only compute NaNs
