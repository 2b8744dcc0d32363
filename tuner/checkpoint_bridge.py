"""Hands a multi-worker trial's checkpoints from Ray Train V2 to Ray Tune, so that every trial, on one
worker or many, keeps its checkpoints where Tune does: PBT's exploit, a retry after a failure,
`tuner resume` and tuner's checkpoint retention then work the same for all of them.

Ray 2.60's own bridge (`ray.tune.integration.ray_train.TuneReportCallback`) forwards rank 0's metrics
and only the checkpoint's *path*: Tune registers no checkpoint, so PBT has nothing to copy and a
resumed trial nothing to restore (the Train run resumed only by its own name, which a PBT recipient
keeps). Here a Train callback, which runs in the Train controller, puts each report (rank 0's metrics
and the persisted checkpoint) on a Ray queue and waits until the Tune trial has reported it to Tune
with a copy of the checkpoint; only then may Train's retention (`num_to_keep=1`) delete it. The Train
run is a staging area: named afresh for every fit, restored from the Tune checkpoint that the trial
hands in, and deleted when the fit ends. When a Ray release makes TuneReportCallback register Tune
checkpoints, this file can go.
"""

import queue
import threading
from typing import Any

import ray.train
from ray import tune
from ray.train.v2.api.callback import UserCallback
from ray.util.queue import Empty, Queue

_POLL_S = 0.5
_STOP = "stop"  # what the trial answers instead of "taken" when Tune has stopped it


class TrialStopped(Exception):
    """Raised in the Train controller when Tune stopped the trial: it ends the Train run."""


class ForwardToTune(UserCallback):
    """Runs in the Train controller: each report goes to the Tune trial, which answers once it holds a
    copy of the checkpoint."""

    def __init__(self, reports: Queue, answers: Queue):
        self.reports, self.answers = reports, answers

    def after_report(self, run_context: Any, metrics: list[dict[str, Any]], checkpoint: ray.train.Checkpoint | None) -> None:
        self.reports.put((metrics[0], checkpoint))
        if self.answers.get() == _STOP:
            raise TrialStopped("Ray Tune stopped the trial")


def fit_reporting_to_tune(trainer: Any, reports: Queue, answers: Queue) -> None:
    """Runs `trainer.fit()` (built with `ForwardToTune(reports, answers)`) and reports each of its results
    to Tune from this, the trial's own thread, which is where `tune.report` must be called."""
    failure: list[BaseException] = []
    done = threading.Event()

    def fit() -> None:
        try:
            trainer.fit()
        except BaseException as error:  # re-raised in the trial's thread below
            failure.append(error)
        finally:
            done.set()

    threading.Thread(target=fit, name="tuner-train-fit", daemon=True).start()
    answered = True
    try:
        while not (done.is_set() and reports.empty()):
            try:
                metrics, checkpoint = reports.get(timeout=_POLL_S)
            except (Empty, queue.Empty):
                continue
            answered = False
            if checkpoint is None:
                tune.report(metrics)
            else:
                with checkpoint.as_directory() as directory:
                    tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(directory))
            answers.put("taken")
            answered = True
    finally:
        if not answered:  # tune.report ended this thread: Tune stopped the trial (or the run is ending)
            answers.put(_STOP)
    if failure:
        raise failure[0]
