"""Validation metrics of tuner's loop, exact over the whole validation set and across DDP ranks.

A space module's `metrics` is either a function `metrics(outputs, targets) -> {name: value}` of
per-batch means (accuracy, MAE, ...), or a dict whose values are such functions of their own or
torchmetrics `Metric` objects. Per-batch means are weighted by the batch's size and summed across
ranks, so the result is the mean over every validation sample, not a mean of batch means. A metric
that is no per-sample mean (F1, AUROC, RMSE) needs all predictions at once: torchmetrics keeps its
state per rank and synchronises it itself when computing, so tuner hands those on untouched.

Without `metrics`, the loop reports `val_loss`, plus `val_acc` for class labels.
"""

import copy
from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from tuner.data.splits import Split
from tuner.signatures import is_torchmetric
from tuner.training.context import TrialContext
from tuner.training.losses import is_class_labels, matched, one_logit_per_sample

EVAL_BATCH = 1024
MetricsSpec = Callable[[torch.Tensor, Any], Mapping[str, Any]] | Mapping[str, Any] | None


def accuracy(outputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """The fraction of the batch classified right: argmax over classes, or logit > 0 for one logit."""
    if one_logit_per_sample(outputs, targets):
        return ((matched(outputs, targets) > 0) == targets.bool()).double().mean()
    return (outputs.argmax(dim=1) == targets).double().mean()  # double: a count of n stays exact


def batch_size_of(batch: Any) -> int:
    if isinstance(batch, torch.Tensor):
        return len(batch)
    if isinstance(batch, (tuple, list)):
        return batch_size_of(batch[0])
    if isinstance(batch, Mapping):
        return batch_size_of(next(iter(batch.values())))
    return len(batch)


def _one_number(name: str, value: Any, device: torch.device) -> torch.Tensor:
    number = torch.as_tensor(value, dtype=torch.float64, device=device)
    if number.numel() != 1:
        raise ValueError(
            f"metric {name!r} gave a tensor of shape {tuple(number.shape)}; give one number per "
            "metric (the batch's mean, or an averaged torchmetrics metric)"
        )
    return number.reshape(())


def _names_on_every_rank(names: set[str], ctx: TrialContext) -> set[str]:
    """The metric names any rank computed: a rank without outputs (a pipeline stage before the last, a
    rank without validation samples) knows none, yet must sum the same vector as the others."""
    if ctx.world_size == 1:
        return names
    everyone: list[Any] = [None] * ctx.world_size
    dist.all_gather_object(everyone, names)
    return set().union(*everyone)


class Evaluation:
    """Scores a model on a validation split: `val_loss` and the space's metrics (or `val_acc`)."""

    def __init__(self, spec: MetricsSpec, loss: Callable[[Any, Any], torch.Tensor], device: torch.device):
        self.loss, self.device = loss, device
        self.function: Callable[[Any, Any], Mapping[str, Any]] | None = None
        self.per_batch: dict[str, Callable[[Any, Any], Any]] = {}
        self.torchmetrics: dict[str, Any] = {}
        if callable(spec) and not isinstance(spec, Mapping):
            self.function = spec
        for name, value in (spec or {}).items() if isinstance(spec, Mapping) else ():
            if is_torchmetric(value):
                # The space's objects stay as they are; each trial accumulates in copies of its own.
                self.torchmetrics[name] = copy.deepcopy(value).to(device)
            else:
                self.per_batch[name] = value
        self.default = spec is None

    def _batch_means(self, outputs: Any, targets: Any) -> dict[str, Any]:
        means: dict[str, Any] = {"val_loss": self.loss(outputs, targets)}
        if self.default and isinstance(targets, torch.Tensor) and is_class_labels(targets):
            means["val_acc"] = accuracy(outputs, targets)
        if self.function is not None:
            means.update(self.function(outputs, targets))
        means.update({name: function(outputs, targets) for name, function in self.per_batch.items()})
        return means

    @torch.no_grad()
    def __call__(self, model: nn.Module, split: Split, ctx: TrialContext) -> dict[str, float]:
        """Every metric over the whole split, with `ctx.evaluation_model` of the trained model. A forward
        that gives None (a pipeline stage before the last) or a batch of no samples (a rank that ran out
        of batches before the others, under FSDP) adds nothing to the sums."""
        was_training = model.training
        model.eval()
        sums: dict[str, torch.Tensor] = {}
        count = 0
        for x, y in ctx.batches(split, EVAL_BATCH, shuffle=False):
            with ctx.autocast():
                outputs = model(x)
            n = batch_size_of(y)
            if outputs is None or n == 0:
                continue
            outputs = outputs.float() if isinstance(outputs, torch.Tensor) else outputs
            for name, value in self._batch_means(outputs, y).items():
                total = _one_number(name, value, ctx.device) * n
                sums[name] = sums[name] + total if name in sums else total
            for metric in self.torchmetrics.values():
                metric.update(outputs, y)
            count += n
        names = sorted(_names_on_every_rank(set(sums), ctx))  # the same names in the same order on every rank
        zero = torch.zeros((), dtype=torch.float64, device=ctx.device)
        totals = ctx.all_reduce(
            torch.stack(
                [
                    *(sums.get(name, zero).detach() for name in names),
                    torch.tensor(float(count), dtype=torch.float64, device=ctx.device),
                ]
            )
        )
        results = {name: float(totals[i] / totals[-1]) for i, name in enumerate(names)}
        for name, metric in self.torchmetrics.items():
            results[name] = float(
                _one_number(name, metric.compute(), ctx.device)
            )  # gathered from every rank by torchmetrics
            metric.reset()
        model.train(was_training)
        return results
