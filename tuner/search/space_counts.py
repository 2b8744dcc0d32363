"""Counting a space's configs, the same for every searcher: its grid axes and grid points, its finite
axes and how many distinct configs they make, and a uniform draw of distinct configs without enumerating
them. The searchers (tuner/search/base.py and its subclasses) and `--search auto` count with these."""

import math
import random
from typing import Any

from ray import tune
from ray.tune.search.sample import Categorical, Domain, Float, Integer

from tuner.search import conditional
from tuner.spec.conditions import Conditions
from tuner.spec.param_space import is_grid

PLAIN = Conditions()  # a space without conditions


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


def numeric_ranges(param_space: dict[str, Any]) -> list[str]:
    """The searched keys when every one is a range of numbers (tune.uniform, loguniform, randint, ...), the
    rest constants; empty when any is a choice, a grid axis or nested, which a GP or CMA-ES models poorly
    or not at all."""
    ranges = []
    for key, value in param_space.items():
        if isinstance(value, (Float, Integer)):
            ranges.append(key)
        elif isinstance(value, (Domain, dict)):
            return []
    return sorted(ranges)


def distinct_configs(axes: dict[str, list[Any]]) -> int:
    return math.prod(len(values) for values in axes.values())


def space_size(param_space: dict[str, Any], conditions: Conditions = PLAIN) -> int | None:
    """The number of distinct configs of a finite space (under conditions, of active keys only); None
    for a space that samples from a range (or is too large to count its active configs)."""
    if conditions:
        return conditional.distinct_configs(param_space, conditions)
    axes = discrete_axes(param_space)
    return None if axes is None else distinct_configs(axes)


def without_replacement(
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


def limited(searcher: Any, max_concurrent: int) -> Any:
    """The searcher running at most `max_concurrent` trials at once (0: no limit)."""
    if max_concurrent:
        searcher = tune.search.ConcurrencyLimiter(searcher, max_concurrent=max_concurrent)
    return searcher
