"""An experiment as an Optuna study: the journal that the driver writes as trials report
(tuner/execution/live_study.py), read back with Optuna's own storage. It feeds `tuner ui`
(optuna-dashboard) and hands a notebook `optuna.visualization` over any tuner experiment.

Optuna's journal, not a format of tuner's own: optuna-dashboard and `optuna.load_study` read it as it
grows, each read taking only the lines appended since the last.
"""

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tuner.errors import TunerError
from tuner.storage import filesystem

if TYPE_CHECKING:
    import optuna
    import pyarrow.fs

JOURNAL_FILE = "optuna.journal"
# What a tuner trial is called in its Optuna trial's user attributes.
TRIAL_ID_ATTR = "tuner_trial_id"
STATUS_ATTR = "tuner_status"
STOPPED_ATTR = "stopped_because"


def journal_storage(path: str | Path, lock_at: str | Path | None = None) -> "optuna.storages.JournalStorage":
    """Optuna's storage over the journal file at `path` (made if absent). The open() lock, not Optuna's
    default symlink lock: a writer killed while holding a symlink lock leaves it behind for good. The
    lock file is `<lock_at or path>.lock`, made and removed at each write: `lock_at` keeps it out of a
    folder that Ray uploads while the run writes (a file gone between Ray's listing and its copy fails
    Ray's snapshot)."""
    from optuna.storages import JournalStorage
    from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock

    return JournalStorage(JournalFileBackend(str(path), lock_obj=JournalFileOpenLock(str(lock_at or path))))


def running_trial(trial_id: str, params: dict[str, Any], distributions: dict[str, Any]) -> "optuna.trial.FrozenTrial":
    """The Optuna trial a tuner trial starts as: RUNNING, its params, and its id as a user attribute
    (the template of JournalStorage.create_new_trial, one journal line for all of it)."""
    import optuna

    return optuna.trial.FrozenTrial(
        number=-1,
        state=optuna.trial.TrialState.RUNNING,
        value=None,
        datetime_start=None,
        datetime_complete=None,
        params=params,
        distributions=distributions,
        user_attrs={TRIAL_ID_ATTR: trial_id},
        system_attrs={},
        intermediate_values={},
        trial_id=-1,
    )


def without_torn_line(path: Path) -> None:
    """Cut off a last line that a write cut short left (a full disk, a killed driver): Optuna's reader
    stops at a line that does not parse once another follows it, so the next run's first write would
    make every line after it unreadable. Only its writer calls this, before it writes."""
    if not path.exists():
        return
    with open(path, "r+b") as journal:
        size = journal.seek(0, os.SEEK_END)
        end = size
        while end > 0:
            start = max(0, end - 65536)
            journal.seek(start)
            chunk = journal.read(end - start)
            if (newline := chunk.rfind(b"\n")) >= 0:
                end = start + newline + 1
                break
            end = start
        if end < size:
            journal.truncate(end)


def local_journal(experiment_path: str) -> Path:
    """The experiment's journal as a local file: the file itself in a local experiment, a fresh copy in a
    temporary folder for one in an object store (what its last snapshot uploaded)."""
    if not filesystem.is_remote(experiment_path):
        local = Path(filesystem.filesystem(experiment_path)[1]) / JOURNAL_FILE
        if not local.exists():
            raise _no_journal(experiment_path)
        return local
    copy = Path(tempfile.mkdtemp(prefix="tuner-study-")) / JOURNAL_FILE
    refresh_copy(experiment_path, copy)
    return copy


def refresh_copy(experiment_path: str, copy: Path) -> None:
    """Download the journal of an experiment in an object store over `copy`. The journal only ever grows,
    so Optuna's reader, which goes on from the byte it last read, finds the new lines after its old ones."""
    fs, path = filesystem.filesystem(experiment_path)
    if not download(fs, f"{path}/{JOURNAL_FILE}", copy):
        raise _no_journal(experiment_path)


def download(fs: "pyarrow.fs.FileSystem", stored: str, local: Path) -> bool:
    """The stored journal over `local`, whole or not at all (a copy cut short would be uploaded or read as
    the journal); False where none is stored."""
    try:
        with fs.open_input_stream(stored) as source:
            data = source.read()
    except FileNotFoundError:
        return False
    local.parent.mkdir(parents=True, exist_ok=True)
    partial = local.with_suffix(".part")
    partial.write_bytes(data)
    partial.replace(local)
    return True


def has_journal(experiment_path: str) -> bool:
    return filesystem.exists(filesystem.join(experiment_path, JOURNAL_FILE))


def load_study(experiment_path: str) -> "optuna.Study":
    """The experiment as an `optuna.Study` (its one study), for `optuna.visualization` in a notebook."""
    import optuna

    storage = journal_storage(local_journal(experiment_path))
    names = [summary.study_name for summary in optuna.get_all_study_summaries(storage, include_best_trial=False)]
    if not names:
        raise _no_journal(experiment_path)
    return optuna.load_study(study_name=names[0], storage=storage)


def _no_journal(experiment_path: str) -> TunerError:
    return TunerError(
        f"{experiment_path} has no {JOURNAL_FILE}: no trial of it has started yet, or an older tuner ran it "
        "(the study is written as trials run)"
    )
