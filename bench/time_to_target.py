"""Time to a target against Optuna: how long a small search takes a user, from typing the command to
having a config that reaches the target, cold (Ray not running) and warm (a Ray instance kept by an
earlier `tuner run --keep-ray`). Run by bench/peers.py, or alone:

    python bench/time_to_target.py [--seeds 5] [--target 0.985]

The space: the shipped digits CNN, lr and weight decay log-uniform, channels, hidden, dropout; 12
epochs a trial, batch 64, Adam, 2 trials at a time; stop at val_acc >= --target. Three ways, each a
fresh process timed from its start to its exit; Optuna and tuner cold seed by seed in turns, then the
warm runs (a kept instance's idle processes take ~5 % of a core, which the others should not pay):

  optuna       TPESampler(seed) + MedianPruner, study.optimize(n_jobs=2) in one process, the loop
               written out, study.stop() at the target
  tuner cold   `tuner run SPACE --search optuna --scheduler asha --stop "val_acc>=T" --seed S -q`
               with no kept Ray instance: the run starts its own
  tuner warm   the same command on a Ray instance an earlier run kept (`--keep-ray`)

Also the first trial's first report (seconds after the command started) and how many trials ran.
Machine-wide CPU seconds come from /proc/stat over each run: keep the machine otherwise idle.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import ray_tune_floor

EPOCHS, BATCH, CONCURRENT, MAX_TRIALS = 12, 64, 2, 40
COLD_GOAL, WARM_GOAL = 1.5, 1.0  # tuner's median over Optuna's median

SPACE_MODULE = f"""
from ray import tune
model = "cnn"
dataset = "digits"
metric = "val_acc"
mode = "max"
epochs = {EPOCHS}
num_samples = {MAX_TRIALS}
max_concurrent = {CONCURRENT}
search = "optuna"
scheduler = "asha"
param_space = {{
    "lr": tune.loguniform(1e-4, 3e-2),
    "weight_decay": tune.loguniform(1e-6, 1e-2),
    "channels": tune.choice([8, 16, 32]),
    "hidden": tune.choice([64, 128]),
    "dropout": tune.uniform(0.0, 0.3),
    "batch_size": {BATCH},
    "optimizer": "adam",
}}
"""


def busy_cpu_s() -> float:
    """Seconds all cores spent busy since boot (/proc/stat: user, nice, system, irq, softirq, steal)."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields[:8]
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def timed(command: list[str], **popen: Any) -> tuple[float, float, float, str]:
    """(wall s, machine CPU s, wall-clock start, stdout) of a command run to its exit."""
    cpu, started, clock = busy_cpu_s(), time.perf_counter(), time.time()
    done = subprocess.run(command, check=True, capture_output=True, text=True, **popen)
    return time.perf_counter() - started, busy_cpu_s() - cpu, clock, done.stdout


def epoch_then_accuracy(model: Any, optimizer: Any, splits: Any) -> float:
    """One epoch over shuffled batches of BATCH, then the accuracy on the validation split: the loop every
    peer here and in bench/peers.py runs, written out as a user of those libraries writes it."""
    import torch
    import torch.nn.functional as F

    (x_train, y_train), (x_val, y_val) = splits
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
        return float((model(x_val).argmax(1) == y_val).float().mean())


