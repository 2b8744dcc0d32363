"""What `tuner run` shows while trials run: one compact view, the thing a user watches for (trials done
out of the total, time left, the best trial so far), and one line per trial that ends.

A Ray Tune callback, because Ray 2.60's reporters (`ray.tune.experimental.output`) print a config box
per trial start, a result table per trial end and a full trial table every 30 s at their default
verbosity, and none of that can be switched off on its own; their only quieter level prints nothing.
On a terminal the status is one line redrawn in place (one line, so that whatever else prints in
between, a trial's own output or a Ray warning, is never overwritten); elsewhere (CI, a pipe,
`tuner submit --follow`) it is plain lines: a line per ended trial and a status line now and then.
Past TRIAL_LINES ended trials, only a trial that becomes the best gets a line of its own: the status
line counts the rest, so 10,000 trials do not print 10,000 lines. What runs at every trial's end
costs the same however many trials came before (the best and the counts are kept as trials end).

Its counts and its best trial mean what the summary, `tuner list` and `tuner report` mean
(tuner/trial_status.py): the total is the experiment's, started or not; a trial running when the run
ended is "incomplete" after Ctrl-C and "stopped early" when --stop or the time budget ended the run
(then a last line says which); the best is the best of the trials that count towards it (SCORED), so
it is always a trial the summary ranks.
"""

import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ray import tune
from ray.tune.experiment import Trial

from tuner.settings.budgets import (
    StopCondition,
    format_duration,
    parse_duration,
    parse_stop,
    stop_reached,
    time_budget_reached,
)
from tuner.settings.objectives import Constraint
from tuner.spec.param_space import flatten
from tuner.trial_status import SCORED, TrialStatus

PLAIN_STATUS_PERIOD_S = 60.0  # a status line this often on a pipe, between trials' ends
TRIAL_LINES = 100  # ended trials shown a line each; after them, only a new best is
REDRAW_PERIOD_S = 1.0  # on a terminal
_CLEAR_LINE = "\r\x1b[2K"
FINISHED, STOPPED_EARLY, PAUSED = TrialStatus.FINISHED, TrialStatus.STOPPED_EARLY, TrialStatus.PAUSED
DIVERGED, ERROR = TrialStatus.DIVERGED, TrialStatus.ERROR
INCOMPLETE, NOT_STARTED = TrialStatus.INCOMPLETE, TrialStatus.NOT_STARTED


