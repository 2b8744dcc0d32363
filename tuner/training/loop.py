"""tuner's own training loop over a space's parts: model, data, loss, metrics and optimizer.

It is a `train_loop(config, ctx)` like the one a space module may write itself (see
`tuner/training/context.py`), so the shipped models and a user's own go down one code path: in-process
for one worker, on each Ray Train worker for ddp, fsdp and pipeline trials, and in the smoke step.
Everything that differs between those lives in the context, so the loop reads top to bottom like a
plain PyTorch script.
"""

import math
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from tuner.signatures import call
from tuner.training import model_costs
from tuner.training.context import TrialContext
from tuner.training.losses import default_loss
from tuner.training.metrics import Evaluation, MetricsSpec, batch_size_of
from tuner.training.optimizers import default_optimizer

DEFAULT_BATCH_SIZE = 64
ModelFn = Callable[..., nn.Module]  # model(config) or model(config, data)
LossFn = Callable[[Any, Any], torch.Tensor]
OptimizerFn = Callable[[dict[str, Any], Iterable[nn.Parameter]], torch.optim.Optimizer]


@dataclass(frozen=True)
class ComponentLoop:
    """`train_loop(config, ctx)` for a space that gives a `model` (and `dataset`, optionally `loss`,
    `metrics`, `optimizer`) instead of a loop of its own."""

    model: ModelFn
    loss: LossFn | None = None
    metrics: MetricsSpec = None
    optimizer: OptimizerFn | None = None

    def __call__(self, config: dict[str, Any], ctx: TrialContext) -> None:
        data = ctx.data
        assert data is not None, "a space with a model always has a dataset (tuner.spec.space checks it)"
        model = ctx.prepare_model(call(self.model, config, data))  # wrapped, sharded or this rank's stage
        optimizer = (self.optimizer or default_optimizer)(config, model.parameters())
        if (state := ctx.restore()) is not None:
            ctx.set_state(model, optimizer, state)
        loss_fn = self.loss or default_loss
        evaluate = Evaluation(self.metrics, loss_fn, ctx.device)
        batch_size = config.get("batch_size", DEFAULT_BATCH_SIZE)

        for _ in range(ctx.start_epoch, ctx.epochs + 1):
            ctx.synchronize()  # the epoch's time starts with the GPU idle and ends with it done
            started = time.perf_counter()
            # Summed where the loss is, with a host count: a tensor made per batch would be a blocking
            # copy to the GPU, so the CPU could never queue the next batch ahead of it.
            epoch_loss, epoch_samples = torch.zeros((), dtype=torch.float64, device=ctx.device), 0
            for x, y in ctx.batches(data.train, batch_size):
                optimizer.zero_grad(set_to_none=True)
                loss = ctx.train_step(model, x, y, loss_fn)  # forward, loss, backward
                ctx.step(optimizer)  # optimizer.step(), unscaling fp16's gradients first
                if loss is not None:  # None: a pipeline stage before the last, which computes no loss
                    n = batch_size_of(y)
                    epoch_loss += loss.detach().double() * n
                    epoch_samples += n
            ctx.synchronize()
            elapsed = time.perf_counter() - started
            totals = torch.stack([epoch_loss, epoch_loss.new_tensor(float(epoch_samples))])
            loss_sum, samples = ctx.all_reduce(totals).tolist()
            train_loss = loss_sum / samples
            diverged = not math.isfinite(train_loss)
            scored = ctx.evaluation_model(model)
            if diverged:
                # The same metric names, so a report never lacks the one the search ranks by; NaN, since
                # scores of non-finite weights would only mislead. Scoring them may itself fail (a
                # metric that refuses NaN), and the trial ends here either way.
                try:
                    val = dict.fromkeys(evaluate(scored, data.val, ctx), math.nan)
                except Exception:
                    val = {}
            else:
                val = evaluate(scored, data.val, ctx)
            if model_costs.LATENCY_MS not in ctx.model_costs:  # once per run, so every report carries it
                batch = next(iter(ctx.batches(data.val, batch_size, shuffle=False)), None)
                try:
                    ctx.measure_model(scored, batch[0] if batch is not None else None)
                except Exception:
                    if not diverged:
                        raise
                    ctx.model_costs[model_costs.LATENCY_MS] = math.nan  # as the scores: a forward may refuse NaN
            ctx.report(
                {"train_loss": train_loss, **val, "samples_per_s": samples / elapsed, "diverged": diverged},
                checkpoint=ctx.get_state(model, optimizer),
            )
            if diverged:
                return  # further epochs would only compute NaNs
