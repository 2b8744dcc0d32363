"""`--search grid`: Ray's BasicVariantGenerator, grid axes crossed, `num_samples` random draws of the rest
per grid point. Over a conditional space, every active combination of the grid axes (a grid axis whose
condition holds), handed out by tuner (tuner/search/conditional.py)."""

from typing import Any

from ray import tune

from tuner.errors import TunerError
from tuner.search import conditional
from tuner.search.base import Search, SearchRequest
from tuner.search.space_counts import PLAIN
from tuner.spec.conditions import Conditions
from tuner.spec.param_space import is_constant, is_grid


class Grid(Search):
    name = "grid"
    model_based = False
    several_objectives = True  # it proposes nothing, so any number of objectives is as good
    warm_start_refused = "grid runs every combination whatever ran before"
    basic_variant = True
    extends_as = "random"  # `tuner extend` of a grid that ran whole: random draws of the same space

    def check(self, param_space: dict[str, Any], objectives: int = 1, conditions: Conditions = PLAIN) -> None:
        super().check(param_space, objectives, conditions)
        for item in conditions.items:
            if is_grid(param_space[item.key]) and not is_grid(param_space[item.parent]):
                if not is_constant(param_space[item.parent]):
                    raise TunerError(
                        f"grid crosses grid axes, and grid axis {item.key} depends on {item.parent}, which "
                        f"is sampled; make {item.parent} a tune.grid_search too, or {item.key} a tune.choice"
                    )

    def tuner_space(self, param_space: dict[str, Any]) -> dict[str, Any]:
        return param_space

    def trials(
        self, param_space: dict[str, Any], num_samples: int, already_run: int = 0, conditions: Conditions = PLAIN
    ) -> int:
        """num_samples of each active grid point under conditions (the Tuner's param_space has no grid
        axes then)."""
        if conditions:
            return num_samples * len(conditional.grid_points(param_space, conditions))
        return num_samples

    def build(self, request: SearchRequest) -> Any:
        return tune.search.BasicVariantGenerator(random_state=request.seed, max_concurrent=request.max_concurrent)

    def build_conditional(self, request: SearchRequest) -> Any:
        return conditional.ConfigList(
            conditional.grid_configs(request.space, request.conditions, request.num_samples, request.seed)
        )
