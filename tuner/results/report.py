"""pandas reports of an experiment, built from Ray's own files so they work during, after, or
without the run that made them (from another process, on a finished or interrupted experiment)."""

import fnmatch
import functools
import io
import logging
import math
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.fs
from tqdm.auto import tqdm

from tuner.errors import TunerError
from tuner.ray_compat import logs, private
from tuner.ray_compat.trial_results import has_reported
from tuner.results import objectives, stops
from tuner.results.columns import best_column
from tuner.search.decision import Decision
from tuner.settings import Objective
from tuner.spec.param_space import cell, flatten
from tuner.storage import decisions, filesystem, saved_state, trial_files
from tuner.storage import meta as meta_file
from tuner.storage.meta import ExperimentMeta
from tuner.storage.saved_state import EXPERIMENT_STATE
from tuner.training.result_keys import BOOKKEEPING, COSTS
from tuner.trial_status import FROM_RAY, SCORED, TrialStatus

log = logging.getLogger(__name__)

TRIALS_CSV, TRIALS_PARQUET, HISTORY_PARQUET = "trials.csv", "trials.parquet", "history.parquet"


def scored(trials: pd.DataFrame, metric: str) -> pd.DataFrame:
    """The trials whose scores count (SCORED) and that have one, still ranked best first."""
    if trials.empty:
        return trials
    return trials[trials["status"].isin(SCORED) & trials[best_column(metric)].notna()]


# What a history row has besides the loop's metrics, in this order after them: facts of each report.
RUN_COLUMNS = [
    "diverged",
    "world_size",
    "precision",
    "device",
    "gpu_peak_gib",
    "samples_per_s",
    "time_total_s",
    "reported_at",
    "restored_from",
    "restored_epoch",
]


@functools.cache
def ray_keys() -> frozenset[str]:
    """Keys of a result row that Ray fills in itself (TuneReportCallback adds the Train checkpoint's path).
    Imported here, not at the top: a finished experiment's saved tables are read without loading Ray."""
    from ray.tune.result import (
        AUTO_RESULT_KEYS,
        DEBUG_METRICS,
        DEFAULT_EXPERIMENT_INFO_KEYS,
        DONE,
        SHOULD_CHECKPOINT,
    )

    return frozenset(
        {*AUTO_RESULT_KEYS, *DEBUG_METRICS, *DEFAULT_EXPERIMENT_INFO_KEYS, DONE, SHOULD_CHECKPOINT, "checkpoint_path"}
    )


def metric_names(frames: list[pd.DataFrame]) -> list[str]:
    """The loop's own metrics across these result frames, in the order first reported."""
    skipped = ray_keys() | set(BOOKKEEPING)
    names: dict[str, None] = {}
    for frame in frames:
        names.update(
            (column, None) for column in frame.columns if column not in skipped and not column.startswith("config/")
        )
    return list(names)


def _analysis(experiment_path: str) -> list[Any]:
    """Ray's trials, by Ray's own reader of its experiment state (`experiment_path` may also name one
    state file); their result rows are read by `_result_rows`."""
    fs, path = filesystem.filesystem(experiment_path)
    if path.endswith(".json"):
        name = path.rsplit("/", 1)[-1] if filesystem.exists(experiment_path) else None
    else:
        name = saved_state.newest_state(experiment_path)
    if name is None:
        raise TunerError(f"{experiment_path} holds no Ray Tune experiment state yet; no trial has been recorded")
    state = path if path.endswith(".json") else f"{path}/{name}"
    info = fs.get_file_info(state)
    key = (experiment_path, state, info.size, info.mtime_ns)
    if (last := _last_read.get(key)) is None:
        try:
            with logs.quiet_analysis_warnings():
                last = private.recorded_trials(path, fs)
        except Exception as error:  # files of another Ray version, or damaged: whatever Ray's reader raises
            raise TunerError(f"Ray's saved state {name} cannot be read ({_reason(error)})") from None
        _last_read.clear()
        _last_read[key] = last
    return list(last)


# The trials of the state file read last, by the file's path, size and time: `tuner resume` checks the
# state (state_problem) and reads the report (read_tables) of one file, which at 10,000 trials takes
# seconds each time. One file only, so that a notebook that loads many experiments holds one.
_last_read: dict[tuple[str, str, int | None, int | None], list[Any]] = {}


