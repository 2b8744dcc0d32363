"""Every way a trial can spread over devices, on one model and one global batch, side by side.

    python bench/parallel.py [--epochs 3] [--samples 2048] [--batch-size 64] [--image-size 16]

Each variant runs tuner's own loop (`tuner.training.trial.run_trial_loop`, what every trial runs) with one
parallel strategy; multi-rank variants are processes started with torch.multiprocessing and a torch
process group, which is what Ray Train provides a multi-worker trial (Ray itself only adds start-up,
measured in bench/overhead.py). So this bench needs no Ray and runs on the GPU machine too. Figures
are the loop's own `samples_per_s`, median over the epochs after the first (warm-up).

On CPU (gloo): one process, ddp and fsdp on 2 ranks, pipeline in 2 stages against the unsplit model
(with the outputs of the split model checked equal to the unsplit one's in eval mode). Two ranks
share this machine's cores, so CPU rows show what each strategy costs, not a speed-up.
With CUDA, also: tuner's loop against a bare torch loop on the same model (target >= 0.95), bf16
autocast on and off, dp and ddp on 1..N GPUs, pipeline on 2 GPUs (when there are 2), and packing:
4 small trials at once on one GPU against one at a time (aggregate samples/s, target >= 2x).
Scaling efficiency = throughput / (ranks x one rank's throughput) for data parallel rows.
"""

import argparse
import os
import socket
import statistics
import time
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn

from tuner.data.splits import Splits
from tuner.training.context import LoopSetup
from tuner.training.parallel.pipeline import PipelineStages, pipeline_layers, split
from tuner.training.trial import Parts, run_trial_loop

NUM_CLASSES = 10


@dataclass(frozen=True)
class Spec:
    samples: int
    image_size: int
    batch_size: int
    epochs: int
    model: str  # "resnet18" (small-image stem) or "resnet50" (torchvision's, for the GPU rows)

    def data(self) -> Splits:
        generator = torch.Generator().manual_seed(0)
        x = torch.randn(self.samples, 3, self.image_size, self.image_size, generator=generator)
        y = torch.randint(0, NUM_CLASSES, (self.samples,), generator=generator)
        cut = self.samples * 7 // 8
        return Splits((x[:cut], y[:cut]), (x[cut:], y[cut:]))


def build_model(spec: Spec) -> nn.Module:
    try:
        from torchvision.models import resnet50
    except ImportError:  # a GPU machine with torch alone: a plain CNN instead (main says so)
        return nn.Sequential(
            nn.Conv2d(3, 64, 3, padding=1),
            nn.ReLU(),
            nn.Conv2d(64, 64, 3, padding=1),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(64, NUM_CLASSES),
        )
    if spec.model == "resnet50":
        return resnet50(num_classes=NUM_CLASSES)
    from tuner.models import small_image_resnet18

    return small_image_resnet18(3, NUM_CLASSES)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _median_throughput(reports: list[dict[str, Any]]) -> float:
    later = [r["samples_per_s"] for r in reports[1:]] or [r["samples_per_s"] for r in reports]
    return statistics.median(later)


def _train(spec: Spec, parallel: str, device: torch.device) -> list[dict[str, Any]]:
    reports: list[dict[str, Any]] = []
    run_trial_loop(
        Parts.of(model=lambda config: build_model(spec)),
        {"lr": 1e-3, "batch_size": spec.batch_size},
        LoopSetup(epochs=spec.epochs, seed=0, device=device, parallel=parallel),
        data=spec.data(),
        trial_id="bench",
        report=lambda metrics, _: reports.append(metrics),
    )
    return reports


