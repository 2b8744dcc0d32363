"""`--search`: which Ray Tune search algorithm proposes configs, with seeded, sensible defaults.

grid      Ray's BasicVariantGenerator: grid axes crossed, `num_samples` random draws of the rest per point.
random    the same generator with every grid axis turned into `tune.choice`: `num_samples` configs in all.
optuna    Optuna's TPE sampler (OptunaSearch).
hyperopt  HyperOpt's TPE (HyperOptSearch).
bohb      BOHB (TuneBOHB), always paired with its own HyperBandForBOHB scheduler.

The model-based searchers cannot take grid axes (Ray refuses to convert them), so for them a grid
axis becomes a choice of the same values, as for `random`, with a notice; only an axis whose values a
searcher cannot sample (lists, dicts) is an error before any trial starts.
"""

from typing import Any

from ray import tune

from tuner.errors import TunerError

SEARCHERS = ("grid", "random", "optuna", "hyperopt", "bohb")
MODEL_BASED = ("optuna", "hyperopt", "bohb")


def grid_axes(param_space: dict[str, Any]) -> list[str]:
    return sorted(key for key, value in param_space.items() if isinstance(value, dict) and "grid_search" in value)


def grid_as_choice(param_space: dict[str, Any]) -> dict[str, Any]:
    """The same values, sampled instead of enumerated."""
    axes = grid_axes(param_space)
    return {key: tune.choice(value["grid_search"]) if key in axes else value for key, value in param_space.items()}


def _plain(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def check(search: str, param_space: dict[str, Any]) -> None:
    if search not in SEARCHERS:
        raise TunerError(f"unknown search {search!r}; choose one of {', '.join(SEARCHERS)}")
    if search in MODEL_BASED:
        for key in grid_axes(param_space):
            if not all(_plain(value) for value in param_space[key]["grid_search"]):
                raise TunerError(f"{search} cannot sample grid axis {key}, whose values are not numbers or strings; "
                                 "use --search grid or random")


def grid_notice(search: str, param_space: dict[str, Any], num_samples: int) -> str | None:
    """The one line that says a model-based searcher takes the grid axes as choices."""
    axes = grid_axes(param_space)
    if search not in MODEL_BASED or not axes:
        return None
    return (f"{search} samples the grid axes ({', '.join(axes)}) as choices of the same values; "
            f"num_samples = {num_samples} now counts configs in all (--num-samples N for more)")


def build(search: str, param_space: dict[str, Any], num_samples: int, seed: int,
          max_concurrent: int = 0) -> tuple[Any, dict[str, Any]]:
    """The search algorithm for TuneConfig(search_alg=...), limited to `max_concurrent` trials at once
    (0: no limit), and the param_space to give the Tuner."""
    check(search, param_space)
    if search in ("grid", "random"):
        generator = tune.search.BasicVariantGenerator(random_state=seed, max_concurrent=max_concurrent)
        return generator, param_space if search == "grid" else grid_as_choice(param_space)
    if search == "optuna":
        import optuna
        from ray.tune.search.optuna import OptunaSearch

        optuna.logging.set_verbosity(optuna.logging.WARNING)  # its "new study created" line is noise here

        searcher = OptunaSearch(seed=seed)
    elif search == "hyperopt":
        from ray.tune.search.hyperopt import HyperOptSearch

        # HyperOpt's default of 20 random starts would make a short search purely random.
        searcher = HyperOptSearch(random_state_seed=seed, n_initial_points=max(2, min(20, num_samples // 3)))
    else:
        from ray.tune.search.bohb import TuneBOHB

        searcher = TuneBOHB(seed=seed)
    if max_concurrent:
        searcher = tune.search.ConcurrencyLimiter(searcher, max_concurrent=max_concurrent)
    return searcher, grid_as_choice(param_space)
