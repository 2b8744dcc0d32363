"""Trials read straight from their directories, for when Ray's experiment state cannot be read.

Ray rewrites its experiment-state file in place on every snapshot; on a disk that fills up the
rewrite is cut short and the file no longer parses, while each trial's params.json and result.json
still hold what was recorded. Ray's state is what says whether a trial finished, so trials read here
have status UNKNOWN (the report calls them incomplete).
"""

import json
from dataclasses import dataclass
from typing import Any

import pyarrow.fs

from tuner.storage import filesystem
from tuner.storage.trial_names import trial_id_of

UNKNOWN = "UNKNOWN"


@dataclass(frozen=True)
class TrialStorage:
    trial_fs_path: str
    storage_filesystem: pyarrow.fs.FileSystem


@dataclass(frozen=True)
class TrialFiles:
    """What report.read_tables reads of a Ray Trial."""

    trial_id: str
    status: str
    config: dict[str, Any]
    storage: TrialStorage


def read_text(fs: pyarrow.fs.FileSystem, path: str) -> str | None:
    """A file's text, or None if it is missing or unreadable."""
    try:
        with fs.open_input_stream(path) as stream:
            return stream.read().decode(errors="replace")
    except OSError:
        return None


def json_lines(text: str) -> list[dict[str, Any]]:
    """The rows that parse: a write cut short leaves a torn last line."""
    rows = []
    for line in text.splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def read(experiment_path: str, space: str) -> tuple[list[TrialFiles], dict[str, list[dict[str, Any]]]]:
    """(trials, trial id -> its result rows as Ray's JSON logger wrote them)."""
    fs, path = filesystem.filesystem(experiment_path)
    trials: list[TrialFiles] = []
    rows_of: dict[str, list[dict[str, Any]]] = {}
    for entry in sorted(fs.get_file_info(pyarrow.fs.FileSelector(path)), key=lambda e: e.path):
        params = read_text(fs, f"{entry.path}/params.json") if entry.type == pyarrow.fs.FileType.Directory else None
        if params is None:
            continue  # not a trial directory
        try:
            config = json.loads(params)
        except ValueError:
            config = {}
        rows = json_lines(read_text(fs, f"{entry.path}/result.json") or "")
        trial_id = str(rows[0].get("trial_id") or "") if rows else trial_id_of(space, entry.base_name)
        trials.append(TrialFiles(trial_id, UNKNOWN, config, TrialStorage(entry.path, fs)))
        rows_of[trial_id] = rows
    return trials, rows_of