def _rank(rank: int, world: int, port: int, spec: Spec, parallel: str, cuda: bool, results: Any) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    if cuda:
        torch.cuda.set_device(rank)
    else:
        torch.set_num_threads(max(1, (os.cpu_count() or 2) // world))
    dist.init_process_group("nccl" if cuda else "gloo", rank=rank, world_size=world)
    try:
        device = torch.device("cuda", rank) if cuda else torch.device("cpu")
        reports = _train(spec, parallel, device)
        if rank == 0:
            results["reports"] = reports
    finally:
        dist.destroy_process_group()


def on_ranks(spec: Spec, parallel: str, world: int, cuda: bool) -> float:
    """samples/s of one trial of `parallel` over `world` processes (one per GPU with CUDA)."""
    with mp.Manager() as manager:
        results = manager.dict()
        mp.spawn(_rank, args=(world, _free_port(), spec, parallel, cuda, results), nprocs=world, join=True)
        return _median_throughput(results["reports"])


def in_process(spec: Spec, parallel: str, device: torch.device) -> float:
    return _median_throughput(_train(spec, parallel, device))


def bare_loop(spec: Spec, device: torch.device, bf16: bool) -> float:
    """A plain torch loop on the same model and data: what tuner's loop is measured against."""
    torch.manual_seed(0)
    model = build_model(spec).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    (x, y), _ = spec.data()
    x, y = x.to(device), y.to(device)
    rates = []
    for _ in range(spec.epochs):
        order = torch.randperm(len(y), device=device)
        if device.type == "cuda":
            torch.cuda.synchronize()
        started = time.perf_counter()
        for i in range(0, len(y), spec.batch_size):
            index = order[i : i + spec.batch_size]
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
                loss = nn.functional.cross_entropy(model(x[index]).float(), y[index])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        if device.type == "cuda":
            torch.cuda.synchronize()
        rates.append(len(y) / (time.perf_counter() - started))
    return statistics.median(rates[1:] or rates)


def _packed(index: int, spec: Spec, results: Any) -> None:
    started = time.perf_counter()
    reports = _train(spec, "ddp", torch.device("cuda"))
    results[index] = (
        sum(r["samples_per_s"] for r in reports[1:]) / max(1, len(reports) - 1),
        time.perf_counter() - started,
    )


def packing(spec: Spec, trials: int) -> float:
    """Aggregate samples/s of `trials` trials at once on one GPU (what gpus_per_worker = 1/trials does)."""
    with mp.Manager() as manager:
        results = manager.dict()
        mp.spawn(_packed, args=(spec, results), nprocs=trials, join=True)
        return sum(rate for rate, _ in results.values())


def pipeline_matches_unsplit(spec: Spec) -> float:
    """Max |difference| between a 2-stage split's eval outputs (composed in one process) and the model's."""
    torch.manual_seed(0)
    model = build_model(spec).eval()
    stages = split(pipeline_layers(model), 2)
    x = spec.data().val[0][:8]
    with torch.no_grad():
        composed = PipelineStages(nn.Sequential(*stages), 0, 1, torch.device("cpu"))(x)
        return float((composed - model(x)).abs().max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--samples", type=int, default=2048)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--image-size", type=int, default=16)
    args = parser.parse_args()
    spec = Spec(args.samples, args.image_size, args.batch_size, args.epochs, "resnet18")
    try:
        import torchvision  # noqa: F401
    except ImportError:
        print("torchvision is not installed: a plain CNN stands in for the ResNets in every row")
    rows: list[dict[str, Any]] = []

    def row(label: str, ranks: int, samples_per_s: float, baseline: float | None = None, **extra: Any) -> None:
        ratio = samples_per_s / baseline if baseline else None
        rows.append(
            {
                "variant": label,
                "ranks": ranks,
                "samples/s": round(samples_per_s, 1),
                "vs baseline": None if ratio is None else round(ratio, 3),
                **extra,
            }
        )
        print(rows[-1], flush=True)

    cpu = torch.device("cpu")
    one = in_process(spec, "ddp", cpu)
    row("cpu: one process (baseline)", 1, one)
    for parallel in ("ddp", "fsdp", "pipeline"):
        rate = on_ranks(spec, parallel, 2, cuda=False)
        row(f"cpu: {parallel}, 2 ranks", 2, rate, one, efficiency=round(rate / (2 * one), 3))
    print(f"pipeline split vs unsplit, eval outputs: max |difference| = {pipeline_matches_unsplit(spec):.2e}")

    if torch.cuda.is_available():
        gpus = torch.cuda.device_count()
        gpu = torch.device("cuda")
        big = Spec(args.samples, 64, 128, args.epochs, "resnet50")
        bare = bare_loop(big, gpu, bf16=True)
        row("gpu: bare torch loop, resnet50, bf16 (baseline)", 1, bare)
        row("gpu: bare torch loop, resnet50, fp32", 1, bare_loop(big, gpu, bf16=False), bare)
        row("gpu: tuner's loop, resnet50 (target >= 0.95)", 1, in_process(big, "ddp", gpu), bare)
        for n in range(1, gpus + 1):
            row(f"gpu: ddp, {n} GPU(s)", n, on_ranks(big, "ddp", n, cuda=True), bare)
        row(f"gpu: dp over {gpus} GPU(s)", gpus, in_process(big, "dp", gpu), bare)
        if gpus >= 2:
            row("gpu: pipeline, 2 GPUs", 2, on_ranks(big, "pipeline", 2, cuda=True), bare)
        small = Spec(args.samples, 16, 64, args.epochs, "resnet18")
        single = packing(small, 1)
        row("gpu: 1 small trial at a time (baseline)", 1, single)
        row("gpu: 4 small trials packed on one GPU (target >= 2)", 1, packing(small, 4), single)
    else:
        print("no CUDA device: GPU rows skipped (bench/gpu_check.sh runs them on a GPU machine)")
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
