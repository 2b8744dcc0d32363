from torch import nn


def cnn(input_shape: tuple[int, ...], num_classes: int, channels: int, hidden: int, dropout: float,
        **_: object) -> nn.Module:
    """Two conv blocks; the adaptive pool makes one definition fit 8x8 digits and 32x32 CIFAR alike."""
    in_channels = input_shape[0]
    return nn.Sequential(
        nn.Conv2d(in_channels, channels, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(channels, 2 * channels, 3, padding=1),
        nn.ReLU(),
        nn.AdaptiveMaxPool2d(4),
        nn.Flatten(),
        nn.Dropout(dropout),
        nn.Linear(2 * channels * 16, hidden),
        nn.ReLU(),
        nn.Linear(hidden, num_classes),
    )
