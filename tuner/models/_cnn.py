from typing import Any

from torch import nn

from tuner.data.splits import Splits
from tuner.models.standardize import Standardize


def cnn(config: dict[str, Any], data: Splits) -> nn.Module:
    """Two conv blocks of `channels` (default 32) and 2x`channels`, then a `hidden`-unit head (default 128)
    with `dropout` (default 0); the adaptive pool makes one definition fit 8x8 digits and 32x32 CIFAR alike."""
    channels, hidden, dropout = config.get("channels", 32), config.get("hidden", 128), config.get("dropout", 0.0)
    return nn.Sequential(
        Standardize.fit(data),
        nn.Conv2d(data.input_shape[0], channels, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(channels, 2 * channels, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveMaxPool2d(4),
        nn.Flatten(),
        nn.Dropout(dropout),
        nn.Linear(2 * channels * 16, hidden),
        nn.ReLU(),
        nn.Linear(hidden, data.output_size),
    )
