from torch import nn
from torchvision.models import resnet18 as torchvision_resnet18


def resnet18(input_shape: tuple[int, ...], num_classes: int, **_: object) -> nn.Module:
    """torchvision's ResNet-18 with the usual small-image stem: 3x3 stride-1 conv, no max-pool.

    The ImageNet stem (7x7 stride 2, then max-pool) would shrink a 28x28 or 32x32 image to 7x7 or
    8x8 before the first residual block.
    """
    model = torchvision_resnet18(weights=None, num_classes=num_classes)
    model.conv1 = nn.Conv2d(input_shape[0], 64, kernel_size=3, stride=1, padding=1, bias=False)
    model.maxpool = nn.Identity()
    return model
