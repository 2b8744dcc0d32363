"""The best score so far against the trials run, with the spread of the scores as the search went: the
plot that still reads at 10,000 trials, where a line or a label per trial no longer does."""

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from tuner.results.visualization._common import new_figure, no_score_figure, plural, score_column, scored
from tuner.storage.meta import ExperimentMeta

BAND = (0.1, 0.9)  # the quantiles of the band around the median
WINDOWS = 50  # the band's rolling window: this fraction of the trials (at least MIN_WINDOW)
MIN_WINDOW = 5


def plot_best_so_far(trials: pd.DataFrame, history: pd.DataFrame, meta: ExperimentMeta) -> Figure:
    """Each scored trial's best score in the order the trials ended (a faint point each), the best of
    them so far (a step line), and the median and the 10-90 % band of the scores over a rolling window
    of trials: whether the search still improves, and whether later trials score better than earlier."""
    ranked = scored(trials, meta)
    if ranked.empty:
        return no_score_figure(meta, "best so far")
    score = score_column(meta)
    ended = history.groupby("trial_id")["reported_at"].max() if "reported_at" in history else pd.Series(dtype=float)
    order = ranked.assign(ended=ranked["trial_id"].map(ended)).sort_values(["ended", "trial_id"], na_position="last")
    scores = order[score].to_numpy(float)
    x = np.arange(1, len(scores) + 1)
    best = np.maximum.accumulate(scores) if meta.objective.mode == "max" else np.minimum.accumulate(scores)

    fig = new_figure(9, 4.5)
    ax = fig.add_subplot()
    # One artist for all the points, rasterized: 10,000 points cost what 10 do in the saved image.
    ax.scatter(x, scores, s=6, color="0.55", alpha=min(0.8, max(0.15, 60 / len(scores))), rasterized=True)
    window = max(MIN_WINDOW, len(scores) // WINDOWS)
    if len(scores) >= 2 * window:
        rolling = pd.Series(scores).rolling(window, min_periods=window)
        low, high = rolling.quantile(BAND[0]).to_numpy(), rolling.quantile(BAND[1]).to_numpy()
        ax.fill_between(x, low, high, color="tab:blue", alpha=0.2, linewidth=0, label=f"10-90 % of the last {window}")
        ax.plot(x, rolling.median().to_numpy(), color="tab:blue", linewidth=1, label=f"median of the last {window}")
    ax.step(x, best, where="post", color="tab:red", linewidth=2, label="best so far")
    ax.set_xlabel("trials, in the order they ended")
    ax.set_ylabel(score)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small", loc="lower right" if meta.objective.mode == "max" else "upper right")
    ax.set_title(f"{score} so far over {plural(len(scores), 'scored trial')}")
    return fig
