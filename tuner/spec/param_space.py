"""The shapes a `param_space` value takes, read in one place: a grid axis (`tune.grid_search`, which
Ray writes as `{"grid_search": [...]}`), a nested group of hyperparameters (any other dict), a search
domain (`tune.choice`, `tune.uniform`, ...) or a constant; and configs flattened as the reports name
their keys (`group/name`, as Ray flattens results).

Imports no Ray: a search domain only exists once the space module imported `ray.tune` itself, so the
domain classes are looked up only when a value is no constant.
"""

import json
from typing import Any

from typing_extensions import TypeIs


def is_grid(value: Any) -> TypeIs[dict[str, Any]]:
    return isinstance(value, dict) and "grid_search" in value


def is_group(value: Any) -> bool:
    """A nested dict of hyperparameters (reported as `group/name`), not a grid axis."""
    return isinstance(value, dict) and "grid_search" not in value


def is_constant(value: Any) -> bool:
    return value is None or isinstance(value, (bool, int, float, str))


def flatten(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A config (or param_space) with nested groups flattened as `group/name`; grid axes are leaves."""
    flat: dict[str, Any] = {}
    for key, value in config.items():
        if is_group(value):
            flat.update(flatten(value, prefix=f"{prefix}{key}/"))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def flat_keys(param_space: dict[str, Any]) -> list[str]:
    """The hyperparameter names as the reports show them, sorted."""
    return sorted(flatten(param_space))


def known_values(value: Any) -> list[Any]:
    """The values a param can take that are known up front: grid and choice values, range bounds."""
    if is_grid(value):
        return list(value["grid_search"])
    if is_constant(value) or isinstance(value, (list, tuple, dict)):
        return [value]
    from ray.tune.search.sample import Categorical, Domain, Float, Integer  # loaded by the space module already

    if isinstance(value, Categorical):
        return list(value.categories)
    if isinstance(value, Integer):
        return [value.lower, value.upper - 1]  # tune.randint's upper bound is exclusive
    if isinstance(value, Float):
        return [value.lower, value.upper]
    if isinstance(value, Domain):
        return []  # e.g. tune.sample_from: only known once sampled
    return [value]


def finite_values(value: Any) -> list[Any] | None:
    """Every value a param can take, when that is a known finite set (a grid axis, a tune.choice, a
    constant); None for a range or a nested group."""
    if is_grid(value):
        return list(value["grid_search"])
    if is_constant(value):
        return [value]
    if isinstance(value, dict):
        return None
    from ray.tune.search.sample import Categorical  # loaded by the space module already

    return list(value.categories) if isinstance(value, Categorical) else None


def cell(value: Any) -> Any:
    """A config value as the tables (trials.csv) and the live study show it: lists (any JSON value that
    is no scalar) as their JSON text."""
    return json.dumps(value) if isinstance(value, (list, tuple, dict)) else value
