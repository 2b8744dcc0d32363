"""Searchers and schedulers on the multi-fidelity Hartmann-6 function (bench/hartmann.py) over many seeds.

    python bench/synthetic_search.py [--seeds 20] [--trials 64] [--epochs 9] [--plot /tmp/synthetic_search.png]

Every strategy searches x in [0, 1]^6 with `--trials` configs of `--epochs` epochs each, through Ray Tune
with tuner's own searcher and scheduler defaults (tuner.search.search(name).build,
tuner/search/schedulers/); epoch e reports H(x, e / epochs). Grid runs a 2-level grid (64
configs) and a 3-level grid (729) once, as deterministic baselines. Prints per strategy the median and
the 25-75 % range over seeds of: simple regret (the best full-fidelity value minus the minimum -3.32237),
trial-epochs used, and wall time; and the trial-epochs grid needed for the regret each strategy's median
reached. Plots best-so-far regret against cumulative trial-epochs (median and 25-75 % band) to --plot.

Beside them, the one-epoch-top-K baseline (Egele et al. 2023, arXiv 2307.15422): every config one
epoch, the K best of those to the end, computed without Ray (its cost is its trial-epochs).
"""

import argparse
import atexit
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import ray
from ray import tune

sys.path.insert(0, str(Path(__file__).parent))  # bench/ holds scripts, not a package
import asha_shapes
from hartmann import MINIMUM, hartmann6

from tuner.search import schedulers
from tuner.search import search as searcher
from tuner.search.base import SearchRequest
from tuner.search.schedulers.base import SchedulerRequest
from tuner.settings import Tuning

STRATEGIES = [
    ("random", "fifo"),
    ("random", "asha"),
    ("optuna", "fifo"),
    ("optuna", "asha"),
    ("random", "hyperband"),
    ("bohb", "hyperband"),
]
DIMENSIONS = [f"x{i}" for i in range(1, 7)]
CONCURRENT = 2  # trials at once: one CPU each on this 2-core machine


def objective(config: dict[str, Any]) -> None:
    x = np.array([config[name] for name in DIMENSIONS])
    epochs = config["epochs"]
    for epoch in range(1, epochs + 1):
        tune.report({"value": hartmann6(x, epoch / epochs)})


def run(
    search: str,
    scheduler: str,
    param_space: dict[str, Any],
    trials: int,
    epochs: int,
    seed: int,
    storage: str,
    shape: tuple[int, int] | None = None,
) -> tuple[pd.DataFrame, float]:
    """One experiment; its result rows in the order they arrived, and its wall time. `shape`: ASHA's
    (grace period, reduction factor) in place of tuner's default (bench/asha_shapes.py DEFAULT)."""
    # Limited as tuner.run limits them by default: as many as fit. Ray's synchronous HyperBand, which
    # tuner's `hyperband` was until 2026-12-05, stopped nothing under this limit (the paused trials held
    # the slots: 576 trial-epochs); tuner's `hyperband` is now asynchronous (ASHA with several brackets).
    algorithm = searcher(search).build(SearchRequest(param_space, trials, seed, max_concurrent=CONCURRENT))
    space = searcher(search).tuner_space(param_space)
    tuning = Tuning(scheduler=scheduler, **asha_shapes.settings(shape))
    trial_scheduler = searcher(search).own_scheduler(epochs) or schedulers.scheduler(scheduler, tuning).build(
        SchedulerRequest(param_space, epochs)
    )
    started = time.perf_counter()
    results = tune.Tuner(
        tune.with_resources(objective, {"CPU": 1}),
        param_space={**space, "epochs": epochs},
        tune_config=tune.TuneConfig(
            metric="value",
            mode="min",
            num_samples=searcher(search).trials(param_space, trials),
            search_alg=algorithm,
            reuse_actors=True,
            scheduler=trial_scheduler,
        ),
        run_config=tune.RunConfig(
            storage_path=storage, name=f"{search}-{scheduler}-{seed}-{time.time_ns()}", verbose=0
        ),
    ).fit()
    wall = time.perf_counter() - started
    rows = pd.concat(
        [
            result.metrics_dataframe.assign(trial=i)
            for i, result in enumerate(results)
            if result.metrics_dataframe is not None
        ],
        ignore_index=True,
    )
    return rows.sort_values("timestamp", kind="stable"), wall


