"""Keep every result row of a trial that restarts from a checkpoint.

Ray Tune's loggers write `result.json` and `progress.csv` into a staging directory on the driver and
sync it to the storage path only now and then. When a trial starts again from a checkpoint (a retry
after its process died, a PBT exploit, a resumed pause), the loggers first copy the storage copy back
over the staging one, so the rows written since the last sync are lost: a trial killed right after its
epoch-11 checkpoint went on at epoch 12 with no epoch-11 row. Uploading the staging files just before
the loggers restore them makes the copy they restore from complete.

A resume has no staging copy: it restores from what storage holds. Ray uploads its experiment state and
every trial's files in one parallel copy, so a copy cut short (an object store that went away, a driver
killed) could leave a state that resumes a trial from a checkpoint whose rows never reached storage: a
resume against a store stopped mid-run lost an epoch's row. So the rows of every trial that reported
since the last snapshot go to storage first, before Ray uploads the state that counts on them. Only
those: a snapshot's cost follows the trials that reported since the last one, not the experiment's size.
"""

from pathlib import Path
from typing import Any

import pyarrow.fs
from ray import tune
from ray.tune.experiment import Trial
from ray.tune.result import EXPR_PROGRESS_FILE, EXPR_RESULT_FILE

# The files Ray's JSON and CSV loggers restore from storage when a trial restarts.
RESTORED_FILES = (EXPR_RESULT_FILE, EXPR_PROGRESS_FILE)


class KeepResultRows(tune.Callback):
    """Must come before Ray's own loggers; user callbacks do, since Ray appends its loggers after them."""

    def __init__(self) -> None:
        # The trials that reported since the last snapshot, in the order they first did (a dict: ordered,
        # and each trial once however often it reported).
        self._reported: dict[str, Trial] = {}

    def on_trial_result(self, iteration: int, trials: list[Trial], trial: Trial, result: dict, **info: Any) -> None:
        self._reported[trial.trial_id] = trial

    def on_trial_start(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        if trial.checkpoint is None:
            return  # a first start: the loggers restore nothing
        # The staging copy holds every row this driver wrote, and on a driver that has not run the
        # trial yet it does not exist, so it is never older than the copy in storage.
        self._upload(trial)

    def get_state(self) -> None:
        """Ray calls this at every snapshot, right after writing its state file and before uploading it."""
        while self._reported:
            trial_id, trial = next(iter(self._reported.items()))
            try:
                self._upload(trial)
            except OSError:
                break  # the storage fails: Ray's upload of the state right after fails alike, and says so
            del self._reported[trial_id]
        return None  # nothing to save: a resumed driver starts afresh

    def _upload(self, trial: Trial) -> None:
        if trial.local_path is None or trial.storage is None:
            return  # not started yet: no rows
        for name in RESTORED_FILES:
            staged = Path(trial.local_path, name)
            if not staged.exists():
                continue
            pyarrow.fs.copy_files(
                str(staged),
                f"{trial.storage.trial_fs_path}/{name}",
                destination_filesystem=trial.storage.storage_filesystem,
            )
