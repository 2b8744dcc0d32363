"""The base strategy, one whole model in one process, and the interface every other one follows.

A loop calls these through its context (`ctx.prepare_model`, `ctx.get_state`, `ctx.set_state`, ...),
so tuner's own loop and a space module's `train_loop` work under every strategy unchanged, as long
as they save `ctx.get_state(model, optimizer)` rather than `model.state_dict()`: under FSDP a rank's
state dict is a shard, under pipeline a stage.
"""

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from tuner.training.optimizers import load_optimizer_state


class Strategy:
    """One rank's part of a trial. This base runs the whole model on `device`, unwrapped."""

    # Whether a forward involves the other ranks (FSDP gathers parameters in it), so that evaluation
    # must run the same number of forwards on every rank.
    lockstep_evaluation = False

    def __init__(self, *, rank: int, world_size: int, device: torch.device):
        self.rank, self.world_size, self.device = rank, world_size, device

    @property
    def data_shard(self) -> tuple[int, int]:
        """(this rank's shard, number of shards) of every batch stream: one per rank for data parallelism."""
        return self.rank, self.world_size

    def prepare(self, model: nn.Module) -> nn.Module:
        return model.to(self.device)

    def unwrap(self, model: nn.Module) -> nn.Module:
        """The module whose state dict is the model's, without a wrapper's prefixes."""
        return model

    def evaluation_model(self, model: nn.Module) -> nn.Module:
        """The model to evaluate with: the unwrapped one, since ranks may hold different numbers of
        evaluation batches and a DDP forward may wait for the others."""
        return self.unwrap(model)

    def train_step(
        self, model: nn.Module, x: Any, y: Any, loss_fn: Callable[[Any, Any], torch.Tensor], autocast: Any
    ) -> torch.Tensor | None:
        """Forward and backward of one batch; the loss, or None on a rank that computes none."""
        with autocast:
            outputs = model(x)
        loss = loss_fn(outputs.float() if isinstance(outputs, torch.Tensor) else outputs, y)
        loss.backward()
        return loss

    def get_state(self, model: nn.Module, optimizer: torch.optim.Optimizer | None = None) -> Any:
        """The model's (and optimizer's) state as a checkpoint holds it; only rank 0's is saved."""
        state: dict[str, Any] = {"model": self.unwrap(model).state_dict()}
        if optimizer is not None:
            state["optimizer"] = optimizer.state_dict()
        return state

    def set_state(self, model: nn.Module, optimizer: torch.optim.Optimizer | None, state: Any) -> None:
        """Loads what `get_state` gave, keeping the optimizer's freshly built hyperparameters (PBT)."""
        self.unwrap(model).load_state_dict(state["model"])
        if optimizer is not None and "optimizer" in state:
            load_optimizer_state(optimizer, state["optimizer"])
