"""TensorBoard's view of an experiment (`tensorboard --logdir <experiment>`): a run per trial, named by
its trial directory and its config, with the loop's metrics per epoch and nothing else.

Ray Tune's own TensorBoard logger (Ray adds it whenever tensorboardX is installed) writes every number
of a result under `ray/tune/`: its bookkeeping (done, should_checkpoint, iterations_since_restore, ...)
and tuner's (reported_at, diverged, world_size, ...) sort before the metrics, about 15 cards a trial,
and each run is named by the trial's directory alone. This subclass of it, handed to Ray in its place
(Ray adds its own only where none is given), keeps Ray's writers, its hparams summary at a trial's end
and its file handling, and changes what is written and where.
"""

import os
from collections.abc import Sequence

from ray.tune.experiment import Trial
from ray.tune.logger import TBXLoggerCallback
from ray.tune.result import TRAINING_ITERATION

from tuner.execution.console import shown_config
from tuner.execution.loop_metrics import loop_metrics
from tuner.spec.param_space import flatten

RUN_NAME_MAX = 120  # characters of the config in a run's folder name; a longer one ends in "..."


def run_name(trial: Trial, params: Sequence[str]) -> str:
    """`batch_size=64,hidden=32,lr=0.01`: the searched values of the trial's config, as a folder name."""
    shown = shown_config(flatten(trial.config), params, separator=",").replace("/", ".")
    shown = shown if len(shown) <= RUN_NAME_MAX else shown[: RUN_NAME_MAX - 3] + "..."
    return shown or "config"


class TrialsForTensorBoard(TBXLoggerCallback):
    def __init__(self, params: Sequence[str]) -> None:
        super().__init__()
        self.params = list(params)

    def log_trial_start(self, trial: Trial) -> None:
        if trial in self._trial_writer:
            self._trial_writer[trial].close()
        trial.init_local_path()
        assert trial.local_path is not None  # init_local_path made it
        folder = os.path.join(trial.local_path, run_name(trial, self.params))
        self._trial_writer[trial] = self._summary_writer_cls(folder, flush_secs=30)
        self._trial_result[trial] = {}

    def log_trial_result(self, iteration: int, trial: Trial, result: dict) -> None:
        if trial not in self._trial_writer:
            self.log_trial_start(trial)
        step = result.get("epoch") or result[TRAINING_ITERATION]
        metrics = loop_metrics(result)
        for key, value in metrics.items():
            self._trial_writer[trial].add_scalar(key, value, global_step=step)
        self._trial_result[trial] = metrics  # Ray's log_trial_end writes these with the config as hparams
        self._trial_writer[trial].flush()
