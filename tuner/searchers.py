"""`--search`: which Ray Tune search algorithm proposes configs, with seeded, sensible defaults.

grid      Ray's BasicVariantGenerator: grid axes crossed, `num_samples` random draws of the rest per point.
random    the same generator with every grid axis turned into `tune.choice`: `num_samples` configs in all.
optuna    Optuna's TPE sampler (OptunaSearch).
hyperopt  HyperOpt's TPE (HyperOptSearch).
bohb      BOHB (TuneBOHB), always paired with its own HyperBandForBOHB scheduler.

The model-based searchers cannot take grid axes (Ray refuses to convert them), so a space with grid
axes and one of them is an error before any trial starts.
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


def check(search: str, param_space: dict[str, Any]) -> None:
    if search not in SEARCHERS:
        raise TunerError(f"unknown search {search!r}; choose one of {', '.join(SEARCHERS)}")
    axes = grid_axes(param_space)
    if search in MODEL_BASED and axes:
        raise TunerError(
            f"{search} cannot take grid axes ({', '.join(axes)}); use --search grid or random, "
            "or write them as tune.choice([...]) in the space"
        )


def build(search: str, param_space: dict[str, Any], num_samples: int, seed: int,
          max_concurrent: int = 0) -> tuple[Any, dict[str, Any]]:
    """The search algorithm for TuneConfig(search_alg=...), limited to `max_concurrent` trials at once
    (0: no limit), and the param_space to give the Tuner."""
    check(search, param_space)
    if search in ("grid", "random"):
        generator = tune.search.BasicVariantGenerator(random_state=seed, max_concurrent=max_concurrent)
        return generator, param_space if search == "grid" else grid_as_choice(param_space)
    if search == "optuna":
        from ray.tune.search.optuna import OptunaSearch

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
    return searcher, param_space