def optuna_search(seed: int, target: float) -> None:
    """The Optuna way, in this process; prints what it found as JSON on stdout."""
    import optuna
    import torch

    from tuner import data
    from tuner.lazy import resolve
    from tuner.models import MODELS

    splits = data.digits()
    first_report: list[float] = []

    def objective(trial: optuna.Trial) -> float:
        torch.set_num_threads(1)
        config = {
            "lr": trial.suggest_float("lr", 1e-4, 3e-2, log=True),
            "weight_decay": trial.suggest_float("weight_decay", 1e-6, 1e-2, log=True),
            "channels": trial.suggest_categorical("channels", [8, 16, 32]),
            "hidden": trial.suggest_categorical("hidden", [64, 128]),
            "dropout": trial.suggest_float("dropout", 0.0, 0.3),
        }
        torch.manual_seed(seed)
        model = resolve(MODELS["cnn"])(config, splits)
        optimizer = torch.optim.Adam(model.parameters(), lr=config["lr"], weight_decay=config["weight_decay"])
        best = 0.0
        for epoch in range(EPOCHS):
            accuracy = epoch_then_accuracy(model, optimizer, splits)
            first_report[:] = first_report or [time.time()]
            best = max(best, accuracy)
            if accuracy >= target:
                trial.study.stop()
                return accuracy
            trial.report(accuracy, epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return best

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        direction="maximize", sampler=optuna.samplers.TPESampler(seed=seed), pruner=optuna.pruners.MedianPruner()
    )
    study.optimize(objective, n_trials=MAX_TRIALS, n_jobs=CONCURRENT)
    best = max((t.value for t in study.trials if t.value is not None), default=0.0)
    print(json.dumps({"first_report_at": first_report[0], "trials": len(study.trials), "reached": best >= target}))


def tuner_rows(experiment: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for path in experiment.glob("*/result.json") for line in path.read_text().splitlines()]


class TunerWays:
    """`tuner run` cold and warm, in a scratch folder: cold runs see an empty runtime folder (no kept
    instance), warm runs the one where the first warm run keeps its instance."""

    def __init__(self, scratch: Path, target: float) -> None:
        self.folder, self.target = scratch, target
        (scratch / "space.py").write_text(SPACE_MODULE)
        self.storage = scratch / "runs"
        self.runtime = {"cold": scratch / "runtime-cold", "warm": scratch / "runtime-warm"}
        for folder in self.runtime.values():
            folder.mkdir()

    def command(self, seed: int, name: str, *extra: str) -> list[str]:
        return [
            sys.executable, "-m", "tuner", "run", "space.py", "--stop", f"val_acc>={self.target}", "--seed", str(seed),
            "--storage-path", str(self.storage), "--name", name, *extra,
        ]  # fmt: skip

    def env(self, way: str) -> dict[str, str]:
        return {**os.environ, "TUNER_RUNTIME_DIR": str(self.runtime[way])}

    def keep(self) -> None:
        """A kept instance for the warm runs, from an untimed run of the same command."""
        subprocess.run(
            self.command(0, "keep", "-q", "--keep-ray", "30m"),
            check=True, capture_output=True, cwd=self.folder, env=self.env("warm"),
        )  # fmt: skip

    def down(self) -> None:
        down = [sys.executable, "-m", "tuner", "down"]
        subprocess.run(down, check=True, capture_output=True, cwd=self.folder, env=self.env("warm"))

    def run(self, way: str, seed: int) -> dict[str, Any]:
        name = f"{way}-{seed}-{time.time_ns()}"
        wall, cpu, clock, _ = timed(self.command(seed, name, "-q"), cwd=self.folder, env=self.env(way))
        rows = tuner_rows(self.storage / name)
        return {
            "wall_s": wall,
            "cpu_s": cpu,
            "first_report_s": min(row["reported_at"] for row in rows) - clock,
            "trials": len({row["trial_id"] for row in rows}),
            "reached": max(row["val_acc"] for row in rows) >= self.target,
        }

    def phases(self, way: str) -> list[str]:
        """The phase lines of one -v run (not timed with the others: -v prints more)."""
        done = subprocess.run(
            self.command(0, f"phases-{way}-{time.time_ns()}", "-v"),
            check=True, capture_output=True, text=True, cwd=self.folder, env=self.env(way),
        )  # fmt: skip
        return [line for line in done.stdout.splitlines() if line.startswith("phase:")]