def _value(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def shown_config(config: dict[str, Any], params: Sequence[str], separator: str = ", ") -> str:
    """`batch_size=64, hidden=32, lr=0.003`: the searched values of a (flat) config, floats to 4 digits."""
    return separator.join(f"{key}={_value(config[key])}" for key in params if key in config)


@dataclass(frozen=True)
class EarlierTrials:
    """The trials of the experiment's earlier Ray runs, which an `extend` run does not see (each is a Ray
    run of its own): counted and ranked with its own, so that the view speaks of the whole experiment,
    as the summary does. They have all ended (an experiment is extended only then)."""

    ended: dict[TrialStatus, int] = field(default_factory=dict)  # how each ended -> trials
    best: tuple[float, str, str] | None = None  # (best score, trial id, its config as shown)
    best_feasible: bool = True  # whether that trial meets the constraints (the report ranks those first)

    @property
    def total(self) -> int:
        return sum(self.ended.values())

    @classmethod
    def of(
        cls,
        ended: dict[TrialStatus, int],
        best: tuple[float, str, dict[str, Any]] | None,
        best_feasible: bool = True,
    ) -> "EarlierTrials":
        """From the report's counts (status -> trials) and its best trial (score, id, config)."""
        if best is None:
            return cls(ended)
        score, trial_id, config = best
        return cls(ended, (score, trial_id, shown_config(config, list(config))), best_feasible)


class LiveProgress(tune.Callback):
    """The live view, as a Tune callback. Tune pickles it with the run's config (and `tuner resume`
    restores it from there), so it holds no stream and keeps no state that `setup` does not reset."""

    def __init__(
        self,
        metric: str,
        mode: str,
        params: Sequence[str],
        epochs: int,
        time_budget: str | None = None,
        stop: str | None = None,
        gpu_sharing: str | None = None,
        earlier_trials: EarlierTrials | None = None,
        constraints: Sequence[Constraint] = (),
    ):
        self.metric, self.mode, self.params, self.epochs = metric, mode, list(params), epochs
        # The best trial shown is the report's: of those meeting the constraints, if any do.
        self.constraints = tuple(constraints)
        self.time_budget, self.stop = time_budget, stop
        self.gpu_sharing = gpu_sharing  # "4 trials per GPU" when trials share GPUs
        self.earlier_trials = earlier_trials or EarlierTrials()
        self.setup()

    @property
    def time_budget_s(self) -> float | None:
        return parse_duration(self.time_budget) if self.time_budget is not None else None

    @property
    def stop_condition(self) -> StopCondition | None:
        return parse_stop(self.stop) if self.stop is not None else None

    # Tune's hooks

    def setup(
        self,
        stop: Any = None,
        num_samples: int | None = None,
        total_num_samples: int | None = None,
        **info: Any,
    ) -> None:
        self.total = total_num_samples if total_num_samples and total_num_samples < sys.maxsize else None
        # Restored from an experiment that an older tuner started, which kept no words for these.
        vars(self).setdefault("time_budget", None)
        vars(self).setdefault("stop", None)
        vars(self).setdefault("gpu_sharing", None)
        vars(self).setdefault("earlier_trials", EarlierTrials())
        vars(self).setdefault("constraints", ())
        self.started = time.monotonic()
        self.drawn = False  # the status line is on the screen, with no newline after it
        self.last_status = 0.0
        self.ended: dict[str, TrialStatus] = {}  # trial id -> how it ended
        self.earlier: dict[str, TrialStatus] = {}  # the same, for trials that ended in an earlier run (a resume)
        self.reached_by: str | None = None  # the first trial to report a result that meets --stop
        self.final: str | None = None  # the run is over: what ended it in words, or "" when no budget did
        self.best: tuple[float, str, str] | None = None  # of the trials that ended in this run and count
        self.best_feasible = False  # whether that trial meets the constraints
        self.earlier_seen = False  # the trials a resumed run starts with have been looked at

    def on_step_begin(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        # A resumed run's trials are all there at its first step; later steps only add new ones.
        if self.earlier_seen:
            return
        self.earlier_seen = True
        for trial in trials:
            if trial.trial_id not in self.earlier and trial.trial_id not in self.ended:
                if trial.status == Trial.ERROR:
                    self.earlier[trial.trial_id] = ERROR
                elif trial.status == Trial.TERMINATED:
                    self.earlier[trial.trial_id] = self._completed(trial)
                    self._count_towards_best(trial, self.earlier[trial.trial_id])

    def on_trial_result(self, iteration: int, trials: list[Trial], trial: Trial, result: dict, **info: Any) -> None:
        condition = self.stop_condition
        if condition is not None and self.reached_by is None:
            score = result.get(condition.metric)
            if isinstance(score, (int, float)) and condition.reached(score):
                self.reached_by = trial.trial_id

    def on_step_end(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        now = time.monotonic()
        if sys.stdout.isatty() and now - self.last_status >= REDRAW_PERIOD_S:
            self._draw(trials)
        elif not sys.stdout.isatty() and now - self.last_status >= PLAIN_STATUS_PERIOD_S and trials:
            self._print(self._status(trials))
            self.last_status = now

    def on_trial_complete(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        self._trial_ended(trials, trial, self._completed(trial))

    def on_trial_error(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        self._trial_ended(trials, trial, ERROR)

    def on_experiment_end(self, trials: list[Trial], **info: Any) -> None:
        # Tune ends the trials still running (Ctrl-C, --stop, the time budget) without the hooks above.
        self.final = self._stopped_by(trials)
        if trials:
            self._print(self._status(trials))
        if self.final:
            self._print(f"stopped: {self.final}")

    # What is shown

    def _completed(self, trial: Trial) -> TrialStatus:
        if self._epochs_of(trial) == 0:  # --stop or the time budget ended it while it waited
            return NOT_STARTED
        if trial.last_result and trial.last_result.get("diverged") in (True, 1):
            return DIVERGED
        return FINISHED if self._epochs_of(trial) >= self.epochs else STOPPED_EARLY

    def _stopped_by(self, trials: list[Trial]) -> str:
        """What ended the run when it was --stop or the time budget, as tuner/execution/tune_run.py
        records it for the summary; "" otherwise."""
        cut_short = len(trials) < (self.total or 0) or any(self._how_it_ended(trial) is None for trial in trials)
        if not cut_short:  # every trial ended by itself: nothing was stopped
            return ""
        if self.stop is not None and self.reached_by is not None:
            return stop_reached(self.stop, self.reached_by)
        budget = self.time_budget_s
        # Tune's clock for the budget starts before this callback's setup, a moment earlier than ours.
        if self.time_budget is not None and budget is not None and time.monotonic() - self.started >= budget - 2.0:
            return time_budget_reached(self.time_budget)
        return ""

    def _how_it_ended(self, trial: Trial) -> TrialStatus | None:
        if trial.trial_id in self.ended:  # Tune calls the hooks before it sets the trial's status
            return self.ended[trial.trial_id]
        if trial.trial_id in self.earlier:
            return self.earlier[trial.trial_id]
        if trial.status == Trial.ERROR:
            return ERROR
        if self.final is None:
            return None
        # The run is over; as the report names these (tuner/results/report.py, _status).
        if trial.status == Trial.PAUSED:
            return PAUSED
        if self._epochs_of(trial) == 0:  # Ray's last_result is never empty: only a report has an epoch
            return NOT_STARTED
        # Still running when the run ended, which Tune ends without the hooks above: --stop and the time
        # budget end them before Ray saves its state (TERMINATED: stopped early in the report), Ctrl-C
        # after (RUNNING: incomplete).
        return STOPPED_EARLY if self.final else INCOMPLETE

    def _trial_ended(self, trials: list[Trial], trial: Trial, how: TrialStatus) -> None:
        self.ended[trial.trial_id] = how
        self.earlier.pop(trial.trial_id, None)  # errored in an earlier run, and run again in this one
        new_best = self._count_towards_best(trial, how)
        shown = len(self.ended)
        if shown <= TRIAL_LINES or new_best:
            epochs = self._epochs_of(trial)
            said = {STOPPED_EARLY: f"stopped early at epoch {epochs}", ERROR: f"errored in epoch {epochs + 1}"}
            best = self._best_of(trial)
            score = f"  best {self.metric}={_value(best)}" if best is not None else ""
            done = self.earlier_trials.total + len(self.ended) + len(self.earlier)
            total = self.earlier_trials.total + (self.total or len(trials))
            mark = "  (new best)" if new_best and shown > TRIAL_LINES else ""
            self._print(f"[{done}/{total}] {trial.trial_id} {said.get(how, how)}{score}  {self._config(trial)}{mark}")
        if shown == TRIAL_LINES and (self.total or 0) > TRIAL_LINES:
            self._print(
                "(from here on a trial gets a line only when it becomes the best; the status line counts the "
                "rest, and `tuner report` lists every trial)"
            )
        if sys.stdout.isatty() and time.monotonic() - self.last_status >= REDRAW_PERIOD_S:
            self._draw(trials)

    def _count_towards_best(self, trial: Trial, how: TrialStatus) -> bool:
        """Whether the trial, just ended, is the best so far; kept as trials end, so that the live view
        never ranks every trial again. A tie goes to the lower trial id, as in the report's ranking."""
        if how not in SCORED or (score := self._best_of(trial)) is None:
            return False
        feasible = self._feasible(trial)
        if self.best is not None:
            # Ranked as the report ranks: meeting the constraints first, then by the score in its mode.
            key, best_key = (feasible, self._oriented(score)), (self.best_feasible, self._oriented(self.best[0]))
            if key < best_key or (key == best_key and trial.trial_id > self.best[1]):
                return False
        self.best, self.best_feasible = (score, trial.trial_id, self._config(trial)), feasible
        return True

    def _oriented(self, score: float) -> float:
        """The score with higher better, whatever the mode."""
        return score if self.mode == "max" else -score

    def _feasible(self, trial: Trial) -> bool:
        """Whether the trial's last reported metrics meet every constraint, as the report judges it."""
        result = trial.last_result or {}
        return all(constraint.satisfied(result.get(constraint.metric)) for constraint in self.constraints)

    def _status(self, trials: list[Trial]) -> str:
        hows = [how for trial in trials if (how := self._how_it_ended(trial)) is not None]
        unfinished = (INCOMPLETE, NOT_STARTED)
        ended = [how for how in hows if how not in unfinished]
        total = max(self.total or 0, len(trials))
        elapsed = time.monotonic() - self.started
        earlier = self.earlier_trials
        parts = [f"{earlier.total + len(ended)}/{earlier.total + total} trials done"]
        shown = (STOPPED_EARLY, PAUSED, DIVERGED, ERROR)
        parts += [f"{count} {how}" for how in shown if (count := ended.count(how) + earlier.ended.get(how, 0))]
        if self.final is not None:  # the run is over: nothing runs or waits any more
            if incomplete := hows.count(INCOMPLETE):
                parts.append(f"{incomplete} {INCOMPLETE}")
            if not_started := total - len(hows) + hows.count(NOT_STARTED):
                parts.append(f"{not_started} {NOT_STARTED}")
            parts.append(f"{format_duration(elapsed)} elapsed")
        else:
            running = sum(trial.status == Trial.RUNNING for trial in trials)
            parts += [
                f"{running} running" + (f" ({self.gpu_sharing})" if self.gpu_sharing else ""),
                f"{total - len(ended) - running} waiting",
                f"{format_duration(elapsed)} elapsed",
            ]
            if (left := self._time_left(trials, elapsed)) is not None:
                parts.append(f"~{format_duration(left)} left")
        if (best := self._best(trials)) is not None:
            score, trial_id, config = best
            parts.append(f"best {trial_id} {self.metric}={_value(score)} {config}")
        return " · ".join(parts)

    def _time_left(self, trials: list[Trial], elapsed: float) -> float | None:
        """From the epochs still to run at the rate epochs have run so far; capped by the time budget."""
        done = sum(self._epochs_of(trial) for trial in trials)
        if not done or not self.total:
            left = None
        else:
            to_run = sum(self.epochs - self._epochs_of(trial) for trial in trials if self._how_it_ended(trial) is None)
            to_run += self.epochs * max(0, self.total - len(trials))
            left = to_run * elapsed / done
        if self.time_budget_s is not None:
            budget_left = max(0.0, self.time_budget_s - elapsed)
            left = budget_left if left is None else min(left, budget_left)
        return left

    def _epochs_of(self, trial: Trial) -> int:
        return int(trial.last_result.get("epoch", 0) or 0) if trial.last_result else 0

    def _best_of(self, trial: Trial) -> float | None:
        analysis = trial.metric_analysis.get(self.metric)
        return analysis[self.mode] if analysis else None

    def _best(self, trials: list[Trial]) -> tuple[float, str, str] | None:
        """(score, trial id, config) of the best trial so far, this run's and the earlier runs'. Of the
        trials whose scores count, as the summary ranks them (SCORED). By trial id: max/min keep the
        first of equal scores, so a tie goes to the lower id, as in the report's ranking
        (tuner/results/report.py, rank). While the run lasts, of the trials that ended (kept as they
        end); once it is over, paused trials count too, which only the end can tell."""
        if self.final is None:
            scored = [(self.best_feasible, self.best)] if self.best is not None else []
        else:
            counted = [trial for trial in trials if self._how_it_ended(trial) in SCORED]
            scored = [
                (self._feasible(trial), (score, trial.trial_id, self._config(trial)))
                for trial in counted
                if (score := self._best_of(trial)) is not None
            ]
        if self.earlier_trials.best is not None:
            scored.append((self.earlier_trials.best_feasible, self.earlier_trials.best))
        if any(feasible for feasible, _ in scored):
            scored = [(feasible, best) for feasible, best in scored if feasible]
        if not scored:
            return None
        pick = max if self.mode == "max" else min
        return pick(sorted((best for _, best in scored), key=lambda best: best[1]), key=lambda best: best[0])

    def _config(self, trial: Trial) -> str:
        return shown_config(flatten(trial.config), self.params)

    # Drawing

    def _print(self, line: str) -> None:
        print((_CLEAR_LINE if self.drawn else "") + line, flush=True)
        self.drawn = False

    def _draw(self, trials: list[Trial]) -> None:
        width = shutil.get_terminal_size().columns
        line = self._status(trials)
        line = line if len(line) < width else line[: width - 2] + "…"  # a wrapped line cannot be redrawn
        print(_CLEAR_LINE + line, end="", flush=True)
        self.drawn = True
        self.last_status = time.monotonic()
