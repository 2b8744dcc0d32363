"""How far each trial got: what the scheduler stopped, and what failed on the way."""

import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.collections import LineCollection
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator

from tuner.results.visualization._common import new_figure, plural, scored
from tuner.storage.meta import ExperimentMeta
from tuner.trial_status import TrialStatus

STATUS_COLORS: dict[str, str] = {
    TrialStatus.FINISHED: "tab:green",
    TrialStatus.STOPPED_EARLY: "tab:orange",
    TrialStatus.PAUSED: "tab:purple",
    TrialStatus.DIVERGED: "tab:brown",
    TrialStatus.ERROR: "tab:red",
    TrialStatus.INCOMPLETE: "tab:gray",
    TrialStatus.NOT_STARTED: "lightgray",
}
# Beyond this many trials the per-trial labels would overlap; the bars alone still show the pattern.
MAX_LABELLED = 60


def plot_early_stopping(
    trials: pd.DataFrame, history: pd.DataFrame, meta: ExperimentMeta, decisions: pd.DataFrame | None = None
) -> Figure:
    """Left, a bar per trial (best-ranked on top) as long as the epochs it ran, coloured by its status,
    with a dot at its best epoch; right, every trial's metric per epoch in its status's colour, ending
    in a cross where the trial stopped short of the budget; the budget dashed on both. With the
    scheduler's `decisions` (tuner.results.stops.frame), each cutoff a trial was compared with is a
    dash at its rung on the right (black where the trial stopped there), and a stopped trial's bar ends
    in the comparison that stopped it."""
    count = len(trials)
    fig = new_figure(13, min(2.6 + 0.28 * max(count, 1), 24))
    bars, curves = fig.subplots(1, 2, width_ratios=(1, 1.2))
    compared = _compared(decisions, meta.objective.metric)
    _bars(bars, trials, meta.budget.epochs, compared)
    _curves(curves, trials, history, meta)
    present = [s for s in STATUS_COLORS if s in set(trials["status"])]
    handles: list[Artist] = [Patch(facecolor=STATUS_COLORS[s], edgecolor="0.3", label=s) for s in present]
    handles += [
        Line2D([], [], color="black", marker="o", linestyle="", markersize=4, label="best epoch"),
        Line2D([], [], color="black", marker="x", linestyle="", label="stopped before the budget"),
        Line2D([], [], color="0.2", linestyle="--", label=f"budget: {meta.budget.epochs} epochs"),
    ]
    if len(compared):
        _cutoffs(curves, compared)
        handles += [
            Line2D([], [], color="black", marker="_", markersize=12, mew=2, linestyle="", label="cutoff: stopped"),
            Line2D([], [], color="0.6", marker="_", markersize=12, mew=2, linestyle="", label="cutoff: went on"),
        ]
    curves.legend(handles=handles, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1))
    none_scored = " (no trial has a score)" if count and scored(trials, meta).empty else ""
    fig.suptitle(f"epochs run by each of {plural(count, 'trial')}{none_scored}")
    return fig


def _color(status: str) -> str:
    return STATUS_COLORS.get(status, "black")


def _compared(decisions: pd.DataFrame | None, metric: str) -> pd.DataFrame:
    """The decisions that compared a value of the plotted metric with a cutoff."""
    if decisions is None or decisions.empty:
        return pd.DataFrame(columns=["trial_id", "epoch", "decision", "value", "cutoff", "mode"])
    rows = decisions[decisions["cutoff"].notna() & (decisions["metric"] == metric) & decisions["epoch"].notna()]
    return rows[rows["decision"].isin(["stop", "continue"])]


def _cutoffs(ax: Axes, compared: pd.DataFrame) -> None:
    went_on, stopped = compared[compared["decision"] == "continue"], compared[compared["decision"] == "stop"]
    for rows, color in ((went_on, "0.6"), (stopped, "black")):
        ax.plot(
            rows["epoch"].astype(float), rows["cutoff"].astype(float), color=color, marker="_", markersize=12,
            mew=2, linestyle="", zorder=4,
        )  # fmt: skip


def _bars(ax: Axes, trials: pd.DataFrame, budget: int, compared: pd.DataFrame) -> None:
    ys = np.arange(len(trials))
    ax.barh(ys, trials["epochs"], color=[_color(s) for s in trials["status"]], edgecolor="0.3", linewidth=0.5)
    ax.scatter(trials["best_epoch"].astype(float), ys, color="black", s=14, zorder=3)
    ax.axvline(budget, color="0.2", linestyle="--", linewidth=1)
    ax.invert_yaxis()  # rank 1 at the top, as in the table
    ax.set_xlim(0, max([budget, *trials["epochs"]]) + 0.5)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("epochs run")
    ax.set_ylabel("trial, by rank")
    if len(trials) <= MAX_LABELLED:
        ax.set_yticks(ys, [f"#{r} {t}" for r, t in zip(trials["rank"], trials["trial_id"])], fontsize=8)
        # Where a trial stopped, what stopped it: its value against the cutoff.
        last_stop = compared[compared["decision"] == "stop"].drop_duplicates("trial_id", keep="last")
        why = {row.trial_id: row for row in last_stop.itertuples()}
        for y, trial_id, epochs in zip(ys, trials["trial_id"], trials["epochs"]):
            if (row := why.get(trial_id)) is not None:
                sign = ">" if row.mode == "min" else "<"
                ax.annotate(
                    f"{row.value:.3g} {sign} {row.cutoff:.3g}", (epochs, y), xytext=(6, 0),
                    textcoords="offset points", va="center", fontsize=7,
                )  # fmt: skip
    else:
        ax.set_yticks([])


def _curves(ax: Axes, trials: pd.DataFrame, history: pd.DataFrame, meta: ExperimentMeta) -> None:
    metric, budget = meta.objective.metric, meta.budget.epochs
    rows_of = {
        trial_id: rows.sort_values("epoch")
        for trial_id, rows in history[["trial_id", "epoch", metric]].groupby("trial_id", sort=False)
    }
    lines, colors, ends, end_colors = [], [], [], []
    for trial_id, status, epochs_run in zip(trials["trial_id"], trials["status"], trials["epochs"]):
        rows = rows_of.get(trial_id)
        if rows is None or rows.empty:
            continue
        points = np.column_stack([rows["epoch"].astype(float), rows[metric].astype(float)])
        lines.append(points)
        colors.append(_color(status))
        if epochs_run < budget:
            ends.append(points[-1])
            end_colors.append(_color(status))
    # One artist for all the curves and one for the marks where trials stopped: a line per trial would
    # cost seconds at thousands of trials. Fainter the more there are.
    many = len(lines) > 200
    ax.add_collection(
        LineCollection(
            lines,
            colors=colors,
            alpha=0.7 if not many else max(0.05, 140 / len(lines)),
            linewidths=1.2 if not many else 0.6,
            rasterized=many,
        )
    )
    ax.autoscale_view()
    if ends:
        stopped = np.array(ends)
        size = 30 if not many else 8
        ax.scatter(stopped[:, 0], stopped[:, 1], color=end_colors, marker="x", s=size, zorder=3, rasterized=many)
    ax.axvline(budget, color="0.2", linestyle="--", linewidth=1)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel("epoch")
    ax.set_ylabel(metric)
    ax.grid(alpha=0.3)
    ax.set_title(f"{metric} per epoch, coloured by status", fontsize="medium")
