"""Where a trial's time goes: the same model, data and epochs as bare PyTorch and through tuner, in one run.

    python bench/overhead.py [--epochs 10] [--trials 20] [--model cnn] [--memory-trials 100]

(a) a bare PyTorch loop in this process (train steps + the same per-epoch evaluation, no Ray);
(b) one tuner trial, in-process (workers = 1); (c) an experiment of N such trials on 2 cores with
max_concurrent = 2; (d) one 2-worker DDP trial, and (d2) the same at Ray Train's default 2 s poll of
its workers instead of tuner's (`tuner/execution/trainable.py`, POLL_INTERVAL_S); (e) a user's own
loop as a bare script, (f) the same loop written as a space's `train_loop(config, ctx)`, run as one
tuner trial, and (g) the same loop as the Ray Tune function trainable a user would write by hand
(`tune.report` with a checkpoint every epoch), which tells tuner's cost from Ray Tune's own.

Prints samples/s of each (a, b, d: the loop after its first epoch; c: the whole experiment's samples
over its whole wall time; e, f, g: the median epoch), the ratios to (a) (f and g: to (e)), the fixed
cost per trial (wall time not spent in steady epochs), the share of the core time spent inside
training steps, and peak RSS of the driver and of the trials. With --memory-trials, a further
experiment of that many 1-epoch trials samples the driver's RSS as trials finish, to show it stays flat.
Targets on 2 cores: b/a >= 0.95, f/e >= 0.95, fixed cost <= 1 s, >= 80 % of the wall inside training steps.
"""

import argparse
import atexit
import math
import os
import resource
import statistics
import tempfile
import threading
import time
from contextlib import AbstractContextManager
from typing import Any
from unittest import mock

import pandas as pd
import psutil
import torch
import torch.nn.functional as F
from ray import tune

from tuner import RunOptions, data, run
from tuner.lazy import resolve
from tuner.models import MODELS
from tuner.ray_compat.env import POLL_INTERVAL_VARIABLE
from tuner.spec.space import ExperimentSpec

CONFIG = {"lr": 0.01, "batch_size": 64, "hidden": 64, "channels": 16}
N_TRAIN = 1437  # digits training samples


@torch.no_grad()
def evaluate(model: torch.nn.Module, val: tuple[torch.Tensor, torch.Tensor]) -> float:
    model.eval()
    x_val, y_val = val
    correct = sum(
        int((model(x_val[i : i + 1024]).argmax(1) == y_val[i : i + 1024]).sum()) for i in range(0, len(y_val), 1024)
    )
    model.train()
    return correct / len(y_val)


def bare_loop(model_name: str, epochs: int) -> dict[str, float]:
    """(a): nanoGPT-style, nothing but the loop, with the evaluation every tuner epoch also does."""
    splits = data.digits()
    (x_train, y_train), val = splits
    torch.manual_seed(0)
    torch.set_num_threads(1)  # what a 1-CPU trial gets
    model = resolve(MODELS[model_name])(CONFIG, splits)
    optimizer = torch.optim.Adam(model.parameters(), lr=CONFIG["lr"])
    n, batch = len(y_train), CONFIG["batch_size"]
    in_steps = 0.0
    started = time.perf_counter()
    epoch_ends = []
    for _ in range(epochs):
        epoch_start = time.perf_counter()
        order = torch.randperm(n)
        for i in range(0, n, batch):
            x, y = x_train[order[i : i + batch]], y_train[order[i : i + batch]]
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        in_steps += time.perf_counter() - epoch_start
        evaluate(model, val)
        epoch_ends.append(time.perf_counter())
    wall = time.perf_counter() - started
    samples = n * epochs
    return {
        "samples_per_s": samples / wall,
        "step_samples_per_s": samples / in_steps,
        "wall_s": wall,
        "loop_samples_per_s": steady(n, epoch_ends),
    }


def steady(samples_per_epoch: int, epoch_ends: list[float]) -> float:
    """Samples/s from the end of the first epoch to the end of the last: the loop itself, without
    the first epoch's warm-up and whatever ran before it (model and optimizer set-up)."""
    return samples_per_epoch * (len(epoch_ends) - 1) / (epoch_ends[-1] - epoch_ends[0])


def space(model: str, epochs: int, workers: int, lr: Any) -> ExperimentSpec:
    return ExperimentSpec.of(
        name=f"overhead_{model}",
        model=model,
        dataset="digits",
        metric="val_acc",
        mode="max",
        param_space={**CONFIG, "lr": lr},
        epochs=epochs,
        workers=workers,
    )


