"""`--search hyperopt`: HyperOpt's TPE (Ray's HyperOptSearch); HyperOpt is an optional extra,
`pip install 'tuner[hyperopt]'`. Over a conditional space, nested choices: a parent is an hp.choice of one
dict per value, each holding the keys that value makes active (tuner/search/hyperopt_branches.py)."""

from collections.abc import Sequence
from typing import Any

from tuner.search import conditional
from tuner.search.base import Search
from tuner.search.space_counts import limited
from tuner.search.warm_start import WarmStart
from tuner.settings.objectives import Constraint
from tuner.spec.conditions import Conditions


def _initial_points(num_samples: int) -> int:
    """HyperOpt's default of 20 random starts would make a short search purely random."""
    return max(2, min(20, num_samples // 3))


class HyperOptTPE(Search):
    name = "hyperopt"
    extra = "hyperopt"
    warm_start_refused = "Ray's HyperOptSearch takes earlier configs only to run them again, not their results"

    def build(
        self,
        param_space: dict[str, Any],
        num_samples: int,
        seed: int,
        max_concurrent: int = 0,
        warm: WarmStart | None = None,
        objectives: Sequence[tuple[str, str]] = (),
        constraints: Sequence[Constraint] = (),
    ) -> Any:
        from ray.tune.search.hyperopt import HyperOptSearch

        searcher = HyperOptSearch(random_state_seed=seed, n_initial_points=_initial_points(num_samples))
        return limited(searcher, max_concurrent)

    def build_conditional(
        self,
        space: dict[str, Any],
        conditions: Conditions,
        num_samples: int,
        seed: int,
        objectives: Sequence[tuple[str, str]],
        constraints: Sequence[Constraint] = (),
        warm: WarmStart | None = None,
    ) -> Any:
        from tuner.search.hyperopt_branches import BranchedHyperOpt

        return BranchedHyperOpt(
            space=conditional.hyperopt_space(space, conditions),
            metric=objectives[0][0],
            mode=objectives[0][1],
            random_state_seed=seed,
            n_initial_points=_initial_points(num_samples),
        )
