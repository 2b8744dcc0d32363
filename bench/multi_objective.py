"""Optuna's multi-objective search against random search on ZDT1 (bench/zdt.py), a problem with a known
Pareto front, at the same trial budget over many seeds.

    python bench/multi_objective.py [--seeds 20] [--trials 64] [--concurrent 2] [--plot bench/multi_objective.png]

optuna is tuner's own searcher for `--search optuna` with two objectives (tuner.search.search("optuna").
build: OptunaObjectives, multi-objective TPE), and nsga2 the same over Optuna's NSGA-II, driven through
Ray Tune's Searcher API (suggest / on_trial_complete) without starting Ray: `--concurrent` configs are
proposed before any of them reports, as tuner runs that many trials at once. Random draws x uniformly
from [0, 1]^n, which is what `--search random` does over uniform domains. ZDT1 has no epochs,
so no scheduler is involved.

Prints per searcher the median and the 25-75 % range over seeds of: the hypervolume of the found
front as a share of the true front's (reference point (1.1, 11), beyond every point of [0, 1]^6, whose
f2 is at most 10, so every trial counts), the inverted generational distance
(IGD: mean distance from the true front to the nearest found point) and the mean distance of the found
front's points to the true front (GD). Plots hypervolume against trials (median, 25-75 % band).

With `--epochs E` (default 9), also early stopping: random configs on a multi-fidelity ZDT1 (f1 known
from the first epoch, as a model's size or latency is; f2 improving with training, epoch e reporting
f2 * (2 - e / E), which keeps every trial's rank across epochs) under FIFO, Ray's ASHA on f2 alone and
tuner's Pareto ASHA, simulated without Ray through the schedulers' on_trial_result: the hypervolume of
the trials' last reported values, the trial-epochs spent, and how many trials of the front FIFO finds
each scheduler stopped early.
"""

import argparse
import logging
import statistics
import sys
from pathlib import Path

import numpy as np
from ray import tune

sys.path.insert(0, str(Path(__file__).parent))  # bench/ holds scripts, not a package
from zdt import DIMENSIONS, distance_to_front, inverted_generational_distance, true_hypervolume, zdt1

from tuner.search import pareto
from tuner.search import search as searcher
from tuner.search.base import SearchRequest

OBJECTIVES = (("f1", "min"), ("f2", "min"))
REFERENCE = (1.1, 11.0)
NAMES = [f"x{i}" for i in range(1, DIMENSIONS + 1)]


def _oriented(values: np.ndarray) -> np.ndarray:
    return pareto.oriented(values, ["min", "min"])


def hypervolume(values: np.ndarray) -> float:
    """Of minimized (f1, f2) values, with the reference point REFERENCE, as a share of the true front's."""
    area = pareto.hypervolume_2d(_oriented(values), [-REFERENCE[0], -REFERENCE[1]])
    return area / true_hypervolume(REFERENCE)


def found_front(values: np.ndarray) -> np.ndarray:
    return values[pareto.front_ranks(_oriented(values)) == 1]


def run_searcher(search: str, trials: int, seed: int, concurrent: int) -> np.ndarray:
    space = {name: tune.uniform(0.0, 1.0) for name in NAMES}
    algorithm = searcher(search).build(SearchRequest(space, trials, seed, objectives=OBJECTIVES))
    algorithm.set_search_properties(OBJECTIVES[0][0], OBJECTIVES[0][1], space)
    values: list[tuple[float, float]] = []
    while len(values) < trials:
        batch = [f"{seed}_{len(values) + i}" for i in range(min(concurrent, trials - len(values)))]
        configs = {trial_id: algorithm.suggest(trial_id) for trial_id in batch}
        for trial_id, config in configs.items():
            f1, f2 = zdt1(np.array([config[name] for name in NAMES]))
            algorithm.on_trial_complete(trial_id, {"f1": f1, "f2": f2})
            values.append((f1, f2))
    return np.array(values)