def optuna_run(seed: int, target: float) -> dict[str, Any]:
    wall, cpu, clock, out = timed([sys.executable, __file__, "--only-optuna", str(seed), "--target", str(target)])
    found = json.loads(out.strip().splitlines()[-1])
    return {"wall_s": wall, "cpu_s": cpu, "first_report_s": found.pop("first_report_at") - clock, **found}


def compare(seeds: int, target: float) -> None:
    import pandas as pd

    # Ignoring clean-up errors: the kept instance's processes may still write its log as they end.
    with tempfile.TemporaryDirectory(prefix="tuner-bench-target-", ignore_cleanup_errors=True) as scratch:
        tuner_ways = TunerWays(Path(scratch), target)
        runs: dict[str, list[dict[str, Any]]] = {"optuna": [], "tuner cold": [], "tuner warm": []}
        # Cold runs and Optuna's first, while nothing is kept: a kept instance's own processes take
        # ~5 % of a core while idle, which only the warm runs should pay.
        for seed in range(seeds):
            runs["optuna"].append(optuna_run(seed, target))
            runs["tuner cold"].append(tuner_ways.run("cold", seed))
        phases = {"cold": tuner_ways.phases("cold")}
        tuner_ways.keep()
        try:
            for seed in range(seeds):
                runs["tuner warm"].append(tuner_ways.run("warm", seed))
            phases["warm"] = tuner_ways.phases("warm")
        finally:
            tuner_ways.down()
    optuna_wall = statistics.median(run["wall_s"] for run in runs["optuna"])
    table = pd.DataFrame(
        [
            {
                "way": way,
                "median wall s": round(statistics.median(run["wall_s"] for run in done), 1),
                "vs optuna": f"{statistics.median(run['wall_s'] for run in done) / optuna_wall:.2f}x",
                "median CPU s": round(statistics.median(run["cpu_s"] for run in done), 1),
                "first report s": round(statistics.median(run["first_report_s"] for run in done), 1),
                "trials (median)": statistics.median(run["trials"] for run in done),
                "reached": f"{sum(run['reached'] for run in done)} of {len(done)}",
                "per seed wall s": " ".join(f"{run['wall_s']:.1f}" for run in done),
                "per seed trials": " ".join(str(run["trials"]) for run in done),
            }
            for way, done in runs.items()
        ]
    )
    print(
        f"Time to val_acc >= {target} on the digits CNN ({EPOCHS} epochs, {CONCURRENT} trials at a time), "
        f"seeds 0-{seeds - 1}, each run a fresh process from start to exit:"
    )
    print(table.to_markdown(index=False))
    ratio = {way: statistics.median(run["wall_s"] for run in done) / optuna_wall for way, done in runs.items()}
    cold, warm = ratio["tuner cold"], ratio["tuner warm"]
    print(f"targets: cold <= {COLD_GOAL}x Optuna: {cold:.2f}x ({'met' if cold <= COLD_GOAL else 'NOT met'}); "
          f"warm <= {WARM_GOAL}x: {warm:.2f}x ({'met' if warm <= WARM_GOAL else 'NOT met'})")  # fmt: skip
    for way, lines in phases.items():
        print(f"\ntuner {way}, one run with -v (seed 0):")
        print("\n".join(f"  {line}" for line in lines))
    print()
    first_report = ray_tune_floor.show(ray_tune_floor.measure(3))[ray_tune_floor.COLUMNS.index("first report")]
    print(
        f"Any Ray Tune run of a torch trial reports first {first_report:.1f} s after its command starts, on a warm "
        f"instance; Optuna's whole search took {optuna_wall:.1f} s, {first_report / optuna_wall:.2f}x of it before "
        "any training towards the target."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--target", type=float, default=0.985)
    parser.add_argument("--only-optuna", type=int, help=argparse.SUPPRESS)  # one Optuna search, this seed
    args = parser.parse_args()
    if args.only_optuna is not None:
        optuna_search(args.only_optuna, args.target)
        return
    compare(args.seeds, args.target)


if __name__ == "__main__":
    main()