def forget_reads() -> None:
    """Let go of the trials read last (the checks of `tuner resume` and `extend`, a warm start's earlier
    experiment): a run about to start reads them again through Ray, and would hold both copies to its end."""
    _last_read.clear()


def _reason(error: BaseException) -> str:
    """An exception as a short clause: `KeyError: 'trial_data'`."""
    text = str(error).splitlines()[0] if str(error) else ""
    text = text if len(text) <= 120 else text[:117] + "..."
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def state_problem(experiment_path: str) -> str | None:
    """Why Ray could not resume from the experiment's saved state (another Ray version's files, or
    damaged ones), in words; None when Ray's own reader reads it, or there is none yet."""
    if saved_state.newest_state(experiment_path) is None:
        return None
    try:
        _analysis(experiment_path)
    except TunerError as error:
        return str(error)
    return None


Rows = dict[str, list[dict[str, Any]]]  # trial id -> its result rows, as Ray's JSON logger wrote them


def _recorded_trials(experiment_path: str, meta: ExperimentMeta, damage: list[str]) -> tuple[list[Any], Rows]:
    """Ray's trials and their result rows; from the trial directories if Ray's state is unreadable
    (said in `damage`)."""
    try:
        trials = _analysis(experiment_path)
        return _with_earlier_runs(experiment_path, meta, trials, _result_rows(trials))
    except TunerError as error:
        trials, rows = trial_files.read(experiment_path, meta.space)
        if not trials:
            raise
        # Cut short by a full disk, another Ray version's, or edited: said by the caller (see `damage`).
        damage.append(f"{error}; its trials are read from their own directories, so whether they finished is unknown")
        return trials, rows


READERS = 8  # result files read at once: reading is waiting on storage, most of all on an object store


def _result_rows(trials: list[Any]) -> Rows:
    """Each recorded trial's rows from its result.json (a torn last line skipped), read several at once.
    Not only those Ray saw report: a driver killed between a result and its next state snapshot leaves rows
    in result.json that the state does not know of."""

    def read(trial: Any) -> list[dict[str, Any]]:
        text = trial_files.read_text(trial.storage.storage_filesystem, f"{trial.storage.trial_fs_path}/result.json")
        return trial_files.json_lines(text or "")

    with ThreadPoolExecutor(READERS) as pool:
        return dict(zip((trial.trial_id for trial in trials), pool.map(read, trials)))


def _with_earlier_runs(
    experiment_path: str, meta: ExperimentMeta, trials: list[Any], rows: Rows
) -> tuple[list[Any], Rows]:
    """An extended experiment's trials of every Ray run in its directory (`tuner extend` starts one of its
    own, whose state names only its trials): each extension's `previous_state` adds the trials the
    newest state lacks."""
    for extension in reversed(meta.extensions):
        if not (name := extension.previous_state):
            continue
        try:
            earlier = [
                trial for trial in _analysis(filesystem.join(experiment_path, name)) if trial.trial_id not in rows
            ]
        except TunerError:
            log.warning(
                "%s/%s is gone: the trials before that `tuner extend` are not in the report", experiment_path, name
            )
            continue
        trials.extend(earlier)
        rows.update(_result_rows(earlier))
    return trials, rows


def _error_line(trial: Any) -> str:
    """The last line of a failed trial's traceback: the exception and its message."""
    text = trial_files.read_text(trial.storage.storage_filesystem, f"{trial.storage.trial_fs_path}/error.txt")
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def _history(rows: Rows, order: list[str], params: list[str]) -> tuple[pd.DataFrame, list[str]]:
    """(history, the loop's metrics): one row per reported epoch of every trial, in `order`, with the
    config that epoch ran under (PBT changes it over time). Built in one frame, not a frame per trial:
    its cost follows the rows, at 10,000 trials as at 10."""
    records = [{**row, "trial_id": trial_id} for trial_id in order for row in rows.get(trial_id, ())]
    frame = pd.json_normalize(records, sep="/") if records else pd.DataFrame(columns=["trial_id"])
    metrics = metric_names([frame])
    configs = {f"config/{key}": key for key in params}
    history = frame.reindex(columns=["trial_id", "epoch", *metrics, *RUN_COLUMNS, *configs]).rename(columns=configs)
    for key in configs.values():
        history[key] = history[key].map(cell)
    # Mostly empty columns: explicit dtypes keep them nullable and writable to parquet.
    history = history.astype(
        {
            "trial_id": "str",
            "restored_from": "string",
            "restored_epoch": "Int64",
            "epoch": "Int64",
            "device": "string",
            "gpu_peak_gib": float,
        }
    )
    return history[~_superseded(history)].reset_index(drop=True), metrics


