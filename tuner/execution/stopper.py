"""`--stop "val_acc>=0.98"` as Ray Tune's Stopper. Ray pickles it into the experiment's saved state by
this module path (tuner/ray_compat/__init__.py lists the stable paths)."""

from dataclasses import dataclass, field
from typing import Any

from ray import tune

from tuner.settings.budgets import StopCondition


@dataclass
class MetricThreshold(tune.Stopper):
    """Ends the whole experiment once any trial's metric crosses the threshold: a config that is
    good enough has been found, and the rest of the budget is saved."""

    condition: StopCondition
    reached: bool = field(default=False, init=False)

    def __call__(self, trial_id: str, result: dict[str, Any]) -> bool:
        score = result.get(self.condition.metric)
        if score is not None and self.condition.reached(score):
            self.reached = True
        return self.reached

    def stop_all(self) -> bool:
        return self.reached
