"""The optimizer tuner's loop builds when a space module defines none, and restoring any optimizer's
state without undoing a PBT mutation."""

from collections.abc import Callable, Iterable
from typing import Any

import torch


def default_optimizer(config: dict[str, Any], params: Iterable[torch.nn.Parameter]) -> torch.optim.Optimizer:
    """`optimizer` (adam, adamw or sgd; default adam) with `lr` (1e-3), `weight_decay` (0) and, for sgd,
    `momentum` (0.9) from the config."""
    name, lr, weight_decay = config.get("optimizer", "adam"), config.get("lr", 1e-3), config.get("weight_decay", 0.0)
    if name == "sgd":
        return torch.optim.SGD(params, lr=lr, momentum=config.get("momentum", 0.9), weight_decay=weight_decay)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay)


def load_optimizer_state(
    optimizer: torch.optim.Optimizer, state: dict[str, Any], load: Callable[[dict[str, Any]], None] | None = None
) -> None:
    """`optimizer.load_state_dict(state)` (or `load(state)`, e.g. FSDP's), keeping the hyperparameters the
    optimizer was built with.

    A saved state carries its param groups' lr, momentum, ... from when it was saved. PBT restarts a
    trial from a donor's checkpoint with a mutated config, and the optimizer built from that config
    holds the new values, which loading the state alone would overwrite (ray-project/ray#36660).
    """
    built = [{key: value for key, value in group.items() if key != "params"} for group in optimizer.param_groups]
    (load or optimizer.load_state_dict)(state)
    for group, settings in zip(optimizer.param_groups, built):
        group.update(settings)
