"""One self-contained HTML page per experiment, `<experiment>/report.html`: the summary, the ranked
trials, every plot of `tuner.results.visualization`, the importance of each hyperparameter and what failed.

The page needs nothing beside itself (inline CSS, plots as base64 PNG), so it can be mailed, attached
to a ticket or opened from a bucket. Every string that came from the user or from a trial (space and
parameter names, values, trial ids, error lines) is HTML-escaped.
"""

import base64
import html
import io
from typing import Any

import pandas as pd
from matplotlib.figure import Figure

from tuner.errors import TunerError
from tuner.results import report, stops, visualization
from tuner.results.columns import best_column
from tuner.results.importance import INTERVAL, REPEATS, importances
from tuner.results.visualization import _common
from tuner.settings.objectives import describe
from tuner.storage import decisions, filesystem
from tuner.storage.meta import ExperimentMeta
from tuner.trial_status import TrialStatus

REPORT_FILE = "report.html"
DPI = 100
RANKED_ROWS = 100  # rows of the ranked table on the page; trials.csv holds them all
FAILED = (TrialStatus.ERROR, TrialStatus.DIVERGED)

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; max-width: 1320px;
       margin: 2em auto; padding: 0 1.5em; line-height: 1.45; }
h1 { margin-bottom: 0.2em; }
h2 { border-bottom: 1px solid #ddd; padding-bottom: 0.2em; margin-top: 2em; }
.meta { color: #555; margin-top: 0; }
table { border-collapse: collapse; font-size: 0.88em; margin: 0.5em 0; }
th, td { border: 1px solid #ddd; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
tbody tr:nth-child(even) { background: #fafafa; }
img { max-width: 100%; height: auto; display: block; margin: 0.5em 0; }
.note { color: #555; font-style: italic; }
.error { font-family: ui-monospace, monospace; white-space: pre-wrap; color: #a00; }
"""


def write(experiment_path: str, trials: pd.DataFrame, history: pd.DataFrame, meta: ExperimentMeta) -> str:
    """Write `<experiment_path>/report.html` atomically from the frames of `tuner.results.report.read_tables`;
    returns its path."""
    path = filesystem.join(experiment_path, REPORT_FILE)
    filesystem.write_atomic(path, _page(experiment_path, trials, history, meta).encode())
    return path


def _text(value: Any) -> str:
    return html.escape(str(value))


def _image(fig: Figure, alt: str) -> str:
    """The figure as an inline PNG. tuner.results.visualization's figures are not registered with pyplot, so
    nothing needs closing: the figure is freed with its last reference."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    encoded = base64.b64encode(buffer.getvalue()).decode()
    return f'<img alt="{_text(alt)}" src="data:image/png;base64,{encoded}">'


def _table(frame: pd.DataFrame) -> str:
    return frame.to_html(index=False, border=0, na_rep="", float_format=lambda x: f"{x:.4g}", escape=True)


def _section(title: str, body: str) -> str:
    return f"<section><h2>{_text(title)}</h2>\n{body}\n</section>"


def _note(text: str) -> str:
    return f'<p class="note">{_text(text)}</p>'


def _summary(experiment_path: str, trials: pd.DataFrame, meta: ExperimentMeta) -> str:
    facts = [
        f"{len(trials)} trials",
        f"metric {meta.objective.metric} ({meta.objective.mode})"
        if not meta.objective.several
        else f"objectives {describe(meta.objective.objectives)}",
        *([f"constraints {', '.join(meta.objective.constraints)}"] if meta.objective.constraints else []),
        f"{meta.budget.epochs} epochs each",
        f"search {meta.tuning.search}",
        f"scheduler {meta.tuning.scheduler}",
    ]
    header = f'<p class="meta">{_text(experiment_path)}<br>{_text(" · ".join(facts))}</p>\n'
    if trials.empty:
        return header
    counts = trials["status"].value_counts()
    rows = "".join(f"<tr><td>{_text(status)}</td><td>{count}</td></tr>" for status, count in counts.items())
    return header + f"<table><thead><tr><th>status</th><th>trials</th></tr></thead><tbody>{rows}</tbody></table>"


def _best(scored: pd.DataFrame, failed: pd.DataFrame, meta: ExperimentMeta) -> str:
    if scored.empty:
        hint = " See Failed trials below for what went wrong." if len(failed) else ""
        return _note(f"No trial has a score: none finished, was stopped early or paused.{hint}")
    best, score = scored.iloc[0], best_column(meta.objective.metric)
    rows = [
        ("trial", best["trial_id"]),
        ("status", best["status"]),
        (score, f"{best[score]:.4g} at epoch {best['best_epoch']} of {best['epochs']}"),
        *((param, _common.label(best[param])) for param in meta.params),
    ]
    body = "".join(f"<tr><th>{_text(key)}</th><td>{_text(value)}</td></tr>" for key, value in rows)
    return f"<table><tbody>{body}</tbody></table>"


def _ranked(trials: pd.DataFrame, meta: ExperimentMeta, failed: pd.DataFrame) -> str:
    if trials.empty:
        return _note("No trial was recorded.")
    # The columns `tuner report` prints, so the page and the terminal show the same thing.
    shown = report.ranked(trials, meta.objective.metric, list(meta.params), objective=meta.objective)
    shown = shown.join(trials["error"]) if len(failed) else shown
    if len(shown) <= RANKED_ROWS:
        return _table(shown)
    more = f"the top {RANKED_ROWS} of {len(shown)} trials; every trial is in {report.TRIALS_CSV} and trials.parquet"
    return _note(more) + _table(shown.head(RANKED_ROWS))


def _pareto(trials: pd.DataFrame, meta: ExperimentMeta, scored: pd.DataFrame) -> str:
    if scored.empty:
        return _note("No trial has a score, so there is no front yet.")
    how = (
        "Trials ranked by non-dominated sorting of their best value of each objective; the front is the "
        "trials no other trial beats in every objective"
        + (", among those that meet the constraints." if meta.objective.constraints else ".")
    )
    return _note(how) + _image(visualization.plot_pareto(trials, meta), "Pareto front")


def _importance(trials: pd.DataFrame, meta: ExperimentMeta) -> str:
    """One table and plot per objective (the primary first)."""
    try:
        frames = importances(trials, list(meta.params), list(meta.objective.objectives))
    except TunerError as error:
        return _note(str(error))
    evaluators = sorted({frame.attrs["evaluator"] for frame in frames.values()})
    method = (
        f"optuna's {' and '.join(evaluators)} importance evaluator on the scored trials (hyperparameters to "
        f"best score): each hyperparameter's share of the total, between low and high: the "
        f"{INTERVAL[1] - INTERVAL[0]:.0%} "
        f"interval of that share over {REPEATS} bootstrap resamples of the trials (see tuner/results/importance.py)."
    )
    sampled = [frame.attrs["sampled"] for frame in frames.values() if "sampled" in frame.attrs]
    if sampled:
        assessed, scored_trials = max(sampled, key=lambda pair: pair[1])
        method += f" Assessed on a random {assessed:,} of the {scored_trials:,} scored trials."
    if any(frame["importance"].isna().any() for frame in frames.values()):
        method += " A hyperparameter blank in some trials is not assessed: fANOVA needs it in every trial."
    stopped = int((trials["status"] == TrialStatus.STOPPED_EARLY).sum())
    if stopped:
        method += (
            f" {stopped} of the scored trials were stopped early, so their scores come from fewer epochs: "
            "the importance partly reflects which trials the scheduler let run on."
        )
    parts = []
    for (metric, mode), frame in zip(meta.objective.objectives, frames.values()):
        several = len(frames) > 1
        heading = f"<h3>for {html.escape(metric)} ({mode})</h3>" if several else ""
        alt = "hyperparameter importance" + (f" for {metric}" if several else "")
        image = _image(visualization.plot_importance(frame), alt)
        parts.append(heading + _table(frame) + image)
    return _note(method) + "".join(parts)


def _failure(trial: pd.Series) -> str:
    if trial["status"] == TrialStatus.DIVERGED:
        return f"non-finite loss in epoch {trial['epochs']}; the trial stopped there"
    error = trial["error"]
    # A frame read back from trials.csv has NaN where the error was empty.
    return error if isinstance(error, str) and error else "no error line recorded (see the trial's error.txt)"


def _failed(failed: pd.DataFrame, params: list[str]) -> str:
    if failed.empty:
        return _note("No trial failed.")
    rows = "".join(
        f"<tr><td>{_text(t['trial_id'])}</td><td>{_text(t['status'])}</td>"
        f"<td>{_text(_common.short_config(t, params))}</td>"
        f'<td class="error">{_text(_failure(t))}</td></tr>'
        for _, t in failed.iterrows()
    )
    return (
        "<table><thead><tr><th>trial</th><th>status</th><th>config</th><th>error</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )


def _page(experiment_path: str, trials: pd.DataFrame, history: pd.DataFrame, meta: ExperimentMeta) -> str:
    scored = _common.scored(trials, meta)
    failed = trials[trials["status"].isin(FAILED)] if len(trials) else trials
    if scored.empty:
        no_score = _note("No trial has a score, so there is nothing to plot here.")
        curves = params = parallel = no_score
    else:
        curves = _image(visualization.plot_best_so_far(trials, history, meta), "best so far") + _image(
            visualization.plot_learning_curves(trials, history, meta), "learning curves"
        )
        params = _image(visualization.plot_param(trials, meta), "best score per hyperparameter")
        parallel = _image(visualization.plot_parallel_coordinates(trials, meta), "parallel coordinates")
    decided = stops.frame(decisions.read(experiment_path))
    # Only where something stopped trials early or decided whether to (a scheduler, --stop, the time
    # budget): in a run where every trial ran every epoch, the section would show just that.
    cut_short = trials["status"].isin([TrialStatus.STOPPED_EARLY, TrialStatus.PAUSED]).any() if len(trials) else False
    stopping = (
        [
            _section(
                "Early stopping",
                _image(visualization.plot_early_stopping(trials, history, meta, decided), "epochs run per trial"),
            )
        ]
        if cut_short or len(decided)
        else []
    )
    title = f"{meta.space}: tuner report"
    sections = [
        _section("Best trial", _best(scored, failed, meta)),
        _section("Ranked trials", _ranked(trials, meta, failed)),
        *([_section("Pareto front", _pareto(trials, meta, scored))] if meta.objective.several else []),
        _section("Learning curves", curves),
        _section("Score per hyperparameter", params),
        _section("Parallel coordinates", parallel),
        _section("Hyperparameter importance", _importance(trials, meta)),
        *stopping,
        _section("Failed trials", _failed(failed, list(meta.params))),
    ]
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{_text(title)}</title>'
        f"<style>{STYLE}</style></head>\n<body>\n<h1>{_text(title)}</h1>\n"
        f"{_summary(experiment_path, trials, meta)}\n" + "\n".join(sections) + "\n</body></html>\n"
    )
