"""A conditional space (tuner/spec/conditions.py) compiled for each searcher, so that a trial's config
holds only the keys active under it, and no searcher spends trials on keys that change nothing.

grid      every active combination of the grid axes (a grid axis whose condition holds), each run
          num_samples times with the rest sampled: momentum's 2 values count only under sgd.
random    configs sampled key by key, parents first, so an inactive key is never drawn; a finite space
          runs distinct configs, each at most once, as a plain one does.
optuna    a define-by-run function (OptunaSearch's `space`): a key is suggested only when its
          parents' suggested values make it active, so TPE models only the trials that had it.
hyperopt  nested choices: a parent is an hp.choice of one dict per value, each holding the keys that
          value makes active (HyperOpt's own way to write a conditional space).
bohb      ConfigSpace conditions (EqualsCondition / InCondition, several parents AND-ed), which BOHB's
          sampler respects.

Grid and random decide their configs up front and hand them out through `ConfigList`; the Tuner then
gets an empty param_space, since every searcher here carries its own space (and the constants in it).
Each searcher's class builds its form from these (`build_conditional`, tuner/search/base.py). Ray
pickles these searchers into the experiment's saved state by their path (tuner/ray_compat); the
HyperOpt and BOHB ones are modules of their own, imported only when their optional extra runs.
"""

import math
import pickle
import random
from collections.abc import Iterator
from typing import Any

import numpy as np
from ray.tune.search import Searcher
from ray.tune.search.sample import Categorical, Domain

from tuner.spec.conditions import Conditions
from tuner.spec.param_space import finite_values, is_constant, is_grid

# A finite space whose key-by-key product is at most this is enumerated to run distinct configs
# (random, auto's count); a larger one is sampled with replacement, as a range is.
ENUMERATE_MAX = 100_000
BRANCH = "__branch__"  # marks a nested choice's dict in a hyperopt suggestion, flattened away


def reachable(space: dict[str, Any], conditions: Conditions) -> dict[str, Any]:
    """The space without the keys no config can activate (a constant parent, e.g. one pinned by --set,
    with another value), in `conditions.order`."""
    kept: dict[str, Any] = {}
    for key in conditions.order:
        if all(
            item.parent in kept and (not is_constant(kept[item.parent]) or item.holds(kept))
            for item in conditions.of(key)
        ):
            kept[key] = space[key]
    return kept


def as_domain(value: Any) -> Any:
    """A grid axis as the choice of its values: every searcher but grid samples it."""
    return Categorical(value["grid_search"]).uniform() if is_grid(value) else value


def _sample(value: Any, rng: np.random.RandomState) -> Any:
    if is_grid(value):
        values = value["grid_search"]
        return values[rng.randint(len(values))]
    if isinstance(value, Domain):
        return value.sample(random_state=rng)
    return value


