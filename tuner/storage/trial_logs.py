"""Keep every result row of a trial that restarts from a checkpoint.

Ray Tune's loggers write `result.json` and `progress.csv` into a staging directory on the driver and
sync it to the storage path only now and then. When a trial starts again from a checkpoint (a retry
after its process died, a PBT exploit, a resumed pause), the loggers first copy the storage copy back
over the staging one, so the rows written since the last sync are lost: a trial killed right after its
epoch-11 checkpoint went on at epoch 12 with no epoch-11 row. Uploading the staging files just before
the loggers restore them makes the copy they restore from complete.
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

    def on_trial_start(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        if trial.checkpoint is None:
            return  # a first start: the loggers restore nothing
        # The staging copy holds every row this driver wrote, and on a driver that has not run the
        # trial yet it does not exist, so it is never older than the copy in storage.
        assert trial.local_path is not None and trial.storage is not None, "Tune sets both before a trial starts"
        for name in RESTORED_FILES:
            staged = Path(trial.local_path, name)
            if staged.is_file():
                pyarrow.fs.copy_files(
                    str(staged),
                    f"{trial.storage.trial_fs_path}/{name}",
                    destination_filesystem=trial.storage.storage_filesystem,
                )
