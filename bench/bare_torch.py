"""One epoch of a plain torch loop over tensors already on the device, written once: the baseline that
bench/parallel.py (against tuner's loop) and bench/gpu_packing.py (against `tuner run`) measure by.
Not a benchmark itself."""

from contextlib import AbstractContextManager
from typing import Any

import torch
from torch import nn


def train_epoch(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    x: torch.Tensor,
    y: torch.Tensor,
    batch_size: int,
    autocast: AbstractContextManager[Any],
) -> None:
    """Shuffled batches of (x, y), each a forward in `autocast`, cross-entropy, backward and a step; on a
    GPU it returns once the GPU is done, so a clock read around it times the work."""
    order = torch.randperm(len(y), device=x.device)
    for start in range(0, len(y), batch_size):
        index = order[start : start + batch_size]
        with autocast:
            loss = nn.functional.cross_entropy(model(x[index]).float(), y[index])
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    if x.device.type == "cuda":
        torch.cuda.synchronize()
