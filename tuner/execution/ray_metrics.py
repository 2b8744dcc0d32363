"""The experiment in Ray's metrics (`ray.util.metrics`), so that the Prometheus that scrapes Ray's own
metrics scrapes tuner's too, and tuner's Grafana dashboard (tuner/execution/grafana_dashboard.json) draws
them beside Ray's: trials by state, each running trial's latest metrics and epoch, the best so far of each
objective, the few best trials, early stops by reason, and epochs done (their rate: epochs per second).
Ray itself exports nothing of a Tune run, and ships no dashboard for Tune.

A Tune callback on the driver. Every series is labelled by the experiment. Per-trial series exist only
for the running trials and the TOP best, so the number of series stays bounded at any number of trials:
Ray (2.60) drops a gauge's series that is not set again (~20 s after its last value at a 1 s export
interval), so each series kept is set again every REFRESH_S, and an ended trial's series age out by
themselves (tests/execution/test_ray_metrics.py). A refresh looks at the started trials only, and the best
few are kept as results come: about 0.02 ms per trial, flat to 10,000 trials (bench/ray_metrics.py).
Anything that goes wrong here says so once and stops the metrics, never the run.
"""

import numbers
import shutil
import time
from pathlib import Path
from typing import Any

from ray.tune.experiment import Trial

from tuner.execution.guarded_hooks import GuardedTrialHooks
from tuner.execution.loop_metrics import is_real, loop_metrics
from tuner.ray_compat import private
from tuner.search.decision import STOP, Decision
from tuner.search.decisions import Sink
from tuner.trial_status import TrialStatus

TOP = 5  # the best trials that keep a series of their own after they end
# Below Ray's default export interval (10 s), so a kept series never misses an export.
REFRESH_S = 2.0
# Why a trial stopped early, besides the scheduler's name.
BY_BUDGET = "stop or time budget"  # --stop reached, or the time budget spent
IN_EARLIER_RUN = "earlier run"  # ended before a resume; its reason is in decisions.jsonl

RUNNING, PENDING = "running", "pending"
# How a trial can end while the run goes on (INCOMPLETE is what a report says of a run that was killed).
LIVE_ENDS = tuple(status.value for status in TrialStatus if status is not TrialStatus.INCOMPLETE)


