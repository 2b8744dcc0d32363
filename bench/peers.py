"""tuner against what a user would otherwise write, in one invocation: the same trials against Ray Tune
by hand (wall and CPU), then a search to a target against Optuna, cold and warm
(bench/time_to_target.py), each with where its seconds go.

    python bench/peers.py [--epochs 10] [--concurrent 2] [--rounds 5] [--seeds 5] [--target 0.985]

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
ratio to `ray tune`, the fastest run of each, and the machine's busy CPU seconds over each run
(/proc/stat: keep the machine otherwise idle). Targets: tuner <= 1.0x ray tune by hand in wall time and
<= 1.1x in CPU, as medians of the rounds' paired ratios. The peers' phases (imports, Ray's start, the
first report, the last trial's end, Ray's shutdown) are printed from the last round; tuner's own come
from its -v lines in the time-to-target part.
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
import time_to_target  # noqa: E402  # bench/ is no package: its scripts import each other by path

LRS, WIDTHS, BATCH = [3e-4, 3e-3, 3e-2], [32, 64, 128], 64
# Imports are each way's own (inside its function): a user of one library does not wait for another's.
PHASES: dict[str, float] = {}  # what this way's process did when, as time.time(); printed for the parent


def phase(name: str) -> None:
    PHASES.setdefault(name, time.time())


def train(config: dict[str, Any], epochs: int, report=None) -> float:
    """The loop every variant runs: Adam on the shipped MLP, accuracy on the validation split each epoch."""
    import torch

    from tuner import data
    from tuner.lazy import resolve
    from tuner.models import MODELS

    torch.set_num_threads(1)
    torch.manual_seed(0)
    splits = data.digits()
    model = resolve(MODELS["mlp"])(config, splits)
    optimizer = torch.optim.Adam(model.parameters(), lr=config["lr"])
    best = 0.0
    for _ in range(epochs):
        accuracy = time_to_target.epoch_then_accuracy(model, optimizer, splits)
        phase("first report")
        best = max(best, accuracy)
        if report is not None:
            report(model, accuracy)
    return best


def with_tuner(storage: str, epochs: int, concurrent: int, smoke: bool = False) -> None:
    from ray import tune

    from tuner import RunOptions, run
    from tuner.spec.space import ExperimentSpec

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
    run(space, RunOptions(storage_path=storage, name=f"tuner-{time.time_ns()}", verbose=0, smoke=smoke))


def by_hand_trainable(config: dict[str, Any]) -> None:
    import torch
    from ray import tune

    def report(model: torch.nn.Module, accuracy: float) -> None:
        with tempfile.TemporaryDirectory() as directory:
            torch.save(model.state_dict(), f"{directory}/model.pt")
            tune.report({"val_acc": accuracy}, checkpoint=tune.Checkpoint.from_directory(directory))

    train(config, config["epochs"], report)


def with_ray_tune(storage: str, epochs: int, concurrent: int) -> None:
    import ray
    from ray import tune

    class FirstReport(tune.Callback):
        def on_trial_result(self, *args: Any, **kwargs: Any) -> None:
            phase("first report")

    phase("imports")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR")
    phase("ray start")
    try:
        tune.Tuner(
            tune.with_resources(by_hand_trainable, {"CPU": 1}),
            param_space={"lr": tune.grid_search(LRS), "hidden": tune.grid_search(WIDTHS), "epochs": epochs},
            tune_config=tune.TuneConfig(
                metric="val_acc", mode="max", max_concurrent_trials=concurrent, reuse_actors=True
            ),
            run_config=tune.RunConfig(
                storage_path=storage, name=f"by-hand-{time.time_ns()}", verbose=0, callbacks=[FirstReport()]
            ),
        ).fit()
        phase("last trial ended")
    finally:
        ray.shutdown()
        phase("ray shutdown")


def with_optuna(epochs: int, concurrent: int) -> None:
    import optuna

    phase("imports")
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
    phase("last trial ended")


def bare(epochs: int) -> None:
    for lr in LRS:
        for hidden in WIDTHS:
            train({"lr": lr, "hidden": hidden}, epochs)
    phase("last trial ended")


WAYS = {
    "tuner": lambda storage, args: with_tuner(storage, args.epochs, args.concurrent),
    "tuner + smoke": lambda storage, args: with_tuner(storage, args.epochs, args.concurrent, smoke=True),
    "ray tune": lambda storage, args: with_ray_tune(storage, args.epochs, args.concurrent),
    "optuna": lambda storage, args: with_optuna(args.epochs, args.concurrent),
    "bare loop": lambda storage, args: bare(args.epochs),
}


def timed_in_a_fresh_process(way: str, args: argparse.Namespace) -> tuple[float, float, dict[str, float]]:
    """Each way in its own interpreter, timed from its start to its exit: imports and start-up count,
    as they do for a user, and no way inherits another's warm imports. (wall s, machine CPU s, its
    phases in seconds after the start)."""
    wall, cpu, clock, out = time_to_target.timed(
        [sys.executable, __file__, "--only", way, "--epochs", str(args.epochs), "--concurrent", str(args.concurrent)]
    )
    said = json.loads(out.strip().splitlines()[-1])
    return wall, cpu, {name: at - clock for name, at in said.items()}


def same_trials(args: argparse.Namespace) -> None:
    import pandas as pd

    wall: dict[str, list[float]] = {way: [] for way in WAYS}
    cpu: dict[str, list[float]] = {way: [] for way in WAYS}
    phases: dict[str, dict[str, float]] = {}
    for _ in range(args.rounds):
        for way in WAYS:
            seconds, busy, phases[way] = timed_in_a_fresh_process(way, args)
            wall[way].append(seconds)
            cpu[way].append(busy)

    def paired(values: dict[str, list[float]], way: str) -> float:
        return statistics.median(mine / theirs for mine, theirs in zip(values[way], values["ray tune"], strict=True))

    # Ray's start waits on its node's registration in 1 s polls, so one start takes ~2.4 s and the
    # next ~3.4 s: the median needs several rounds, and the fastest run shows each way without that luck.
    table = pd.DataFrame(
        [
            {
                "way": way,
                "wall_s": round(statistics.median(wall[way]), 1),
                "wall vs ray tune (paired)": f"{paired(wall, way):.2f}x",
                "fastest_s": round(min(wall[way]), 1),
                "cpu_s": round(statistics.median(cpu[way]), 1),
                "cpu vs ray tune (paired)": f"{paired(cpu, way):.2f}x",
            }
            for way in WAYS
        ]
    )
    print(
        f"9 trials (3 lr x 3 widths), digits MLP, {args.epochs} epochs, {args.concurrent} at a time; "
        f"each way a fresh process, median and fastest of {args.rounds} round(s)"
    )
    print(table.to_markdown(index=False))
    for way in ("tuner + smoke", "tuner"):
        met = paired(wall, way) <= 1.0 and paired(cpu, way) <= 1.1
        print(
            f"target {way} <= 1.0x wall and <= 1.1x CPU of ray tune by hand: {paired(wall, way):.2f}x, "
            f"{paired(cpu, way):.2f}x ({'met' if met else 'NOT met'})"
        )
    print("\nthe peers' phases in the last round, seconds after the process started:")
    for way in ("ray tune", "optuna", "bare loop"):
        print(f"  {way}: " + ", ".join(f"{name} {at:.2f}" for name, at in phases[way].items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--concurrent", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5, help="each way this many times, in turns; medians shown")
    parser.add_argument("--seeds", type=int, default=5, help="seeds of the search to a target")
    parser.add_argument("--target", type=float, default=0.985, help="the val_acc the search runs to")
    parser.add_argument("--only", choices=list(WAYS), help=argparse.SUPPRESS)  # one way, in this process
    args = parser.parse_args()
    if args.only:
        with tempfile.TemporaryDirectory() as storage:
            WAYS[args.only](storage, args)
        print(json.dumps(PHASES))
        return
    same_trials(args)
    print()
    time_to_target.compare(args.seeds, args.target)


if __name__ == "__main__":
    main()