def one_epoch_top_k(trials: int, epochs: int, seed: int, keep: int) -> pd.DataFrame:
    """The baseline of Egele et al. 2023 (arXiv 2307.15422), without Ray: every one of `trials` random
    configs trains one epoch, then the `keep` best at that epoch train on to the end. Its rows in the
    order they would arrive: all first epochs, then the kept trials' remaining epochs, one trial after
    another."""
    rng = np.random.default_rng(seed)
    configs = rng.uniform(0.0, 1.0, size=(trials, len(DIMENSIONS)))
    first = [hartmann6(x, 1 / epochs) for x in configs]
    rows = [{"trial": i, "training_iteration": 1, "value": value} for i, value in enumerate(first)]
    for i in np.argsort(first)[:keep]:
        for epoch in range(2, epochs + 1):
            rows.append({"trial": int(i), "training_iteration": epoch, "value": hartmann6(configs[i], epoch / epochs)})
    return pd.DataFrame(rows)


def best_so_far(rows: pd.DataFrame, epochs: int) -> np.ndarray:
    """Simple regret after each trial-epoch: the best value any trial reported at full fidelity so far."""
    full = np.where(rows["training_iteration"] == epochs, rows["value"], np.inf)
    return np.minimum.accumulate(full) - MINIMUM


def grid_space(levels: int) -> dict[str, Any]:
    """`levels` evenly spaced values per coordinate, at the centres of equal cells."""
    values = [(i + 0.5) / levels for i in range(levels)]
    return {name: tune.grid_search(values) for name in DIMENSIONS}


