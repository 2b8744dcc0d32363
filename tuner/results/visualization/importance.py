"""The hyperparameter importances of `tuner.results.importance.importance` as bars."""

import pandas as pd
from matplotlib.figure import Figure

from tuner.results.visualization._common import new_figure


def plot_importance(frame: pd.DataFrame) -> Figure:
    """A horizontal bar per hyperparameter, most important on top, with the spread over shuffles as
    error bars."""
    fig = new_figure(7, 1.6 + 0.45 * max(len(frame), 1))
    ax = fig.add_subplot()
    ax.barh(frame["param"], frame["importance"], xerr=frame["std"], color="tab:blue", capsize=3)
    ax.invert_yaxis()  # the frame is sorted most important first
    ax.axvline(0, color="0.3", linewidth=0.8)
    ax.set_xlabel("importance: mean drop in R² when the column is shuffled")
    ax.set_ylabel("hyperparameter")
    ax.grid(axis="x", alpha=0.3)
    ax.set_title("hyperparameter importance (random forest, permutation)")
    return fig
