import math

from torch import nn


def mlp(input_shape: tuple[int, ...], num_classes: int, hidden: int, dropout: float, **_: object) -> nn.Module:
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(math.prod(input_shape), hidden),
        nn.ReLU(),
        nn.Dropout(dropout),
        nn.Linear(hidden, hidden),
        nn.ReLU(),
        nn.Dropout(dropout),
        nn.Linear(hidden, num_classes),
    )
