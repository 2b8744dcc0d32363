"""tuner against what a user would otherwise write, on the same trials, in one invocation.

    python bench/peers.py [--epochs 10] [--concurrent 2] [--rounds 3]

The trials: a 3 x 3 grid of lr x hidden width on the shipped digits MLP, batch 64, Adam, --epochs
epochs each, --concurrent at a time, one CPU thread each. Four ways, wall time from the first line of
the user's code to the last (Ray's start and shutdown included where there is Ray):

  tuner          the grid as a space module's fields, through tuner.run (no console, no
                 smoke step)
  tuner + smoke  the same with the smoke step, as `tuner run` does by default
  ray tune       the script a user writes by hand: a function trainable running the same loop,
                 tune.report with a checkpoint every epoch, reuse_actors, max_concurrent_trials
  optuna         an Optuna study over the same grid (GridSampler), the same loop, --concurrent threads
  bare loop      the nine trials one after another in this process, no search library

Each way runs in a fresh interpreter, timed from its start to its exit (imports included, as a user
waits for them); the ways take turns for --rounds rounds. Prints the median wall times and each as a
ratio to `ray tune`, and the fastest run of each. Target: tuner <= 1.0x ray tune by hand.
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

import optuna
import pandas as pd
import ray
import torch
import torch.nn.functional as F
from ray import tune

from tuner import RunOptions, data, run
from tuner.lazy import resolve
from tuner.models import MODELS
from tuner.spec.space import ExperimentSpec

LRS, WIDTHS, BATCH = [3e-4, 3e-3, 3e-2], [32, 64, 128], 64


def train(config: dict[str, Any], epochs: int, report=None) -> float:
    """The loop every variant runs: Adam on the shipped MLP, accuracy on the validation split each epoch."""
    torch.set_num_threads(1)
    torch.manual_seed(0)
    splits = data.digits()
    (x_train, y_train), (x_val, y_val) = splits
    model = resolve(MODELS["mlp"])(config, splits)
    optimizer = torch.optim.Adam(model.parameters(), lr=config["lr"])
    best = 0.0
    for _ in range(epochs):
        model.train()
        order = torch.randperm(len(y_train))
        for i in range(0, len(y_train), BATCH):
            batch = order[i : i + BATCH]
            loss = F.cross_entropy(model(x_train[batch]), y_train[batch])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
        model.eval()
        with torch.no_grad():
            accuracy = float((model(x_val).argmax(1) == y_val).float().mean())
        best = max(best, accuracy)
        if report is not None:
            report(model, accuracy)
    return best


def with_tuner(storage: str, epochs: int, concurrent: int, smoke: bool = False) -> float:
    space = ExperimentSpec.of(
        name="peers",
        model="mlp",
        dataset="digits",
        metric="val_acc",
        mode="max",
        epochs=epochs,
        max_concurrent=concurrent,
        param_space={
            "lr": tune.grid_search(LRS),
            "hidden": tune.grid_search(WIDTHS),
            "batch_size": BATCH,
            "optimizer": "adam",
            "weight_decay": 0.0,
        },
    )
    started = time.perf_counter()
    run(
        space,
        RunOptions(storage_path=storage, name=f"tuner-{time.time_ns()}", verbose=0, smoke=smoke),
    )
    return time.perf_counter() - started


def by_hand_trainable(config: dict[str, Any]) -> None:
    def report(model: torch.nn.Module, accuracy: float) -> None:
        with tempfile.TemporaryDirectory() as directory:
            torch.save(model.state_dict(), f"{directory}/model.pt")
            tune.report({"val_acc": accuracy}, checkpoint=tune.Checkpoint.from_directory(directory))

    train(config, config["epochs"], report)


def with_ray_tune(storage: str, epochs: int, concurrent: int) -> float:
    started = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    try:
        tune.Tuner(
            tune.with_resources(by_hand_trainable, {"CPU": 1}),
            param_space={"lr": tune.grid_search(LRS), "hidden": tune.grid_search(WIDTHS), "epochs": epochs},
            tune_config=tune.TuneConfig(
                metric="val_acc", mode="max", max_concurrent_trials=concurrent, reuse_actors=True
            ),
            run_config=tune.RunConfig(storage_path=storage, name=f"by-hand-{time.time_ns()}", verbose=0),
        ).fit()
    finally:
        ray.shutdown()
    return time.perf_counter() - started


def with_optuna(epochs: int, concurrent: int) -> float:
    started = time.perf_counter()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        direction="maximize", sampler=optuna.samplers.GridSampler({"lr": LRS, "hidden": WIDTHS}, seed=0)
    )
    study.optimize(
        lambda trial: train(
            {"lr": trial.suggest_categorical("lr", LRS), "hidden": trial.suggest_categorical("hidden", WIDTHS)}, epochs
        ),
        n_trials=len(LRS) * len(WIDTHS),
        n_jobs=concurrent,
    )
    return time.perf_counter() - started


def bare(epochs: int) -> float:
    started = time.perf_counter()
    for lr in LRS:
        for hidden in WIDTHS:
            train({"lr": lr, "hidden": hidden}, epochs)
    return time.perf_counter() - started


WAYS = {
    "tuner": lambda storage, args: with_tuner(storage, args.epochs, args.concurrent),
    "tuner + smoke": lambda storage, args: with_tuner(storage, args.epochs, args.concurrent, smoke=True),
    "ray tune": lambda storage, args: with_ray_tune(storage, args.epochs, args.concurrent),
    "optuna": lambda storage, args: with_optuna(args.epochs, args.concurrent),
    "bare loop": lambda storage, args: bare(args.epochs),
}


def timed_in_a_fresh_process(way: str, args: argparse.Namespace) -> float:
    """Each way in its own interpreter, timed from its start to its exit: imports and start-up count,
    as they do for a user, and no way inherits another's warm imports."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, __file__, "--only", way, "--epochs", str(args.epochs), "--concurrent", str(args.concurrent)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--concurrent", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5, help="each way this many times, in turns; medians shown")
    parser.add_argument("--only", choices=list(WAYS), help=argparse.SUPPRESS)  # one way, in this process
    args = parser.parse_args()
    if args.only:
        with tempfile.TemporaryDirectory() as storage:
            WAYS[args.only](storage, args)
        return
    times: dict[str, list[float]] = {way: [] for way in WAYS}
    for _ in range(args.rounds):
        for way in WAYS:
            times[way].append(timed_in_a_fresh_process(way, args))
    wall = {way: statistics.median(values) for way, values in times.items()}
    # Ray's start waits on its node's registration in 1 s polls, so one start takes ~2.4 s and the
    # next ~3.4 s: the median needs several rounds, and the fastest run shows each way without that luck.
    fastest = {way: min(values) for way, values in times.items()}
    table = pd.DataFrame(
        {
            "way": list(wall),
            "wall_s": [round(value, 1) for value in wall.values()],
            "vs ray tune by hand": [f"{value / wall['ray tune']:.2f}x" for value in wall.values()],
            "fastest_s": [round(value, 1) for value in fastest.values()],
            "fastest vs ray tune": [f"{value / fastest['ray tune']:.2f}x" for value in fastest.values()],
        }
    )
    print(
        f"9 trials (3 lr x 3 widths), digits MLP, {args.epochs} epochs, {args.concurrent} at a time; "
        f"each way a fresh process, median and fastest of {args.rounds} round(s)"
    )
    print(table.to_markdown(index=False))


if __name__ == "__main__":
    main()
