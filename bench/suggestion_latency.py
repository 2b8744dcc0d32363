"""Each searcher's time per suggestion once an experiment holds many trials, without Ray running.

    python bench/suggestion_latency.py [--trials 1000 10000] [--asks 5] [--searches optuna gp cmaes nsga2]

A searcher asked for its next config after N trials: the model-based searchers refit on every trial so
far, so their time per suggestion grows with N, and Ray's driver waits for it (one suggestion at a time,
between trials). For each Optuna searcher the N trials come as a warm start (a study that already holds
them, as `--warm-start` builds it: tuner.search.warm_start.optuna_storage), then each of `--asks`
suggestions is timed and told its result. The space is 6 floats, the score Hartmann-6 (bench/hartmann.py)
at full fidelity. Target (issue 39): at most 50 ms per suggestion, or `auto` switches away from the
searcher before it gets slower. grid and random draw without a model (microseconds); hyperopt and bohb
take no warm start, so they are not measured here.
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from ray import tune

sys.path.insert(0, str(Path(__file__).parent))  # bench/ holds scripts, not a package
from hartmann import hartmann6

from tuner.search import search as searcher
from tuner.search.base import SearchRequest
from tuner.search.warm_start import Evaluated, WarmStart

NAMES = [f"x{i}" for i in range(6)]
SPACE = {name: tune.uniform(0.0, 1.0) for name in NAMES}


def per_suggestion_ms(search: str, trials: int, asks: int, seed: int = 0) -> float:
    rng = np.random.default_rng(seed)
    earlier = []
    for point in rng.uniform(0.0, 1.0, size=(trials, len(NAMES))):
        earlier.append(Evaluated(dict(zip(NAMES, map(float, point), strict=True)), (float(hartmann6(point)),)))
    warm = WarmStart("bench", tuple(earlier), notice="")
    algorithm = searcher(search).build(
        SearchRequest(SPACE, trials + asks, seed, warm=warm, objectives=[("value", "min")])
    )
    algorithm.set_search_properties("value", "min", SPACE)
    times = []
    for index in range(asks):
        started = time.perf_counter()
        config = algorithm.suggest(f"t{index}")
        times.append(time.perf_counter() - started)
        value = float(hartmann6(np.array([config[name] for name in NAMES])))
        algorithm.on_trial_complete(f"t{index}", {"value": value})
    return 1000 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--asks", type=int, default=5)
    parser.add_argument("--searches", nargs="+", default=["optuna", "gp", "cmaes", "nsga2"])
    args = parser.parse_args()
    print("| searcher | " + " | ".join(f"ms per suggestion after {n:,} trials" for n in args.trials) + " |")
    print("| --- |" + " ---: |" * len(args.trials))
    for search in args.searches:
        cells = [f"{per_suggestion_ms(search, n, args.asks):.0f}" for n in args.trials]
        print(f"| {search} | " + " | ".join(cells) + " |", flush=True)


if __name__ == "__main__":
    main()
