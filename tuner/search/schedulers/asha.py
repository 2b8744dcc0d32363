"""`--scheduler asha`: Ray's ASHAScheduler over the epoch budget, recording its decisions; with several
objectives the same rungs ranked by Pareto front (tuner/search/pareto_asha.py)."""

from collections.abc import Sequence
from typing import TYPE_CHECKING

from tuner.search.schedulers import REDUCTION_FACTOR, TIME_ATTR
from tuner.search.schedulers.base import Scheduler, SchedulerRequest

if TYPE_CHECKING:
    from ray.tune.schedulers import TrialScheduler

# Fewer epochs than this leave ASHA (at its default grace period, 1) no second rung: it could only stop trials after
# their first epoch and promote the rest straight to the end, so --search auto keeps FIFO there.
ASHA_MIN_EPOCHS = REDUCTION_FACTOR


class ASHA(Scheduler):
    name = "asha"

    def stopping_notice(self, objectives: Sequence[tuple[str, str]]) -> str | None:
        if len(objectives) < 2:
            return None
        return "asha compares trials at each rung by Pareto front: a trial is stopped only when others dominate it"

    def build(self, request: SchedulerRequest) -> "TrialScheduler | None":
        grace_period, reduction_factor = self.tuning.asha_grace_period, self.tuning.asha_reduction_factor
        epochs, objectives = request.epochs, request.objectives
        if len(objectives) > 1:
            from tuner.search.pareto_asha import ParetoASHA

            return ParetoASHA(objectives, max_t=epochs, grace_period=grace_period, reduction_factor=reduction_factor)
        from tuner.search.decisions import RecordingASHA

        return RecordingASHA(
            self.name, time_attr=TIME_ATTR, max_t=epochs, grace_period=grace_period, reduction_factor=reduction_factor
        )
