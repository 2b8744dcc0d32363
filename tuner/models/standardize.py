import torch
from torch import nn


class Standardize(nn.Module):
    """Maps raw input (uint8 pixels or floats) to zero mean, unit variance per channel."""

    def __init__(self, scale: float, mean: tuple[float, ...], std: tuple[float, ...]):
        super().__init__()
        self.scale = scale
        self.register_buffer("mean", torch.tensor(mean).view(1, -1, 1, 1))
        self.register_buffer("std", torch.tensor(std).view(1, -1, 1, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x.float() * self.scale - self.mean) / self.std
