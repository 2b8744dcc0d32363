"""Warm start: an earlier experiment's trials, as what a new search already knows (`tuner run
--warm-start DIR`, and `tuner extend`, which warm-starts a search from the experiment itself).

The earlier trials come in as plain (config, best score) pairs read by the results stage; here they are
fitted to the new space and handed to the searcher:

optuna    every earlier trial becomes a COMPLETE trial of the study (optuna's `create_trial`) before
          the first suggestion, so TPE models them at once (gp, cmaes and nsga2, Optuna's other samplers,
          the same); under `--warm-start` (not `extend`, which never runs a config again) the earlier
          best config is enqueued to run first, as optuna's own advice for known good parameters
          (`enqueue_trial`): on a changed space it checks that the best still holds, with the new keys
          sampled. Ray's own `evaluated_rewards` cannot take a
          trial that lacks one of the space's keys (optuna wants every distribution of the space), so
          the study is built here, in an in-memory storage that `OptunaSearch(storage=...)` loads.
random    over a finite space (grid axes and choices only): the configs already run are skipped, the
          rest drawn without replacement. Over a space with ranges there is nothing to skip, so
          `--warm-start` refuses it (`extend` still draws new configs, with another seed).
others    refused in one line (`Search.check_warm_start`): Ray's HyperOptSearch and TuneBOHB take earlier
          configs only to run them again (`points_to_evaluate`, no rewards), and grid runs every
          combination whatever came before.

Keys of the earlier trials that no longer fit the space (not in it, or a value outside its new domain)
are dropped from those trials, said in one line; a trial left with no searched key is dropped whole.
"""

import json
import math
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

from tuner.errors import TunerError
from tuner.spec.param_space import flatten, is_constant, is_grid

STUDY_NAME = "optuna"  # OptunaSearch's own name for a study in the storage it is given


@dataclass(frozen=True)
class Evaluated:
    """One earlier trial: its config with keys as the reports name them (`group/name`), and its best
    value of each objective over its epochs (by each objective's mode), in the objectives' order."""

    config: dict[str, Any]
    scores: tuple[float, ...]


@dataclass(frozen=True)
class Earlier:
    """What the results stage read of an earlier experiment: its scored trials."""

    source: str  # the experiment directory, as the user named it
    trials: tuple[Evaluated, ...]


@dataclass(frozen=True)
class WarmStart:
    source: str  # the earlier experiment, as the user named it
    trials: tuple[Evaluated, ...]  # fitted: only the space's searched keys, every value inside its domain
    notice: str  # the one line printed before the first trial
    best_first: bool = False  # optuna runs the earlier best config first (`--warm-start`, not `extend`)

    @property
    def configs(self) -> list[dict[str, Any]]:
        return [trial.config for trial in self.trials]


def _plain(value: Any) -> Any:
    """A report cell as Python has it: numpy scalars as numbers, a missing value as None."""
    if hasattr(value, "item") and not isinstance(value, (list, tuple, dict, str)):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _same(candidate: Any, value: Any) -> bool:
    """Whether a report cell holds this value of a domain: numbers by value (64.0 is 64, True is not 1),
    lists and dicts by their JSON text, as the report writes them."""
    if isinstance(candidate, (list, tuple, dict)):
        return isinstance(value, str) and json.dumps(candidate) == value or candidate == value
    if isinstance(candidate, bool) or isinstance(value, bool):
        return candidate is value
    return bool(candidate == value)


def fitted(domain: Any, value: Any) -> tuple[bool, Any]:
    """(fits, the value as the domain has it): whether `value` is one the domain could have drawn."""
    from ray.tune.search.sample import Categorical, Domain, Float, Integer

    value = _plain(value)
    if value is None:
        return False, None
    candidates = (
        list(domain["grid_search"])
        if is_grid(domain)
        else list(domain.categories)
        if isinstance(domain, Categorical)
        else None
    )
    if candidates is not None:
        match = [candidate for candidate in candidates if _same(candidate, value)]
        return (True, match[0]) if match else (False, None)
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(domain, (Float, Integer)) and not (number and _on_step(domain, value)):
        return False, None
    if isinstance(domain, Float):
        return domain.lower <= value <= domain.upper, value
    if isinstance(domain, Integer):  # tune.randint's upper bound is exclusive
        whole = float(value).is_integer()
        return (whole and domain.lower <= value < domain.upper), int(value) if whole else None
    if isinstance(domain, Domain):  # tune.sample_from and the like: nothing to check a value against
        return False, None
    return _same(domain, value), domain


def _on_step(domain: Any, value: float) -> bool:
    """A quantized range (tune.quniform, tune.qrandint) holds only multiples of its step from its lower
    bound, as optuna's distributions count them."""
    from ray.tune.search.sample import Quantized

    sampler = domain.get_sampler()
    if not isinstance(sampler, Quantized):
        return True
    steps = (value - domain.lower) / sampler.q
    return abs(steps - round(steps)) < 1e-6


