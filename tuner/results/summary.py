"""The summary `tuner run`, `resume` and `extend` print when the trials are done: where the experiment
is, how many trials ended and how, the best trial (or the Pareto front), what its model costs, and the
commands that show more, each of which runs as printed when pasted into a shell (tuner/command.py)."""

import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from tuner.command import as_submitted, tuner_hint, with_extra
from tuner.errors import INTERRUPTED
from tuner.results import objectives, report
from tuner.results.columns import best_column, is_blank
from tuner.results.outcome import Outcome
from tuner.storage import filesystem
from tuner.storage.meta import ExperimentMeta
from tuner.training.result_keys import COSTS
from tuner.trial_status import UNFINISHED


def _notebooks() -> Path:
    """The shipped notebooks: package data, which a wheel installs as tuner/notebooks and a checkout (an
    editable install) keeps in its top-level notebooks/ (pyproject.toml maps the one to the other)."""
    installed = Path(__file__).resolve().parent.parent / "notebooks"
    return installed if (installed / "quick_look.ipynb").is_file() else installed.parent.parent / "notebooks"


NOTEBOOKS = _notebooks()


def summarize(outcome: Outcome) -> int:
    """Print the summary; the command's exit code: 0, 1 when no trial completed, INTERRUPTED when trials
    are left to run."""
    trials, path, meta = outcome.trials, outcome.experiment_path, outcome.meta
    if outcome.unread:
        print(f"tuner: warning: {outcome.unread}", file=sys.stderr)
    print()
    print(f"experiment: {path}")
    print(f"report:     {filesystem.join(path, report.TRIALS_CSV)} ({tuner_hint('report', path)})")
    if devices := _devices(trials, meta):
        print(f"devices:    {devices}")
    # The counts of the live view's last line, `tuner list` and `tuner report`: every trial of the
    # experiment, the ones Ray never created included.
    counts, total = report.tally(trials, meta), report.total_trials(trials, meta)
    done = total - sum(counts.get(status, 0) for status in UNFINISHED)
    interrupted = done < total and not meta.stopped_by
    if meta.stopped_by:
        print(f"stopped:    {meta.stopped_by}; {done} of {total} trials done ({report.describe(counts)})")
    elif interrupted:
        print(
            f"interrupted: {done} of {total} trials done ({report.describe(counts)}); "
            f"continue with: {tuner_hint('resume', path)}"
        )
    scored = report.scored(trials, outcome.metric)
    if scored.empty:
        print(
            f"no trial completed ({report.describe(counts) or 'none recorded'}); "
            "the report lists each trial's status and error"
        )
        return INTERRUPTED if interrupted else 1
    best = scored.iloc[0]
    _front(trials, meta)
    # A conditional key the best trial did not have is blank in the report, and left out here.
    params = [key for key in outcome.params if not is_blank(best[key])]
    config = ", ".join(f"{key}={best[key]}" for key in params)
    print(
        f"best trial: {best['trial_id']}  {best_column(outcome.metric)}={best[best_column(outcome.metric)]:.4g} "
        f"(epoch {best['best_epoch']})  {config}"
    )
    if costs := _costs(best, COSTS):
        print(f"model:      {costs}")
    next_steps(path, {key: best[key] for key in params})
    return INTERRUPTED if interrupted else 0


def _costs(best: pd.Series, names: Sequence[str]) -> str:
    """What the best trial's model costs, as tuner measured it (tuner/training/model_costs.py):
    `params=151306  latency_ms=1.41`; "" for a loop that measured neither."""
    shown = [(name, best.get(name)) for name in names if pd.notna(best.get(name))]
    return "  ".join(f"{name}={int(value) if name == 'params' else f'{value:.3g}'}" for name, value in shown)


FRONT_SHOWN = 5  # the summary's lines of the Pareto front; the report has all of it


def _front(trials: pd.DataFrame, meta: ExperimentMeta) -> None:
    """With several objectives, the Pareto front in a few lines; with constraints, how many met them."""
    objective = meta.objective
    if objective.constraints:
        met = int(trials[objectives.FEASIBLE].sum())
        none = "; none does, so the best trial below breaks one" if not met else ""
        print(f"feasible:   {met} of {len(trials)} trials meet {', '.join(objective.constraints)}{none}")
    if not objective.several:
        return
    front = objectives.front(trials, objective)
    names = [best_column(metric) for metric, _ in objective.objectives]
    trials_on_it = f"{len(front)} trial{'' if len(front) == 1 else 's'}"
    print(f"pareto front: {trials_on_it} ({', '.join(f'{m} {mode}' for m, mode in objective.objectives)})")
    for _, row in front.head(FRONT_SHOWN).iterrows():
        print(f"  {row['trial_id']}  " + "  ".join(f"{name}={row[name]:.4g}" for name in names))
    if len(front) > FRONT_SHOWN:
        print(f"  ... {len(front) - FRONT_SHOWN} more in the report")


def _devices(trials: pd.DataFrame, meta: ExperimentMeta) -> str:
    """Where the trials trained and the most GPU memory they took: `cuda:0 (4 trials per GPU); peak GPU
    memory 0.28-0.33 GiB per trial`, or `cpu`; "" before any trial reported."""
    if trials.empty or "device" not in trials:
        return ""
    devices = sorted({device for device in trials["device"] if isinstance(device, str) and device})
    if not devices:
        return ""
    line = ", ".join(devices)
    if meta.gpus is not None and meta.gpus.trials_per_gpu > 1:
        line += f" ({meta.gpus.trials_per_gpu} trials per GPU)"
    peaks = trials["gpu_peak_gib"].dropna()
    if len(peaks):
        line += f"; peak GPU memory {peaks.min():.2g}-{peaks.max():.2g} GiB per trial"
    return line


def next_steps(path: str, best: dict[str, Any]) -> None:
    """What to do with the result: the best config to paste, and where to look further; each command runs
    as printed, pasted into a shell (tuner/command.py)."""
    plain = {key: value.item() if hasattr(value, "item") else value for key, value in best.items()}
    print()
    print(f"best config:  {plain}")
    if not any("/" in key for key in plain):  # --set pins top-level keys only
        flags = " ".join("--set " + shlex.quote(f"{key}={value}") for key, value in plain.items())
        print(f"  as flags:   {flags}")
    print(f"html report:  {tuner_hint('report', path, '--html')}")
    print(f"study page:   {tuner_hint('ui', path)}")
    experiment, notebook = shlex.quote(path), shlex.quote(str(as_submitted(NOTEBOOKS / "quick_look.ipynb")))
    # Jupyter refuses to start as root unless told; the notebook reads a bucket as tuner's report does.
    as_root = " --allow-root" if os.geteuid() == 0 else ""
    jupyter = with_extra(
        "notebook", "jupyter-lab", lambda lab: f"TUNER_EXPERIMENT={experiment} {lab}{as_root} {notebook}"
    )
    print(f"notebook:     {jupyter}")
    if not filesystem.is_remote(path):  # TensorBoard reads no bucket through pyarrow's URI (endpoint_override)
        print(
            f"tensorboard:  {with_extra('tensorboard', 'tensorboard', lambda board: f'{board} --logdir {experiment}')}"
        )
