"""An in-memory classification dataset: loaded once by the driver, shared with trials via Ray's object store."""

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Dataset:
    name: str
    x_train: torch.Tensor  # (N, C, H, W), uint8 pixels or float features
    y_train: torch.Tensor  # (N,) int64 class labels
    x_val: torch.Tensor
    y_val: torch.Tensor
    num_classes: int
    # Per-channel statistics on the 0..1 scale; the model standardises its input with them,
    # so image sets stay uint8 in memory (4x smaller) until a batch is used.
    mean: tuple[float, ...]
    std: tuple[float, ...]

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])

    @property
    def pixel_scale(self) -> float:
        return 1 / 255 if self.x_train.dtype == torch.uint8 else 1.0
