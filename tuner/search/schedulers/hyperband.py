"""`--scheduler hyperband`: asynchronous HyperBand (Li et al., the ASHA paper), Ray's ASHAScheduler with
one bracket per HyperBand bracket, recording its decisions. Under --search bohb, BOHB's own
HyperBandForBOHB takes its place (tuner/search/bohb.py)."""

from typing import TYPE_CHECKING

from tuner.search.schedulers import REDUCTION_FACTOR, TIME_ATTR
from tuner.search.schedulers.base import Scheduler, SchedulerRequest

if TYPE_CHECKING:
    from ray.tune.schedulers import TrialScheduler


def hyperband_brackets(epochs: int) -> int:
    """HyperBand's s_max + 1 for a budget of `epochs` from a first rung of 1 epoch: bracket s stops trials
    first at 3^s epochs, and the last runs them all to the end (a rung at the budget stops nothing)."""
    brackets = 1
    while REDUCTION_FACTOR**brackets <= epochs:
        brackets += 1
    return brackets


class HyperBand(Scheduler):
    name = "hyperband"

    def build(self, request: SchedulerRequest) -> "TrialScheduler | None":
        from tuner.search.decisions import RecordingASHA

        # Not Ray's HyperBandScheduler: it pauses a trial at a rung until its whole bracket gets there, and
        # paused trials keep their slots under the concurrency limit, so a bracket larger than the limit
        # never filled and nothing was stopped (bench/synthetic_search.py spent exactly fifo's trial-epochs).
        return RecordingASHA(
            self.name,
            time_attr=TIME_ATTR,
            max_t=request.epochs,
            grace_period=1,
            reduction_factor=REDUCTION_FACTOR,
            brackets=hyperband_brackets(request.epochs),
        )