def searched(param_space: dict[str, Any]) -> dict[str, Any]:
    """The flat keys the searcher draws (constants are not searched), with their domains."""
    return {key: domain for key, domain in flatten(param_space).items() if not is_constant(domain)}


def fit(earlier: Earlier, param_space: dict[str, Any]) -> WarmStart:
    """The earlier trials fitted to `param_space` (as the searcher gets it: grid axes as choices where it
    samples), and the one line saying what was dropped. A fixed key of the space (a constant, a --set) is
    not searched: an earlier value that differs from it is said as outside the domain."""
    source = earlier.source
    domains = searched(param_space)
    fixed = {key: value for key, value in flatten(param_space).items() if key not in domains}
    unknown: set[str] = set()
    outside: Counter[str] = Counter()
    trials = []
    for trial in earlier.trials:
        config = {}
        for key, value in trial.config.items():
            if _plain(value) is None:
                continue  # a key this trial never had (inactive, or added after it ran)
            if key in domains:
                fits, as_domain = fitted(domains[key], value)
                if fits:
                    config[key] = as_domain
                else:
                    outside[key] += 1
            elif key in fixed:
                if not fitted(fixed[key], value)[0]:
                    outside[key] += 1
            else:
                unknown.add(key)
        if config:
            trials.append(Evaluated(config, trial.scores))
    if not trials:
        raise TunerError(
            f"--warm-start {source}: none of its trials has a searched key of this space with a value inside "
            f"it ({', '.join(sorted(domains)) or 'the space searches nothing'}); is it an experiment of another space?"
        )
    dropped = []
    if unknown:
        dropped.append(f"not in the space: {', '.join(sorted(unknown))}")
    if outside:
        dropped.append(
            "outside the space's domain: "
            + ", ".join(f"{key} (in {count} of {len(earlier.trials)} trials)" for key, count in sorted(outside.items()))
        )
    missing = sorted(set(domains) - {key for trial in trials for key in trial.config})
    notice = f"warm start from {source}: {len(trials)} earlier trials seed the search"
    if dropped:
        notice += "; dropped keys " + "; ".join(dropped)
    if missing:
        notice += f"; new keys without earlier values: {', '.join(missing)}"
    return WarmStart(source, tuple(trials), notice)


def optuna_storage(warm: WarmStart, param_space: dict[str, Any], objectives: list[tuple[str, str]]) -> Any:
    """An optuna in-memory storage holding one study (named as OptunaSearch names its own) with every
    earlier trial as a COMPLETE trial over the keys it has, in the objectives' directions; OptunaSearch
    loads it (`create_study(load_if_exists=True)`) and its sampler models those trials from the start."""
    import optuna
    from ray.tune.search.optuna import OptunaSearch

    distributions = OptunaSearch.convert_search_space(param_space)
    storage = optuna.storages.InMemoryStorage()
    directions: list[Literal["minimize", "maximize"]] = [
        "minimize" if mode == "min" else "maximize" for _, mode in objectives
    ]
    study = optuna.create_study(storage=storage, study_name=STUDY_NAME, directions=directions)
    for trial in warm.trials:
        params = {key: value for key, value in trial.config.items() if key in distributions}
        if not params or any(not math.isfinite(score) for score in trial.scores):
            continue
        study.add_trial(
            optuna.trial.create_trial(
                params=params,
                distributions={key: distributions[key] for key in params},
                values=list(trial.scores),
            )
        )
    if warm.best_first and (best := best_trial(warm, objectives[0][1])) is not None:
        study.enqueue_trial({key: value for key, value in best.config.items() if key in distributions})
    return storage


def best_trial(warm: WarmStart, mode: str) -> Evaluated | None:
    """The earlier trial with the best primary score (the first of equals)."""
    scored = [trial for trial in warm.trials if math.isfinite(trial.scores[0])]
    if not scored:
        return None
    pick = max if mode == "max" else min
    return pick(scored, key=lambda trial: trial.scores[0])


def skipped(axes: dict[str, list[Any]], warm: WarmStart | None) -> set[int]:
    """The earlier configs of a finite space as indices into its mixed-radix numbering (the order
    `space_counts.without_replacement` counts in); configs lacking an axis are no config of this space."""
    if warm is None:
        return set()
    indices = set()
    for config in warm.configs:
        if not set(axes) <= set(config):
            continue
        index, radix = 0, 1
        for key, values in axes.items():
            index += radix * next(i for i, value in enumerate(values) if _same(value, config[key]))
            radix *= len(values)
        indices.add(index)
    return indices