class RayMetrics(GuardedTrialHooks):
    """Ray pickles its callbacks with the experiment's state: the metrics (Ray's, not picklable) are made
    again by a resumed driver at its first step."""

    what = "tuner's Ray metrics"

    def __init__(self, name: str, objectives: list[tuple[str, str]], epochs: int) -> None:
        self.name = name
        self.objectives = objectives
        self.epochs = epochs
        self._reset()

    def _reset(self) -> None:
        self._gauges: dict[str, Any] | None = None
        self._broken = False
        self._refreshed = 0.0
        self._planned: int | None = None
        self._ended: dict[str, str] = {}  # trial id -> its state, once it ended
        self._ended_counts: dict[str, int] = dict.fromkeys(LIVE_ENDS, 0)
        self._started: dict[str, Trial] = {}  # started and not ended: running, paused or restarting
        self._stops: dict[str, str] = {}  # trial id -> why it stopped early (a scheduler's name, ...)
        self._stop_counts: dict[str, int] = {}  # why -> how many of the ended trials it stopped
        self._best_of: dict[str, float] = {}  # trial id -> its best value of the primary objective
        self._top: list[tuple[float, str]] = []  # the TOP best of those, best first
        self._best: dict[str, float] = {}  # objective -> the best value any trial reported
        self._seen_earlier = False

    def __getstate__(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items() if not key.startswith("_")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._reset()

    # Tune's hooks

    def setup(
        self,
        stop: Any = None,
        num_samples: int | None = None,
        total_num_samples: int | None = None,
        **info: Any,
    ) -> None:
        if total_num_samples and total_num_samples < 2**31:
            self._planned = total_num_samples
        self._guarded(_beside_rays_dashboards)

    def on_step_end(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        if time.monotonic() - self._refreshed >= REFRESH_S:
            self._guarded(self._refresh, trials)

    def on_experiment_end(self, trials: list[Trial], **info: Any) -> None:
        self._guarded(self._refresh, trials, True)  # the last word, which Ray exports while the driver lives on

    def also(self, sink: Sink) -> Sink:
        """A recording scheduler's sink that also tells these metrics each STOP (tune_run.new_tuner)."""
        from tuner.execution.live_study import AlsoToStudy

        return AlsoToStudy(sink, self)

    def decided(self, trial: Trial, decided: Decision) -> None:
        if decided.decision == STOP:
            self._stops[trial.trial_id] = decided.scheduler

    # What is exported

    def _prepare(self, trial: Trial | None) -> None:
        if self._gauges is None:
            self._gauges = _make_gauges()

    def _tags(self, **tags: str) -> dict[str, str]:
        return {"experiment": self.name, **tags}

    def _start(self, trial: Trial) -> None:
        self._forget_end(trial.trial_id)
        self._started[trial.trial_id] = trial

    def _result(self, trial: Trial, result: dict) -> None:
        assert self._gauges is not None
        self._gauges["epochs"].inc(1, self._tags())
        for metric, mode in self.objectives:
            value = result.get(metric)
            if is_real(value):
                self._best[metric] = _better(mode, self._best.get(metric), float(value))
        if is_real(value := result.get(self.objectives[0][0])):
            self._rank(trial.trial_id, float(value))

    def _rank(self, trial_id: str, value: float) -> None:
        """The trial's best so far, and the TOP best trials kept as they change: a refresh at 10,000
        trials does not sort them all."""
        mode = self.objectives[0][1]
        best = self._best_of[trial_id] = _better(mode, self._best_of.get(trial_id), value)
        top = [(kept, kept_id) for kept, kept_id in self._top if kept_id != trial_id]
        top.append((best, trial_id))
        top.sort(key=lambda entry: entry[0], reverse=mode == "max")
        self._top = top[:TOP]

    def _end(self, trial: Trial, status: TrialStatus | None, earlier: bool = False) -> None:
        state = status.value if status is not None else None
        if state is None:
            last = trial.last_result or {}
            epochs = last.get("epoch", 0)
            if not epochs:
                state = TrialStatus.NOT_STARTED.value
            elif last.get("diverged") in (True, 1):
                state = TrialStatus.DIVERGED.value
            elif epochs >= self.epochs:
                state = TrialStatus.FINISHED.value
            else:
                state = TrialStatus.STOPPED_EARLY.value
        self._forget_end(trial.trial_id)
        self._started.pop(trial.trial_id, None)
        self._ended[trial.trial_id] = state
        self._ended_counts[state] += 1
        if state == TrialStatus.STOPPED_EARLY.value:
            reason = self._stops.get(trial.trial_id, IN_EARLIER_RUN if earlier else BY_BUDGET)
            self._stops[trial.trial_id] = reason
            self._stop_counts[reason] = self._stop_counts.get(reason, 0) + 1

    def _forget_end(self, trial_id: str) -> None:
        """An ended trial that starts again (an errored one retried) or ends again is counted once."""
        if (state := self._ended.pop(trial_id, None)) is None:
            return
        self._ended_counts[state] -= 1
        if state == TrialStatus.STOPPED_EARLY.value:
            self._stop_counts[self._stops[trial_id]] -= 1

    def _earlier(self, trials: list[Trial]) -> None:
        """A resumed run's trials that ended before it: their states, and their part in the best so far."""
        self._seen_earlier = True
        for trial in trials:
            if trial.status not in (Trial.TERMINATED, Trial.ERROR) or trial.trial_id in self._ended:
                continue
            self._end(trial, TrialStatus.ERROR if trial.status == Trial.ERROR else None, earlier=True)
            for metric, mode in self.objectives:
                value = trial.metric_analysis.get(metric, {}).get(mode)
                if is_real(value):
                    self._best[metric] = _better(mode, self._best.get(metric), float(value))
                    if metric == self.objectives[0][0]:
                        self._rank(trial.trial_id, float(value))

    def _refresh(self, trials: list[Trial], final: bool = False) -> None:
        assert self._gauges is not None
        self._refreshed = time.monotonic()
        if not self._seen_earlier:
            self._earlier(trials)
        gauges = self._gauges
        # Only the started trials are looked at: what a refresh costs does not grow with the experiment.
        running: list[Trial] = []
        paused = 0
        for trial in list(self._started.values()):
            if trial.status in (Trial.TERMINATED, Trial.ERROR):  # ended with the run, which tells no hook
                self._end(trial, TrialStatus.ERROR if trial.status == Trial.ERROR else None)
            elif trial.status == Trial.RUNNING:
                running.append(trial)
            elif trial.status == Trial.PAUSED:
                paused += 1
        counts = {**self._ended_counts, RUNNING: len(running)}
        counts[TrialStatus.PAUSED.value] += paused
        counts[PENDING] = len(trials) - len(self._ended) - len(running) - paused
        if final:  # what waits when the run is over (--stop, the time budget) never starts
            counts[TrialStatus.NOT_STARTED.value] += counts[PENDING]
            counts[PENDING] = 0
        for state, count in counts.items():
            gauges["trials"].set(count, self._tags(state=state))
        if self._planned is not None:
            gauges["planned"].set(self._planned, self._tags())
        for metric, value in self._best.items():
            gauges["best"].set(value, self._tags(objective=metric))
        for reason, count in self._stop_counts.items():
            gauges["early_stops"].set(count, self._tags(reason=reason))
        for trial in running:
            last = trial.last_result or {}
            if isinstance(epoch := last.get("epoch"), numbers.Real):
                gauges["epoch"].set(float(epoch), self._tags(trial=trial.trial_id))
            for metric, value in loop_metrics(last).items():
                gauges["running_metric"].set(value, self._tags(trial=trial.trial_id, metric=metric))
        for rank, (value, trial_id) in enumerate(self._top, 1):
            gauges["top"].set(value, self._tags(trial=trial_id, rank=str(rank)))


DASHBOARD = Path(__file__).with_name("grafana_dashboard.json")
DASHBOARD_NAME = "tuner_grafana_dashboard.json"


def _beside_rays_dashboards() -> None:
    """tuner's dashboard copied where Ray writes its own for Grafana to provision, when that folder is on
    this machine (a local instance, or a driver on the head node): a Grafana started as Ray's docs say
    (`--config <session>/metrics/grafana/grafana.ini`) then lists it beside them."""
    session = private.session_dir()
    folder = None if session is None else Path(session) / "metrics" / "grafana" / "dashboards"
    if folder is not None and folder.is_dir():
        shutil.copyfile(DASHBOARD, folder / DASHBOARD_NAME)


def _make_gauges() -> dict[str, Any]:
    from ray.util.metrics import Counter, Gauge

    return {
        "trials": Gauge("tuner_trials", "Trials of the experiment by state", ("experiment", "state")),
        "planned": Gauge("tuner_trials_planned", "Trials the experiment asks for", ("experiment",)),
        "best": Gauge("tuner_best", "Best value so far of each objective", ("experiment", "objective")),
        "early_stops": Gauge("tuner_early_stops", "Trials stopped early, by why", ("experiment", "reason")),
        "epoch": Gauge("tuner_running_trial_epoch", "A running trial's last epoch", ("experiment", "trial")),
        "running_metric": Gauge(
            "tuner_running_trial_metric", "A running trial's last value of a metric", ("experiment", "trial", "metric")
        ),
        "top": Gauge(
            "tuner_top_trial", "The best trials' best value of the primary objective", ("experiment", "trial", "rank")
        ),
        "epochs": Counter("tuner_epochs", "Epochs reported by every trial", ("experiment",)),
    }


def _better(mode: str, old: float | None, new: float) -> float:
    if old is None:
        return new
    return max(old, new) if mode == "max" else min(old, new)
