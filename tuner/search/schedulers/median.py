"""`--scheduler median`: Ray's MedianStoppingRule, recording its decisions: a trial whose best so far is
below the median of the other trials' running means at the same epoch stops."""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tuner.search.schedulers import TIME_ATTR
from tuner.search.schedulers.base import Scheduler

if TYPE_CHECKING:
    from ray.tune.schedulers import TrialScheduler


class Median(Scheduler):
    name = "median"

    def build(
        self,
        param_space: dict[str, Any],
        epochs: int,
        mutable: Sequence[str] | None = None,
        objectives: Sequence[tuple[str, str]] = (),
    ) -> "TrialScheduler | None":
        from tuner.search.decisions import RecordingMedian

        return RecordingMedian(time_attr=TIME_ATTR, grace_period=1, min_samples_required=3)
