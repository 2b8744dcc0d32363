import math
from typing import Any

from torch import nn

from tuner.data.splits import Splits
from tuner.models.standardize import Standardize


def mlp(config: dict[str, Any], data: Splits) -> nn.Module:
    """Two hidden layers of `hidden` units (default 128) with `dropout` (default 0), for any input shape."""
    hidden, dropout = config.get("hidden", 128), config.get("dropout", 0.0)
    return nn.Sequential(
        Standardize.fit(data),
        nn.Flatten(),
        nn.Linear(math.prod(data.input_shape), hidden),
        nn.ReLU(),
        nn.Dropout(dropout),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Dropout(dropout),
        nn.Linear(hidden, data.output_size),
    )