def _superseded(history: pd.DataFrame) -> pd.Series:
    """Rows of epochs that a later restore from the trial's own checkpoint ran again.

    A driver killed between Ray writing an epoch's result and saving its experiment state resumes
    the trial from the checkpoint before that epoch, so the epoch runs twice; the rerun is the one
    the trial's weights descend from. (Under PBT a restore from another trial is a new branch, kept.)
    """
    dropped = pd.Series(False, index=history.index)
    restores = history.index[(history["restored_from"] == history["trial_id"]).fillna(False)]
    for position in restores:
        earlier = (history.index < position) & (history["trial_id"] == history.loc[position, "trial_id"]).to_numpy()
        dropped |= earlier & (history["epoch"] > history.loc[position, "restored_epoch"]).fillna(False).to_numpy()
    return dropped


def _status(trial: Any, reported: bool, diverged: Any, epochs_run: int, meta: ExperimentMeta) -> TrialStatus:
    """`reported`: the trial has result rows; `diverged`: its last row's flag."""
    if reported and diverged in (True, 1):
        return TrialStatus.DIVERGED
    if not reported and not has_reported(trial) and trial.status not in ("ERROR", "RUNNING"):
        # Also a trial that --stop or the time budget ended before its first report: Ray marks it
        # TERMINATED. One running (a run going on, or cut off by Ctrl-C) has started, reported or not.
        return TrialStatus.NOT_STARTED
    if not reported:  # it reported, but its files are gone (a damaged experiment), errored or runs: Ray's word
        return FROM_RAY.get(trial.status) or TrialStatus.INCOMPLETE
    if trial.status == "TERMINATED" and epochs_run < meta.budget.epochs:
        return TrialStatus.STOPPED_EARLY
    # Any other state was saved while the trial ran: Ray saves its state on Ctrl-C before it ends the
    # trials (--stop and the time budget end them first, TERMINATED).
    return FROM_RAY.get(trial.status) or TrialStatus.INCOMPLETE


def total_trials(trials: pd.DataFrame, meta: ExperimentMeta) -> int:
    """The experiment's trials in all, started or not: Ray records a trial only once it is created."""
    return max(meta.total_trials or 0, len(trials))


def tally(trials: pd.DataFrame, meta: ExperimentMeta) -> dict[TrialStatus, int]:
    """How many trials have each status, the trials Ray has not created yet counted as not started:
    what the summary, `tuner list` and `tuner report` say, and what the live view's last line says."""
    counts = (
        {TrialStatus(status): int(count) for status, count in trials["status"].value_counts().items()}
        if len(trials)
        else {}
    )
    if missing := total_trials(trials, meta) - len(trials):
        counts[TrialStatus.NOT_STARTED] = counts.get(TrialStatus.NOT_STARTED, 0) + missing
    return {status: counts[status] for status in TrialStatus if counts.get(status)}


def describe(counts: dict[TrialStatus, int]) -> str:
    """`7 finished, 2 not started`."""
    return ", ".join(f"{count} {status}" for status, count in counts.items())


@dataclass(frozen=True)
class _Columns:
    """The history's columns a trial's row reads, as arrays (a pandas lookup per trial and column would
    cost more than all the rest at 10,000 trials), and each trial's row positions in them."""

    at: dict[str, np.ndarray]  # trial id -> its rows' positions, in order
    values: dict[str, np.ndarray]  # column -> its values
    numbers: dict[str, np.ndarray]  # an objective, epoch or gpu_peak_gib -> its values as floats (NaN: none)

    @classmethod
    def of(cls, history: pd.DataFrame, metrics: list[str], objectives: list[str]) -> "_Columns":
        at = {str(key): positions for key, positions in history.groupby("trial_id", sort=False).indices.items()}
        names = [*metrics, "diverged", "time_total_s", "device"]
        values = {name: history[name].to_numpy(dtype=object) for name in dict.fromkeys(names)}
        numeric = dict.fromkeys([*objectives, "epoch", "gpu_peak_gib"])
        numbers = {name: pd.to_numeric(history[name], errors="coerce").to_numpy(dtype=float) for name in numeric}
        return cls(at, values, numbers)


