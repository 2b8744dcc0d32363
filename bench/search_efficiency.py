"""Grid/FIFO against random+ASHA and optuna+ASHA on the same digits-CNN space, in one invocation.

    python bench/search_efficiency.py [--epochs 9] [--seeds 5] [--storage DIR]

Each strategy runs once per seed (the seed samples configs and initialises every trial). Prints, per
strategy, the median and 25-75 % range over seeds of: best val_acc, trial-epochs consumed, wall time,
and the trial-epochs it needed before some trial came within 0.5 percentage points of the same seed's
grid best (counted in the order the epochs were reported), as a fraction of grid's total. Target:
ASHA <= 1/3 of grid. bench/synthetic_search.py compares more strategies over more seeds on an exact
function in minutes.
"""

import argparse
import atexit
import math
import tempfile
import time

import asha_shapes  # bench/, beside this script
import pandas as pd
from ray import tune

import tuner
from tuner.search.space_counts import grid_as_choice

TOLERANCE = 0.005  # 0.5 percentage points of accuracy

GRID = {
    "optimizer": tune.grid_search(["adam", "sgd"]),
    "lr": tune.grid_search([3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1]),
    "channels": tune.grid_search([8, 16]),
    "hidden": 64,
    "batch_size": 64,
}
STRATEGIES = [  # (label, search, scheduler, ASHA's (grace period, reduction factor); None: tuner's default)
    ("grid + fifo", "grid", "fifo", None),
    ("random + asha", "random", "asha", None),
    ("optuna + asha", "optuna", "asha", None),
]


def make_space(search: str, scheduler: str, epochs: int, shape: tuple[int, int] | None = None) -> tuner.ExperimentSpec:
    grid_size = 2 * 6 * 2
    param_space = GRID if search == "grid" else grid_as_choice(GRID)
    return tuner.ExperimentSpec.of(  # checks itself, as a space module would be checked
        name=f"bench_{search}_{scheduler}",
        model="cnn",
        dataset="digits",
        metric="val_acc",
        mode="max",
        param_space=param_space,
        num_samples=1 if search == "grid" else grid_size,
        epochs=epochs,
        search=search,
        scheduler=scheduler,
        **asha_shapes.settings(shape),
    )


def quantile(values: pd.Series, q: float) -> float:
    """The linear-interpolated quantile, with a seed that never reached the target counted as inf. pandas'
    own computes finite + (inf - finite) * 0 = nan (and numpy warns) even where the quantile falls
    exactly on a finite seed; here that is the seed's value, and any share past the finite seeds is inf."""
    ordered = sorted(values)
    position = q * (len(ordered) - 1)
    low, high = math.floor(position), math.ceil(position)
    if low == high:
        return float(ordered[low])
    if math.isinf(ordered[high]):
        return math.inf
    return float(ordered[low] + (ordered[high] - ordered[low]) * (position - low))


def spread(values: pd.Series) -> str:
    """Median (25-75 %), as the docs' tables show it; inf: the seeds at that quantile never got there."""
    return f"{quantile(values, 0.5):.3f} ({quantile(values, 0.25):.3f}-{quantile(values, 0.75):.3f})"


# The printed table's columns, worded as docs/benchmarks.md's tables (which are this output, pasted).
COLUMNS = {
    "seeds": "seeds",
    "best_val_acc": "best val_acc",
    "trial_epochs": "trial-epochs",
    "epochs_vs_grid": "vs grid",
    "wall_s": "wall s",
    "to_target_vs_grid": "epochs to target vs grid",
    "reached": "reached",
}


def summarize(table: pd.DataFrame) -> pd.DataFrame:
    """One row per strategy: medians and 25-75 % ranges over the seeds."""
    summary = table.groupby("strategy", sort=False).agg(
        seeds=("seed", "count"),
        best_val_acc=("best_val_acc", spread),
        trial_epochs=("trial_epochs", lambda v: f"{v.median():.0f}"),
        epochs_vs_grid=("epochs_vs_grid", spread),
        wall_s=("wall_s", lambda v: f"{v.median():.1f}"),
        to_target_vs_grid=("to_target_vs_grid", spread),
        reached=("to_target_vs_grid", lambda v: f"{(v < math.inf).sum()}/{len(v)}"),
    )
    return summary.rename(columns=COLUMNS).reset_index()


