"""`--scheduler median`: Ray's MedianStoppingRule, recording its decisions: a trial whose best so far is
below the median of the other trials' running means at the same epoch stops."""

from typing import TYPE_CHECKING

from tuner.search.schedulers import TIME_ATTR
from tuner.search.schedulers.base import Scheduler, SchedulerRequest

if TYPE_CHECKING:
    from ray.tune.schedulers import TrialScheduler


class Median(Scheduler):
    name = "median"

    def build(self, request: SchedulerRequest) -> "TrialScheduler | None":
        from tuner.search.decisions import RecordingMedian

        return RecordingMedian(time_attr=TIME_ATTR, grace_period=1, min_samples_required=3)
