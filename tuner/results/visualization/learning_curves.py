"""A metric per epoch for the best-ranked trials."""

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from tuner.results.visualization._common import new_figure, no_score_figure, plural, scored, short_config, varying
from tuner.storage.meta import ExperimentMeta


def plot_learning_curves(
    trials: pd.DataFrame, history: pd.DataFrame, meta: ExperimentMeta, metric: str | None = None, top: int = 5
) -> Figure:
    """`metric` (default: the experiment's) per epoch of the `top` best trials among those whose scores
    count, each labelled with its trial id and the hyperparameters that differ between trials."""
    metric = metric or meta.objective.metric
    ranked = scored(trials, meta)
    if ranked.empty:
        return no_score_figure(meta, "learning curves")
    shown = ranked.head(top)
    # Hyperparameters every trial shares would only lengthen each legend entry.
    params = varying(trials, list(meta.params))
    fig = new_figure(9, 4.5 + 0.22 * len(shown))
    ax = fig.add_subplot()
    for _, trial in shown.iterrows():
        rows = history[history["trial_id"] == trial["trial_id"]].sort_values("epoch")
        config = short_config(trial, params)
        ax.plot(
            rows["epoch"].astype(float),
            rows[metric].astype(float),
            marker="o",
            markersize=3,
            label=f"#{trial['rank']} {trial['trial_id']}" + (f"  {config}" if config else ""),
        )
    ax.set_xlabel("epoch")
    ax.set_ylabel(metric)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    fig.suptitle(
        f"{metric} per epoch: top {len(shown)} of {plural(len(ranked), 'scored trial')} by best {meta.objective.metric}"
    )
    # Below the axes, where long configs take width from nothing.
    fig.legend(title="rank, trial, config", fontsize="small", loc="outside lower center")
    return fig