def epochs_to_reach(history: pd.DataFrame, target: float) -> int | None:
    ordered = history.sort_values("reported_at").reset_index(drop=True)
    hits = ordered.index[ordered["val_acc"] >= target]
    return int(hits[0]) + 1 if len(hits) else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=9)
    parser.add_argument("--seeds", type=int, default=5, help="each strategy with seeds 0 .. N-1; medians shown")
    parser.add_argument(
        "--storage", default=None, help="keep the experiments here (default: a temp dir removed at exit)"
    )
    asha_shapes.add_arguments(parser)
    args = parser.parse_args()
    storage = args.storage
    if storage is None:  # removed at exit, raising or not: mkdtemp's folder never was (60 MB a run in /tmp)
        scratch = tempfile.TemporaryDirectory(prefix="tuner-bench-")
        atexit.register(scratch.cleanup)
        storage = scratch.name
    strategies = list(STRATEGIES)
    strategies += [(label, search, "asha", shape) for label, search, shape in asha_shapes.variants(args)]
    print(
        f"tuner's ASHA at {args.epochs} epochs: grace period, reduction factor = {asha_shapes.DEFAULT}",
        flush=True,
    )

    rows = []
    for seed in range(args.seeds):
        runs = []
        for label, search, scheduler, shape in strategies:
            space = make_space(search, scheduler, args.epochs, shape)
            started = time.perf_counter()
            outcome = tuner.run(
                space,
                tuner.RunOptions(
                    storage_path=storage, name=f"{search}-{scheduler}-{seed}-{time.time_ns()}", seed=seed, verbose=0
                ),
            )
            wall = time.perf_counter() - started
            runs.append((label, tuner.load(outcome.experiment_path), wall))
            print(f"seed {seed}, {label}: {wall:.0f} s", flush=True)
        # Each seed's target is that seed's grid best: the seed also sets every trial's initialisation.
        grid_exp = runs[0][1]
        grid_epochs = len(grid_exp.history)
        target = grid_exp.trials["best_val_acc"].max() - TOLERANCE
        for label, exp, wall in runs:
            reach = epochs_to_reach(exp.history, target)
            rows.append(
                {
                    "strategy": label,
                    "seed": seed,
                    "trial_epochs": len(exp.history),
                    "epochs_vs_grid": len(exp.history) / grid_epochs,
                    "wall_s": wall,
                    "best_val_acc": exp.trials["best_val_acc"].max(),
                    "to_target_vs_grid": float("inf") if reach is None else reach / grid_epochs,
                }
            )
    table = pd.DataFrame(rows)
    kept = f"kept in {storage}" if args.storage else "in a temp dir removed at exit (--storage DIR keeps them)"
    print(
        f"\nmedian (25-75 %) over {args.seeds} seeds; target: within {TOLERANCE * 100:.1f} pp of the same seed's "
        f"grid best; epochs to target vs grid: trial-epochs until a trial reached it, over grid's total (inf: "
        f"never); experiments {kept}\n"
    )
    # As written: tabulate would read "15.0" as a number and print 15.
    align = ["left", "right", "left", "right", "left", "right", "left", "left"]
    print(summarize(table).to_markdown(index=False, disable_numparse=True, colalign=align))
    for label, group in table.groupby("strategy", sort=False):
        if "asha" not in label:
            continue
        ratio = quantile(group["to_target_vs_grid"], 0.5)
        verdict = "met" if ratio <= 1 / 3 else "missed"
        print(f"{label}: median {ratio:.3f} of grid's trial-epochs to the target; goal <= 0.333: {verdict}")


if __name__ == "__main__":
    main()
