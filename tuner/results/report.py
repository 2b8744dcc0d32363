"""pandas reports of an experiment, built from Ray's own files so they work during, after, or
without the run that made them (from another process, on a finished or interrupted experiment)."""

import io
import json
import logging
import math
from typing import Any

import numpy as np
import pandas as pd
import pyarrow.fs
from ray.tune import ExperimentAnalysis
from ray.tune.result import (
    AUTO_RESULT_KEYS,
    DEBUG_METRICS,
    DEFAULT_EXPERIMENT_INFO_KEYS,
    DONE,
    SHOULD_CHECKPOINT,
)
from tqdm.auto import tqdm

from tuner.errors import TunerError
from tuner.ray_compat import logs
from tuner.results import objectives, stops
from tuner.results.columns import best_column
from tuner.results.status import FROM_RAY, SCORED, TrialStatus
from tuner.settings import Objective
from tuner.spec.param_space import flatten
from tuner.storage import decisions, filesystem, saved_state, trial_files
from tuner.storage import meta as meta_file
from tuner.storage.meta import ExperimentMeta
from tuner.training.result_keys import BOOKKEEPING, COSTS

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
# Keys of a result row that Ray fills in itself (TuneReportCallback adds the Train checkpoint's path).
RAY_KEYS = {
    *AUTO_RESULT_KEYS,
    *DEBUG_METRICS,
    *DEFAULT_EXPERIMENT_INFO_KEYS,
    DONE,
    SHOULD_CHECKPOINT,
    "checkpoint_path",
}


def metric_names(frames: list[pd.DataFrame]) -> list[str]:
    """The loop's own metrics across these result frames, in the order first reported."""
    skipped = RAY_KEYS | set(BOOKKEEPING)
    names: dict[str, None] = {}
    for frame in frames:
        names.update(
            (column, None) for column in frame.columns if column not in skipped and not column.startswith("config/")
        )
    return list(names)


def _cell(value: Any) -> Any:
    """A config value as a table cell: lists (any JSON value that is no scalar) as their JSON text."""
    return json.dumps(value) if isinstance(value, (list, tuple, dict)) else value


def _analysis(experiment_path: str) -> ExperimentAnalysis:
    """Ray's own reader of its experiment state (`experiment_path` may also name one state file)."""
    fs, path = filesystem.filesystem(experiment_path)
    if path.endswith(".json"):
        name = path.rsplit("/", 1)[-1] if filesystem.exists(experiment_path) else None
    else:
        name = saved_state.newest_state(experiment_path)
    if name is None:
        raise TunerError(f"{experiment_path} holds no Ray Tune experiment state yet; no trial has been recorded")
    try:
        with logs.quiet_analysis_warnings():
            return ExperimentAnalysis(path, storage_filesystem=fs)
    except Exception as error:  # files of another Ray version, or damaged: whatever Ray's reader raises
        raise TunerError(f"Ray's saved state {name} cannot be read ({_reason(error)})") from None


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


def _recorded_trials(
    experiment_path: str, meta: ExperimentMeta, damage: list[str]
) -> tuple[list[Any], dict[str, pd.DataFrame]]:
    """Ray's trials and their result frames; from the trial directories if Ray's state is unreadable
    (said in `damage`)."""
    try:
        analysis = _analysis(experiment_path)
        return _with_earlier_runs(experiment_path, meta, list(analysis.trials), dict(analysis.trial_dataframes))
    except TunerError as error:
        trials, frames = trial_files.read(experiment_path, meta.space)
        if not trials:
            raise
        # Cut short by a full disk, another Ray version's, or edited: said by the caller (see `damage`).
        damage.append(f"{error}; its trials are read from their own directories, so whether they finished is unknown")
        return trials, frames


