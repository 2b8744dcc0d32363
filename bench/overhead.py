"""Where a trial's time goes: the same model, data and epochs as bare PyTorch and through tuner, in one run.

    python bench/overhead.py [--epochs 10] [--trials 20] [--model cnn] [--memory-trials 100]

(a) a bare PyTorch loop in this process (train steps + the same per-epoch evaluation, no Ray);
(b) one tuner trial, in-process (workers = 1); (c) an experiment of N such trials on 2 cores with
max_concurrent = 2; (d) one 2-worker DDP trial. Prints samples/s of each (a, b, d: the loop after its
first epoch; c: the whole experiment's samples over its whole wall time), the ratios to (a), the
fixed cost per trial (wall time not spent in steady epochs), the share of the core time spent inside
training steps, and peak RSS of the driver and of the trials. With --memory-trials, a further
experiment of that many 1-epoch trials samples the driver's RSS as trials finish, to show it stays flat.
Targets on 2 cores: b/a >= 0.95, fixed cost <= 1 s, >= 80 % of the wall inside training steps.
"""

import argparse
import math
import resource
import tempfile
import threading
import time
from typing import Any

import pandas as pd
import psutil
import torch
import torch.nn.functional as F
from ray import tune

from tuner import data, hyperparameters
from tuner.experiment import RunOptions, run
from tuner.models.build import build as build_model
from tuner.space import Space, validate

CONFIG = {"lr": 0.01, "batch_size": 64, "hidden": 64, "channels": 16}
N_TRAIN = 1437  # digits training samples


@torch.no_grad()
def evaluate(model: torch.nn.Module, dataset: Any) -> float:
    model.eval()
    correct = sum(int((model(dataset.x_val[i:i + 1024]).argmax(1) == dataset.y_val[i:i + 1024]).sum())
                  for i in range(0, len(dataset.y_val), 1024))
    model.train()
    return correct / len(dataset.y_val)


def bare_loop(model_name: str, epochs: int) -> dict[str, float]:
    """(a): nanoGPT-style, nothing but the loop, with the evaluation every tuner epoch also does."""
    dataset = data.load("digits")
    hp = hyperparameters.resolve(CONFIG, 0)
    torch.manual_seed(hp["seed"])
    torch.set_num_threads(1)  # what a 1-CPU trial gets
    model = build_model(model_name, dataset, hp)
    optimizer = torch.optim.Adam(model.parameters(), lr=hp["lr"], weight_decay=hp["weight_decay"])
    n, batch = len(dataset.y_train), hp["batch_size"]
    in_steps = 0.0
    started = time.perf_counter()
    epoch_ends = []
    for _ in range(epochs):
        epoch_start = time.perf_counter()
        order = torch.randperm(n)
        for i in range(0, n, batch):
            x, y = dataset.x_train[order[i:i + batch]], dataset.y_train[order[i:i + batch]]
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        in_steps += time.perf_counter() - epoch_start
        evaluate(model, dataset)
        epoch_ends.append(time.perf_counter())
    wall = time.perf_counter() - started
    samples = n * epochs
    return {"samples_per_s": samples / wall, "step_samples_per_s": samples / in_steps, "wall_s": wall,
            "loop_samples_per_s": steady(n, epoch_ends)}


def steady(samples_per_epoch: int, epoch_ends: list[float]) -> float:
    """Samples/s from the end of the first epoch to the end of the last: the loop itself, without
    the first epoch's warm-up and whatever ran before it (model and optimizer set-up)."""
    return samples_per_epoch * (len(epoch_ends) - 1) / (epoch_ends[-1] - epoch_ends[0])


def space(model: str, epochs: int, workers: int, lr: Any) -> Space:
    result = Space(name=f"overhead_{model}", model=model, dataset="digits", metric="val_acc", mode="max",
                   param_space={**CONFIG, "lr": lr}, epochs=epochs, workers=workers)
    validate(result)
    return result


