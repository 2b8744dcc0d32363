"""`--scheduler asha` with several objectives: asynchronous successive halving whose rungs compare
trials by Pareto front instead of by one metric. Ray's schedulers take one metric (ray#18027); ASHA on
the primary objective alone would stop a fast, small model for its lower accuracy although no other
trial beats it on both.

The rungs are ASHA's (grace period, reduction factor, max_t in epochs). At a rung, a trial goes on when
fewer than 1/rf of the trials recorded there lie on fronts ahead of its own (`pareto.keeps`): a trial on
the rung's first front is never stopped, a dominated one is stopped once enough trials dominate it.

Ray pickles the scheduler into the experiment's saved state: this class stays at this path
(tuner/ray_compat PICKLED_BY_PATH).
"""

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from ray.tune.experiment import Trial
from ray.tune.schedulers import FIFOScheduler, TrialScheduler

from tuner.search import pareto
from tuner.search.decision import CONTINUE, STOP
from tuner.search.decisions import Recording

if TYPE_CHECKING:
    from ray.tune.execution.tune_controller import TuneController


class ParetoASHA(Recording, FIFOScheduler):
    name = "asha"

    def __init__(
        self,
        objectives: Sequence[tuple[str, str]],
        max_t: int,
        grace_period: int = 1,
        reduction_factor: float = 3,
        time_attr: str = "training_iteration",
    ) -> None:
        super().__init__()
        self._objectives = tuple(objectives)
        self._max_t, self._time_attr, self._rf = max_t, time_attr, reduction_factor
        self._metric, self._mode = self._objectives[0]  # what a recorded row names as its metric
        count = int(math.log(max_t / grace_period) / math.log(reduction_factor) + 1)
        # Each rung: its milestone and the oriented point of every trial recorded there.
        self._rungs: list[tuple[float, dict[str, np.ndarray]]] = [
            (grace_period * reduction_factor**k, {}) for k in range(count)
        ]
        self.num_stopped = 0

    def set_search_properties(self, metric: str | None, mode: str | None, **spec: Any) -> bool:
        return True  # Tune hands it the primary objective; it ranks by all of its own

    def _point(self, result: dict[str, Any]) -> np.ndarray | None:
        values = [result.get(metric) for metric, _ in self._objectives]
        numbers = [float(value) for value in values if isinstance(value, (int, float))]
        if len(numbers) < len(values):
            return None
        return pareto.oriented([numbers], [mode for _, mode in self._objectives])[0]

    def decide(self, trial_id: str, time: float, point: np.ndarray) -> str:
        """CONTINUE or STOP for a trial at `time` with `point` (oriented): recorded at the highest rung it
        has reached and not yet passed, and compared with the trials recorded there."""
        judged = self._judge(trial_id, time, point)
        return TrialScheduler.CONTINUE if judged is None or judged[1] else TrialScheduler.STOP

    def _judge(self, trial_id: str, time: float, point: np.ndarray) -> tuple[float, bool, int, int] | None:
        """(rung, goes on, trials on fronts ahead of it, trials at the rung), or None between rungs."""
        for milestone, recorded in reversed(self._rungs):
            if time < milestone or trial_id in recorded:
                continue
            recorded[trial_id] = point
            ids = list(recorded)
            points = np.stack([recorded[i] for i in ids])
            ranks = pareto.front_ranks(points)
            ahead = int(np.sum(ranks < ranks[ids.index(trial_id)]))
            return milestone, pareto.keeps(points, ids.index(trial_id), self._rf), ahead, len(ids)
        return None

    def on_trial_result(self, tune_controller: "TuneController", trial: Trial, result: dict[str, Any]) -> str:
        point = self._point(result)
        if self._time_attr not in result or point is None:
            return TrialScheduler.CONTINUE
        if result[self._time_attr] >= self._max_t:
            return TrialScheduler.STOP
        judged = self._judge(trial.trial_id, result[self._time_attr], point)
        if judged is None:
            return TrialScheduler.CONTINUE
        rung, goes_on, ahead, compared = judged
        self.num_stopped += not goes_on
        self._record(
            trial,
            result,
            decision=CONTINUE if goes_on else STOP,
            value=float(result[self._objectives[0][0]]),
            cutoff=None,
            rung=rung,
            pareto=[metric for metric, _ in self._objectives],
            ahead=ahead,
            compared_with=compared,
            reduction_factor=self._rf,
        )
        return TrialScheduler.CONTINUE if goes_on else TrialScheduler.STOP

    def on_trial_complete(self, tune_controller: "TuneController", trial: Trial, result: dict[str, Any]) -> None:
        point = self._point(result or {})
        if result and self._time_attr in result and point is not None:
            self.decide(trial.trial_id, result[self._time_attr], point)

    def debug_string(self) -> str:
        rungs = " | ".join(f"epoch {milestone:g}: {len(recorded)} trials" for milestone, recorded in self._rungs)
        return f"Pareto ASHA: {self.num_stopped} stopped; {rungs}"
