"""The hyperparameter importances of `tuner.results.importance.importance` as bars."""

import pandas as pd
from matplotlib.figure import Figure

from tuner.results.visualization._common import new_figure


def plot_importance(frame: pd.DataFrame) -> Figure:
    """A horizontal bar per hyperparameter, most important on top, with its interval over bootstrap
    resamples of the trials as error bars; one the evaluator could not assess (NaN) is labelled so."""
    fig = new_figure(7, 1.6 + 0.45 * max(len(frame), 1))
    ax = fig.add_subplot()
    assessed = frame["importance"].notna()
    labels = [param if ok else f"{param} (not assessed)" for param, ok in zip(frame["param"], assessed)]
    shares = frame["importance"].fillna(0)
    # From the bar's end to each bound; a bound on the far side of the share (a resample's quantile can
    # miss the whole sample's share) draws no whisker.
    below, above = (shares - frame["low"].fillna(0)).clip(lower=0), (frame["high"].fillna(0) - shares).clip(lower=0)
    ax.barh(labels, shares, xerr=[below, above], color="tab:blue", capsize=3)
    ax.invert_yaxis()  # the frame is sorted most important first
    ax.axvline(0, color="0.3", linewidth=0.8)
    ax.set_xlabel("importance: share of the total")
    ax.set_ylabel("hyperparameter")
    ax.grid(axis="x", alpha=0.3)
    evaluator = frame.attrs.get("evaluator")
    ax.set_title(f"hyperparameter importance (optuna {evaluator})" if evaluator else "hyperparameter importance")
    return fig