def own_net() -> torch.nn.Module:
    """The user's model in (e) and (f): a small CNN written out, as a user would."""
    return torch.nn.Sequential(
        torch.nn.Conv2d(1, 16, 3, padding=1), torch.nn.ReLU(), torch.nn.Flatten(), torch.nn.Linear(16 * 64, 10)
    )


def own_epoch(
    net: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    x_train: torch.Tensor,
    y_train: torch.Tensor,
    batch_size: int,
) -> None:
    """One epoch of the user's loop as they wrote it before tuner: shuffled slices, a step each."""
    order = torch.randperm(len(y_train))
    for i in range(0, len(y_train), batch_size):
        index = order[i : i + batch_size]
        optimizer.zero_grad(set_to_none=True)
        F.cross_entropy(net(x_train[index]), y_train[index]).backward()
        optimizer.step()


def own_loop_bare(epochs: int) -> dict[str, float]:
    """(e): the user's loop as the script they had before tuner: shuffled slices, SGD, an evaluation."""
    (x_train, y_train), val = data.digits()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    net = own_net()
    optimizer = torch.optim.SGD(net.parameters(), lr=CONFIG["lr"], momentum=0.9)
    epoch_ends = []
    for _ in range(epochs):
        own_epoch(net, optimizer, x_train, y_train, CONFIG["batch_size"])
        evaluate(net, val)
        epoch_ends.append(time.perf_counter())
    return {"epoch_samples_per_s": median_epoch(len(y_train), epoch_ends)}


def median_epoch(samples_per_epoch: int, epoch_ends: list[float]) -> float:
    """Samples/s of the median epoch (after the first): (e) and (f) compare epochs of a few tens of
    milliseconds, where one hiccup of the shared machine would weigh on a mean."""
    return samples_per_epoch / statistics.median(b - a for a, b in zip(epoch_ends[1:], epoch_ends[2:]))


def own_train_loop(config: dict[str, Any], ctx: Any) -> None:
    """(f): the same loop as a space's train_loop: the batches, the report and a checkpoint from tuner."""
    train, val = ctx.data
    net = own_net()
    optimizer = torch.optim.SGD(net.parameters(), lr=config["lr"], momentum=0.9)
    for _ in range(ctx.start_epoch, ctx.epochs + 1):
        for x, y in ctx.batches(train, config["batch_size"]):
            optimizer.zero_grad(set_to_none=True)
            F.cross_entropy(net(x), y).backward()
            optimizer.step()
        ctx.report({"val_acc": evaluate(net, val)}, checkpoint={"net": net.state_dict()})


def own_loop_by_hand(config: dict[str, Any]) -> None:
    """(g): the same loop as a plain Ray Tune function trainable, checkpointing every epoch."""
    (x_train, y_train), val = data.digits()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    net = own_net()
    optimizer = torch.optim.SGD(net.parameters(), lr=config["lr"], momentum=0.9)
    for _ in range(config["epochs"]):
        own_epoch(net, optimizer, x_train, y_train, config["batch_size"])
        accuracy = evaluate(net, val)
        with tempfile.TemporaryDirectory() as directory:
            torch.save({"net": net.state_dict()}, f"{directory}/checkpoint.pt")
            tune.report(
                {"val_acc": accuracy, "reported_at": time.time()}, checkpoint=tune.Checkpoint.from_directory(directory)
            )


def by_hand(storage: str, epochs: int) -> dict[str, float]:
    """Three trials of (g) one after another, through tune.Tuner alone; the best median epoch."""
    import ray

    ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="ERROR")
    try:
        results = tune.Tuner(
            tune.with_resources(own_loop_by_hand, {"CPU": 1}),
            param_space={"lr": CONFIG["lr"], "batch_size": CONFIG["batch_size"], "epochs": epochs},
            tune_config=tune.TuneConfig(num_samples=3, max_concurrent_trials=1, reuse_actors=True),
            run_config=tune.RunConfig(storage_path=storage, name="by_hand", verbose=0),
        ).fit()
    finally:
        ray.shutdown()
    return {
        "epoch_samples_per_s": max(
            median_epoch(N_TRAIN, list(result.metrics_dataframe["reported_at"])) for result in results
        )
    }


def own_loop_space(epochs: int) -> ExperimentSpec:
    """Three trials of the same config one after another: the best of three, as for (e)."""
    return ExperimentSpec.of(
        name="overhead_own_loop",
        train_loop=own_train_loop,
        dataset="digits",
        metric="val_acc",
        mode="max",
        param_space={"lr": CONFIG["lr"], "batch_size": CONFIG["batch_size"]},
        epochs=epochs,
        num_samples=3,
        max_concurrent=1,
    )


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


