"""The shipped models' first layer: raw input (uint8 pixels or float features) to zero mean, unit
variance per channel, with statistics taken from the training split the model is built for."""

import torch
from torch import nn

from tuner.data.splits import Splits, is_tensor_pair, split_size

# Statistics from the first samples only: enough for a mean and a spread, and cheap on every trial.
STATS_SAMPLES = 10_000


class Standardize(nn.Module):
    mean: torch.Tensor  # buffers: saved with the weights, moved with .to(device)
    std: torch.Tensor

    def __init__(self, scale: float, mean: torch.Tensor, std: torch.Tensor):
        super().__init__()
        self.scale = scale
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x.float() * self.scale - self.mean) / self.std

    @classmethod
    def fit(cls, data: Splits) -> "Standardize":
        """Per channel for images (N, C, H, W), per feature for tables (N, F); uint8 is scaled to [0, 1]."""
        if is_tensor_pair(data.train):
            x = data.train[0][:STATS_SAMPLES]
        else:
            x = torch.stack([torch.as_tensor(data.train[i][0]) for i in range(min(split_size(data.train), 1000))])
        scale = 1 / 255 if x.dtype == torch.uint8 else 1.0
        x = x.double() * scale
        axes = [axis for axis in range(x.ndim) if axis != 1] if x.ndim > 1 else [0]
        shape = [1, *x.shape[1:2], *[1] * (x.ndim - 2)]  # broadcasts over a batch
        mean = x.mean(dim=axes).float().reshape(shape)
        std = x.std(dim=axes).clamp_min(1e-6).float().reshape(shape)
        return cls(scale, mean, std)