def sample(
    space: dict[str, Any], conditions: Conditions, rng: np.random.RandomState, fixed: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One config drawn key by key, parents first: a key is drawn only when active (`fixed` values kept)."""
    fixed = fixed or {}
    config: dict[str, Any] = {}
    for key, value in reachable(space, conditions).items():
        if conditions.active(key, config):
            config[key] = fixed[key] if key in fixed else _sample(value, rng)
    return config


def _combinations(space: dict[str, Any], conditions: Conditions, keys: set[str]) -> Iterator[dict[str, Any]]:
    """Every assignment of the active ones of `keys` (finite keys, and the constants), parents first."""
    order = [key for key in space if key in keys or is_constant(space[key])]

    def walk(index: int, chosen: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if index == len(order):
            yield dict(chosen)
            return
        key = order[index]
        if not conditions.active(key, chosen):
            yield from walk(index + 1, chosen)
            return
        for value in finite_values(space[key]) or []:
            chosen[key] = value
            yield from walk(index + 1, chosen)
            del chosen[key]

    return walk(0, {})


def first_config(space: dict[str, Any], conditions: Conditions, seed: int) -> dict[str, Any]:
    """A config the smoke step runs: one draw, its inactive keys absent as in every trial."""
    return sample(space, conditions, np.random.RandomState(seed))


def grid_points(space: dict[str, Any], conditions: Conditions) -> list[dict[str, Any]]:
    """The active combinations of the grid axes (with the constants): what grid crosses."""
    space = reachable(space, conditions)
    return list(_combinations(space, conditions, {key for key, value in space.items() if is_grid(value)}))


def grid_configs(space: dict[str, Any], conditions: Conditions, num_samples: int, seed: int) -> list[dict[str, Any]]:
    """Each active grid point num_samples times, the other keys sampled (Ray's grid order: the whole grid
    once per sample)."""
    rng = np.random.RandomState(seed)
    points = grid_points(space, conditions)
    return [sample(space, conditions, rng, fixed=point) for _ in range(num_samples) for point in points]


def distinct_configs(space: dict[str, Any], conditions: Conditions) -> int | None:
    """How many configs a finite space has, counting only active keys; None for a range or a space too
    large to count."""
    space = reachable(space, conditions)
    sizes = [finite_values(value) for value in space.values()]
    if any(values is None for values in sizes) or math.prod(len(v) for v in sizes if v) > ENUMERATE_MAX:
        return None
    return sum(1 for _ in _combinations(space, conditions, set(space)))


def random_configs(space: dict[str, Any], conditions: Conditions, num_samples: int, seed: int) -> list[dict[str, Any]]:
    """num_samples configs; over a finite space, distinct ones (at most each once)."""
    if distinct_configs(space, conditions) is not None:
        every = list(_combinations(reachable(space, conditions), conditions, set(space)))
        return random.Random(seed).sample(every, min(num_samples, len(every)))
    rng = np.random.RandomState(seed)
    return [sample(space, conditions, rng) for _ in range(num_samples)]


class ConfigList(Searcher):
    """Hands out configs decided up front, in order (grid and random over a conditional space)."""

    def __init__(self, configs: list[dict[str, Any]]):
        super().__init__()
        self.configs = configs
        self.handed = 0

    def suggest(self, trial_id: str) -> dict[str, Any] | None:
        if self.handed >= len(self.configs):
            return Searcher.FINISHED  # type: ignore[return-value]  # Ray's annotation leaves FINISHED out
        self.handed += 1
        return dict(self.configs[self.handed - 1])

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        pass  # nothing to learn: the configs are fixed

    def save(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "wb") as file:
            pickle.dump({"configs": self.configs, "handed": self.handed}, file)

    def restore(self, checkpoint_path: str) -> None:
        with open(checkpoint_path, "rb") as file:
            state = pickle.load(file)
        self.configs, self.handed = state["configs"], state["handed"]


class DefineByRun:
    """OptunaSearch's define-by-run `space`: suggests each active key, parents first, and returns the
    active constants. A class, not a closure: Ray pickles it with the searcher's state."""

    def __init__(self, space: dict[str, Any], conditions: Conditions):
        from ray.tune.search.optuna import OptunaSearch

        self.space = reachable(space, conditions)
        self.conditions = conditions
        domains = {key: as_domain(value) for key, value in self.space.items() if not is_constant(value)}
        self.distributions = OptunaSearch.convert_search_space(domains)

    def __call__(self, trial: Any) -> dict[str, Any]:
        from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

        chosen: dict[str, Any] = {}
        for key, value in self.space.items():
            if not self.conditions.active(key, chosen):
                continue
            dist = self.distributions.get(key)
            if isinstance(dist, CategoricalDistribution):
                chosen[key] = trial.suggest_categorical(key, dist.choices)
            elif isinstance(dist, FloatDistribution):
                chosen[key] = trial.suggest_float(key, dist.low, dist.high, step=dist.step, log=dist.log)
            elif isinstance(dist, IntDistribution):
                chosen[key] = trial.suggest_int(key, dist.low, dist.high, step=dist.step, log=dist.log)
            else:
                chosen[key] = value  # a constant
        return {key: value for key, value in chosen.items() if key not in self.distributions}


def hyperopt_space(space: dict[str, Any], conditions: Conditions) -> dict[str, Any]:
    """HyperOpt's nested form: each group of keys that depend on each other is a tree in which a parent
    is an hp.choice of one dict per value, holding the keys that value activates."""
    space = reachable(space, conditions)
    tree: dict[str, Any] = {}
    for component in conditions.components():
        tree.update(_hyperopt_branch([key for key in component if key in space], space, conditions, {}, ""))
    return tree


def _hyperopt_branch(
    keys: list[str], space: dict[str, Any], conditions: Conditions, chosen: dict[str, Any], prefix: str
) -> dict[str, Any]:
    from hyperopt import hp  # type: ignore[import-untyped]
    from ray.tune.search.hyperopt import HyperOptSearch

    branch: dict[str, Any] = {}
    for index, key in enumerate(keys):
        if not conditions.active(key, chosen):
            continue
        value = space[key]
        if key in conditions.parents and not is_constant(value):
            rest = keys[index + 1 :]
            options = [
                {
                    key: option,
                    **_hyperopt_branch(rest, space, conditions, {**chosen, key: option}, f"{prefix}{key}={option}/"),
                }
                for option in finite_values(value) or []
            ]
            branch[f"{BRANCH}{prefix}{key}"] = hp.choice(f"{prefix}{key}", options)
            return branch  # the keys after this one are in each option
        if is_constant(value):
            branch[key] = value
            chosen = {**chosen, key: value}
        else:
            # Labels are unique per branch (HyperOpt requires it); the config names the key itself.
            branch[key] = HyperOptSearch.convert_search_space({key: as_domain(value)}, prefix=prefix.rstrip("/"))[key]
    return branch


def flat(config: dict[str, Any]) -> dict[str, Any]:
    """A hyperopt suggestion with its nested choices' dicts merged in: the trial's flat config."""
    merged: dict[str, Any] = {}
    for key, value in config.items():
        if key.startswith(BRANCH):
            merged.update(flat(value))
        else:
            merged[key] = value
    return merged


def bohb_space(space: dict[str, Any], conditions: Conditions) -> Any:
    """A ConfigSpace with each conditional key's conditions (AND-ed over its parents)."""
    import ConfigSpace
    from ray.tune.search.bohb import TuneBOHB

    space = reachable(space, conditions)
    domains = {key: as_domain(value) for key, value in space.items() if not is_constant(value)}
    configuration_space = TuneBOHB.convert_search_space(domains)
    for key in domains:
        parts: list[Any] = []
        for item in conditions.of(key):
            if item.parent not in domains:
                continue  # a constant parent that holds (`reachable` dropped the rest)
            child, parent = configuration_space[key], configuration_space[item.parent]
            if len(item.values) == 1:
                parts.append(ConfigSpace.EqualsCondition(child, parent, item.values[0]))
            else:
                parts.append(ConfigSpace.InCondition(child, parent, list(item.values)))
        if parts:
            configuration_space.add(parts[0] if len(parts) == 1 else ConfigSpace.AndConjunction(*parts))
    return configuration_space
