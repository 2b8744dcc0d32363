"""TuneBOHB over a ConfigSpace with a conditional space's conditions (tuner/search/conditional.py
builds it). ConfigSpace leaves inactive keys out of a sample; it holds no constants, so each suggestion
gets the space's active constants added. Its own module: hpbandster and ConfigSpace are an optional
extra, and Ray pickles the class by this path into the saved state."""

from typing import Any

from ray.tune.search.bohb import TuneBOHB

from tuner.search.conditional import bohb_space
from tuner.spec.conditions import Conditions
from tuner.spec.param_space import is_constant


class ConditionalBOHB(TuneBOHB):
    def __init__(self, space: dict[str, Any], conditions: Conditions, **kwargs: Any):
        self.constants = {key: value for key, value in space.items() if is_constant(value)}
        self.conditions = conditions
        super().__init__(space=bohb_space(space, conditions), **kwargs)

    def suggest(self, trial_id: str) -> Any:
        config = super().suggest(trial_id)
        if not isinstance(config, dict):
            return config  # None: BOHB waits for a running trial
        return self.conditions.prune({**self.constants, **config})
