"""Delete old trial checkpoints only once no saved experiment state can still point at them.

Ray's own retention (`CheckpointConfig(num_to_keep)`) deletes a checkpoint the moment a newer one is
registered, while the experiment state in storage, which `tuner resume` restores from, is synced
later. A driver killed in between leaves a state whose latest checkpoint is gone, and the resumed trial
fails with "Could not recover from checkpoint as it does not exist on storage anymore" (seen with
fast epochs in the seeded-kill test). So during a run an old checkpoint goes only once a state that
no longer points at it is in storage; once Tuner.fit has returned, Ray has synced its final state,
and only the checkpoint it points at stays for each trial.
"""

from typing import Any

import pyarrow.fs
from ray import tune
from ray.tune.experiment import Trial

KEEP = 2  # the newest checkpoints of a trial, whatever their age
SNAPSHOTS = 3  # experiment-state snapshots to wait before an older checkpoint goes
PREFIX = "checkpoint_"


def _checkpoint_dirs(fs: pyarrow.fs.FileSystem, trial_path: str) -> list[str]:
    """Oldest first: Ray names them checkpoint_000000, checkpoint_000001, ..."""
    entries = fs.get_file_info(pyarrow.fs.FileSelector(trial_path, allow_not_found=True))
    return sorted(e.path for e in entries if e.type == pyarrow.fs.FileType.Directory and e.base_name.startswith(PREFIX))


class RetireCheckpoints(tune.Callback):
    """Retires a checkpoint once SNAPSHOTS experiment-state snapshots have been taken since it stopped
    being one of its trial's newest KEEP: the later ones point past it, and Ray syncs each to storage
    before it takes the next unless that sync is still running (snapshots are seconds apart; a sync
    of the state takes milliseconds on a local disk). Ray calls get_state at every snapshot, after
    writing the state."""

    def __init__(self) -> None:
        self._trials: dict[str, tuple[pyarrow.fs.FileSystem, str]] = {}  # trial id -> (fs, trial path)
        self._snapshots = 0
        self._old_since: dict[str, int] = {}  # checkpoint path -> snapshots taken before it was old

    def on_checkpoint(self, iteration: int, trials: list[Trial], trial: Trial, checkpoint: Any, **info: Any) -> None:
        self._trials[trial.trial_id] = (trial.storage.storage_filesystem, trial.storage.trial_fs_path)

    def get_state(self) -> None:
        self._snapshots += 1
        for fs, trial_path in self._trials.values():
            for path in _checkpoint_dirs(fs, trial_path)[:-KEEP]:
                if self._snapshots - self._old_since.setdefault(path, self._snapshots) >= SNAPSHOTS:
                    fs.delete_dir(path)
                    del self._old_since[path]
        return None  # nothing to save: a resumed driver starts counting afresh


def retire_after_fit(results: tune.ResultGrid) -> None:
    """Keep only the checkpoint Ray's final state points at for each trial (a trial's newest
    checkpoint on storage can be one its driver never registered, when a run was interrupted)."""
    for result in results:
        if result.checkpoint is None:
            continue
        fs, kept = result.checkpoint.filesystem, result.checkpoint.path
        for path in _checkpoint_dirs(fs, result.path):
            if path != kept:
                fs.delete_dir(path)
