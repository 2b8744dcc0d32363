"""A torchvision ResNet split into sequential stages on several devices, fed micro-batches in a pipeline.

This is the pattern of PyTorch's "Single-Machine Model Parallel Best Practices" tutorial, generalised
from two stages to N. Splitting alone leaves every device but one idle at any moment; cutting the
batch into micro-batches lets stage s work on micro-batch k while stage s+1 works on micro-batch k-1.
On CUDA that overlap comes for free because kernel launches and device-to-device copies are
asynchronous to the host, so launching the stages in the right order is all the scheduling needed.
On a single CPU device the stages run one after another and micro-batching only adds overhead.
"""

from collections import OrderedDict
from collections.abc import Sequence

import torch
from torch import nn
from torchvision.models import ResNet

# The parts a stage boundary may fall between, in forward order, by the ResNet's own attribute
# names (so a stage's parameters keep their names after the stage prefix). The flatten that
# ResNet.forward does inline becomes a module here.
PARTS: tuple[tuple[str, ...], ...] = (
    ("conv1", "bn1", "relu", "maxpool"),
    ("layer1",),
    ("layer2",),
    ("layer3",),
    ("layer4",),
    ("avgpool", "flatten", "fc"),
)


class PipelineResNet(nn.Module):
    """`model` split into `len(devices)` stages, stage i on `devices[i]`, run on `chunks` micro-batches.

    Stages get contiguous, equally many parts; for two that is the classic split, conv1..layer2 and
    layer3..fc, which also roughly halves the compute since every residual layer costs about the same.
    The model's modules are moved onto the devices, not copied. The output, on the last device, is the
    micro-batches' outputs concatenated in order.

    In eval mode the result equals the unsplit model's. In train mode each BatchNorm normalises with
    its micro-batch's statistics and updates its running statistics once per micro-batch, as in GPipe.
    """

    def __init__(self, model: ResNet, devices: Sequence[torch.device | str], chunks: int):
        super().__init__()
        if not isinstance(model, ResNet):
            raise TypeError(f"model must be a torchvision ResNet, got {type(model).__name__}")
        if chunks < 1:
            raise ValueError(f"chunks must be >= 1, got {chunks}")
        if not 1 <= len(devices) <= len(PARTS):
            raise ValueError(f"a ResNet splits into 1 to {len(PARTS)} stages (stem, layer1..layer4, head), "
                             f"got {len(devices)} devices")
        self.devices = tuple(torch.device(d) for d in devices)
        self.chunks = chunks
        modules = dict(model.named_children())
        modules["flatten"] = nn.Flatten(1)
        bounds = [i * len(PARTS) // len(devices) for i in range(len(devices) + 1)]
        self.stages = nn.ModuleList(
            nn.Sequential(OrderedDict((name, modules[name]) for part in PARTS[lo:hi] for name in part)).to(device)
            for lo, hi, device in zip(bounds, bounds[1:], self.devices)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # A batch smaller than `chunks` gets one micro-batch per sample rather than empty ones.
        # micro[k] holds micro-batch k's activation as it moves through the stages.
        micro = list(x.to(self.devices[0]).tensor_split(max(1, min(self.chunks, len(x)))))
        last = len(self.stages) - 1
        # At tick t, stage s takes micro-batch t - s. Within a tick the later stages are launched
        # first: PyTorch puts a two-way barrier around a copy between CUDA devices, so had stage s
        # copied its output to the next device first, the next stage's work for the previous
        # micro-batch, launched after that copy, would wait for stage s and the two would serialise.
        for tick in range(len(micro) + last):
            for s in range(min(tick, last), -1, -1):
                k = tick - s
                if k < len(micro):
                    out = self.stages[s](micro[k])
                    micro[k] = out if s == last else out.to(self.devices[s + 1])
        return torch.cat(micro)