def experiment(
    storage: str, name: str, experiment_space: ExperimentSpec, max_concurrent: int | None = None
) -> dict[str, Any]:
    with PeakRss() as rss:
        started = time.perf_counter()
        if max_concurrent is not None:
            experiment_space = experiment_space.with_overrides(max_concurrent=max_concurrent)
        outcome = run(experiment_space, RunOptions(storage_path=storage, name=name, verbose=0))
        wall = time.perf_counter() - started
    history = pd.read_parquet(f"{outcome.experiment_path}/history.parquet")
    trials = outcome.trials
    samples_per_epoch = history["samples_per_s"]  # per epoch: samples / time inside training steps
    n_train = N_TRAIN
    in_steps = float((n_train / samples_per_epoch).sum())
    trial_time = float(trials["time_s"].sum())  # each trial's time inside its own process
    # Per trial: each epoch's report time is taken as it ends (reported_at), as the bare loop's are.
    loop = [steady(n_train, list(h["reported_at"])) for _, h in history.groupby("trial_id") if len(h) > 1]
    epoch = [median_epoch(n_train, list(h["reported_at"])) for _, h in history.groupby("trial_id") if len(h) > 2]
    return {
        "epoch_samples_per_s": max(epoch, default=math.nan),
        "wall_s": wall,
        "in_steps_s": in_steps,
        "trial_s": trial_time,
        "samples": n_train * len(history),
        "trials": len(trials),
        "epochs": len(history),
        "driver_rss": rss.driver,
        "trial_rss": rss.children,
        "rss_samples": rss.samples,
        "loop_samples_per_s": sum(loop) / len(loop) if loop else math.nan,
    }


def ray_train_default_poll() -> AbstractContextManager[Any]:
    """Ray Train's own 2 s poll: a local Ray instance starts its processes with this environment, and
    tuner's trainable keeps a value the user set. Whatever the variable was before comes back after."""
    return mock.patch.dict(os.environ, {POLL_INTERVAL_VARIABLE: "2.0"})


