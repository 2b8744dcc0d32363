"""`--search`: which Ray Tune search algorithm proposes configs, with seeded, sensible defaults.

grid      Ray's BasicVariantGenerator: grid axes crossed, `num_samples` random draws of the rest per point.
random    the same generator with every grid axis turned into `tune.choice`: `num_samples` configs in all.
          Over a space of only grid axes and choices, distinct configs (drawn without replacement, handed
          to the generator as its points_to_evaluate): 24 independent draws from 24 configs would cover
          only ~64 % of them (1 - (1 - 1/24)^24), repeating the rest; at most every config once.
optuna    Optuna's TPE sampler (OptunaSearch); with several objectives its multi-objective TPE, and with
          constraints each trial's violations set on it, which TPE reads (tuner/search/optuna_objectives.py).
hyperopt  HyperOpt's TPE (HyperOptSearch); HyperOpt is an optional extra, `pip install 'tuner[hyperopt]'`.
bohb      BOHB (TuneBOHB), always paired with its own HyperBandForBOHB scheduler; hpbandster and
          ConfigSpace are an optional extra, `pip install 'tuner[bohb]'`.
auto      one of the above, picked from the space and num_samples (`choose`), named with its reason
          in one line before the first trial.

The model-based searchers cannot take grid axes (Ray refuses to convert them), so for them a grid
axis becomes a choice of the same values, as for `random`, with a notice; only an axis whose values a
searcher cannot sample (lists, dicts) is an error before any trial starts.

A space with `conditions` gets each of these in a conditional form (tuner/search/conditional.py); the
counts here (`trials`, `choose`) count its active configs.
"""

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ray import tune
from ray.tune.search.sample import Categorical, Domain

from tuner import extras
from tuner.errors import TunerError
from tuner.search import conditional, schedulers, warm_start
from tuner.settings.experiment import SEARCHES
from tuner.settings.objectives import Constraint
from tuner.spec.conditions import Conditions
from tuner.spec.param_space import is_constant, is_grid

MODEL_BASED = ("optuna", "hyperopt", "bohb")
PLAIN = Conditions()  # a space without conditions
# --search auto runs every config of a finite space of at most this many (or num_samples, if more),
# and otherwise at least this many configs under TPE with ASHA. 16 itself is a starting point: no
# benchmark yet varies the space's size around it (README, "Benchmark: search efficiency").
AUTO_WHOLE_SPACE_MAX = 16
# The searchers whose libraries are optional extras, each extra named as its searcher (tuner/extras.py).
# `auto` never picks one of them.
EXTRA_SEARCHES = ("hyperopt", "bohb")


def grid_axes(param_space: dict[str, Any]) -> list[str]:
    return sorted(key for key, value in param_space.items() if is_grid(value))


def grid_points(param_space: dict[str, Any]) -> int:
    """The points of the grid the axes span, nested groups' axes included (1 without axes)."""
    points = 1
    for value in param_space.values():
        if is_grid(value):
            points *= len(value["grid_search"])
        elif isinstance(value, dict):
            points *= grid_points(value)
    return points


def grid_as_choice(param_space: dict[str, Any]) -> dict[str, Any]:
    """The same values, sampled instead of enumerated."""
    axes = grid_axes(param_space)
    return {key: tune.choice(value["grid_search"]) if key in axes else value for key, value in param_space.items()}


def check_installed(search: str) -> None:
    """One line naming the extra when the searcher's library is missing, before Ray starts."""
    if search in EXTRA_SEARCHES:
        extras.require(search, f"--search {search}")


def check(search: str, param_space: dict[str, Any], objectives: int = 1, conditions: Conditions = PLAIN) -> None:
    if search not in SEARCHES:
        raise TunerError(f"unknown search {search!r}; choose one of {', '.join(SEARCHES)}")
    if objectives > 1 and search in EXTRA_SEARCHES:
        raise TunerError(
            f"{search} optimizes one metric, and this space has {objectives} objectives; use --search optuna "
            "(multi-objective TPE) or random"
        )
    check_installed(search)
    if search == "grid":
        for item in conditions.items:
            if is_grid(param_space[item.key]) and not is_grid(param_space[item.parent]):
                if not is_constant(param_space[item.parent]):
                    raise TunerError(
                        f"grid crosses grid axes, and grid axis {item.key} depends on {item.parent}, which "
                        f"is sampled; make {item.parent} a tune.grid_search too, or {item.key} a tune.choice"
                    )
    if search in MODEL_BASED:
        for key in grid_axes(param_space):
            if not all(is_constant(value) for value in param_space[key]["grid_search"]):
                raise TunerError(
                    f"{search} cannot sample grid axis {key}, whose values are not numbers or strings; "
                    "use --search grid or random"
                )