def _with_earlier_runs(
    experiment_path: str, meta: ExperimentMeta, trials: list[Any], frames: dict[str, pd.DataFrame]
) -> tuple[list[Any], dict[str, pd.DataFrame]]:
    """An extended experiment's trials of every Ray run in its directory (`tuner extend` starts one of its
    own, whose state names only its trials): each extension's `previous_state` adds the trials the
    newest state lacks."""
    for extension in reversed(meta.extensions):
        if not (name := extension.get("previous_state")):
            continue
        try:
            earlier = _analysis(filesystem.join(experiment_path, name))
        except TunerError:
            log.warning(
                "%s/%s is gone: the trials before that `tuner extend` are not in the report", experiment_path, name
            )
            continue
        for trial in earlier.trials:
            if trial.trial_id not in frames:
                trials.append(trial)
                frames[trial.trial_id] = earlier.trial_dataframes.get(trial.trial_id, pd.DataFrame())
    return trials, frames


def _error_line(trial: Any) -> str:
    """The last line of a failed trial's traceback: the exception and its message."""
    text = trial_files.read_text(trial.storage.storage_filesystem, f"{trial.storage.trial_fs_path}/error.txt")
    lines = [line for line in (text or "").splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def _history(frame: pd.DataFrame, trial_id: str, params: list[str], metrics: list[str] | None = None) -> pd.DataFrame:
    """One row per reported epoch, with the config that epoch ran under (PBT changes it over time)."""
    configs = {f"config/{key}": key for key in params}
    metrics = metric_names([frame]) if metrics is None else metrics
    history = frame.reindex(columns=["epoch", *metrics, *RUN_COLUMNS, *configs]).rename(columns=configs)
    for key in configs.values():
        history[key] = history[key].map(_cell)
    history.insert(0, "trial_id", trial_id)
    # Mostly empty columns: explicit dtypes keep them nullable and writable to parquet.
    history = history.astype(
        {
            "restored_from": "string",
            "restored_epoch": "Int64",
            "epoch": "Int64",
            "device": "string",
            "gpu_peak_gib": float,
        }
    )
    return history[~_superseded(history, trial_id)].reset_index(drop=True)


def _superseded(history: pd.DataFrame, trial_id: str) -> pd.Series:
    """Rows of epochs that a later restore from the trial's own checkpoint ran again.

    A driver killed between Ray writing an epoch's result and saving its experiment state resumes
    the trial from the checkpoint before that epoch, so the epoch runs twice; the rerun is the one
    the trial's weights descend from. (Under PBT a restore from another trial is a new branch, kept.)
    """
    dropped = pd.Series(False, index=history.index)
    restores = history.index[(history["restored_from"] == trial_id).fillna(False)]
    for position in restores:
        earlier = history.index < position
        dropped |= earlier & (history["epoch"] > history.loc[position, "restored_epoch"]).fillna(False).to_numpy()
    return dropped


def _status(trial: Any, history: pd.DataFrame, epochs_run: int, meta: ExperimentMeta) -> TrialStatus:
    if len(history) and history["diverged"].iloc[-1] in (True, 1):
        return TrialStatus.DIVERGED
    if not len(history) and not getattr(trial, "last_result", None):
        # Also a trial that --stop or the time budget ended while it waited: Ray marks it TERMINATED.
        return TrialStatus.ERROR if trial.status == "ERROR" else TrialStatus.NOT_STARTED
    if not len(history):  # it reported, but its files are gone (a damaged experiment): Ray's word alone
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


def _trial_row(
    trial: Any, history: pd.DataFrame, meta: ExperimentMeta, metrics: list[str], stopped: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    metric = meta.objective.metric
    epochs_run = int(history["epoch"].max()) if history["epoch"].notna().any() else 0
    status = _status(trial, history, epochs_run, meta)
    row: dict[str, Any] = {"trial_id": trial.trial_id, "status": status.value}
    config = flatten(trial.config)
    row.update({key: _cell(config.get(key)) for key in meta.params})
    last = history.iloc[-1] if len(history) else None
    for name in metrics:  # each metric's value at the trial's last epoch
        row[name] = last[name] if last is not None else math.nan
    best = None
    for name, way in meta.objective.objectives:  # the primary first: its best epoch is the trial's
        scores = pd.to_numeric(history[name], errors="coerce").astype(float)
        at = (scores.idxmax() if way == "max" else scores.idxmin()) if scores.notna().any() else None
        row[best_column(name)] = float(scores[at]) if at is not None else math.nan
        best = at if name == metric else best
    row["best_epoch"] = int(history.loc[best, "epoch"]) if best is not None else None
    row["epochs"] = epochs_run
    row["stopped_because"] = stops.stopped_because(trial.trial_id, status, stopped, meta)
    row["time_s"] = float(last["time_total_s"]) if last is not None else 0.0
    # Where it trained (cpu, cuda:0) and its most GPU memory in any epoch (rank 0's; NaN on the CPU).
    row["device"] = last["device"] if last is not None and pd.notna(last["device"]) else ""
    peaks = pd.to_numeric(history["gpu_peak_gib"], errors="coerce")
    row["gpu_peak_gib"] = float(peaks.max()) if peaks.notna().any() else math.nan
    row["error"] = _error_line(trial) if trial.status == "ERROR" else ""
    row["trial_dir"] = trial.storage.trial_fs_path
    return row


def read_tables(experiment_path: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(trials, history): one row per trial, ranked best first; one row per trial per epoch."""
    meta = load_meta(experiment_path)
    damage: list[str] = []
    recorded, frames = _recorded_trials(experiment_path, meta, damage)
    if missing := _missing_trial_dirs(recorded):
        damage.append(f"the directories of {len(missing)} trial(s) Ray recorded are missing ({_names(missing)})")
    # A finished trial Ray saw report whose result.json is gone (deleted). Not one whose file is there but
    # holds no row yet: a trial a stop condition ended at its first result, or one running when its
    # driver was killed, may not have written or uploaded its rows.
    reported = [trial for trial in recorded if getattr(trial, "last_result", None) and trial.status == "TERMINATED"]
    empty = [
        _dir_name(trial)
        for trial in reported
        if frames.get(trial.trial_id, pd.DataFrame()).empty and not _has_result_file(trial)
    ]
    if lost := [name for name in empty if name not in missing]:
        damage.append(f"the results of {len(lost)} trial(s) that reported are gone from their files ({_names(lost)})")
    metrics = metric_names(list(frames.values()))
    for position, (name, _) in enumerate(meta.objective.objectives):
        if name not in metrics:
            metrics.insert(position, name)  # a column even before any trial reported it
    histories, rows = [], []
    stopped = stops.stop_rows(decisions.read(experiment_path))
    # Shown only on a terminal, and only when reading the trials (an error file each) takes a while.
    for trial in tqdm(recorded, desc="reading trials", unit="trial", delay=2, leave=False, disable=None):
        histories.append(_history(frames.get(trial.trial_id, pd.DataFrame()), trial.trial_id, meta.params, metrics))
        rows.append(_trial_row(trial, histories[-1], meta, metrics, stopped))
    trials = pd.DataFrame(rows)
    if len(trials):
        if meta.objective.several or meta.objective.constraints:
            trials = objectives.rank(trials, meta.objective)
        else:
            trials = rank(trials, meta.objective.metric, meta.objective.mode)
        trials["best_epoch"] = trials["best_epoch"].astype("Int64")
    trials = _whole_numbers(trials.reset_index(drop=True), rows, meta.params)
    history = (
        pd.concat(histories, ignore_index=True) if histories else _history(pd.DataFrame(), "", meta.params, metrics)
    )
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


def _missing_trial_dirs(recorded: list[Any]) -> list[str]:
    """The names of the recorded trials that reported a result but whose directories are gone (moved or
    deleted by hand). A trial that never started has none: Ray makes it when the trial starts."""
    missing = []
    for trial in recorded:
        fs, path = trial.storage.storage_filesystem, trial.storage.trial_fs_path
        if getattr(trial, "last_result", None) and fs.get_file_info(path).type == pyarrow.fs.FileType.NotFound:
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
