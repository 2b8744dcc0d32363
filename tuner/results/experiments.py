"""The experiments under a storage path: `tuner list`, and the newest one, which `tuner report` and
`tuner resume` take when no directory is given.

An experiment is a directory with tuner's meta file. It is running while tuner has recorded no end for
its latest run (`ended_at`, cleared when `tuner resume` starts) and Ray's own experiment state, which
Ray Tune rewrites every few seconds while a run lasts (TUNE_GLOBAL_CHECKPOINT_S, see
tuner/execution/tune_run.py), is fresh: a run killed before it could record its end counts as running for
RUNNING_WINDOW_S, then as interrupted.
"""

import time
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow.fs as pafs

from tuner.command import tuner_command
from tuner.errors import TunerError
from tuner.results import report
from tuner.results.columns import best_column
from tuner.settings.budgets import format_duration
from tuner.settings.run import DEFAULT_STORAGE_PATH
from tuner.storage import filesystem
from tuner.storage import meta as meta_file
from tuner.storage.meta import ExperimentMeta
from tuner.trial_status import UNFINISHED

RUNNING_WINDOW_S = 30.0
STATE_GLOB = "experiment_state-"  # Ray Tune's file, rewritten while the run lasts


@dataclass(frozen=True)
class Summary:
    path: str
    meta: ExperimentMeta
    status: str  # running | finished | stopped | interrupted | failed | damaged
    trials: pd.DataFrame  # the report's rows: status and best metric of each trial
    started: float  # epoch seconds
    ran_s: float
    damage: str = ""  # what of it could not be read (report.damage)

    def row(self) -> dict[str, Any]:
        metric = self.meta.objective.metric
        scored, so_far = report.scored(self.trials, metric), ""
        if scored.empty and self.status == "running" and best_column(metric) in self.trials:
            # No trial has ended yet: the best score of those running, as `tuner report` ranks them.
            scored, so_far = self.trials[self.trials[best_column(metric)].notna()], " so far"
        return {
            "experiment": filesystem.base_name(self.path),
            "space": self.meta.space,
            "status": self.status,
            "trials": "; ".join(
                part
                for part in (report.describe(report.tally(self.trials, self.meta)) or "none yet", self.damage)
                if part
            ),
            "best": f"{metric}={scored.iloc[0][best_column(metric)]:.4g}{so_far}" if len(scored) else "",
            "started": time.strftime("%Y-%m-%d %H:%M", time.localtime(self.started)),
            "ran": format_duration(self.ran_s),
        }


def _mtime(info: pafs.FileInfo) -> float:
    return info.mtime.timestamp() if info.mtime is not None else 0.0


def find(storage_path: str) -> list[str]:
    """Experiment directories directly under `storage_path`, newest first."""
    fs, root = filesystem.filesystem(storage_path)
    if fs.get_file_info(root).type != pafs.FileType.Directory:
        raise TunerError(
            f"{storage_path} is not a directory of experiments; pass the --storage-path of `tuner run` "
            f"(default {DEFAULT_STORAGE_PATH})"
        )
    found = []
    for entry in fs.get_file_info(pafs.FileSelector(root)):
        meta = fs.get_file_info(f"{entry.path}/{filesystem.META_FILE}")
        if entry.type == pafs.FileType.Directory and meta.type == pafs.FileType.File:
            path = filesystem.join(filesystem.normalize(storage_path), entry.base_name)
            try:
                started = _started(meta_file.read(path), meta)
            except (TunerError, OSError):  # damaged: listed as such (`row`), ordered by its file's time
                started = _mtime(meta)
            found.append((started, entry.base_name))
    return [filesystem.join(filesystem.normalize(storage_path), name) for _, name in sorted(found, reverse=True)]


def _started(meta: ExperimentMeta, meta_info: pafs.FileInfo) -> float:
    started = meta.started_at
    return float(started) if started else _mtime(meta_info)  # experiments from before started_at: the meta's time


def newest(storage_path: str) -> str:
    paths = find(storage_path)
    if not paths:
        raise TunerError(
            f"no experiments under {storage_path}; run one with `{tuner_command()} run`, "
            "or pass the experiment directory"
        )
    return paths[0]


def _last_state_write(path: str) -> float | None:
    fs, root = filesystem.filesystem(path)
    times = [
        _mtime(info) for info in fs.get_file_info(pafs.FileSelector(root)) if info.base_name.startswith(STATE_GLOB)
    ]
    return max(times) if times else None


def row(path: str) -> dict[str, Any]:
    """The experiment's row of `tuner list`; a damaged one's says what is damaged, in place of its
    trials, so that one damaged experiment leaves the others listed."""
    try:
        return summarize(path).row()
    except meta_file.Damaged as error:
        problem = f"{filesystem.META_FILE}: {error.reason}"
    except TunerError as error:
        problem = str(error)
    except OSError as error:  # e.g. a file without read permission
        problem = f"cannot be read: {filesystem.os_reason(error)}"
    fs, inner = filesystem.filesystem(path)
    changed = _mtime(fs.get_file_info(f"{inner}/{filesystem.META_FILE}"))
    return {
        "experiment": filesystem.base_name(path),
        "space": "",
        "status": "damaged",
        "trials": problem,
        "best": "",
        "started": time.strftime("%Y-%m-%d %H:%M", time.localtime(changed)),
        "ran": "",
    }


def summarize(path: str) -> Summary:
    meta = report.load_meta(path)
    fs, inner = filesystem.filesystem(path)
    started = _started(meta, fs.get_file_info(f"{inner}/{filesystem.META_FILE}"))
    trials, _ = report.read_tables(path)
    state = _last_state_write(path)
    ended = meta.ended_at
    now = time.time()
    running = ended is None and state is not None and now - state < RUNNING_WINDOW_S
    if running:
        status, ran = "running", now - started
    else:
        if meta.stopped_by:
            status = "stopped"  # by --stop or the time budget, with trials still to run
        elif not len(trials) or set(report.tally(trials, meta)) & set(UNFINISHED):
            status = "interrupted"
        elif not len(report.scored(trials, meta.objective.metric)):
            status = "failed"  # every trial errored or diverged
        else:
            status = "finished"
        ran = (ended or state or started) - started
    if (damage := report.damage(trials)) and not running:  # a running one's state may be mid-rewrite
        status = "damaged"
    return Summary(path, meta, status, trials, started, max(0.0, ran), damage)
