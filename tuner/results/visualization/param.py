"""The best score of each trial against each hyperparameter."""

import math

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from tuner.errors import TunerError
from tuner.results.visualization._common import (
    categories,
    is_categorical,
    label,
    new_figure,
    no_score_figure,
    plural,
    score_column,
    scored,
    use_log_scale,
)
from tuner.storage.meta import ExperimentMeta

COLUMNS = 3
POINTS = "tab:blue"


def plot_param(trials: pd.DataFrame, meta: ExperimentMeta, param: str | None = None) -> Figure:
    """best_<metric> against each hyperparameter (or only `param`), one subplot each, over the trials whose
    scores count: a scatter for numbers (log x when they span two decades or more), a box per value with
    the trials overlaid for strings, bools and params with few distinct values."""
    params = list(meta.params)
    if param is not None and param not in params:
        raise TunerError(f"{param!r} is not a hyperparameter of this experiment; it searched {', '.join(params)}")
    shown = [param] if param is not None else params
    ranked = scored(trials, meta)
    if ranked.empty:
        return no_score_figure(meta, "hyperparameters")
    columns = min(COLUMNS, len(shown))
    rows = math.ceil(len(shown) / columns)
    fig = new_figure(4.2 * columns, 3.4 * rows)
    axes = fig.subplots(rows, columns, squeeze=False).ravel()
    score = score_column(meta)
    for ax, name in zip(axes, shown):
        _plot_one(ax, ranked[[name, score]].dropna(), name, score)
    for ax in axes[len(shown) :]:
        ax.set_visible(False)
    fig.suptitle(f"{score} per hyperparameter ({plural(len(ranked), 'scored trial')})")
    return fig


def _plot_one(ax: Axes, frame: pd.DataFrame, name: str, score: str) -> None:
    values, scores = frame[name], frame[score].astype(float)
    ax.set_xlabel(name)
    ax.set_ylabel(score)
    ax.grid(alpha=0.3)
    if values.nunique() <= 1:
        only = label(values.iloc[0]) if len(values) else "no value"
        ax.text(
            0.5,
            0.5,
            f"constant: {name} = {only}\nnothing to compare",
            ha="center",
            va="center",
            transform=ax.transAxes,
            color="0.4",
        )
        ax.set_xticks([])
        return
    if is_categorical(values):
        _boxes(ax, values, scores)
        return
    ax.scatter(values.astype(float), scores, color=POINTS, alpha=0.8, edgecolor="k", linewidth=0.5)
    if use_log_scale(values):
        ax.set_xscale("log")


def _boxes(ax: Axes, values: pd.Series, scores: pd.Series) -> None:
    levels = categories(values)
    groups = [scores[values == level].to_numpy() for level in levels]
    positions = np.arange(1, len(levels) + 1)
    ax.boxplot(groups, positions=positions, widths=0.5, showfliers=False)
    # A fixed jitter keeps overlapping trials visible and the picture the same on every run.
    jitter = np.random.default_rng(0)
    for position, group in zip(positions, groups):
        ax.scatter(
            position + jitter.uniform(-0.12, 0.12, len(group)),
            group,
            color=POINTS,
            alpha=0.8,
            edgecolor="k",
            linewidth=0.5,
            zorder=3,
        )
    ax.set_xticks(positions, [label(level) for level in levels])
