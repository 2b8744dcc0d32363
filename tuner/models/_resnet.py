from typing import Any

from torch import nn
from torchvision.models import ResNet
from torchvision.models import resnet18 as torchvision_resnet18

from tuner.data.splits import Splits
from tuner.models.standardize import Standardize


def small_image_resnet18(in_channels: int, num_classes: int) -> ResNet:
    """torchvision's ResNet-18 with the usual small-image stem: 3x3 stride-1 conv, no max-pool.

    The ImageNet stem (7x7 stride 2, then max-pool) would shrink a 28x28 or 32x32 image to 7x7 or
    8x8 before the first residual block.
    """
    model = torchvision_resnet18(weights=None, num_classes=num_classes)
    model.conv1 = nn.Conv2d(in_channels, 64, kernel_size=3, stride=1, padding=1, bias=False)
    model.maxpool = nn.Identity()
    return model


def resnet18(config: dict[str, Any], data: Splits) -> nn.Module:
    """`small_image_resnet18` for the data's channels and outputs; it reads no hyperparameter."""
    return nn.Sequential(Standardize.fit(data), small_image_resnet18(data.input_shape[0], data.output_size))
