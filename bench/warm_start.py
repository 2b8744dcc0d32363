"""Warm start against a cold start on the digits CNN, in one invocation.

    python bench/warm_start.py [--seeds 9] [--epochs 3] [--first 12] [--second 12] [--storage DIR]

Per seed: a first experiment (optuna, `--first` trials, seed s) sets the target, its best val_acc less
0.5 percentage points; then, with the same seed s + 1000 for both, a cold second experiment (optuna from
nothing) and a warm one (`--warm-start` the first) of `--second` trials each. Counted as in
bench/search_efficiency.py: the trial-epochs each second experiment ran before one of its trials reached
the target, in the order the epochs were reported (inf: never). Prints both side by side and their
ratio warm / cold per seed; target: a median ratio <= 0.5 (a seed where the cold start never got there
counts its whole budget, so its ratio is an upper bound). Two trials run at once, so the order of their
epochs, and what TPE has seen when it suggests, varies between runs of the same seed: a seed's ratio
moves between runs (seed 2 here: 0.375 in one, 1.9 in the next); read the median over many seeds. The
space is search_spaces/digits_cnn.py with ranges where optuna can model them (lr, dropout), every axis
searched.
"""

import argparse
import atexit
import math
import tempfile
import time

import pandas as pd
from ray import tune

import tuner

TOLERANCE = 0.005  # 0.5 percentage points of accuracy, as bench/search_efficiency.py
GOAL = 0.5  # warm-start trial-epochs to the target over a cold start's, median over seeds

SPACE = {
    "optimizer": tune.choice(["adam", "sgd"]),
    "lr": tune.loguniform(1e-4, 1e-1),
    "channels": tune.choice([8, 16, 32]),
    "hidden": tune.choice([64, 128]),
    "dropout": tune.uniform(0.0, 0.3),
    "batch_size": 64,
}


def make_space(num_samples: int, epochs: int) -> tuner.ExperimentSpec:
    return tuner.ExperimentSpec.of(
        name="bench_warm",
        model="cnn",
        dataset="digits",
        metric="val_acc",
        mode="max",
        param_space=SPACE,
        num_samples=num_samples,
        epochs=epochs,
        search="optuna",
        scheduler="fifo",
    )


def epochs_to_reach(history: pd.DataFrame, target: float) -> float:
    """Trial-epochs run before (and including) the first epoch at or above `target`, in report order."""
    ordered = history.sort_values("reported_at").reset_index(drop=True)
    hits = ordered.index[ordered["val_acc"] >= target]
    return float(hits[0] + 1) if len(hits) else math.inf


def run(space: tuner.ExperimentSpec, storage: str, name: str, seed: int, warm_start: str | None = None) -> str:
    options = tuner.RunOptions(storage_path=storage, name=name, seed=seed, verbose=0, warm_start=warm_start)
    return tuner.run(space, options).experiment_path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=9, help="seeds 0 .. N-1; medians shown")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--first", type=int, default=12, help="trials of the first experiment")
    parser.add_argument("--second", type=int, default=12, help="trials of each second experiment")
    parser.add_argument("--storage", default=None, help="keep the experiments here (default: a temp dir)")
    args = parser.parse_args()
    storage = args.storage
    if storage is None:
        scratch = tempfile.TemporaryDirectory(prefix="tuner-bench-warm-")
        atexit.register(scratch.cleanup)
        storage = scratch.name
    rows = []
    for seed in range(args.seeds):
        started = time.perf_counter()
        tag = time.time_ns()
        first = tuner.load(run(make_space(args.first, args.epochs), storage, f"first-{seed}-{tag}", seed))
        target = first.trials["best_val_acc"].max() - TOLERANCE
        second = make_space(args.second, args.epochs)
        cold = tuner.load(run(second, storage, f"cold-{seed}-{tag}", seed + 1000))
        warm = tuner.load(run(second, storage, f"warm-{seed}-{tag}", seed + 1000, warm_start=first.path))
        cold_to, warm_to = epochs_to_reach(cold.history, target), epochs_to_reach(warm.history, target)
        budget = len(cold.history)
        rows.append(
            {
                "seed": seed,
                "first best": first.trials["best_val_acc"].max(),
                "target": target,
                "cold best": cold.trials["best_val_acc"].max(),
                "warm best": warm.trials["best_val_acc"].max(),
                "cold epochs to target": cold_to,
                "warm epochs to target": warm_to,
                # A cold start that never got there is counted at its whole budget: the ratio is then an upper bound.
                "warm / cold": warm_to / (cold_to if math.isfinite(cold_to) else budget),
            }
        )
        said = ", ".join(f"{key} {value:.4g}" for key, value in rows[-1].items() if key != "seed")
        print(f"seed {seed}: {time.perf_counter() - started:.0f} s; {said}", flush=True)
    table = pd.DataFrame(rows)
    print(
        f"\n{args.seeds} seeds, digits CNN, {args.epochs} epochs per trial; first: {args.first} trials, each second "
        f"experiment: {args.second} trials (budget {args.second * args.epochs} trial-epochs); target: the first's "
        f"best less {TOLERANCE * 100:.1f} pp; epochs to target: trial-epochs until a trial reached it (inf: never)\n"
    )
    print(table.to_markdown(index=False, floatfmt=".4g"))
    ratio = float(table["warm / cold"].median())
    cold, warm = table["cold epochs to target"].median(), table["warm epochs to target"].median()
    verdict = "met" if ratio <= GOAL else "missed"
    print(
        f"\nmedian trial-epochs to the target: cold {cold:g}, warm {warm:g} ({warm / cold:.3f} of cold's); median of "
        f"the seeds' warm / cold {ratio:.3f}; goal <= {GOAL}: {verdict}"
    )


if __name__ == "__main__":
    main()
