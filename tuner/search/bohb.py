"""`--search bohb`: BOHB (Ray's TuneBOHB), always paired with its own HyperBandForBOHB scheduler
(`own_scheduler`); hpbandster and ConfigSpace are an optional extra, `pip install 'tuner[bohb]'`. Over a
conditional space, ConfigSpace conditions (tuner/search/bohb_conditions.py), which BOHB's sampler
respects."""

from typing import Any

from ray.tune.schedulers import TrialScheduler

from tuner.search.base import Search, SearchRequest
from tuner.search.space_counts import limited


class BOHB(Search):
    name = "bohb"
    extra = "bohb"
    warm_start_refused = "Ray's TuneBOHB takes earlier configs only to run them again, not their results"
    schedulers = ("fifo", "hyperband")

    def build(self, request: SearchRequest) -> Any:
        from ray.tune.search.bohb import TuneBOHB

        return limited(TuneBOHB(seed=request.seed), request.max_concurrent)

    def build_conditional(self, request: SearchRequest) -> Any:
        from tuner.search.bohb_conditions import ConditionalBOHB

        (metric, mode), *_ = request.objectives
        return ConditionalBOHB(request.space, request.conditions, metric=metric, mode=mode, seed=request.seed)

    def own_scheduler(self, epochs: int) -> TrialScheduler | None:
        from tuner.search.decisions import RecordingBOHB
        from tuner.search.schedulers import REDUCTION_FACTOR, TIME_ATTR

        return RecordingBOHB(time_attr=TIME_ATTR, max_t=epochs, reduction_factor=REDUCTION_FACTOR)
