"""`--scheduler fifo`: every trial runs to its last epoch (Ray's default scheduler)."""

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from tuner.search.schedulers.base import Scheduler

if TYPE_CHECKING:
    from ray.tune.schedulers import TrialScheduler


class FIFO(Scheduler):
    name = "fifo"
    stops_early = False

    def build(
        self,
        param_space: dict[str, Any],
        epochs: int,
        mutable: Sequence[str] | None = None,
        objectives: Sequence[tuple[str, str]] = (),
    ) -> "TrialScheduler | None":
        return None