def _most(values: np.ndarray) -> float | None:
    """The largest value that is a number; None where none is."""
    return float(np.nanmax(values)) if len(values) and not np.isnan(values).all() else None


def _trial_row(
    trial: Any, columns: _Columns, meta: ExperimentMeta, metrics: list[str], stopped: dict[str, Decision]
) -> dict[str, Any]:
    metric = meta.objective.metric
    at = columns.at.get(trial.trial_id, np.empty(0, dtype=int))
    epochs = columns.numbers["epoch"][at]
    epochs_run = int(_most(epochs) or 0)
    last = int(at[-1]) if len(at) else None

    def last_value(name: str) -> Any:
        return columns.values[name][last] if last is not None else None

    status = _status(trial, last is not None, last_value("diverged"), epochs_run, meta)
    row: dict[str, Any] = {"trial_id": trial.trial_id, "status": status.value}
    config = flatten(trial.config)
    row.update({key: cell(config.get(key)) for key in meta.params})
    for name in metrics:  # each metric's value at the trial's last epoch
        value = last_value(name)
        row[name] = math.nan if last is None or value is None or value is pd.NA else value
    best = None
    for name, way in meta.objective.objectives:  # the primary first: its best epoch is the trial's
        scores = columns.numbers[name][at]
        known = not np.isnan(scores).all() if len(scores) else False
        index = (int(np.nanargmax(scores)) if way == "max" else int(np.nanargmin(scores))) if known else None
        row[best_column(name)] = float(scores[index]) if index is not None else math.nan
        best = index if name == metric else best
    row["best_epoch"] = int(epochs[best]) if best is not None else None
    row["epochs"] = epochs_run
    row["stopped_because"] = stops.stopped_because(trial.trial_id, status, stopped, meta)
    row["time_s"] = float(last_value("time_total_s")) if last is not None else 0.0
    # Where it trained (cpu, cuda:0) and its most GPU memory in any epoch (rank 0's; NaN on the CPU).
    device = last_value("device")
    row["device"] = device if last is not None and pd.notna(device) else ""
    peak = _most(columns.numbers["gpu_peak_gib"][at])
    row["gpu_peak_gib"] = peak if peak is not None else math.nan
    row["error"] = _error_line(trial) if trial.status == "ERROR" else ""
    row["trial_dir"] = trial.storage.trial_fs_path
    return row


