from typing import Any

from torch import nn
from torchvision.models import ResNet
from torchvision.models import resnet18 as torchvision_resnet18
from torchvision.models import resnet50 as torchvision_resnet50

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


def resnet50(config: dict[str, Any], data: Splits) -> nn.Module:
    """torchvision's ResNet-50 with its ImageNet stem, for the data's channels and outputs: the model of
    the classic two-device split (conv1..layer2 | layer3..fc) that `parallel = "pipeline"` makes. It
    reads no hyperparameter; on small images its stem leaves little resolution, so prefer resnet18 there."""
    model = torchvision_resnet50(weights=None, num_classes=data.output_size)
    if data.input_shape[0] != 3:
        model.conv1 = nn.Conv2d(data.input_shape[0], 64, kernel_size=7, stride=2, padding=3, bias=False)
    return nn.Sequential(Standardize.fit(data), model)