def run_random(trials: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array([zdt1(x) for x in rng.uniform(0.0, 1.0, size=(trials, DIMENSIONS))])


def stopping(scheduler_name: str, trials: int, epochs: int, seed: int, concurrent: int) -> tuple[np.ndarray, int]:
    """Random configs on multi-fidelity ZDT1 under a scheduler, simulated without Ray: `concurrent` trials
    advance one epoch per step and report to the scheduler, which may stop them; a stopped or finished
    trial's slot takes the next config. f1 is known from the first epoch (as a model's latency or size)
    and f2 improves with training: epoch e of E reports f2 * (2 - e / E). Returns each trial's last
    reported (f1, f2) and the trial-epochs spent."""
    from types import SimpleNamespace

    from ray.tune.schedulers import ASHAScheduler, FIFOScheduler, TrialScheduler

    from tuner.search.pareto_asha import ParetoASHA
    from tuner.settings import Tuning

    grace, factor = Tuning().asha_grace_period, Tuning().asha_reduction_factor
    scheduler = {
        "fifo": lambda: FIFOScheduler(),
        "asha on f2": lambda: ASHAScheduler(
            metric="f2", mode="min", max_t=epochs, grace_period=grace, reduction_factor=factor
        ),
        "pareto asha": lambda: ParetoASHA(OBJECTIVES, max_t=epochs, grace_period=grace, reduction_factor=factor),
    }[scheduler_name]()
    configs = np.random.default_rng(seed).uniform(0.0, 1.0, size=(trials, DIMENSIONS))
    last = np.full((trials, 2), np.nan)
    running: dict[int, int] = {}  # trial index -> epochs run
    started, spent = 0, 0
    while started < trials or running:
        while len(running) < concurrent and started < trials:
            scheduler.on_trial_add(None, SimpleNamespace(trial_id=str(started)))
            running[started] = 0
            started += 1
        for index in list(running):
            running[index] += 1
            spent += 1
            f1, f2 = zdt1(configs[index])
            last[index] = f1, f2 * (2 - running[index] / epochs)
            result = {"training_iteration": running[index], "f1": last[index][0], "f2": last[index][1]}
            action = scheduler.on_trial_result(None, SimpleNamespace(trial_id=str(index)), result)
            if action == TrialScheduler.STOP or running[index] >= epochs:
                del running[index]
    return last, spent


def curve(values: np.ndarray) -> np.ndarray:
    return np.array([hypervolume(values[: i + 1]) for i in range(len(values))])


def quartiles(numbers: list[float], digits: int = 4) -> str:
    q1, median, q3 = np.percentile(numbers, [25, 50, 75])
    return f"{median:.{digits}f} [{q1:.{digits}f}, {q3:.{digits}f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--trials", type=int, default=64)
    parser.add_argument("--concurrent", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=9, help="early-stopping rows: epochs per trial (0: none)")
    parser.add_argument("--plot", default=str(Path(__file__).with_name("multi_objective.png")))
    args = parser.parse_args()
    logging.getLogger("optuna").setLevel(logging.WARNING)

    runs = {
        "optuna (MOTPE)": [run_searcher("optuna", args.trials, seed, args.concurrent) for seed in range(args.seeds)],
        "nsga2": [run_searcher("nsga2", args.trials, seed, args.concurrent) for seed in range(args.seeds)],
        "random": [run_random(args.trials, seed) for seed in range(args.seeds)],
    }
    print(
        f"ZDT1, n = {DIMENSIONS}, {args.trials} trials, {args.seeds} seeds, {args.concurrent} at once; "
        f"median [25 %, 75 %]; hypervolume as a share of the true front's ({true_hypervolume(REFERENCE):.4f})\n"
    )
    print("| searcher | hypervolume share | IGD | GD (found front to true front) | front size |")
    print("|---|---|---|---|---|")
    finals: dict[str, list[float]] = {}
    for name, values in runs.items():
        finals[name] = [hypervolume(v) for v in values]
        igd = [inverted_generational_distance(found_front(v)) for v in values]
        gd = [float(distance_to_front(found_front(v)).mean()) for v in values]
        sizes = [len(found_front(v)) for v in values]
        print(
            f"| {name} | {quartiles(finals[name])} | {quartiles(igd)} | {quartiles(gd)} | "
            f"{statistics.median(sizes):g} |"
        )
    wins = sum(a > b for a, b in zip(finals["optuna (MOTPE)"], finals["random"], strict=True))
    print(f"\noptuna's hypervolume above random's (same seed): {wins} of {args.seeds} seeds")
    if args.epochs:
        print(
            f"\nEarly stopping: {args.trials} random configs of multi-fidelity ZDT1, {args.epochs} epochs each, "
            f"{args.concurrent} at once, simulated; median [25 %, 75 %] over {args.seeds} seeds\n"
        )
        print("| scheduler | hypervolume share | trial-epochs | front trials stopped early |")
        print("|---|---|---|---|")
        for name in ("fifo", "asha on f2", "pareto asha"):
            runs_of = [stopping(name, args.trials, args.epochs, seed, args.concurrent) for seed in range(args.seeds)]
            fifo = [stopping("fifo", args.trials, args.epochs, seed, args.concurrent)[0] for seed in range(args.seeds)]
            lost = [  # trials on the full-training front that this scheduler stopped before their last epoch
                int(np.sum((pareto.front_ranks(_oriented(full)) == 1) & ~np.isclose(last, full).all(axis=1)))
                for (last, _), full in zip(runs_of, fifo, strict=True)
            ]
            print(
                f"| {name} | {quartiles([hypervolume(last) for last, _ in runs_of])} | "
                f"{quartiles([float(spent) for _, spent in runs_of], 0)} | {quartiles([float(n) for n in lost], 1)} |"
            )
    if args.plot:
        plot({name: [curve(v) for v in values] for name, values in runs.items()}, args.plot, args.trials)
        print(f"plot: {args.plot}")


def plot(curves: dict[str, list[np.ndarray]], path: str, trials: int) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4), layout="constrained")
    x = np.arange(1, trials + 1)
    for name, runs in curves.items():
        stacked = np.stack(runs)
        q1, median, q3 = np.percentile(stacked, [25, 50, 75], axis=0)
        ax.plot(x, median, label=name)
        ax.fill_between(x, q1, q3, alpha=0.25)
    ax.axhline(1.0, color="k", linestyle=":", label="true front")
    ax.set_xlabel("trials")
    ax.set_ylabel("hypervolume / true front's (ref. 1.1, 11)")
    ax.set_title(f"ZDT1 (n = {DIMENSIONS}): median and 25-75 % over {len(next(iter(curves.values())))} seeds")
    ax.legend(loc="lower right")
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
