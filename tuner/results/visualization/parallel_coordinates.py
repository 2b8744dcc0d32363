"""Every scored trial as one line through its hyperparameters and its score."""

from dataclasses import dataclass

import numpy as np
import pandas as pd
from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.collections import LineCollection
from matplotlib.colors import Normalize
from matplotlib.figure import Figure

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

TICKS = 5


@dataclass(frozen=True)
class _Axis:
    name: str
    positions: np.ndarray  # each trial's value mapped into [0, 1]
    ticks: list[tuple[float, str]]  # where on [0, 1] a real value sits, and its label


def _axis(name: str, values: pd.Series) -> _Axis:
    if values.nunique() <= 1:  # nothing to spread: the line runs through the middle
        return _Axis(name, np.full(len(values), 0.5), [(0.5, label(values.iloc[0]))])
    if is_categorical(values):
        levels = categories(values)
        spots = np.linspace(0, 1, len(levels))
        where = dict(zip(levels, spots))
        return _Axis(name, values.map(where).to_numpy(float), [(s, label(v)) for v, s in zip(levels, spots)])
    log = use_log_scale(values)
    scaled = np.log10(values.to_numpy(float)) if log else values.to_numpy(float)
    low, high = np.nanmin(scaled), np.nanmax(scaled)  # a trial without this key has no point on the axis
    spots = np.linspace(0, 1, TICKS)
    reals = low + spots * (high - low)
    return _Axis(name, (scaled - low) / (high - low), [(s, label(10**r if log else r)) for s, r in zip(spots, reals)])


def plot_parallel_coordinates(trials: pd.DataFrame, meta: ExperimentMeta) -> Figure:
    """One vertical axis per hyperparameter plus best_<metric>, each scaled to [0, 1] and labelled with
    real values (log-spaced for params spanning two decades or more, categories evenly spaced); each
    scored trial is a line coloured by its score, so the best trials' paths stand out."""
    ranked = scored(trials, meta)
    if ranked.empty:
        return no_score_figure(meta, "parallel coordinates")
    score = score_column(meta)
    names = [*meta.params, score]
    axes = [_axis(name, ranked[name]) for name in names]
    scores = ranked[score].to_numpy(float)
    # Brighter is better whatever the mode, so the eye lands on the best lines.
    cmap = colormaps["viridis" if meta.objective.mode == "max" else "viridis_r"]
    low, high = scores.min(), scores.max()
    if low == high:  # one score: a narrow band around it, so the colorbar still reads as that value
        low, high = low - max(abs(low), 1.0) * 0.01, high + max(abs(high), 1.0) * 0.01
    norm = Normalize(low, high)

    fig = new_figure(max(6.0, 1.7 * len(names) + 2), 4.8)
    ax = fig.add_subplot()
    xs = np.arange(len(axes))
    ys = np.column_stack([a.positions for a in axes])
    order = np.argsort(scores if meta.objective.mode == "max" else -scores)  # the best are drawn last, on top
    # One artist for every line (a Line2D each costs ~1 ms to build and draw: 10 s at 10,000 trials), fainter
    # the more lines there are, so that where many trials went still shows as a denser band.
    lines = LineCollection(
        [np.column_stack([xs, ys[i]]) for i in order],
        colors=cmap(norm(scores[order])),
        alpha=min(0.8, max(0.05, 40 / len(order))),
        linewidths=1.5 if len(order) <= 200 else 0.8,
        rasterized=len(order) > 200,
    )
    ax.add_collection(lines)
    for x, axis in zip(xs, axes):
        ax.axvline(float(x), color="0.2", linewidth=1)
        for spot, text in axis.ticks:
            ax.text(
                x - 0.04,
                spot,
                text,
                ha="right",
                va="center",
                fontsize=8,
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1},
            )
    ax.set_xticks(xs, [a.name for a in axes])
    ax.set_xlim(-0.45, len(axes) - 0.9)  # room for the first axis's labels, on its left
    ax.set_ylim(-0.05, 1.05)
    ax.set_yticks([])
    ax.set_xlabel("hyperparameter, then the score")
    for side in ("left", "right", "top"):
        ax.spines[side].set_visible(False)
    fig.colorbar(ScalarMappable(norm=norm, cmap=cmap), ax=ax, label=score)
    ax.set_title(f"parallel coordinates of {plural(len(ranked), 'scored trial')}")
    return fig
