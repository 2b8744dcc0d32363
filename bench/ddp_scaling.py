"""Throughput of the project's DDP path (Ray Train's TorchTrainer running tuner's loop) by worker count.

    python bench/ddp_scaling.py [--workers 1 2] [--model cnn] [--dataset digits] [--batch-size 64]
                                [--epochs 4] [--rounds 3]

Each run is a TorchTrainer over `tuner.trainable.train_worker`, exactly what a trial with `workers = n`
starts, on CPU with gloo and one CPU per worker. Throughput is the loop's own `samples_per_s` (the
global batch stays --batch-size, split over the workers, as in a trial); the first epoch is left out
as warm-up and the median of the others is the run's figure. Start-up, from `fit()` to the first
epoch's start (worker group, process group, data fetch, model build), is reported on its own.
Scaling efficiency = throughput(n) / (n * throughput(1)). For reference, a row for the
in-process loop that a `workers = 1` trial actually runs.

With CUDA, it also runs 1..N GPU workers (NCCL, bf16 autocast: what the loop does on a GPU).
The variants take turns, one run each per round; the table gives each one's median round.
"""

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import ray
import ray.train
import torch
from ray.train.torch import TorchTrainer

from tuner.data import DATASETS
from tuner.data.splits import Splits
from tuner.lazy import resolve
from tuner.trainable import TrialSetup, train_worker
from tuner.trial import Parts, run_trial_loop


@dataclass(frozen=True)
class Measurement:
    samples_per_s: float  # median over the epochs after the first
    startup_s: float  # from the call to the first epoch's start
    wall_s: float  # the whole call: start-up, every epoch with its evaluation and checkpoint, shutdown


RunOnce = Callable[[int], Measurement]  # round -> its measurement


@dataclass(frozen=True)
class Variant:
    label: str
    backend: str
    workers: int  # processes (Ray Train) or devices (DataParallel)
    run: RunOnce
    baseline: str | None  # the single-worker variant its scaling efficiency is relative to


def measurement(history: list[dict[str, Any]], epoch_samples: int, started: float) -> Measurement:
    """From the loop's reports; the first epoch's start is worked out from its report time and its
    throughput, on the workers' clock (this machine's), so it is late by that epoch's evaluation."""
    first = history[0]
    first_start = first["reported_at"] - epoch_samples / first["samples_per_s"]
    return Measurement(samples_per_s=statistics.median(m["samples_per_s"] for m in history[1:]),
                       startup_s=first_start - started, wall_s=time.time() - started)


def ray_train_run(setup: TrialSetup, config: dict[str, Any], storage: str, epoch_samples: int) -> RunOnce:
    def run(round_: int) -> Measurement:
        name = f"bench-{setup.workers}x{'gpu' if setup.gpus_per_worker else 'cpu'}-r{round_}-{time.time_ns()}"
        trainer = TorchTrainer(
            train_worker,
            train_loop_config={"config": config, "setup": setup, "trial_id": name},
            scaling_config=ray.train.ScalingConfig(
                num_workers=setup.workers, use_gpu=setup.gpus_per_worker > 0,
                resources_per_worker={"CPU": setup.cpus_per_worker, "GPU": setup.gpus_per_worker}),
            run_config=ray.train.RunConfig(name=name, storage_path=storage),
        )
        started = time.time()
        result = trainer.fit()
        # Every epoch reports a checkpoint, and all are kept, so this is the whole history (rank 0's).
        history = result.metrics_dataframe.sort_values("epoch").to_dict("records")
        return measurement(history, epoch_samples, started)
    return run


def in_process_run(setup: TrialSetup, config: dict[str, Any], dataset: Splits, device: torch.device,
                   epoch_samples: int) -> RunOnce:
    def run(round_: int) -> Measurement:
        history: list[dict[str, Any]] = []
        started = time.time()
        run_trial_loop(setup.parts, config, data=dataset, epochs=setup.epochs, seed=0, device=device,
                       trial_id=f"in-process-r{round_}", report=lambda metrics, _ckpt_dir: history.append(metrics))
        return measurement(history, epoch_samples, started)
    return run


