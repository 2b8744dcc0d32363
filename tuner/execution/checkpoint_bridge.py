"""Hands a multi-worker trial's reports and checkpoints from Ray Train V2 to Ray Tune, and Tune's
decision back to the workers, so that every trial, on one worker or many, keeps its checkpoints where
Tune does and stops when Tune says: PBT's exploit, a retry after a failure, `tuner resume`, a
scheduler's early stop and tuner's checkpoint retention then work the same for all of them.

Ray 2.60's own bridge (`ray.tune.integration.ray_train.TuneReportCallback`) forwards rank 0's metrics
and only the checkpoint's *path*: Tune registers no checkpoint, so PBT has nothing to copy and a
resumed trial nothing to restore (the Train run resumed only by its own name, which a PBT recipient
keeps). Here:

- a Train callback (`ForwardToTune`, in the Train controller) puts each report, rank 0's metrics and
  the persisted checkpoint, in the trial's `Mailbox` (an actor, tuner/execution/mailbox.py);
- the Tune trial (`TrainRun`) takes it and calls `tune.report` with a copy of the checkpoint from its
  own thread, then answers "go on", or "stop" when Tune stopped or paused the trial;
- every rank waits for that answer after each report (`tune_lets_training_go_on`), as an in-process
  trial waits in `tune.report`. So no new checkpoint exists before Tune has its copy of the last one
  (Train's `num_to_keep=1` is safe), and a stopped trial's ranks return from the loop: the Train run
  ends as a finished run, which releases its worker group itself.

When a Ray release makes TuneReportCallback register Tune checkpoints, this file can go.
"""

import threading
from collections.abc import Callable
from typing import Any

import ray.train
import torch.distributed as dist
from ray import tune
from ray.actor import ActorHandle
from ray.train.v2.api.callback import UserCallback

_GO_ON, _STOP = "go on", "stop"
# How long a stopping trial's actor waits for its Train run to end by itself: a run mid-epoch ends at
# its next report. Past this the actor exits anyway; Ray Train's PlacementGroupCleaner then frees the
# worker group (through the State API, see tuner/execution/cluster.py).
END_TIMEOUT_S = 120.0


class TrialStopped(BaseException):
    """Raised on every rank when Tune has stopped the trial. A BaseException, as Tune's own SystemExit
    in tune.report is, so that a loop's `except Exception` does not swallow it."""


class ForwardToTune(UserCallback):
    """Runs in the Train controller: each report goes to the Tune trial."""

    def __init__(self, mailbox: ActorHandle):
        self.mailbox = mailbox

    def after_report(
        self, run_context: Any, metrics: list[dict[str, Any]], checkpoint: ray.train.Checkpoint | None
    ) -> None:
        ray.get(self.mailbox.put_report.remote((metrics[0], checkpoint)))


def tune_lets_training_go_on(mailbox: ActorHandle) -> bool:
    """Called by every rank right after its `ray.train.report`: rank 0 waits for the trial's answer to
    that report and passes it to the others."""
    answer = [ray.get(mailbox.next_answer.remote()) if dist.get_rank() == 0 else None]
    dist.broadcast_object_list(answer, src=0)
    return answer[0] == _GO_ON


class TrainRun:
    """The trial's side: runs `trainer.fit()` (built with `ForwardToTune(mailbox)`, its workers answered
    through the same mailbox), then `after_fit`, in a thread, and reports each of the run's results to
    Tune from the trial's own thread, which is where `tune.report` must be called."""

    def __init__(self, trainer: Any, mailbox: ActorHandle, after_fit: Callable[[], None]):
        self.trainer, self.mailbox, self.after_fit = trainer, mailbox, after_fit
        self.stopping = threading.Event()  # set when Tune stops the trial's actor
        self._failure: list[BaseException] = []
        self._fit = threading.Thread(target=self._fit_trainer, name="tuner-train-fit", daemon=True)

    def _fit_trainer(self) -> None:
        try:
            self.trainer.fit()
        except BaseException as error:  # re-raised in the trial's thread by run()
            self._failure.append(error)
        finally:
            try:
                self.after_fit()
            finally:
                self.mailbox.end.remote()  # every report was put before fit() returned

    def run(self) -> None:
        self._fit.start()
        answered = True
        try:
            while (report := ray.get(self.mailbox.next_report.remote())) is not None:
                metrics, checkpoint = report
                answered = False
                if self.stopping.is_set():  # Tune has let go of this trial: nothing to report to
                    break
                if checkpoint is None:
                    tune.report(metrics)
                else:
                    with checkpoint.as_directory() as directory:
                        tune.report(metrics, checkpoint=tune.Checkpoint.from_directory(directory))
                ray.get(self.mailbox.put_answer.remote(_GO_ON))
                answered = True
        finally:
            if not answered:  # tune.report raised SystemExit: Tune stopped or paused the trial
                ray.get(self.mailbox.put_answer.remote(_STOP))
        if self._failure:
            raise self._failure[0]

    def wait_until_ended(self) -> None:
        """Tune is stopping the trial's actor (set `stopping` first, then let Tune wake the trial's
        thread): let the Train run end by itself before the actor goes, since a Train controller that
        dies with the actor leaves its worker group's resources reserved."""
        self._fit.join(timeout=END_TIMEOUT_S)
