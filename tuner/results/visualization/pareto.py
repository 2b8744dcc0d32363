"""The trade-off between two objectives: every scored trial by its best value of each, the Pareto
front (tuner/results/objectives.py) drawn as the staircase it spans, infeasible trials marked apart."""

import pandas as pd
from matplotlib.figure import Figure

from tuner.results import objectives
from tuner.results.columns import best_column
from tuner.results.visualization._common import new_figure, no_score_figure, scored
from tuner.storage.meta import ExperimentMeta


def plot_pareto(trials: pd.DataFrame, meta: ExperimentMeta, x: str | None = None, y: str | None = None) -> Figure:
    """Objective `x` against objective `y` (default: the first two); with more than two, the front drawn
    is that of all of them, so some of its points may look dominated in these two."""
    objective = meta.objective
    modes = dict(objective.objectives)
    if len(modes) < 2:
        fig = new_figure(6, 2)
        fig.suptitle(f"Pareto front: the experiment has one objective ({objective.metric})")
        return fig
    names = list(modes)
    x, y = x or names[0], y or names[1]
    for name in (x, y):
        if name not in modes:
            raise ValueError(f"{name!r} is not an objective of this experiment; those are {', '.join(names)}")
    points = scored(trials, meta)
    points = points[points[best_column(x)].notna() & points[best_column(y)].notna()]
    if points.empty:
        return no_score_figure(meta, "Pareto front")
    fig = new_figure(6.5, 4.5)
    ax = fig.add_subplot()
    feasible = points[objectives.FEASIBLE] if objectives.FEASIBLE in points else pd.Series(True, index=points.index)
    feasible = feasible.astype(bool)
    on_front = (points[objectives.PARETO_RANK] == 1).fillna(False).astype(bool) & feasible
    rest = points[feasible & ~on_front]
    ax.scatter(rest[best_column(x)], rest[best_column(y)], color="#999", s=22, label="dominated")
    if (~feasible).any():
        broken = points[~feasible]
        ax.scatter(
            broken[best_column(x)], broken[best_column(y)], color="#c44", marker="x", s=28, label="breaks a constraint"
        )
    front = points[on_front].sort_values(best_column(x))
    ax.scatter(front[best_column(x)], front[best_column(y)], color="#1f77b4", s=40, zorder=3, label="Pareto front")
    if len(names) == 2 and len(front) > 1:
        # The edge of what the front attains: between two points, the y of the one whose x covers the gap.
        ax.step(
            front[best_column(x)],
            front[best_column(y)],
            where="post" if modes[x] == "min" else "pre",
            color="#1f77b4",
            alpha=0.5,
        )
    ax.set_xlabel(f"best {x} ({modes[x]})")
    ax.set_ylabel(f"best {y} ({modes[y]})")
    ax.legend(loc="best", fontsize="small")
    title = f"Pareto front: {len(front)} of {len(points)} scored trials"
    if len(names) > 2:
        title += f" (front of all {len(names)} objectives)"
    ax.set_title(title)
    return fig
