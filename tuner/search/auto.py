"""`--search auto`: one of the searchers, picked from the space and num_samples (`choose`), named with its
reason in one line before the first trial. It never picks a searcher whose library is an optional extra.

Which model-based searcher starts from the rules of Optuna's AutoSampler (optunahub; not used itself, since
optunahub loads it from GitHub at run time): a Gaussian process for small budgets, CMA-ES for large budgets
of numeric ranges, TPE otherwise and for conditions or several objectives. bench/tabular.py keeps or moves
the thresholds."""

from dataclasses import dataclass
from typing import Any

from tuner.search import schedulers
from tuner.search.schedulers.asha import ASHA_MIN_EPOCHS
from tuner.search.space_counts import PLAIN, discrete_axes, grid_axes, numeric_ranges, space_size
from tuner.spec.conditions import Conditions

# --search auto runs every config of a finite space of at most this many (or num_samples, if more),
# and otherwise at least this many configs under a model-based searcher with ASHA. 16 itself is a starting point: no
# benchmark yet varies the space's size around it (docs/benchmarks.md, "Search efficiency").
AUTO_WHOLE_SPACE_MAX = 16
# A Gaussian process (`gp`) for budgets up to GP_MAX_TRIALS (bench/tabular.py), beyond which its
# suggestions grow slow; over numeric ranges, CMA-ES (`cmaes`) from CMAES_MIN_TRIALS, before TPE's own
# pass 50 ms each (both: bench/suggestion_latency.py).
GP_MAX_TRIALS = 50
CMAES_MIN_TRIALS = 2000


@dataclass(frozen=True)
class AutoChoice:
    search: str
    scheduler: str
    num_samples: int
    reason: str  # the one line printed before the first trial


def choose(
    param_space: dict[str, Any],
    num_samples: int,
    scheduler: str,
    epochs: int,
    objectives: int = 1,
    conditions: Conditions = PLAIN,
    constrained: bool = False,
) -> AutoChoice:
    """What --search auto runs. A finite space small enough to run whole: every config once, in random
    order (random draws without replacement; unlike grid order, a time budget that ends the search early
    leaves an even sample), under ASHA when the epochs leave it a rung to stop at. Otherwise a model-based
    searcher (`_model`: TPE, a GP for small budgets, CMA-ES for large ones of numeric ranges) with ASHA stopping the
    weak trials early. The space's scheduler, if it names one other than fifo, stays;
    under pbt the search is random, since PBT's mutations would mislead TPE's model.

    Evidence: bench/README.md, "--search auto".

    With several objectives the same: random over a small finite space, else optuna's multi-objective
    TPE (bench/multi_objective.py measures it against random), under ASHA by Pareto front."""
    axes = discrete_axes(param_space)
    count = space_size(param_space, conditions)
    whole = max(AUTO_WHOLE_SPACE_MAX, num_samples)
    asked = schedulers.scheduler(scheduler)
    stopping = "asha" if not asked.stops_early and epochs >= ASHA_MIN_EPOCHS else scheduler
    if count is not None and count <= whole:
        under = f", {stopping} stopping the weak ones early" if schedulers.scheduler(stopping).stops_early else ""
        return AutoChoice(
            "random",
            stopping,
            count,
            f"search auto: every one of the space's {count} configs once, in random order{under} "
            f"(a finite space of <= {whole} configs)",
        )
    if axes is None or count is None:
        why = "the space samples from a range" if axes is None else "the space is too large to count"
    else:  # grid crosses grid axes only: a tune.choice it samples, so only an all-grid space runs whole
        whole_by_grid = "; --search grid runs every one" if len(grid_axes(param_space)) == len(axes) else ""
        why = f"the space has {count} configs, more than {whole}{whole_by_grid}"
    if asked.model_search_refused:
        return AutoChoice("random", scheduler, whole, f"search auto: random, {whole} configs under {scheduler} ({why})")
    chosen = scheduler if asked.stops_early else "asha"
    search, model, budget_why = _model(param_space, whole, objectives, conditions, constrained)
    return AutoChoice(
        search, chosen, whole, f"search auto: {search} ({model}) with {chosen}, {whole} configs ({why}{budget_why})"
    )


def _model(
    param_space: dict[str, Any], trials: int, objectives: int, conditions: Conditions, constrained: bool
) -> tuple[str, str, str]:
    """The model-based searcher for this space and budget: its name, its model in words, and the reason
    the budget gives (empty where the space alone decides). A GP takes choices too (bench/tabular.py:
    it led on NAS-Bench-201's all-choice space as well); CMA-ES models numeric ranges only and reads no
    constraints; conditions and several objectives take TPE."""
    if objectives > 1 or conditions:
        return "optuna", "multi-objective TPE" if objectives > 1 else "TPE", ""
    if trials <= GP_MAX_TRIALS:
        return "gp", "Gaussian process", f"; <= {GP_MAX_TRIALS} trials"
    ranges = numeric_ranges(param_space)
    if ranges and trials >= CMAES_MIN_TRIALS and not constrained:
        return "cmaes", "CMA-ES", f"; {len(ranges)} numeric ranges and >= {CMAES_MIN_TRIALS} trials"
    return "optuna", "TPE", ""