def mib(value: int) -> str:
    return f"{value / 1024**2:.0f} MiB"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--model", default="cnn")
    parser.add_argument("--memory-trials", type=int, default=0)
    args = parser.parse_args()
    # Removed at exit, raising or not: mkdtemp's folder never was (60 MB of experiments a run in /tmp).
    scratch = tempfile.TemporaryDirectory(prefix="tuner-overhead-")
    atexit.register(scratch.cleanup)
    storage = scratch.name

    # The fastest of three: the bare loop is short, and the baseline should not gain from a slow moment.
    a = max((bare_loop(args.model, args.epochs) for _ in range(3)), key=lambda run: run["loop_samples_per_s"])
    b = experiment(storage, "one_trial", space(args.model, args.epochs, 1, CONFIG["lr"]))
    lrs = [0.003 * (1 + i % 5) for i in range(args.trials)]  # distinct configs, all healthy
    c = experiment(storage, "many", space(args.model, args.epochs, 1, tune.grid_search(lrs)), max_concurrent=2)
    d = experiment(storage, "ddp", space(args.model, args.epochs, 2, CONFIG["lr"]))
    with ray_train_default_poll():
        d2 = experiment(storage, "ddp_default_poll", space(args.model, args.epochs, 2, CONFIG["lr"]))
    e = max((own_loop_bare(args.epochs) for _ in range(3)), key=lambda run: run["epoch_samples_per_s"])
    f = experiment(storage, "own_loop", own_loop_space(args.epochs))
    g = by_hand(storage, args.epochs)

    cores = 2
    epoch_s = N_TRAIN / b["loop_samples_per_s"]  # a steady epoch of a tuner trial, evaluation and checkpoint included
    rows = [
        (
            "(a) bare PyTorch loop",
            a["loop_samples_per_s"],
            "1",
            "-",
            "-",
            mib(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024),
        ),
        (
            "(b) one tuner trial, in-process",
            b["loop_samples_per_s"],
            f"{b['loop_samples_per_s'] / a['loop_samples_per_s']:.3g}",
            f"{b['wall_s'] - b['epochs'] * epoch_s:.2f}",
            f"{b['in_steps_s'] / b['wall_s']:.0%}",
            mib(b["trial_rss"]),
        ),
        (
            f"(c) {c['trials']} trials, max_concurrent 2 (aggregate)",
            c["samples"] / c["wall_s"],
            f"{c['samples'] / c['wall_s'] / a['loop_samples_per_s']:.3g}",
            f"{(cores * c['wall_s'] - c['epochs'] * epoch_s) / c['trials']:.2f}",
            f"{c['in_steps_s'] / (cores * c['wall_s']):.0%}",
            mib(c["trial_rss"]),
        ),
        (
            "(d) one 2-worker DDP trial",
            d["loop_samples_per_s"],
            f"{d['loop_samples_per_s'] / a['loop_samples_per_s']:.3g}",
            f"{d['wall_s'] - d['epochs'] * N_TRAIN / d['loop_samples_per_s']:.2f}",
            f"{d['in_steps_s'] / (cores * d['wall_s']):.0%}",
            "-",
        ),
        (
            "(d2) (d) at Ray Train's default poll of its workers",
            d2["loop_samples_per_s"],
            f"{d2['loop_samples_per_s'] / a['loop_samples_per_s']:.3g}; (d) is "
            f"{d['loop_samples_per_s'] / d2['loop_samples_per_s']:.3g}x (d2)",
            f"{d2['wall_s'] - d2['epochs'] * N_TRAIN / d2['loop_samples_per_s']:.2f}",
            f"{d2['in_steps_s'] / (cores * d2['wall_s']):.0%}",
            "-",
        ),
        ("(e) a user's own loop, bare script (median epoch)", e["epoch_samples_per_s"], "-", "-", "-", "-"),
        (
            "(f) the same loop as a train_loop, one tuner trial (median epoch)",
            f["epoch_samples_per_s"],
            f"{f['epoch_samples_per_s'] / e['epoch_samples_per_s']:.3g} of (e)",
            "-",
            "-",
            mib(f["trial_rss"]),
        ),
        (
            "(g) the same loop as a Ray Tune trainable by hand (median epoch)",
            g["epoch_samples_per_s"],
            f"{g['epoch_samples_per_s'] / e['epoch_samples_per_s']:.3g} of (e); (f) is "
            f"{f['epoch_samples_per_s'] / g['epoch_samples_per_s']:.3g} of (g)",
            "-",
            "-",
            "-",
        ),
    ]
    table = pd.DataFrame(
        rows,
        columns=[
            "run",
            "samples/s",
            "vs (a)",
            "fixed cost per trial s",
            "core time in training steps",
            "peak trial RSS",
        ],
    )
    print(f"\n{args.model} on digits, {args.epochs} epochs, batch 64, {cores} cores\n")
    print(table.to_markdown(index=False, floatfmt=".3g"))
    print(
        f"\n(a), (b), (d) samples/s: the training loop from the end of its first epoch to the end of its last"
        f"\n(evaluation, and for tuner the checkpoint and report, included); (c): every sample of the experiment"
        f"\nover its whole wall time, Ray's start-up included ({c['wall_s']:.1f} s); (e), (f): the median epoch of"
        f"\neach run (train steps, evaluation, and for (f), (g) the checkpoint and report), "
        "the best of three runs each."
        f"\nfixed cost: wall time not spent in steady epochs ({epoch_s * 1000:.0f} ms each), per trial: Ray's start-up"
        f"\nand teardown, the trial's process, torch's first-optimizer import, the first epoch's warm-up;"
        f"\n(c) counts both cores' time and spreads it over the trials."
        f"\ncore time in training steps: forward, backward and optimizer steps over (cores x) wall time."
        f"\ndriver peak RSS: one trial {mib(b['driver_rss'])}, {c['trials']} trials {mib(c['driver_rss'])}"
    )

    if args.memory_trials:
        m = experiment(
            storage,
            "memory",
            space(args.model, 1, 1, tune.grid_search([0.001 + 1e-6 * i for i in range(args.memory_trials)])),
            max_concurrent=2,
        )
        samples = m["rss_samples"]
        quarter = max(1, len(samples) // 4)
        early = sum(rss for _, rss in samples[quarter : 2 * quarter]) / quarter
        late = sum(rss for _, rss in samples[-quarter:]) / quarter
        print(
            f"\n{m['trials']} one-epoch trials in {m['wall_s']:.0f} s: driver RSS {mib(int(early))} in the second "
            f"quarter of the run, {mib(int(late))} in the last quarter ({(late - early) / 1024 / m['trials']:.1f} KiB "
            f"per trial), peak {mib(m['driver_rss'])}"
        )


if __name__ == "__main__":
    main()
