"""Grid/FIFO against random+ASHA and optuna+ASHA on the same digits-CNN space, in one invocation.

    python bench/search_efficiency.py [--epochs 9] [--seed 0] [--storage DIR]

Prints, side by side: trial-epochs consumed, wall time, best val_acc, and the trial-epochs each
strategy needed before some trial came within 0.5 percentage points of grid's best (counted in the
order the epochs were reported), as a fraction of grid's total. Target: ASHA <= 1/3 of grid.
"""

import argparse
import tempfile
import time

import pandas as pd
from ray import tune

from tuner import analysis
from tuner.experiment import RunOptions, run
from tuner.searchers import grid_as_choice
from tuner.space import Space, validate

TOLERANCE = 0.005  # 0.5 percentage points of accuracy

GRID = {
    "optimizer": tune.grid_search(["adam", "sgd"]),
    "lr": tune.grid_search([3e-4, 1e-3, 3e-3, 1e-2, 3e-2, 1e-1]),
    "channels": tune.grid_search([8, 16]),
    "hidden": 64,
    "batch_size": 64,
}
STRATEGIES = [  # (label, search, scheduler)
    ("grid + fifo", "grid", "fifo"),
    ("random + asha", "random", "asha"),
    ("optuna + asha", "optuna", "asha"),
]


def make_space(search: str, scheduler: str, epochs: int) -> Space:
    grid_size = 2 * 6 * 2
    param_space = GRID if search == "grid" else grid_as_choice(GRID)
    space = Space(name=f"bench_{search}_{scheduler}", model="cnn", dataset="digits", metric="val_acc", mode="max",
                  param_space=param_space, num_samples=1 if search == "grid" else grid_size, epochs=epochs,
                  search=search, scheduler=scheduler)
    validate(space)
    return space


def epochs_to_reach(history: pd.DataFrame, target: float) -> int | None:
    ordered = history.sort_values("reported_at").reset_index(drop=True)
    hits = ordered.index[ordered["val_acc"] >= target]
    return int(hits[0]) + 1 if len(hits) else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=9)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--storage", default=None, help="keep the experiments here (default: a temp dir)")
    args = parser.parse_args()
    storage = args.storage or tempfile.mkdtemp(prefix="tuner-bench-")

    results = []
    for label, search, scheduler in STRATEGIES:
        space = make_space(search, scheduler, args.epochs)
        started = time.perf_counter()
        outcome = run(space, RunOptions(storage_path=storage, name=f"{search}-{scheduler}-{int(time.time())}",
                                        seed=args.seed, verbose=0))
        wall = time.perf_counter() - started
        print(f"{label}: {wall:.0f} s", flush=True)
        exp = analysis.load(outcome.experiment_path)
        results.append((label, exp, wall))

    grid_exp = results[0][1]
    grid_best = grid_exp.trials["best_val_acc"].max()
    grid_epochs = len(grid_exp.history)
    target = grid_best - TOLERANCE
    rows = []
    for label, exp, wall in results:
        reach = epochs_to_reach(exp.history, target)
        rows.append({
            "strategy": label,
            "trials": len(exp.trials),
            "trial_epochs": len(exp.history),
            "epochs_vs_grid": len(exp.history) / grid_epochs,
            "wall_s": wall,
            "best_val_acc": exp.trials["best_val_acc"].max(),
            "epochs_to_target": reach,
            "to_target_vs_grid": None if reach is None else reach / grid_epochs,
        })
    table = pd.DataFrame(rows)
    print(f"\ntarget: val_acc >= {target:.4f} (grid's best {grid_best:.4f} - 0.5 pp); storage: {storage}\n")
    print(table.to_markdown(index=False, floatfmt=".3f"))
    asha = table[table["strategy"].str.contains("asha")]
    for _, row in asha.iterrows():
        ratio = row["to_target_vs_grid"]
        reached = not pd.isna(ratio)
        verdict = "met" if reached and ratio <= 1 / 3 else "missed"
        shown = f"{ratio:.3f} of grid's trial-epochs" if reached else "never reached"
        print(f"{row['strategy']}: target reached with {shown}; goal <= 0.333: {verdict}")


if __name__ == "__main__":
    main()
