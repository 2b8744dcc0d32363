"""decisions.jsonl: every scheduler decision of an experiment, one JSON row per line (a `Decision` of
tuner/search/decision.py), appended by the driver, where Ray runs the scheduler, straight into the experiment
directory in storage: Ray's sync of its driver staging directory never touches it, so it outlives the run
that wrote it, and a resumed run appends to it. A resumed run's scheduler starts afresh (Ray saves no
scheduler state) and may judge a trial again at a rung: readers take a trial's last row for that.
"""

import json
import logging
from typing import TYPE_CHECKING

import pyarrow.fs

from tuner.search.decision import Decision
from tuner.storage import filesystem
from tuner.storage.trial_files import read_text

if TYPE_CHECKING:  # readers of decisions.jsonl run without Ray
    from ray.tune.experiment import Trial

log = logging.getLogger(__name__)

DECISIONS_FILE = "decisions.jsonl"


class DecisionFile:
    """The sink of a recording scheduler (`record_to`). Ray pickles it with the scheduler into the
    experiment's saved state, so it holds nothing but its class: the file's place comes from each trial's
    own storage, right for a resumed experiment that was moved too."""

    warned = False

    def __call__(self, trial: "Trial", decided: Decision) -> None:
        storage = trial.storage
        if storage is None:
            return
        line = (json.dumps(decided.to_json()) + "\n").encode()
        try:
            append(storage.storage_filesystem, f"{storage.experiment_fs_path}/{DECISIONS_FILE}", line)
        except OSError as error:
            # A full disk must not end the run from inside Ray's scheduler; the run's own writes say why.
            if not self.warned:
                log.warning("cannot record the scheduler's decisions in %s: %s", storage.experiment_fs_path, error)
                self.warned = True


def append(fs: pyarrow.fs.FileSystem, path: str, data: bytes) -> None:
    """Append `data` to the file at `path`; where the filesystem cannot append (object stores), the file is
    rewritten whole, atomically."""
    try:
        with fs.open_append_stream(path) as out:
            out.write(data)
    except NotImplementedError:  # pyarrow's ArrowNotImplementedError, e.g. on S3
        before = read_text(fs, path) or ""
        filesystem.write_atomic_at(fs, path, before.encode() + data)


def read(experiment_path: str) -> list[Decision]:
    """The decisions whose rows parse, in the order written (a write cut short leaves a torn last line)."""
    fs, path = filesystem.filesystem(experiment_path)
    found = []
    for line in (read_text(fs, f"{path}/{DECISIONS_FILE}") or "").splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and (decided := Decision.from_json(row)) is not None:
            found.append(decided)
    return found
