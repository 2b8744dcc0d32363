"""A trial that has ended leaves the driver's staging directory once its files are in storage.

Ray Tune's loggers write each trial's files (result.json, progress.csv, params, TensorBoard events, an
error file) into a staging directory on the driver, and at every experiment snapshot Ray copies that
whole directory to storage again, every file of every trial the experiment has had. An ended trial's
files never change again, yet each snapshot copies them: at 3,000 trials most of the driver's time
beyond Ray's own loop went to copying unchanged files (bench/scale.py, docs/benchmarks.md "Performance"). So at a
snapshot, each trial that ended since is copied to storage once, whole, and its staging directory is
deleted: the snapshots' copies then follow the trials still running, not the experiment's size.

Only while no copy of Ray's runs: one that is still copying could find a file gone and fail (Ray logs
it with a traceback). Nothing reads an ended trial's staging copy again: a trial that restarts later
(`tuner resume` of an errored one) has its loggers restore its files from storage, as on a new driver.
"""

import shutil
from pathlib import Path
from typing import Any

import pyarrow.fs
from ray import tune
from ray.tune.experiment import Trial

from tuner.ray_compat import private


class EndedTrialsLeaveTheSync(tune.Callback):
    """Must come before KeepResultRows (which uploads the rows of trials that reported, and finds an
    ended trial's staging copy already gone) and so before Ray's loggers, which come after every
    callback tuner passes."""

    def __init__(self) -> None:
        self._ended: dict[str, Trial] = {}  # since the last snapshot that could take them out

    def on_trial_complete(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        self._ended[trial.trial_id] = trial

    def on_trial_error(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        self._ended[trial.trial_id] = trial

    def get_state(self) -> None:
        """Ray calls this at every snapshot, after its loggers have closed the ended trials' files and
        before it starts its own copy to storage."""
        if not self._ended:
            return None
        storage = next(iter(self._ended.values())).storage
        if storage is None or private.sync_in_progress(storage.syncer):
            return None  # the next snapshot takes them out
        while self._ended:
            trial_id, trial = next(iter(self._ended.items()))
            try:
                self._take_out(trial)
            except OSError:
                break  # the storage fails: Ray's copy right after fails alike, and says so
            del self._ended[trial_id]
        return None  # nothing to save: a resumed driver starts afresh

    def _take_out(self, trial: Trial) -> None:
        if trial.local_path is None or trial.storage is None or not Path(trial.local_path).is_dir():
            return
        pyarrow.fs.copy_files(
            trial.local_path, trial.storage.trial_fs_path, destination_filesystem=trial.storage.storage_filesystem
        )
        shutil.rmtree(trial.local_path, ignore_errors=True)
