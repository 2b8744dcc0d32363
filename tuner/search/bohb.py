"""`--search bohb`: BOHB (Ray's TuneBOHB), always paired with its own HyperBandForBOHB scheduler
(`own_scheduler`); hpbandster and ConfigSpace are an optional extra, `pip install 'tuner[bohb]'`. Over a
conditional space, ConfigSpace conditions (tuner/search/bohb_conditions.py), which BOHB's sampler
respects."""

from collections.abc import Sequence
from typing import Any

from ray.tune.schedulers import TrialScheduler

from tuner.search.base import Search
from tuner.search.space_counts import limited
from tuner.search.warm_start import WarmStart
from tuner.settings.objectives import Constraint
from tuner.spec.conditions import Conditions


class BOHB(Search):
    name = "bohb"
    extra = "bohb"
    warm_start_refused = "Ray's TuneBOHB takes earlier configs only to run them again, not their results"
    schedulers = ("fifo", "hyperband")

    def build(
        self,
        param_space: dict[str, Any],
        num_samples: int,
        seed: int,
        max_concurrent: int = 0,
        warm: WarmStart | None = None,
        objectives: Sequence[tuple[str, str]] = (),
        constraints: Sequence[Constraint] = (),
    ) -> Any:
        from ray.tune.search.bohb import TuneBOHB

        return limited(TuneBOHB(seed=seed), max_concurrent)

    def build_conditional(
        self,
        space: dict[str, Any],
        conditions: Conditions,
        num_samples: int,
        seed: int,
        objectives: Sequence[tuple[str, str]],
        constraints: Sequence[Constraint] = (),
        warm: WarmStart | None = None,
    ) -> Any:
        from tuner.search.bohb_conditions import ConditionalBOHB

        (metric, mode), *_ = objectives
        return ConditionalBOHB(space, conditions, metric=metric, mode=mode, seed=seed)

    def own_scheduler(self, epochs: int) -> TrialScheduler | None:
        from tuner.search.decisions import RecordingBOHB
        from tuner.search.schedulers import REDUCTION_FACTOR, TIME_ATTR

        return RecordingBOHB(time_attr=TIME_ATTR, max_t=epochs, reduction_factor=REDUCTION_FACTOR)
