"""`--search optuna` (and Optuna's other samplers) with several objectives or with constraints: Ray's
OptunaSearch over the sampler, multi-objective where there are several, steering clear of configs that
break a constraint.

Ray's OptunaSearch takes the metric Tune hands it (tuner gives Tune the primary objective, for the
scheduler and the checkpoints) in place of its own list, so this class keeps its own; and it does not
know constraints, so this class sets each constraint's violation on the Optuna trial
(`Trial.set_constraint`, which Optuna 5's TPESampler reads; its older `constraints_func` is deprecated)
before the trial is told its values.

Ray pickles the searcher into the experiment's saved state: this class stays at this path
(tuner/ray_compat PICKLED_BY_PATH).
"""

from collections.abc import Sequence
from typing import Any

from ray.tune.search.optuna import OptunaSearch

from tuner.settings.objectives import Constraint


class OptunaObjectives(OptunaSearch):
    def __init__(
        self,
        objectives: Sequence[tuple[str, str]],
        constraints: Sequence[Constraint] = (),
        sampler: Any = None,  # an Optuna sampler, seeded (tuner/search/optuna_tpe.py and its subclasses)
        storage: Any = None,  # a warm start's study (tuner/search/warm_start.py)
        space: Any = None,  # a conditional space's define-by-run function (tuner/search/conditional.py)
    ) -> None:
        metrics, modes = [metric for metric, _ in objectives], [mode for _, mode in objectives]
        super().__init__(
            metric=metrics if len(metrics) > 1 else metrics[0],
            mode=modes if len(modes) > 1 else modes[0],
            sampler=sampler,
            storage=storage,
            space=space,
        )
        self._constraints = tuple(constraints)

    def set_search_properties(self, metric: str | None, mode: str | None, config: dict, **spec: Any) -> bool:
        return super().set_search_properties(None, None, config, **spec)  # its own objectives stay

    def on_trial_complete(self, trial_id: str, result: dict | None = None, error: bool = False) -> None:
        if result and trial_id in self._ot_trials and trial_id not in self._completed_trials:
            trial = self._ot_trials[trial_id]
            for constraint in self._constraints:  # <= 0 where met; inf for a metric not reported
                trial.set_constraint(str(constraint), constraint.violation(result.get(constraint.metric)))
        super().on_trial_complete(trial_id, result, error)