def constraints_notice(search: str, constraints: Sequence[Constraint]) -> str | None:
    """The one line that says the searcher does not steer by the constraints: only optuna does."""
    if not constraints or search == "optuna":
        return None
    return (
        f"{search} proposes configs without regard to the constraints ({', '.join(map(str, constraints))}); "
        "the report marks the trials that break one (--search optuna steers clear of them)"
    )


def grid_notice(search: str, param_space: dict[str, Any], num_samples: int, extend: bool = False) -> str | None:
    """The one line that says a model-based searcher takes the grid axes as choices (under `extend`,
    whose --num-samples the user gave, without the advice to give it)."""
    axes = grid_axes(param_space)
    if search not in MODEL_BASED or not axes:
        return None
    said = f"{search} samples the grid axes ({', '.join(axes)}) as choices of the same values"
    if extend:
        return f"{said}: {num_samples} new configs"
    return f"{said}; num_samples = {num_samples} now counts configs in all (--num-samples N for more)"


def discrete_axes(param_space: dict[str, Any]) -> dict[str, list[Any]] | None:
    """Each searched key's values when every one is a finite set (a grid axis or tune.choice) and the
    rest are constants; None when a key is sampled from a range or nested."""
    axes: dict[str, list[Any]] = {}
    for key, value in param_space.items():
        if is_grid(value):
            axes[key] = list(value["grid_search"])
        elif isinstance(value, Categorical):
            axes[key] = list(value.categories)
        elif isinstance(value, (Domain, dict)):
            return None
    return axes


def distinct_configs(axes: dict[str, list[Any]]) -> int:
    return math.prod(len(values) for values in axes.values())


def space_size(param_space: dict[str, Any], conditions: Conditions = PLAIN) -> int | None:
    """The number of distinct configs of a finite space (under conditions, of active keys only); None
    for a space that samples from a range (or is too large to count its active configs)."""
    if conditions:
        return conditional.distinct_configs(param_space, conditions)
    axes = discrete_axes(param_space)
    return None if axes is None else distinct_configs(axes)


def trials(
    search: str, param_space: dict[str, Any], num_samples: int, already_run: int = 0, conditions: Conditions = PLAIN
) -> int:
    """Tune's num_samples: `random` over a finite space runs each config at most once (`already_run`:
    distinct configs a warm start skips); grid over a conditional space runs num_samples of each active
    grid point, handed out by tuner (the Tuner's param_space has no grid axes then)."""
    if search == "grid" and conditions:
        return num_samples * len(conditional.grid_points(param_space, conditions))
    if search == "random" and (count := space_size(param_space, conditions)) is not None:
        return min(num_samples, count - already_run)
    return num_samples


def random_notice(
    search: str, param_space: dict[str, Any], num_samples: int, already_run: int = 0, conditions: Conditions = PLAIN
) -> str | None:
    """The one line that says `random` runs fewer trials than asked, because the space has fewer configs
    (less those a warm start has run)."""
    if (
        search != "random"
        or (count := trials(search, param_space, num_samples, already_run, conditions)) == num_samples
    ):
        return None
    if already_run:
        return (
            f"random: {count} of the space's configs have not run before, so {count} trials run "
            f"(each config once), not num_samples = {num_samples}"
        )
    return (
        f"random: the space has {count} distinct configs, so {count} trials run (each config once), "
        f"not num_samples = {num_samples}"
    )