def band(curves: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Median and 25-75 % of regret curves of different lengths, each held at its last value."""
    length = max(len(curve) for curve in curves)
    padded = np.array([np.concatenate([curve, np.full(length - len(curve), curve[-1])]) for curve in curves])
    with np.errstate(invalid="ignore"):  # inf (no full-fidelity result yet) in a percentile is nan, not drawn
        return tuple(np.percentile(padded, q, axis=0) for q in (50, 25, 75))  # type: ignore[return-value]


def epochs_to(curve: np.ndarray, regret: float) -> float:
    hits = np.nonzero(curve <= regret)[0]
    return float(hits[0] + 1) if len(hits) else float("inf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--trials", type=int, default=64, help="configs per strategy and seed")
    parser.add_argument("--epochs", type=int, default=9, help="fidelity steps per trial (ASHA's rungs: 1, 3, 9)")
    parser.add_argument("--grid-levels", type=int, nargs="+", default=[2, 3])
    parser.add_argument("--plot", default=None, help="write the regret curves to this PNG")
    parser.add_argument(
        "--top-k", type=int, nargs="*", default=[3], help="one-epoch-top-K baselines (random configs, no Ray): K"
    )
    asha_shapes.add_arguments(parser)
    parser.add_argument(
        "--only",
        nargs="*",
        default=None,
        metavar="SEARCH+SCHEDULER",
        help="run only these of the default strategies (e.g. optuna+asha); grids always run",
    )
    args = parser.parse_args()
    os.environ["RAY_AIR_NEW_OUTPUT"] = "0"  # Ray's older console engine prints nothing at verbose=0
    ray.init(num_cpus=CONCURRENT, include_dashboard=False, logging_level="ERROR")
    # Removed at exit, raising or not: mkdtemp's folder never was (60 MB of experiments a run in /tmp).
    scratch = tempfile.TemporaryDirectory(prefix="tuner-synthetic-")
    atexit.register(scratch.cleanup)
    storage = scratch.name
    curves: dict[str, list[np.ndarray]] = {}
    rows = []
    for levels in args.grid_levels:
        label = f"grid {levels}^6 + fifo"
        history, wall = run("grid", "fifo", grid_space(levels), 1, args.epochs, 0, storage)
        curves[label] = [best_so_far(history, args.epochs)]
        rows.append(
            {"strategy": label, "seed": 0, "regret": curves[label][0][-1], "trial_epochs": len(history), "wall_s": wall}
        )
        print(f"{label}: regret {curves[label][0][-1]:.4f}, {len(history)} trial-epochs, {wall:.0f} s", flush=True)
    ranges = {name: tune.uniform(0.0, 1.0) for name in DIMENSIONS}
    default_shape = asha_shapes.DEFAULT
    print(
        f"tuner's ASHA at {args.epochs} epochs: grace period {default_shape[0]}, reduction factor {default_shape[1]}",
        flush=True,
    )
    variants: list[tuple[str, str, str, tuple[int, int] | None]] = [
        (f"{search} + {scheduler}", search, scheduler, None)
        for search, scheduler in STRATEGIES
        if args.only is None or f"{search}+{scheduler}" in args.only
    ]
    variants += [(label, search, "asha", shape) for label, search, shape in asha_shapes.variants(args)]
    for label, search, scheduler, shape in variants:
        curves[label] = []
        for seed in range(args.seeds):
            history, wall = run(search, scheduler, ranges, args.trials, args.epochs, seed, storage, shape)
            curve = best_so_far(history, args.epochs)
            curves[label].append(curve)
            rows.append(
                {"strategy": label, "seed": seed, "regret": curve[-1], "trial_epochs": len(history), "wall_s": wall}
            )
        print(f"{label}: median regret {statistics.median(c[-1] for c in curves[label]):.4f}", flush=True)
    ray.shutdown()
    for keep in args.top_k:
        label = f"random, 1 epoch each, top {keep} to the end"
        curves[label] = []
        for seed in range(args.seeds):
            history = one_epoch_top_k(args.trials, args.epochs, seed, keep)
            curves[label].append(best_so_far(history, args.epochs))
            rows.append(
                {"strategy": label, "seed": seed, "regret": curves[label][-1][-1], "trial_epochs": len(history)}
                | {"wall_s": 0.0}
            )
        print(f"{label}: median regret {statistics.median(c[-1] for c in curves[label]):.4f}", flush=True)
    table = pd.DataFrame(rows)
    grids = [curves[f"grid {levels}^6 + fifo"][0] for levels in args.grid_levels]
    summary = []
    for label, group in table.groupby("strategy", sort=False):
        regret = group["regret"]
        median_regret = float(regret.median())
        # The cheapest grid run that reached this regret, in trial-epochs (inf: none of them did).
        grid_needs = min((epochs_to(curve, median_regret) for curve in grids), default=float("inf"))
        summary.append(
            {
                "strategy": label,
                "seeds": len(group),
                "regret median": median_regret,
                "regret 25-75 %": f"{regret.quantile(0.25):.4f}-{regret.quantile(0.75):.4f}",
                "trial-epochs median": int(group["trial_epochs"].median()),
                "grid's trial-epochs for that regret": grid_needs,
                "wall s median": round(float(group["wall_s"].median()), 1),
            }
        )
    print(
        f"\n{args.trials} configs x {args.epochs} epochs per strategy and seed; regret = best full-fidelity value "
        f"- ({MINIMUM})\n"
    )
    print(pd.DataFrame(summary).to_markdown(index=False, floatfmt=".4f"))
    if args.plot:
        plot(curves, args.plot)
        print(f"\nplot: {args.plot}")


def plot(curves: dict[str, list[np.ndarray]], path: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 5))
    for label, runs in curves.items():
        median, low, high = band(runs)
        steps = np.arange(1, len(median) + 1)
        finite = np.isfinite(median)
        (line,) = axes.plot(
            steps[finite], median[finite], label=f"{label} ({len(runs)} seed{'s' if len(runs) > 1 else ''})"
        )
        if len(runs) > 1:
            both = np.isfinite(low) & np.isfinite(high)
            axes.fill_between(steps[both], low[both], high[both], alpha=0.15, color=line.get_color())
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("cumulative trial-epochs")
    axes.set_ylabel("simple regret (best full-fidelity value - minimum)")
    axes.set_title("Multi-fidelity Hartmann-6: median and 25-75 % over seeds")
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


if __name__ == "__main__":
    main()
