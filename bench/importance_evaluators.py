"""Which of optuna's importance evaluators tuner's report should use: fANOVA and PED-ANOVA on synthetic
trials tables where one hyperparameter decides the score and the others are noise, at the trial counts
tuner's experiments have, counting how often each ranks the deciding hyperparameter first.

The cases (best_val_acc, plus noise of 0.005):
- `lr`: a peak at lr=1e-2 over lr loguniform in [1e-5, 1e-1];
- `optimizer`: adam scores 0.9, sgd 0.5 (a binary choice that splits the trials in half);
- `momentum`: a conditional hyperparameter (active only with sgd, blank otherwise) that decides the score
  among the sgd trials, the adam trials scoring in the middle; only PED-ANOVA can assess it.
Each table also has `noise` (uniform, ignored) and a constant `batch_size`.

    python bench/importance_evaluators.py --seeds 10 --trials 8 12 20 40 80

`--intervals` asks instead how many trees each bootstrap resample's fANOVA forest needs: the interval's
width (high - low) of the deciding and of the noise hyperparameter, and the seconds per `importance()`,
for each `--resample-trees` count, on the `lr` case.

    python bench/importance_evaluators.py --intervals --seeds 5 --trials 20 60 300 1000
"""

import argparse
import time
import warnings

import numpy as np
import pandas as pd

from tuner.results.importance import EVALUATORS, RESAMPLE_TREES, TREES, importance, importances
from tuner.settings import Objective
from tuner.storage.meta import ExperimentMeta

CASES = ["lr", "optimizer", "momentum"]


def table(case: str, n: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    lr = 10 ** rng.uniform(-5, -1, n)
    optimizer = rng.choice(["adam", "sgd"], n)
    momentum = np.where(optimizer == "sgd", rng.uniform(0.5, 0.99, n), np.nan)
    if case == "lr":
        score = 0.9 - 0.1 * (np.log10(lr) + 2) ** 2
    elif case == "optimizer":
        score = np.where(optimizer == "adam", 0.9, 0.5)
    else:
        score = np.where(optimizer == "sgd", 0.5 + 0.4 * (momentum - 0.5) / 0.49, 0.7)
    return pd.DataFrame(
        {
            "trial_id": [f"t{i}" for i in range(n)],
            "status": "finished",
            "lr": lr,
            "optimizer": optimizer,
            "momentum": momentum,
            "noise": rng.uniform(0, 1, n),
            "batch_size": 64,
            "best_val_acc": score + rng.normal(0, 0.005, n),
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--trials", type=int, nargs="+", default=[8, 12, 20, 40, 80])
    parser.add_argument("--intervals", action="store_true", help="compare the resamples' forest sizes instead")
    parser.add_argument("--resample-trees", type=int, nargs="+", default=[TREES, RESAMPLE_TREES])
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    meta = ExperimentMeta(
        space="synthetic",
        params=["lr", "optimizer", "momentum", "noise", "batch_size"],
        objective=Objective("val_acc", "max"),
    )
    if args.intervals:
        intervals(meta, args.seeds, args.trials, args.resample_trees)
        return
    rows = []
    for evaluator in EVALUATORS:
        for case in CASES:
            for n in args.trials:
                first, noise, seconds = 0, [], 0.0
                for seed in range(args.seeds):
                    trials = table(case, n, seed)
                    start = time.perf_counter()
                    frame = importance(trials, meta, evaluator).set_index("param")["importance"]
                    seconds += time.perf_counter() - start
                    first += frame.index[0] == case
                    noise.append(frame["noise"])
                rows.append(
                    {
                        "evaluator": EVALUATORS[evaluator],
                        "decides": case,
                        "trials": n,
                        "ranked first": f"{first}/{args.seeds}",
                        "noise share (median)": round(float(np.median(noise)), 2),
                        "s per importance()": round(seconds / args.seeds, 2),
                    }
                )
    print(pd.DataFrame(rows).to_string(index=False))


def intervals(meta: ExperimentMeta, seeds: int, trial_counts: list[int], tree_counts: list[int]) -> None:
    rows = []
    for n in trial_counts:
        for trees in tree_counts:
            widths: dict[str, list[float]] = {"lr": [], "noise": []}
            seconds = 0.0
            for seed in range(seeds):
                trials = table("lr", n, seed)
                start = time.perf_counter()
                objective = [(meta.objective.metric, meta.objective.mode)]
                frame = importances(trials, list(meta.params), objective, "fanova", trees)["val_acc"]
                seconds += time.perf_counter() - start
                frame = frame.set_index("param")
                for param, found in widths.items():
                    found.append(float(frame.loc[param, "high"] - frame.loc[param, "low"]))
            rows.append(
                {
                    "trials": n,
                    "resample trees": trees,
                    "lr interval (median width)": round(float(np.median(widths["lr"])), 3),
                    "noise interval (median width)": round(float(np.median(widths["noise"])), 3),
                    "s per importance()": round(seconds / seeds, 2),
                }
            )
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
