"""Every way a trial can spread over devices, on one model and one global batch, side by side.

    python bench/parallel.py [--epochs 3] [--samples 2048] [--batch-size 64] [--image-size 16]
    python bench/parallel.py --cpu-check     # also the GPU rows' code on the CPU, tiny sizes (no figures)

Each variant runs tuner's own loop (`tuner.training.trial.run_trial_loop`, what every trial runs) with one
parallel strategy; multi-rank variants are processes started with torch.multiprocessing and a torch
process group, which is what Ray Train provides a multi-worker trial (Ray itself only adds start-up,
measured in bench/overhead.py). So this bench needs no Ray and runs on the GPU machine too. Figures
are the loop's own `samples_per_s`, median over the epochs after the first (warm-up).

On CPU (gloo): one process, ddp and fsdp on 2 ranks, pipeline in 2 stages against the unsplit model
(with the outputs of the split model checked equal to the unsplit one's in eval mode). Two ranks
share this machine's cores, so CPU rows show what each strategy costs, not a speed-up.
With CUDA, also: tuner's loop against a bare torch loop on the same model in the same arithmetic
(precision `auto`: TF32 matmuls and convolutions, no autocast; target >= 0.95), the bare loop in fp32
and in bf16 autocast beside it, dp and ddp on 1..N GPUs, and pipeline on 2 GPUs (when there are 2).
Trials packed on one GPU are bench/gpu_packing.py's. Scaling efficiency = throughput / (ranks x one
rank's throughput) for data parallel rows. Each row is measured on its own: one that fails prints why
and the others still run.
"""

import argparse
import os
import socket
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import pandas as pd
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from bare_torch import train_epoch  # bench/, beside this script
from torch import nn

from tuner.data.splits import Splits
from tuner.training import precision
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


def bare_loop(spec: Spec, device: torch.device, mode: str) -> float:
    """A plain torch loop on the same model and data, in `mode` (a name of tuner/training/precision.py's
    MODES, set as a trial sets it): what tuner's loop is measured against."""
    chosen = precision.MODES[mode]
    torch.manual_seed(0)
    model = build_model(spec).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    (x, y), _ = spec.data()
    x, y = x.to(device), y.to(device)
    rates = []
    with chosen.flags():
        for _ in range(spec.epochs):
            if device.type == "cuda":
                torch.cuda.synchronize()
            started = time.perf_counter()
            train_epoch(model, optimizer, x, y, spec.batch_size, chosen.autocast(device))
            rates.append(len(y) / (time.perf_counter() - started))
    return statistics.median(rates[1:] or rates)


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
    parser.add_argument("--cpu-check", action="store_true", help="also run the GPU rows' code on the CPU, tiny sizes")
    args = parser.parse_args()
    spec = Spec(args.samples, args.image_size, args.batch_size, args.epochs, "resnet18")
    try:
        import torchvision  # noqa: F401
    except ImportError:
        print("torchvision is not installed: a plain CNN stands in for the ResNets in every row")
    rows: list[dict[str, Any]] = []

    def row(
        label: str, ranks: int, measure: Callable[[], float], baseline: float | None = None, scaling: bool = False
    ) -> float:
        """Measures one row and prints it (with its scaling efficiency against the baseline when `scaling`);
        a row that fails says why, and the others still run."""
        extra: dict[str, Any] = {}
        try:
            samples_per_s: float | None = measure()
        except Exception as error:
            samples_per_s, extra["note"] = None, f"FAILED {type(error).__name__}: {str(error)[:300]}"
        ratio = samples_per_s / baseline if samples_per_s and baseline else None
        if scaling and ratio is not None:
            extra["efficiency"] = round(ratio / ranks, 3)
        rows.append(
            {
                "variant": label,
                "ranks": ranks,
                "samples/s": None if samples_per_s is None else round(samples_per_s, 1),
                "vs baseline": None if ratio is None else round(ratio, 3),
                **extra,
            }
        )
        print(rows[-1], flush=True)
        return samples_per_s or 0.0

    cpu = torch.device("cpu")
    one = row("cpu: one process (baseline)", 1, lambda: in_process(spec, "ddp", cpu))
    for parallel in ("ddp", "fsdp", "pipeline"):
        row(f"cpu: {parallel}, 2 ranks", 2, partial(on_ranks, spec, parallel, 2, False), one, scaling=True)
    print(f"pipeline split vs unsplit, eval outputs: max |difference| = {pipeline_matches_unsplit(spec):.2e}")

    if torch.cuda.is_available() or args.cpu_check:
        # --cpu-check: the GPU rows' code on the CPU, small (ddp on gloo ranks; dp needs CUDA).
        cuda = not args.cpu_check
        gpus, gpu = (torch.cuda.device_count(), torch.device("cuda", 0)) if cuda else (1, cpu)
        big = Spec(args.samples, 64, 128, args.epochs, "resnet50") if cuda else Spec(64, 32, 32, 2, "resnet50")
        mode = precision.resolve("auto", gpu).name
        bare = row(
            f"gpu: bare torch loop, resnet50, {mode} (tuner's auto; baseline)", 1, partial(bare_loop, big, gpu, mode)
        )
        row("gpu: bare torch loop, resnet50, fp32", 1, partial(bare_loop, big, gpu, "fp32"), bare)
        row("gpu: bare torch loop, resnet50, bf16 autocast", 1, partial(bare_loop, big, gpu, "bf16"), bare)
        row("gpu: tuner's loop, resnet50 (target >= 0.95)", 1, partial(in_process, big, "ddp", gpu), bare)
        for n in range(1, gpus + 1):
            row(f"gpu: ddp, {n} GPU(s)", n, partial(on_ranks, big, "ddp", n, cuda), bare)
        if cuda:
            row(f"gpu: dp over {gpus} GPU(s)", gpus, partial(in_process, big, "dp", gpu), bare)
        if gpus >= 2:
            row("gpu: pipeline, 2 GPUs", 2, partial(on_ranks, big, "pipeline", 2, cuda), bare)
    else:
        print("no CUDA device: GPU rows skipped (bench/gpu_check.sh runs them on a GPU machine)")
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