class PeakRss:
    """Samples this process's RSS and its children's (the Ray workers) every 0.2 s in a thread."""

    def __init__(self) -> None:
        self.driver = self.children = 0
        self.samples: list[tuple[float, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        me = psutil.Process()
        while not self._stop.wait(0.2):
            rss = me.memory_info().rss
            self.driver = max(self.driver, rss)
            self.samples.append((time.monotonic(), rss))
            for child in me.children(recursive=True):
                try:
                    if "ImplicitFunc" in " ".join(child.cmdline()) or "run_trial" in child.name():
                        self.children = max(self.children, child.memory_info().rss)
                except psutil.Error:
                    continue

    def __enter__(self) -> "PeakRss":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def experiment(storage: str, name: str, experiment_space: Space, max_concurrent: int | None = None) -> dict[str, Any]:
    with PeakRss() as rss:
        started = time.perf_counter()
        outcome = run(experiment_space, RunOptions(storage_path=storage, name=name, verbose=0,
                                                   max_concurrent=max_concurrent))
        wall = time.perf_counter() - started
    history = pd.read_parquet(f"{outcome.experiment_path}/history.parquet")
    trials = outcome.trials
    samples_per_epoch = history["samples_per_s"]  # per epoch: samples / time inside training steps
    n_train = N_TRAIN
    in_steps = float((n_train / samples_per_epoch).sum())
    trial_time = float(trials["time_s"].sum())  # each trial's time inside its own process
    # Per trial: each epoch's report time is taken as it ends (reported_at), as the bare loop's are.
    loop = [steady(n_train, list(h["reported_at"])) for _, h in history.groupby("trial_id") if len(h) > 1]
    return {"wall_s": wall, "in_steps_s": in_steps, "trial_s": trial_time, "samples": n_train * len(history),
            "trials": len(trials), "epochs": len(history), "driver_rss": rss.driver, "trial_rss": rss.children,
            "rss_samples": rss.samples, "loop_samples_per_s": sum(loop) / len(loop) if loop else math.nan}


def mib(value: int) -> str:
    return f"{value / 1024**2:.0f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--model", default="cnn")
    parser.add_argument("--memory-trials", type=int, default=0)
    args = parser.parse_args()
    storage = tempfile.mkdtemp(prefix="tuner-overhead-")

    # The fastest of three: the bare loop is short, and the baseline should not gain from a slow moment.
    a = max((bare_loop(args.model, args.epochs) for _ in range(3)), key=lambda run: run["loop_samples_per_s"])
    b = experiment(storage, "one_trial", space(args.model, args.epochs, 1, CONFIG["lr"]))
    lrs = [0.003 * (1 + i % 5) for i in range(args.trials)]  # distinct configs, all healthy
    c = experiment(storage, "many", space(args.model, args.epochs, 1, tune.grid_search(lrs)), max_concurrent=2)
    d = experiment(storage, "ddp", space(args.model, args.epochs, 2, CONFIG["lr"]))

    cores = 2
    epoch_s = N_TRAIN / b["loop_samples_per_s"]  # a steady epoch of a tuner trial, evaluation and checkpoint included
    rows = [
        ("(a) bare PyTorch loop", a["loop_samples_per_s"], 1.0, "-", "-", mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)),
        ("(b) one tuner trial, in-process", b["loop_samples_per_s"], b["loop_samples_per_s"] / a["loop_samples_per_s"],
         f"{b['wall_s'] - b['epochs'] * epoch_s:.2f}", f"{b['in_steps_s'] / b['wall_s']:.0%}", mib(b["trial_rss"])),
        (f"(c) {c['trials']} trials, max_concurrent 2 (aggregate)", c["samples"] / c["wall_s"],
         c["samples"] / c["wall_s"] / a["loop_samples_per_s"],
         f"{(cores * c['wall_s'] - c['epochs'] * epoch_s) / c['trials']:.2f}",
         f"{c['in_steps_s'] / (cores * c['wall_s']):.0%}", mib(c["trial_rss"])),
        ("(d) one 2-worker DDP trial", d["loop_samples_per_s"], d["loop_samples_per_s"] / a["loop_samples_per_s"],
         f"{d['wall_s'] - d['epochs'] * N_TRAIN / d['loop_samples_per_s']:.2f}",
         f"{d['in_steps_s'] / (cores * d['wall_s']):.0%}", "-"),
    ]
    table = pd.DataFrame(rows, columns=["run", "samples/s", "vs (a)", "fixed cost per trial s",
                                        "core time in training steps", "peak trial RSS"])
    print(f"\n{args.model} on digits, {args.epochs} epochs, batch 64, {cores} cores\n")
    print(table.to_markdown(index=False, floatfmt=".3g"))
    print(f"\n(a), (b), (d) samples/s: the training loop from the end of its first epoch to the end of its last"
          f"\n(evaluation, and for tuner the checkpoint and report, included); (c): every sample of the experiment"
          f"\nover its whole wall time, Ray's start-up included ({c['wall_s']:.1f} s)."
          f"\nfixed cost: wall time not spent in steady epochs ({epoch_s * 1000:.0f} ms each), per trial: Ray's start-up"
          f"\nand teardown, the trial's process, torch's first-optimizer import, the first epoch's warm-up;"
          f"\n(c) counts both cores' time and spreads it over the trials."
          f"\ncore time in training steps: forward, backward and optimizer steps over (cores x) wall time."
          f"\ndriver peak RSS: one trial {mib(b['driver_rss'])}, {c['trials']} trials {mib(c['driver_rss'])}")

    if args.memory_trials:
        m = experiment(storage, "memory", space(args.model, 1, 1, tune.grid_search(
            [0.001 + 1e-6 * i for i in range(args.memory_trials)])), max_concurrent=2)
        samples = m["rss_samples"]
        quarter = max(1, len(samples) // 4)
        early = sum(rss for _, rss in samples[quarter:2 * quarter]) / quarter
        late = sum(rss for _, rss in samples[-quarter:]) / quarter
        print(f"\n{m['trials']} one-epoch trials in {m['wall_s']:.0f} s: driver RSS {mib(int(early))} in the second "
              f"quarter of the run, {mib(int(late))} in the last quarter ({(late - early) / 1024 / m['trials']:.1f} KiB "
              f"per trial), peak {mib(m['driver_rss'])}")


if __name__ == "__main__":
    main()
