"""A Tune callback that follows the run and must never break it (the live study, Ray's metrics): each of
Tune's trial hooks runs one step of the callback's own, and the first step that raises says so once and
turns the callback off for the rest of the run."""

import logging
from collections.abc import Callable
from typing import Any

from ray.tune import Callback
from ray.tune.experiment import Trial

from tuner.trial_status import TrialStatus

log = logging.getLogger(__name__)


class GuardedTrialHooks(Callback):
    """Subclasses say what they are (`what`, for the warning), make what their steps need in `_prepare`,
    and take a trial's start, each result and its end (`status`: ERROR, or None where Tune says it
    completed)."""

    what = "a callback"
    _broken = False

    def _prepare(self, trial: Trial | None) -> None:
        """Before each step: make what the steps need, the first time (`trial`: the step's, if any)."""

    def _start(self, trial: Trial) -> None:
        pass

    def _result(self, trial: Trial, result: dict) -> None:
        pass

    def _end(self, trial: Trial, status: TrialStatus | None) -> None:
        pass

    def on_trial_start(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        self._guarded(self._start, trial)

    def on_trial_result(self, iteration: int, trials: list[Trial], trial: Trial, result: dict, **info: Any) -> None:
        self._guarded(self._result, trial, result)

    def on_trial_complete(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        self._guarded(self._end, trial, None)

    def on_trial_error(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        self._guarded(self._end, trial, TrialStatus.ERROR)

    def _guarded(self, step: Callable[..., None], *args: Any) -> None:
        if self._broken:
            return
        try:
            self._prepare(args[0] if args and isinstance(args[0], Trial) else None)
            step(*args)
        except Exception as error:  # a full disk, a journal damaged by hand, Ray's metrics agent gone, ...
            self._broken = True
            log.warning("%s stops here, the run goes on: %s", self.what, error)
