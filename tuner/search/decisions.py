"""Ray's schedulers, each telling what it decided and why: a `Decision` (tuner/search/decision.py: the
trial, its epoch and rung, the value it was judged by, the cutoff that value was compared with, what came
of it), handed to a `sink` the driver attaches before the run (tuner/storage/decisions.py writes them
to decisions.jsonl).

Each subclass leaves Ray's decision alone and reads the cutoff Ray itself computed for it, where Ray keeps
it: ASHA's rung cutoff (`_Bracket.cutoff`, read as Ray calls it), the median stopping rule's median of the
other trials' running means (recomputed with Ray's own helpers, from the same state, right after it
decided), synchronous HyperBand's halving (BOHB's brackets: the worst value kept at the rung), PBT's
exploits (who copied whom at which scores, and what the explore step changed). One decision is tuner's:
PBT lets a trial end after its last epoch, where Ray's, knowing no budget, would pause it to exploit
with nothing left to train (RecordingPBT.on_trial_result). They run in the driver
process, where Ray runs every scheduler, and Ray pickles them with the experiment (`tuner resume`), so
their module path is kept in tuner/ray_compat's PICKLED_BY_PATH.

Values and cutoffs are in the metric's own units (Ray negates a minimised metric inside).

What they read, call and override is Ray 2.60's private state, every name of it listed in
tuner/ray_compat/schedulers.py (`REACHED_IN`, checked against Ray's classes by a test); the decisions
themselves are checked by tests/search/test_decisions.py (no Ray started) and the slow runs in
tests/e2e/test_strategies_end_to_end.py, which compare them with the values reported.
"""

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from ray.tune.experiment import Trial
from ray.tune.schedulers import (
    AsyncHyperBandScheduler,
    HyperBandForBOHB,
    MedianStoppingRule,
    PopulationBasedTraining,
    TrialScheduler,
    async_hyperband,
    hyperband,
)

from tuner.ray_compat import schedulers as ray_schedulers
from tuner.search.decision import CONTINUE, EXPLOIT, STOP, Decision

if TYPE_CHECKING:
    from ray.tune.execution.tune_controller import TuneController

Sink = Callable[[Trial, Decision], None]


class Recording:
    """What every recording scheduler shares: its name in the rows and where the rows go."""

    name = ""
    sink: Sink | None = None  # set by the driver (record_to); None records nothing

    def record_to(self, sink: Sink) -> None:
        self.sink = sink

    def _record(self, trial: Trial, result: dict[str, Any], **fields: Any) -> None:
        if self.sink is None:
            return
        time_attr, metric, mode = ray_schedulers.judged_by(self)
        iteration = result.get(time_attr)
        decided = Decision(
            trial_id=trial.trial_id,
            scheduler=self.name,
            metric=metric or "?",  # set by Tune before the first result
            mode=mode or "max",
            epoch=_number(result.get("epoch", iteration)),
            iteration=_number(iteration),
            at=time.time(),
            **fields,
        )
        self.sink(trial, decided)


def _number(value: Any) -> Any:
    """A JSON-able plain number (numpy's floats and ints are not)."""
    if value is None:
        return None
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


class _Rungs(async_hyperband._Bracket):
    """ASHA's bracket, keeping the rung and cutoff of its last comparison as Ray computed them."""

    compared: tuple[float, float | None] | None = None

    def cutoff(self, recorded: dict[str, float]) -> Any:
        value = super().cutoff(recorded)
        milestone = next(m for m, rung in self._rungs if rung is recorded)
        self.compared = (milestone, None if value is None else float(value))  # type: ignore[arg-type]
        return value


