"""pandas reports of an experiment, built from Ray's own files so they work during, after, or
without the run that made them (from another process, on a finished or interrupted experiment)."""

import io
import logging
import math
from typing import Any

import pandas as pd
from ray.tune import ExperimentAnalysis

from tuner import storage
from tuner.errors import TunerError
from tuner.metrics import METRICS

TRIALS_CSV, TRIALS_PARQUET, HISTORY_PARQUET = "trials.csv", "trials.parquet", "history.parquet"
STATUS = {"TERMINATED": "finished", "ERROR": "error"}
# Any other Ray state (RUNNING, PENDING, PAUSED) is a snapshot that may be stale: the run may still be
# going or may have been killed. What the files do show is whether the trial got anywhere.
INCOMPLETE, NOT_STARTED = "incomplete", "not started"

# Ray warns once per trial that has no result files yet, both in Tuner.fit and here; the report
# already says "not started" for those trials, so the warning is noise.
logging.getLogger("ray.tune.analysis.experiment_analysis").setLevel(logging.ERROR)
HISTORY_COLUMNS = ["trial_id", "epoch", *METRICS, "diverged", "world_size", "samples_per_s", "time_total_s"]


def _analysis(experiment_path: str) -> ExperimentAnalysis:
    fs, path = storage.filesystem(experiment_path)
    try:
        return ExperimentAnalysis(path, storage_filesystem=fs)
    except (ValueError, FileNotFoundError):
        raise TunerError(f"{experiment_path} holds no Ray Tune experiment state yet; no trial has been recorded") from None


def _error_line(trial: Any) -> str:
    """The last line of a failed trial's traceback: the exception and its message."""
    path = f"{trial.storage.trial_fs_path}/error.txt"
    try:
        with trial.storage.storage_filesystem.open_input_stream(path) as stream:
            lines = [line for line in stream.read().decode(errors="replace").splitlines() if line.strip()]
    except (FileNotFoundError, OSError):
        return ""
    return lines[-1].strip() if lines else ""


def build(experiment_path: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(trials, history): one row per trial, ranked best first; one row per trial per epoch."""
    meta = load_meta(experiment_path)
    metric, mode = meta["metric"], meta["mode"]
    analysis = _analysis(experiment_path)
    frames = analysis.trial_dataframes
    rows, histories = [], []
    for trial in analysis.trials:
        history = frames.get(trial.trial_id, pd.DataFrame())
        history = history.reindex(columns=HISTORY_COLUMNS).assign(trial_id=trial.trial_id)
        histories.append(history)
        last = history.iloc[-1] if len(history) else None
        status = STATUS.get(trial.status) or (INCOMPLETE if len(history) else NOT_STARTED)
        if last is not None and last["diverged"] in (True, 1):
            status = "diverged"  # the loop stopped on a non-finite loss
        row: dict[str, Any] = {"trial_id": trial.trial_id, "status": status}
        row.update({key: trial.config.get(key) for key in meta["params"]})
        for name in METRICS:
            row[name] = float(last[name]) if last is not None else math.nan
        scores = history[metric].astype(float)
        best_index = (scores.idxmax() if mode == "max" else scores.idxmin()) if scores.notna().any() else None
        row[f"best_{metric}"] = float(scores[best_index]) if best_index is not None else math.nan
        row["best_epoch"] = int(history.loc[best_index, "epoch"]) if best_index is not None else None
        row["epochs"] = int(history["epoch"].max()) if len(history) else 0
        row["time_s"] = float(last["time_total_s"]) if last is not None else 0.0
        row["error"] = _error_line(trial) if trial.status == "ERROR" else ""
        row["trial_dir"] = trial.storage.trial_fs_path
        rows.append(row)
    trials = pd.DataFrame(rows)
    if len(trials):
        trials = trials.sort_values(f"best_{metric}", ascending=(mode == "min"), na_position="last", kind="stable")
        trials.insert(0, "rank", range(1, len(trials) + 1))
        trials["best_epoch"] = trials["best_epoch"].astype("Int64")
    trials = trials.reset_index(drop=True)
    history = pd.concat(histories, ignore_index=True) if histories else pd.DataFrame(columns=HISTORY_COLUMNS)
    history["epoch"] = history["epoch"].astype("Int64")
    return trials, history


def load_meta(experiment_path: str) -> dict[str, Any]:
    if not storage.exists(f"{experiment_path}/{storage.META_FILE}"):
        raise TunerError(f"{experiment_path} is not a tuner experiment (no {storage.META_FILE}); "
                         "pass the directory that `tuner run` printed")
    return storage.read_meta(experiment_path)


def _parquet(frame: pd.DataFrame) -> bytes:
    buffer = io.BytesIO()
    frame.to_parquet(buffer, index=False)
    return buffer.getvalue()


def write(experiment_path: str) -> pd.DataFrame:
    """Rebuild trials.csv, trials.parquet and history.parquet beside Ray's files; returns trials."""
    trials, history = build(experiment_path)
    storage.write_atomic(f"{experiment_path}/{HISTORY_PARQUET}", _parquet(history))
    storage.write_atomic(f"{experiment_path}/{TRIALS_PARQUET}", _parquet(trials))
    storage.write_atomic(f"{experiment_path}/{TRIALS_CSV}", trials.to_csv(index=False).encode())
    return trials


def ranked_table(trials: pd.DataFrame, metric: str, params: list[str], top: int | None = None) -> str:
    """The top trials as a Markdown table."""
    columns = ["rank", "trial_id", "status", *params, f"best_{metric}", "best_epoch", "epochs", "time_s"]
    shown = trials[[c for c in columns if c in trials.columns]]
    if top is not None:
        shown = shown.head(top)
    return shown.to_markdown(index=False, floatfmt=".4g")
