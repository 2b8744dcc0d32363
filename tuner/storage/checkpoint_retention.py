"""Delete old trial checkpoints only once no experiment state in storage can point at them.

Ray's own retention (`CheckpointConfig(num_to_keep)`) deletes a checkpoint the moment a newer one is
registered, while the experiment state in storage, which `tuner resume` restores from, is synced
later. A driver killed in between leaves a state whose latest checkpoint is gone, and the resumed trial
fails with "Could not recover from checkpoint as it does not exist on storage anymore" (seen with
fast epochs in the seeded-kill test).

So tuner retires checkpoints itself. At each state snapshot it notes the checkpoint each trial's state
points at and a digest of the state file, and it compares the storage copy of that file with those
digests to learn exactly which snapshot storage holds. A checkpoint goes once it is older than its
trial's latest, is not one of the newest KEEP, and no snapshot from the stored one onwards points at it.
A storage that stops taking the state (a full disk) therefore keeps what its last state points at, and
fast epochs do not pile up checkpoints between snapshots. A snapshot looks only at the trials that may
still have a checkpoint to retire (one saved since, or one kept back so far), not at every trial. Once
Tuner.fit has returned, Ray has synced its final state, and only the checkpoint it points at stays for
each trial.
"""

import fnmatch
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow.fs
from ray import tune
from ray.tune.experiment import Trial

from tuner.storage.saved_state import EXPERIMENT_STATE

KEEP = 2  # the newest checkpoints of a trial, whatever their age
PREFIX = "checkpoint_"


@dataclass
class _Snapshots:
    """Consecutive state snapshots merged into one: any of them may be the one storage holds."""

    digests: set[str] = field(default_factory=set)
    points_at: set[str] = field(default_factory=set)  # checkpoint paths


def _checkpoint_dirs(fs: pyarrow.fs.FileSystem, trial_path: str) -> list[str]:
    """Oldest first: Ray names them checkpoint_000000, checkpoint_000001, ..."""
    entries = fs.get_file_info(pyarrow.fs.FileSelector(trial_path, allow_not_found=True))
    return sorted(e.path for e in entries if e.type == pyarrow.fs.FileType.Directory and e.base_name.startswith(PREFIX))


def _newest_state_file(staging_dir: str) -> Path | None:
    """Right after a snapshot, this driver session's state file (a resumed run's staging directory
    also holds the older sessions' files, synced down)."""
    staged = list(Path(staging_dir).glob(EXPERIMENT_STATE))
    return max(staged, key=lambda p: p.stat().st_mtime_ns) if staged else None


def _digest(data: bytes) -> str:
    return hashlib.blake2b(data, digest_size=16).hexdigest()


def _stored_digest(fs: pyarrow.fs.FileSystem, path: str) -> str | None:
    try:
        with fs.open_input_stream(path) as stored:
            return _digest(stored.read())
    except OSError:  # not synced yet (FileNotFoundError is one)
        return None


class RetireCheckpoints(tune.Callback):
    # Snapshots kept apart at most; beyond it the oldest after the first are merged, so a storage that
    # has stopped taking the state does not make the list grow for the rest of the run.
    MAX_SNAPSHOTS = 16

    def __init__(self) -> None:
        self._trials: list[Trial] = []  # Ray's own list of the experiment's trials, kept up to date by Ray
        self._pending: dict[str, Trial] = {}  # trials that may hold a checkpoint to retire
        self._snapshots: list[_Snapshots] = []  # from the one storage holds, once known, to the newest
        self._protected: set[str] = set()
        self._may_retire: bool | None = None  # None: storage not looked at yet

    def on_step_begin(self, iteration: int, trials: list[Trial], **info: Any) -> None:
        self._trials = trials

    def on_checkpoint(self, iteration: int, trials: list[Trial], trial: Trial, checkpoint: Any, **info: Any) -> None:
        if self._retire(trial):
            self._pending[trial.trial_id] = trial

    def get_state(self) -> None:
        """Ray calls this at every snapshot, right after writing the state file and before syncing it;
        every snapshot comes after an on_step_begin, so a snapshot taken with no trials points at none."""
        if not self._trials:
            return None
        storage = self._trials[0].storage
        assert storage is not None, "Tune sets a trial's storage when it adds the trial"
        staged = _newest_state_file(storage.experiment_driver_staging_path)
        if staged is None:
            return None
        self._look_at_storage(storage, ours=staged.name)
        self._snapshots.append(
            _Snapshots(
                {_digest(staged.read_bytes())}, {t.checkpoint.path for t in self._trials if t.checkpoint is not None}
            )
        )
        if len(self._snapshots) > self.MAX_SNAPSHOTS:
            first, second = self._snapshots[1], self._snapshots.pop(2)
            first.digests |= second.digests
            first.points_at |= second.points_at
        self._protected = set().union(*(s.points_at for s in self._snapshots))
        self._pending = {trial_id: trial for trial_id, trial in self._pending.items() if self._retire(trial)}
        return None  # nothing to save: a resumed driver starts afresh

    def _look_at_storage(self, storage: Any, ours: str | None) -> None:
        """Drop the snapshots older than the one storage holds, and decide whether anything may go: not
        while storage holds only an older driver session's state (a resumed run), which may point at
        any checkpoint; yes when it holds none, as then there is nothing to resume from. `ours` is
        this session's state file, known once it has written one."""
        fs, experiment = storage.storage_filesystem, storage.experiment_fs_path
        stored = fnmatch.filter(
            (e.base_name for e in fs.get_file_info(pyarrow.fs.FileSelector(experiment, allow_not_found=True))),
            EXPERIMENT_STATE,
        )
        if ours in stored:
            digest = _stored_digest(fs, f"{experiment}/{ours}")
            if held := [i for i, snapshot in enumerate(self._snapshots) if digest in snapshot.digests]:
                del self._snapshots[: held[-1]]
            # Otherwise it is cut short, or was taken before this run had trials: it points at no
            # checkpoint, and every snapshot kept since the last one known stays protected.
            self._may_retire = True
        else:
            self._may_retire = not stored

    def _retire(self, trial: Trial) -> bool:
        """Delete what of the trial's checkpoints may go; whether any it holds may go later."""
        if self._may_retire is None:  # before this session's first snapshot
            self._look_at_storage(trial.storage, ours=None)
        latest = trial.checkpoint
        if latest is None:
            return False
        if not self._may_retire:
            return True
        assert trial.storage is not None, "Tune sets a trial's storage when it adds the trial"
        fs, latest_name = trial.storage.storage_filesystem, Path(latest.path).name
        kept_back = False
        for path in _checkpoint_dirs(fs, trial.storage.trial_fs_path)[:-KEEP]:
            if Path(path).name >= latest_name:
                continue
            if path in self._protected:
                kept_back = True
            else:
                fs.delete_dir(path)
        return kept_back


def retire_after_fit(results: tune.ResultGrid) -> None:
    """Keep only the checkpoint Ray's final state points at for each trial (a trial's newest
    checkpoint on storage can be one its driver never registered, when a run was interrupted)."""
    for result in results:  # type: ignore[attr-defined]  # ResultGrid iterates by __getitem__ and __len__
        if result.checkpoint is None:
            continue
        fs, kept = result.checkpoint.filesystem, result.checkpoint.path
        for path in _checkpoint_dirs(fs, result.path):
            if path != kept:
                fs.delete_dir(path)
