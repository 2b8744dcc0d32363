"""`--search hyperopt`: HyperOpt's TPE (Ray's HyperOptSearch); HyperOpt is an optional extra,
`pip install 'tuner[hyperopt]'`. Over a conditional space, nested choices: a parent is an hp.choice of one
dict per value, each holding the keys that value makes active (tuner/search/hyperopt_branches.py)."""

from typing import Any

from tuner.search import conditional
from tuner.search.base import Search, SearchRequest
from tuner.search.space_counts import limited


def _initial_points(num_samples: int) -> int:
    """HyperOpt's default of 20 random starts would make a short search purely random."""
    return max(2, min(20, num_samples // 3))


class HyperOptTPE(Search):
    name = "hyperopt"
    extra = "hyperopt"
    warm_start_refused = "Ray's HyperOptSearch takes earlier configs only to run them again, not their results"

    def build(self, request: SearchRequest) -> Any:
        from ray.tune.search.hyperopt import HyperOptSearch

        searcher = HyperOptSearch(random_state_seed=request.seed, n_initial_points=_initial_points(request.num_samples))
        return limited(searcher, request.max_concurrent)

    def build_conditional(self, request: SearchRequest) -> Any:
        from tuner.search.hyperopt_branches import BranchedHyperOpt

        return BranchedHyperOpt(
            space=conditional.hyperopt_space(request.space, request.conditions),
            metric=request.objectives[0][0],
            mode=request.objectives[0][1],
            random_state_seed=request.seed,
            n_initial_points=_initial_points(request.num_samples),
        )
