"""Training throughput of a ResNet unsplit against split in two pipelined stages, in one invocation.

    python bench/pipeline.py [--model resnet18|resnet50] [--image-size N] [--batch-size N]
                             [--chunks 1 2 4] [--steps 3] [--rounds 3]

With two or more CUDA devices the stages go on cuda:0 and cuda:1 and the unsplit model on cuda:0,
and the defaults are the tutorial's (resnet50, 128x128 images, batch 120). Otherwise everything runs
on the CPU (resnet18 with the project's small-image stem, 16x16 images, batch 64), where the two
stages share the same cores and run one after the other: there the table shows what splitting and
micro-batching cost, not a speed-up. A step is forward, loss, backward and an SGD update; the
variants take turns, one block of steps each per round, and the table gives each one's median round.
"""

import argparse
import copy
import statistics
import time
from dataclasses import dataclass

import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn
from torchvision.models import resnet50

from tuner.models import small_image_resnet18
from tuner.parallel import PipelineResNet

GPU_DEFAULTS = {"model": "resnet50", "image_size": 128, "batch_size": 120}
CPU_DEFAULTS = {"model": "resnet18", "image_size": 16, "batch_size": 64}
NUM_CLASSES = 10


@dataclass
class Variant:
    label: str
    model: nn.Module
    chunks: int | None  # None: unsplit
    devices: list[torch.device]
    optimizer: torch.optim.Optimizer


def build(name: str, image_size: int) -> nn.Module:
    if name == "resnet50":
        return resnet50(num_classes=NUM_CLASSES)
    return small_image_resnet18(3, NUM_CLASSES)


def variants(base: nn.Module, devices: list[torch.device], chunks: list[int]) -> list[Variant]:
    unsplit = copy.deepcopy(base).to(devices[0])
    made = [Variant("unsplit", unsplit, None, devices[:1], torch.optim.SGD(unsplit.parameters(), lr=0.01))]
    for c in chunks:
        pipe = PipelineResNet(copy.deepcopy(base), devices, c)
        made.append(Variant(f"pipelined, chunks={c}", pipe, c, devices, torch.optim.SGD(pipe.parameters(), lr=0.01)))
    return made


def synchronize(devices: list[torch.device]) -> None:
    for device in devices:
        if device.type == "cuda":
            torch.cuda.synchronize(device)


def steps_per_s(variant: Variant, x: torch.Tensor, y: torch.Tensor, steps: int) -> float:
    target = y.to(variant.devices[-1])  # outside the clock: a host-to-device copy would stall the launches
    synchronize(variant.devices)
    started = time.perf_counter()
    for _ in range(steps):
        loss = F.cross_entropy(variant.model(x), target)
        variant.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        variant.optimizer.step()
    synchronize(variant.devices)
    return steps / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["resnet18", "resnet50"], default=None)
    parser.add_argument("--image-size", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--chunks", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--steps", type=int, default=3, help="timed steps per variant per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    on_gpus = torch.cuda.device_count() >= 2
    for key, value in (GPU_DEFAULTS if on_gpus else CPU_DEFAULTS).items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    devices = [torch.device("cuda:0"), torch.device("cuda:1")] if on_gpus else [torch.device("cpu")] * 2

    torch.manual_seed(args.seed)
    base = build(args.model, args.image_size)
    x = torch.randn(args.batch_size, 3, args.image_size, args.image_size).to(devices[0])
    y = torch.randint(0, NUM_CLASSES, (args.batch_size,))
    runs = variants(base, devices, args.chunks)
    for variant in runs:  # the first steps pay for kernel selection and allocator growth
        steps_per_s(variant, x, y, 2)
    rates: dict[str, list[float]] = {v.label: [] for v in runs}
    for round_ in range(args.rounds):
        for variant in runs:
            rates[variant.label].append(steps_per_s(variant, x, y, args.steps) * args.batch_size)
        print(f"round {round_ + 1}/{args.rounds} done", flush=True)

    baseline = statistics.median(rates["unsplit"])
    table = pd.DataFrame([{
        "variant": v.label,
        "devices": ", ".join(str(d) for d in v.devices),
        "samples_per_s": statistics.median(rates[v.label]),
        "vs_unsplit": statistics.median(rates[v.label]) / baseline,
        "rounds": " ".join(f"{r:.0f}" for r in rates[v.label]),
    } for v in runs])
    where = ("cuda:0 + cuda:1" if on_gpus
             else f"CPU only ({torch.get_num_threads()} threads): both stages run on the same cores, one after "
                  "the other, so the pipelined rows measure the overhead of splitting and micro-batching")
    print(f"\n{args.model}, {args.image_size}x{args.image_size} images, batch {args.batch_size}, "
          f"{args.steps} train steps x {args.rounds} rounds; {where}\n")
    print(table.to_markdown(index=False, floatfmt=".2f"))


if __name__ == "__main__":
    main()
