"""What `tuner run` shows while trials run: one compact view, the thing a user watches for (trials done
out of the total, time left, the best trial so far), and one line per trial that ends.

A Ray Tune callback, because Ray 2.60's reporters (`ray.tune.experimental.output`) print a config box
per trial start, a result table per trial end and a full trial table every 30 s at their default
verbosity, and none of that can be switched off on its own; their only quieter level prints nothing.
On a terminal the status is one line redrawn in place (one line, so that whatever else prints in
between, a trial's own output or a Ray warning, is never overwritten); elsewhere (CI, a pipe,
`tuner submit --follow`) it is plain lines: a line per ended trial and a status line now and then.
"""

import shutil
import sys
import time
from collections.abc import Sequence
from typing import Any

from ray import tune
from ray.tune.experiment import Trial

from tuner.settings.budgets import format_duration
from tuner.spec.param_space import flatten

PLAIN_STATUS_PERIOD_S = 60.0  # a status line this often on a pipe, between trials' ends
REDRAW_PERIOD_S = 1.0  # on a terminal
_CLEAR_LINE = "\r\x1b[2K"


def _value(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


class LiveProgress(tune.Callback):
    """The live view, as a Tune callback. Tune pickles it with the run's config (and `tuner resume`
    restores it from there), so it holds no stream and keeps no state that `setup` does not reset."""

    def __init__(self, metric: str, mode: str, params: Sequence[str], epochs: int, time_budget_s: float | None):
        self.metric, self.mode, self.params, self.epochs = metric, mode, list(params), epochs
        self.time_budget_s = time_budget_s
        self.setup()

    # Tune's hooks

    def setup(
        self,
        stop: Any = None,
        num_samples: int | None = None,
        total_num_samples: int | None = None,
        **info: Any,
    ) -> None:
        self.total = total_num_samples if total_num_samples and total_num_samples < sys.maxsize else None
        self.started = time.monotonic()
        self.drawn = False  # the status line is on the screen, with no newline after it
        self.last_status = 0.0
        self.ended: dict[str, str] = {}  # trial id -> finished | stopped early | errored

    def on_step_end(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        now = time.monotonic()
        if sys.stdout.isatty() and now - self.last_status >= REDRAW_PERIOD_S:
            self._draw(trials)
        elif not sys.stdout.isatty() and now - self.last_status >= PLAIN_STATUS_PERIOD_S and trials:
            self._print(self._status(trials))
            self.last_status = now

    def on_trial_complete(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        self._trial_ended(trials, trial, "finished" if self._epochs_of(trial) >= self.epochs else "stopped early")

    def on_trial_error(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        self._trial_ended(trials, trial, "errored")

    def on_experiment_end(self, trials: list[Trial], **info: Any) -> None:
        if trials:
            self._print(self._status(trials))

    # What is shown

    def _how_it_ended(self, trial: Trial) -> str | None:
        if trial.trial_id in self.ended:  # Tune calls the hooks before it sets the trial's status
            return self.ended[trial.trial_id]
        if trial.status == Trial.ERROR:
            return "errored"
        if trial.status == Trial.TERMINATED:  # ended in an earlier run of a resumed experiment
            return "finished" if self._epochs_of(trial) >= self.epochs else "stopped early"
        return None

    def _trial_ended(self, trials: list[Trial], trial: Trial, how: str) -> None:
        self.ended[trial.trial_id] = how
        epochs = self._epochs_of(trial)
        said = {"stopped early": f"stopped early at epoch {epochs}", "errored": f"errored in epoch {epochs + 1}"}
        best = self._best_of(trial)
        score = f"  best {self.metric}={_value(best)}" if best is not None else ""
        done = sum(self._how_it_ended(each) is not None for each in trials)
        self._print(
            f"[{done}/{self.total or len(trials)}] {trial.trial_id} {said.get(how, how)}{score}  {self._config(trial)}"
        )
        if sys.stdout.isatty():
            self._draw(trials)

    def _status(self, trials: list[Trial]) -> str:
        ended = [how for trial in trials if (how := self._how_it_ended(trial)) is not None]
        running = sum(trial.status == Trial.RUNNING for trial in trials)
        total = self.total or len(trials)
        elapsed = time.monotonic() - self.started
        parts = [f"{len(ended)}/{total} trials done"]
        parts += [f"{ended.count(how)} {how}" for how in ("stopped early", "errored") if how in ended]
        parts += [
            f"{running} running",
            f"{total - len(ended) - running} waiting",
            f"{format_duration(elapsed)} elapsed",
        ]
        if (left := self._time_left(trials, elapsed)) is not None:
            parts.append(f"~{format_duration(left)} left")
        if (best := self._best(trials)) is not None:
            parts.append(f"best {best.trial_id} {self.metric}={_value(self._best_of(best))} {self._config(best)}")
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

    def _best(self, trials: list[Trial]) -> Trial | None:
        # By trial id: max/min keep the first of equal scores, so a tie goes to the lower id, as in the
        # report's ranking (tuner/results/report.py, rank).
        scored = sorted((trial for trial in trials if self._best_of(trial) is not None), key=lambda t: t.trial_id)
        if not scored:
            return None
        pick = max if self.mode == "max" else min
        return pick(scored, key=lambda trial: self._best_of(trial) or 0.0)  # scored: never None here

    def _config(self, trial: Trial) -> str:
        flat = flatten(trial.config)
        return ", ".join(f"{key}={_value(flat[key])}" for key in self.params if key in flat)

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