def read_tables(experiment_path: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(trials, history): one row per trial, ranked best first; one row per trial per epoch."""
    meta = load_meta(experiment_path)
    if (saved := _saved_tables(experiment_path, meta)) is not None:
        return saved
    damage: list[str] = []
    recorded, rows = _recorded_trials(experiment_path, meta, damage)
    if missing := _missing_trial_dirs(experiment_path, recorded):
        damage.append(f"the directories of {len(missing)} trial(s) Ray recorded are missing ({_names(missing)})")
    # A finished trial Ray saw report whose result.json is gone (deleted). Not one whose file is there but
    # holds no row yet: a trial a stop condition ended at its first result, or one running when its
    # driver was killed, may not have written or uploaded its rows.
    reported = [trial for trial in recorded if has_reported(trial) and trial.status == "TERMINATED"]
    empty = [_dir_name(trial) for trial in reported if not rows.get(trial.trial_id) and not _has_result_file(trial)]
    if lost := [name for name in empty if name not in missing]:
        damage.append(f"the results of {len(lost)} trial(s) that reported are gone from their files ({_names(lost)})")
    history, metrics = _history(rows, [trial.trial_id for trial in recorded], meta.params)
    for position, (name, _) in enumerate(meta.objective.objectives):
        if name not in metrics:
            metrics.insert(position, name)  # a column even before any trial reported it
            history.insert(2 + position, name, math.nan)
    stopped = stops.stop_rows(decisions.read(experiment_path))
    columns = _Columns.of(history, metrics, [name for name, _ in meta.objective.objectives])
    # Shown only on a terminal, and only when reading the trials (an error file each) takes a while.
    trial_rows = [
        _trial_row(trial, columns, meta, metrics, stopped)
        for trial in tqdm(recorded, desc="reading trials", unit="trial", delay=2, leave=False, disable=None)
    ]
    trials = pd.DataFrame(trial_rows)
    if len(trials):
        if meta.objective.several or meta.objective.constraints:
            trials = objectives.rank(trials, meta.objective)
        else:
            trials = rank(trials, meta.objective.metric, meta.objective.mode)
        trials["best_epoch"] = trials["best_epoch"].astype("Int64")
    trials = _whole_numbers(trials.reset_index(drop=True), trial_rows, meta.params)
    for key in meta.params:  # the history's config columns as the trials' (Ray's frames hold floats there)
        if key in trials and trials[key].dtype == "Int64" and key in history:
            history[key] = history[key].astype("Int64")
    # What of the experiment could not be read: the report files are then not rewritten from it (they
    # hold what the last whole read found), see `save`.
    trials.attrs[DAMAGE] = "; ".join(damage)
    return trials, history


DAMAGE = "damage"  # the trials frame's attrs key


def damage(trials: pd.DataFrame) -> str:
    """What read_tables could not read of the experiment, in words; "" when nothing."""
    return str(trials.attrs.get(DAMAGE, ""))


def _missing_trial_dirs(experiment_path: str, recorded: list[Any]) -> list[str]:
    """The names of the recorded trials that reported a result but whose directories are gone (moved or
    deleted by hand). A trial that never started has none: Ray makes it when the trial starts. One
    listing of the experiment directory, not a look per trial."""
    fs, path = filesystem.filesystem(experiment_path)
    present = {
        entry.base_name
        for entry in fs.get_file_info(pyarrow.fs.FileSelector(path, allow_not_found=True))
        if entry.type == pyarrow.fs.FileType.Directory
    }
    missing = []
    for trial in recorded:
        if not has_reported(trial) or _dir_name(trial) in present:
            continue
        fs, path = trial.storage.storage_filesystem, trial.storage.trial_fs_path  # moved with its own path
        if fs.get_file_info(path).type == pyarrow.fs.FileType.NotFound:
            missing.append(_dir_name(trial))
    return missing


def _has_result_file(trial: Any) -> bool:
    fs, path = trial.storage.storage_filesystem, trial.storage.trial_fs_path
    return bool(fs.get_file_info(f"{path}/result.json").type == pyarrow.fs.FileType.File)


def _dir_name(trial: Any) -> str:
    return str(trial.storage.trial_fs_path).rstrip("/").rsplit("/", 1)[-1]


def _names(names: list[str]) -> str:
    """`a, b, c and 6 more`."""
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


def _whole_numbers(trials: pd.DataFrame, rows: list[dict[str, Any]], params: list[str]) -> pd.DataFrame:
    """Integer params stay integers where some trials lack them (a conditional key, blank there): pandas
    would make the column floats, and the best config `width=32.0`, which a model can't take."""
    for key in params:
        given = [row[key] for row in rows if row[key] is not None]
        whole = all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)) for v in given)
        if given and whole and len(given) < len(rows):
            trials[key] = trials[key].astype("Int64")
    return trials


def load_meta(experiment_path: str) -> ExperimentMeta:
    if not filesystem.exists(experiment_path):
        raise TunerError(f"{experiment_path} does not exist; pass the experiment directory that `tuner run` printed")
    if not filesystem.exists(filesystem.join(experiment_path, filesystem.META_FILE)):
        if saved_state.newest_state(experiment_path) is not None:  # Ray's files, without tuner's record
            raise TunerError(
                f"{experiment_path} holds Ray's state of a run but no {filesystem.META_FILE}, tuner's record of "
                "the experiment (deleted?); restore it from a copy to report, resume or extend it"
            )
        raise TunerError(
            f"{experiment_path} is not a tuner experiment (no {filesystem.META_FILE}); "
            "pass the directory that `tuner run` printed"
        )
    return meta_file.read(experiment_path)


def saved_tables(experiment_path: str, meta: ExperimentMeta) -> pd.DataFrame | None:
    """The trials as the experiment's last whole read saved them, where they still hold it (see
    `_saved_tables`); None otherwise."""
    saved = _saved_tables(experiment_path, meta)
    return saved[0] if saved is not None else None


# What a run writes beside Ray's files once it has read them, and so never makes the saved tables stale.
OUTPUTS = (TRIALS_CSV, TRIALS_PARQUET, HISTORY_PARQUET, "report.html")


