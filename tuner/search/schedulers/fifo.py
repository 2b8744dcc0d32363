"""`--scheduler fifo`: every trial runs to its last epoch (Ray's default scheduler)."""

from typing import TYPE_CHECKING

from tuner.search.schedulers.base import Scheduler, SchedulerRequest

if TYPE_CHECKING:
    from ray.tune.schedulers import TrialScheduler


class FIFO(Scheduler):
    name = "fifo"
    stops_early = False

    def build(self, request: SchedulerRequest) -> "TrialScheduler | None":
        return None