class RecordingASHA(Recording, AsyncHyperBandScheduler):
    """Ray's ASHAScheduler. With brackets > 1 it is asynchronous HyperBand (Li et al. 2020, "A System for
    Massively Parallel Hyperparameter Tuning", the ASHA paper's HyperBand): bracket s starts its rungs at
    grace_period * reduction_factor^s, and a trial joins one bracket when it is added (Ray draws it at
    random with weights exp(rungs of the bracket), where the paper takes them in turn). Nothing waits for
    a bracket to fill, so no trial is ever paused and any concurrency works."""

    def __init__(self, name: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.name = name
        grace_period, brackets = kwargs.get("grace_period", 1), kwargs.get("brackets", 1)
        self._brackets = [
            _Rungs(grace_period, self._max_t, self._reduction_factor, s, stop_last_trials=self._stop_last_trials)
            for s in range(brackets)
        ]

    def on_trial_result(self, tune_controller: "TuneController", trial: Trial, result: dict[str, Any]) -> str:
        bracket = self._trial_info.get(trial.trial_id)
        if isinstance(bracket, _Rungs):
            bracket.compared = None
        action = super().on_trial_result(tune_controller, trial, result)
        if not isinstance(bracket, _Rungs) or bracket.compared is None:
            return action  # between rungs, or at the end of the budget: nothing was compared
        rung, cutoff = bracket.compared
        op = ray_schedulers.metric_sign(self)
        self._record(
            trial,
            result,
            decision=STOP if action == TrialScheduler.STOP else CONTINUE,
            value=_number(result[str(self._metric)]),
            cutoff=None if cutoff is None else op * cutoff,  # Ray's cutoff is of metric_op * value
            rung=_number(rung),
            bracket=self._brackets.index(bracket) if len(self._brackets) > 1 else None,
        )
        return action


class RecordingMedian(Recording, MedianStoppingRule):
    """Ray's MedianStoppingRule: a trial whose best value so far is worse than the median of the other
    trials' running means at the same epoch stops."""

    name = "median"

    def on_trial_result(self, tune_controller: "TuneController", trial: Trial, result: dict[str, Any]) -> str:
        judged = (
            self._time_attr in result
            and self._metric in result
            and trial not in self._stopped_trials
            and result[self._time_attr] >= self._grace_period
        )
        action = super().on_trial_result(tune_controller, trial, result)
        if not judged:
            return action
        # The same numbers Ray's rule just compared, from the state it compared them in.
        now = result[self._time_attr]
        means = [self._running_mean(other, now) for other in self._trials_beyond_time(now) if other is not trial]
        means = [mean for mean in means if np.isfinite(mean)]
        if len(means) < self._min_samples_required:
            return action  # too few others to compare with: Ray let it go on without a comparison
        self._record(
            trial,
            result,
            decision=STOP if action == TrialScheduler.STOP else CONTINUE,
            value=_number(self._best_result(trial)),
            cutoff=_number(np.median(means)),
            compared_with=len(means),
        )
        return action


class _Halving(hyperband._Bracket):
    """Synchronous HyperBand's bracket, keeping each halving: the rung, and who was kept and dropped."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.halvings: list[tuple[float, list[Trial], list[Trial], dict[Trial, dict[str, Any]]]] = []

    def successive_halving(self, metric: str, metric_op: float) -> tuple[list[Trial], list[Trial]]:
        rung, results = self._cumul_r, dict(self._live_trials)
        good, bad = super().successive_halving(metric, metric_op)
        self.halvings.append((rung, list(good), list(bad), results))
        return good, bad


class RecordingBOHB(Recording, HyperBandForBOHB):
    """Ray's HyperBandForBOHB: at each rung of a full bracket the best 1/eta go on, the rest stop; the
    cutoff of a row is the worst value kept."""

    name = "bohb"

    def _create_bracket(self, s: int) -> hyperband._Bracket:
        return _Halving(
            time_attr=self._time_attr,
            max_trials=self._get_n0(s),
            init_t_attr=self._get_r0(s),
            max_t_attr=self._max_t_attr,
            eta=self._eta,
            s=s,
            stop_last_trials=self._stop_last_trials,
        )

    def _process_bracket(self, tune_controller: "TuneController", bracket: hyperband._Bracket) -> str:
        action = super()._process_bracket(tune_controller, bracket)
        while isinstance(bracket, _Halving) and bracket.halvings:
            rung, good, bad, results = bracket.halvings.pop(0)
            metric = str(self._metric)
            kept = [results[t][metric] for t in good if results.get(t)]
            cutoff = (min if self._mode == "max" else max)(kept) if kept else None
            for trial, decision in [*((t, CONTINUE) for t in good), *((t, STOP) for t in bad)]:
                result = results.get(trial) or {}
                if metric not in result:
                    continue
                self._record(
                    trial,
                    result,
                    decision=decision,
                    value=_number(result[metric]),
                    cutoff=_number(cutoff),
                    rung=_number(rung),
                )
        return action


class RecordingPBT(Recording, PopulationBasedTraining):
    """Ray's PopulationBasedTraining: a row per exploit, the trial that copied another's checkpoint and
    hyperparameters (value: its score; cutoff: the best score of the bottom quantile it was in) and what
    the explore step changed (`changes`: key -> [old, new, how])."""

    name = "pbt"
    _lower_best: float | None = None
    _operations: dict[str, Any] | None = None
    # The budget in Tune's time unit (epochs). None in an experiment pickled before it existed.
    last_epoch: int | None = None

    def __init__(self, *, last_epoch: int | None = None, **options: Any) -> None:
        super().__init__(**options)
        self.last_epoch = last_epoch

    def on_trial_result(self, tune_controller: "TuneController", trial: Trial, result: dict) -> str:
        """No exploit at the last epoch: Ray's PBT knows no budget, so with epochs a multiple of the
        perturbation interval it paused every trial after its last epoch and restarted the bottom quarter
        from a donor's checkpoint with nothing left to train (an exploit no report shows, and a new
        process, or for a multi-worker trial a new Ray Train run, per trial)."""
        # The loop's own epoch: after an exploit Tune's report count is no longer the epoch.
        epoch = result.get("epoch", result.get(self._time_attr, 0))
        if self.last_epoch is not None and epoch >= self.last_epoch:
            return TrialScheduler.CONTINUE
        return super().on_trial_result(tune_controller, trial, result)

    def _checkpoint_or_exploit(
        self,
        trial: Trial,
        tune_controller: "TuneController",
        upper_quantile: list[Trial],
        lower_quantile: list[Trial],
    ) -> None:
        scores = [self._trial_state[t].last_score for t in lower_quantile]
        self._lower_best = max(s for s in scores if s is not None) if any(s is not None for s in scores) else None
        super()._checkpoint_or_exploit(trial, tune_controller, upper_quantile, lower_quantile)

    def _get_new_config(self, trial: Trial, trial_to_clone: Trial) -> tuple[dict[str, Any], dict[str, Any]]:
        new_config, operations = super()._get_new_config(trial, trial_to_clone)
        self._operations = operations
        return new_config, operations

    def _exploit(self, tune_controller: "TuneController", trial: Trial, trial_to_clone: Trial) -> None:
        state, donor = self._trial_state[trial], self._trial_state[trial_to_clone]
        op = ray_schedulers.metric_sign(self)
        score, donor_score = state.last_score, donor.last_score
        result = dict(state.last_result or {})
        donor_epoch = (donor.last_result or {}).get("epoch", donor.last_train_time)
        donor_config = dict(trial_to_clone.config)
        self._operations = None
        super()._exploit(tune_controller, trial, trial_to_clone)
        operations: dict[str, Any] = self._operations or {}
        changes = {
            key: [donor_config.get(key), trial.config.get(key), operations.get(key)]
            for key in self._hyperparam_mutations
            if key in trial.config
        }
        self._record(
            trial,
            result,
            decision=EXPLOIT,
            value=None if score is None else _number(op * score),
            cutoff=None if self._lower_best is None else _number(op * self._lower_best),
            clone_of=trial_to_clone.trial_id,
            clone_value=None if donor_score is None else _number(op * donor_score),
            clone_epoch=_number(donor_epoch),
            changes={key: [_plain(v) for v in change] for key, change in changes.items()},
        )


def _plain(value: Any) -> Any:
    """A config value as JSON holds it (numpy scalars as numbers; anything else as its text)."""
    if value is None or isinstance(value, (str, bool)):
        return value
    number = _number(value)
    return number if number is not None else str(value)