def _without_replacement(
    axes: dict[str, list[Any]], count: int, seed: int, skip: set[int] | None = None
) -> list[dict[str, Any]]:
    """`count` distinct configs, drawn uniformly: indices into the space's mixed-radix numbering, so a
    huge space is never enumerated. Indices in `skip` (configs a warm start has run) are never drawn:
    a uniform draw of `count + len(skip)` less those is a uniform draw of the rest."""
    skip = skip or set()
    drawn = random.Random(seed).sample(range(distinct_configs(axes)), min(distinct_configs(axes), count + len(skip)))
    configs = []
    for index in [index for index in drawn if index not in skip][:count]:
        config = {}
        for key, values in axes.items():
            index, digit = divmod(index, len(values))
            config[key] = values[digit]
        configs.append(config)
    return configs


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
) -> AutoChoice:
    """What --search auto runs. A finite space small enough to run whole: every config once, in random
    order (random draws without replacement; unlike grid order, a time budget that ends the search early
    leaves an even sample), under ASHA when the epochs leave it a rung to stop at. Otherwise TPE with
    ASHA stopping the weak trials early. The space's scheduler, if it names one other than fifo, stays;
    under pbt the search is random, since PBT's mutations would mislead TPE's model.

    Evidence (bench/search_efficiency.py, 5 seeds, the 24-config digits space run whole): random + ASHA
    reached grid's best within 0.5 pp in 5/5 seeds with a median 0.245 (9 epochs) and 0.151 (27 epochs)
    of grid's trial-epochs, and grid + FIFO needed 0.273 and 0.241 of its own to get there.

    With several objectives the same: random over a small finite space, else optuna's multi-objective
    TPE (bench/multi_objective.py measures it against random), under ASHA by Pareto front."""
    axes = discrete_axes(param_space)
    count = space_size(param_space, conditions)
    whole = max(AUTO_WHOLE_SPACE_MAX, num_samples)
    stopping = "asha" if scheduler == "fifo" and epochs >= schedulers.ASHA_MIN_EPOCHS else scheduler
    if count is not None and count <= whole:
        under = f", {stopping} stopping the weak ones early" if stopping != "fifo" else ""
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
    if scheduler == "pbt":
        return AutoChoice("random", scheduler, whole, f"search auto: random, {whole} configs under pbt ({why})")
    chosen = "asha" if scheduler == "fifo" else scheduler
    tpe = "multi-objective TPE" if objectives > 1 else "TPE"
    return AutoChoice("optuna", chosen, whole, f"search auto: optuna ({tpe}) with {chosen}, {whole} configs ({why})")


def tuner_space(search: str, param_space: dict[str, Any]) -> dict[str, Any]:
    """The param_space to give the Tuner: grid's as it is, the others' grid axes as choices."""
    return param_space if search == "grid" else grid_as_choice(param_space)


def search_algorithm(
    search: str,
    param_space: dict[str, Any],
    num_samples: int,
    seed: int,
    max_concurrent: int = 0,
    warm: warm_start.WarmStart | None = None,
    objectives: Sequence[tuple[str, str]] = (),
    constraints: Sequence[Constraint] = (),
) -> Any:
    """The search algorithm for TuneConfig(search_alg=...) over `tuner_space(search, param_space)`,
    limited to `max_concurrent` trials at once (0: no limit), seeded with the earlier trials of `warm`
    (ranked by `objectives`, (metric, mode) pairs). `auto` is resolved before, by `choose`; the space is
    checked before, by `check` (tuner.search.plan does both)."""
    if search == "auto":
        raise ValueError("searchers.search_algorithm takes the search that searchers.choose picked for auto, not auto")
    if search == "grid":
        return tune.search.BasicVariantGenerator(random_state=seed, max_concurrent=max_concurrent)
    if search == "random":
        axes = discrete_axes(param_space)
        skip = warm_start.skipped(axes, warm) if axes is not None else set()
        points = (
            None
            if axes is None
            else _without_replacement(axes, trials(search, param_space, num_samples, len(skip)), seed, skip)
        )
        return tune.search.BasicVariantGenerator(
            points_to_evaluate=points, random_state=seed, max_concurrent=max_concurrent
        )
    if search == "optuna":
        import optuna
        from ray.tune.search.optuna import OptunaSearch

        optuna.logging.set_verbosity(optuna.logging.WARNING)  # its "new study created" line is noise here

        # A warm start's study, already holding the earlier trials, is loaded from the storage it comes in.
        storage = (
            warm_start.optuna_storage(warm, tuner_space(search, param_space), list(objectives))
            if warm is not None
            else None
        )
        searcher: tune.search.Searcher
        if len(objectives) > 1 or constraints:
            from tuner.search.optuna_objectives import OptunaObjectives

            searcher = OptunaObjectives(objectives, constraints, seed=seed, storage=storage)
        else:
            searcher = OptunaSearch(seed=seed, storage=storage)
    elif search == "hyperopt":
        from ray.tune.search.hyperopt import HyperOptSearch

        # HyperOpt's default of 20 random starts would make a short search purely random.
        searcher = HyperOptSearch(random_state_seed=seed, n_initial_points=max(2, min(20, num_samples // 3)))
    else:
        from ray.tune.search.bohb import TuneBOHB

        searcher = TuneBOHB(seed=seed)
    return limited(searcher, max_concurrent)


def limited(searcher: Any, max_concurrent: int) -> Any:
    """The searcher running at most `max_concurrent` trials at once (0: no limit)."""
    if max_concurrent:
        searcher = tune.search.ConcurrencyLimiter(searcher, max_concurrent=max_concurrent)
    return searcher