def make_variants(args: argparse.Namespace, dataset: Splits, epoch_samples: int, storage: str) -> list[Variant]:
    config = {"batch_size": args.batch_size}
    data_ref = ray.put(dataset)

    def setup(workers: int, gpus: float) -> TrialSetup:
        return TrialSetup(parts=Parts.of(model=args.model, dataset=args.dataset), data=data_ref, epochs=args.epochs,
                          seed=0, workers=workers, cpus_per_worker=1, gpus_per_worker=gpus, experiment_path=storage)

    cpu_single, gpu_single = "ray train, 1 CPU worker", "ray train, 1 GPU worker"
    made = [Variant("in-process (workers=1 path)", "none", 1,
                    in_process_run(setup(1, 0), config, dataset, torch.device("cpu"), epoch_samples), None)]
    made += [Variant(f"ray train, {n} CPU worker{'s' * (n > 1)}", "gloo", n,
                     ray_train_run(setup(n, 0), config, storage, epoch_samples), cpu_single) for n in args.workers]
    gpus = torch.cuda.device_count()
    made += [Variant(f"ray train, {n} GPU worker{'s' * (n > 1)}", "nccl, bf16", n,
                     ray_train_run(setup(n, 1), config, storage, epoch_samples), gpu_single)
             for n in range(1, gpus + 1)]
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2], help="CPU worker counts")
    parser.add_argument("--model", default="cnn", choices=["mlp", "cnn", "resnet18"])
    parser.add_argument("--dataset", default="digits", help="a name tuner.data knows: digits, mnist, cifar10, ...")
    parser.add_argument("--data-dir", default=None, help="root of local datasets, for anything but digits")
    parser.add_argument("--batch-size", type=int, default=64, help="global batch, split over the workers")
    parser.add_argument("--epochs", type=int, default=4, help="per run; the first is warm-up")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if args.epochs < 2:
        parser.error("--epochs must be >= 2: the first epoch is warm-up")

    gpus = torch.cuda.device_count()
    # Two CPUs, as the project's tests use, unless a worker group needs more (one CPU per worker).
    # The workers' per-epoch log lines would bury the table; a failed run still raises from fit().
    ray.init(address="local", num_cpus=max(2, *args.workers, gpus), include_dashboard=False, logging_level="ERROR",
             log_to_driver=False)
    loader = resolve(DATASETS[args.dataset])
    dataset = loader(data_dir=args.data_dir) if args.data_dir else loader()
    samples = len(dataset.train[1])
    with tempfile.TemporaryDirectory(prefix="tuner-bench-ddp-") as storage:  # the runs' checkpoints
        variants = make_variants(args, dataset, samples, storage)
        measured: dict[str, list[Measurement]] = {v.label: [] for v in variants}
        for round_ in range(args.rounds):
            for variant in variants:
                m = variant.run(round_)
                measured[variant.label].append(m)
                print(f"round {round_ + 1}/{args.rounds}: {variant.label}: {m.samples_per_s:.0f} samples/s, "
                      f"start-up {m.startup_s:.1f} s, run {m.wall_s:.1f} s", flush=True)
    ray.shutdown()

    def median(label: str, field: str) -> float:
        return statistics.median(getattr(m, field) for m in measured[label])

    rows = []
    for v in variants:
        rate = median(v.label, "samples_per_s")
        # No baseline for the in-process row, nor when --workers leaves out 1.
        efficiency = (f"{rate / (v.workers * median(v.baseline, 'samples_per_s')):.2f}"
                      if v.baseline in measured else "-")
        rows.append({"variant": v.label, "backend": v.backend, "samples_per_s": rate, "scaling_efficiency": efficiency,
                     "startup_s": median(v.label, "startup_s"), "run_wall_s": median(v.label, "wall_s"),
                     "rounds (samples/s)": " ".join(f"{m.samples_per_s:.0f}" for m in measured[v.label])})

    print(f"\n{args.model} on {args.dataset} ({samples} training samples), global batch "
          f"{args.batch_size}, {args.epochs} epochs per run (first left out), {args.rounds} rounds\n")
    print(pd.DataFrame(rows).to_markdown(index=False, floatfmt=".2f"))


if __name__ == "__main__":
    main()