def _saved_tables(experiment_path: str, meta: ExperimentMeta) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """(trials, history) as the last whole read saved them (`save`), where that read is still the
    experiment's: its run has recorded its end, no file of the experiment changed after the tables were
    written, and every trial directory they name is there. A finished 10,000-trial experiment is then
    two columnar files, not Ray's state and a result file per trial. None otherwise: read it all."""
    if meta.ended_at is None:  # running, or a run that did not record its end
        return None
    fs, path = filesystem.filesystem(experiment_path)
    try:
        entries = {entry.base_name: entry for entry in fs.get_file_info(pyarrow.fs.FileSelector(path))}
        saved = [entries.get(TRIALS_PARQUET), entries.get(HISTORY_PARQUET)]
        if any(entry is None or entry.mtime is None for entry in saved) or not fnmatch.filter(
            entries, EXPERIMENT_STATE
        ):
            return None  # not saved, or Ray's state gone: the whole read says what is wrong
        saved_at = min(entry.mtime for entry in saved)  # type: ignore[union-attr]
        for name, entry in entries.items():
            if entry.type == pyarrow.fs.FileType.File and name not in OUTPUTS and (entry.mtime or saved_at) > saved_at:
                return None
        trials, history = (_read_parquet(fs, f"{path}/{name}") for name in (TRIALS_PARQUET, HISTORY_PARQUET))
    except Exception:  # unreadable, damaged or of another version: the whole read says what is wrong
        return None
    directories = {name for name, entry in entries.items() if entry.type == pyarrow.fs.FileType.Directory}
    reported = trials[trials["epochs"] > 0] if "epochs" in trials else trials
    if "trial_dir" not in trials:
        return None
    names = [str(trial_dir).rstrip("/").rpartition("/")[2] for trial_dir in reported["trial_dir"]]
    if not all(name in directories for name in names):
        return None  # directories missing: the whole read says which
    # Named where they are now: an experiment moved or copied since keeps its fast read.
    trials["trial_dir"] = [
        f"{path.rstrip('/')}/{str(trial_dir).rstrip('/').rpartition('/')[2]}" for trial_dir in trials["trial_dir"]
    ]
    trials.attrs[DAMAGE] = ""
    return trials, history


def _read_parquet(fs: pyarrow.fs.FileSystem, path: str) -> pd.DataFrame:
    with fs.open_input_file(path) as stream:
        return pd.read_parquet(stream)


def _parquet(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def write(experiment_path: str) -> pd.DataFrame:
    """Rebuild trials.csv, trials.parquet and history.parquet beside Ray's files (not from a damaged
    experiment: see `damage`); returns trials."""
    trials, history = read_tables(experiment_path)
    if not damage(trials):
        save(experiment_path, trials, history)
    return trials


def save(experiment_path: str, trials: pd.DataFrame, history: pd.DataFrame) -> None:
    filesystem.write_atomic(filesystem.join(experiment_path, HISTORY_PARQUET), _parquet(history))
    filesystem.write_atomic(filesystem.join(experiment_path, TRIALS_PARQUET), _parquet(trials))
    filesystem.write_atomic(filesystem.join(experiment_path, TRIALS_CSV), trials.to_csv(index=False).encode())


def rank(trials: pd.DataFrame, metric: str, mode: str) -> pd.DataFrame:
    """Best score first, trials without one last; a tie goes to the lower trial id (the earlier trial),
    as in the live view's "best" (tuner/execution/console.py), so a tie never shows two different bests."""
    ordered = trials.sort_values(
        [best_column(metric), "trial_id"], ascending=[mode == "min", True], na_position="last", kind="stable"
    )
    ordered.insert(0, "rank", range(1, len(ordered) + 1))
    return ordered


def ranked(
    trials: pd.DataFrame, metric: str, params: list[str], top: int | None = None, objective: Objective | None = None
) -> pd.DataFrame:
    """The columns that rank trials, top trials first; with `objective`, every objective's best value,
    the Pareto front and feasibility where they apply."""
    ranked_by = objectives.columns(objective) if objective is not None else [best_column(metric)]
    columns = [
        "rank",
        "trial_id",
        "status",
        *params,
        *ranked_by,
        "best_epoch",
        "epochs",
        "stopped_because",
        "time_s",
        # the model's, as the last epoch reported them; an objective's best value already shows
        *(cost for cost in COSTS if best_column(cost) not in ranked_by),
        "device",
        "gpu_peak_gib",
    ]
    shown = trials[[c for c in columns if c in trials.columns]]
    if "stopped_because" in shown and not shown["stopped_because"].astype(bool).any():
        shown = shown.drop(columns="stopped_because")  # nothing was stopped early: no empty column
    return shown if top is None else shown.head(top)
