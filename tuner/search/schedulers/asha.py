"""`--scheduler asha`: Ray's ASHAScheduler over the epoch budget, recording its decisions; with several
objectives the same rungs ranked by Pareto front (tuner/search/pareto_asha.py)."""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tuner.search.schedulers import REDUCTION_FACTOR, TIME_ATTR
from tuner.search.schedulers.base import Scheduler

if TYPE_CHECKING:
    from ray.tune.schedulers import TrialScheduler

# ASHA's (grace period, reduction factor) at every epoch budget: 1 and 3 at every budget measured, rather
# than a grace period that grows with the epochs. Evidence, at 27 epochs (rungs 1, 3, 9, 27), against the
# longer grace and the other factors:
# - bench/search_efficiency.py --epochs 27 --seeds 5 --asha-shapes 3:3 1:4 --shape-searches optuna
#   (digits CNN, 24 configs): optuna + ASHA (1, 3) spent 0.306 of grid's trial-epochs and reached grid's
#   best -0.5 pp in 4/5 seeds at a median 0.168; (3, 3), the grace period scaled to epochs / 9, spent
#   0.454 for 5/5 at 0.248; (1, 4) spent 0.262 but reached it in 3/5 only.
# - bench/synthetic_search.py --epochs 27 --seeds 20 --asha-shapes 1:2 1:4 3:3 9:3 (Hartmann-6): median
#   regret with optuna 0.294 (1, 3) at 1003 trial-epochs, 0.280 (3, 3) at 1206, 0.319 (1, 4) at 869,
#   0.349 (1, 2) at 1253, 0.370 (9, 3) at 1458; the 25-75 % ranges all overlap, so (1, 3) buys the
#   same regret for fewer epochs than a longer grace period.
# At 9 epochs (rungs 1, 3, 9) the same shape met the digits target in 5/5 seeds (README).
# Reruns of both the same day (README) reached it in fewer seeds (3/5 at 9 epochs; 4/5 random, 3/5 optuna
# at 27, where (3, 3) and (1, 4) reached it in 2/5): 5 seeds do not settle these rows.
ASHA_SHAPE = (1, REDUCTION_FACTOR)
# Fewer epochs than this leave ASHA (grace period 1) no second rung: it could only stop trials after
# their first epoch and promote the rest straight to the end, so --search auto keeps FIFO there.
ASHA_MIN_EPOCHS = REDUCTION_FACTOR


class ASHA(Scheduler):
    name = "asha"

    def stopping_notice(self, objectives: Sequence[tuple[str, str]]) -> str | None:
        if len(objectives) < 2:
            return None
        return "asha compares trials at each rung by Pareto front: a trial is stopped only when others dominate it"

    def build(
        self,
        param_space: dict[str, Any],
        epochs: int,
        mutable: Sequence[str] | None = None,
        objectives: Sequence[tuple[str, str]] = (),
    ) -> "TrialScheduler | None":
        grace_period, reduction_factor = ASHA_SHAPE
        if len(objectives) > 1:
            from tuner.search.pareto_asha import ParetoASHA

            return ParetoASHA(objectives, max_t=epochs, grace_period=grace_period, reduction_factor=reduction_factor)
        from tuner.search.decisions import RecordingASHA

        return RecordingASHA(
            self.name, time_attr=TIME_ATTR, max_t=epochs, grace_period=grace_period, reduction_factor=reduction_factor
        )
