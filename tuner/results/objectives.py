"""The trials table ranked by several objectives and constraints. One objective without constraints is
ranked as it always was (report.rank); otherwise:

- `feasible` (with constraints): the trial's metrics at its last reported epoch meet every constraint
  (what the search saw of it when it ended). A trial without a value is not feasible.
- `pareto_rank` (with several objectives): its front by non-dominated sorting of each objective's best
  value over the trial's epochs (`best_<metric>`), among the trials of the same feasibility: 1 is the
  front no other trial dominates. Trials without every value have none.
- The order: feasible trials first, then by front, then by the primary objective's best value, then the
  lower trial id (the earlier trial), as report.rank breaks a tie.
"""

from collections.abc import Sequence

import numpy as np
import pandas as pd

from tuner.results.columns import best_column
from tuner.search import pareto
from tuner.settings import Objective
from tuner.settings.objectives import Constraint

FEASIBLE, PARETO_RANK = "feasible", "pareto_rank"


def feasible(trials: pd.DataFrame, constraints: Sequence[Constraint]) -> pd.Series:
    """Whether each trial's last reported metrics meet every constraint."""
    met = pd.Series(True, index=trials.index)
    for constraint in constraints:
        values = trials[constraint.metric] if constraint.metric in trials else pd.Series(np.nan, index=trials.index)
        met &= values.map(constraint.satisfied).astype(bool)
    return met


def front_ranks(trials: pd.DataFrame, objectives: Sequence[tuple[str, str]]) -> pd.Series:
    """Each trial's Pareto front by its best values (1 = non-dominated), NA without every value."""
    columns = [best_column(metric) for metric, _ in objectives]
    values = trials.reindex(columns=columns).apply(pd.to_numeric, errors="coerce")
    complete = values.notna().all(axis=1)
    ranks = pd.Series(pd.NA, index=trials.index, dtype="Int64")
    if complete.any():
        points = pareto.oriented(values[complete].to_numpy(), [mode for _, mode in objectives])
        ranks[complete] = pareto.front_ranks(points)
    return ranks


def rank(trials: pd.DataFrame, objective: Objective) -> pd.DataFrame:
    """`trials` with `feasible` and `pareto_rank` where they apply, best first, and `rank` 1, 2, ..."""
    trials = trials.copy()
    keys, ascending = [], []
    if objective.constraints:
        trials[FEASIBLE] = feasible(trials, objective.constraint_list)
        keys.append(FEASIBLE)
        ascending.append(False)
    if objective.several:
        trials[PARETO_RANK] = pd.Series(pd.NA, index=trials.index, dtype="Int64")
        groups = trials[FEASIBLE] if FEASIBLE in trials else pd.Series(True, index=trials.index)
        for _, group in trials.groupby(groups):
            trials.loc[group.index, PARETO_RANK] = front_ranks(group, objective.objectives)
        keys.append(PARETO_RANK)
        ascending.append(True)
    keys += [best_column(objective.metric), "trial_id"]
    ascending += [objective.mode == "min", True]
    ordered = trials.sort_values(keys, ascending=ascending, na_position="last", kind="stable")
    ordered.insert(0, "rank", range(1, len(ordered) + 1))
    return ordered


def columns(objective: Objective) -> list[str]:
    """The columns the ranked table shows for the objectives: each one's best, the front, feasibility."""
    shown = [best_column(metric) for metric, _ in objective.objectives]
    shown += [PARETO_RANK] if objective.several else []
    shown += [FEASIBLE] if objective.constraints else []
    return shown


def front(trials: pd.DataFrame, objective: Objective) -> pd.DataFrame:
    """The ranked trials on the first front (feasible ones, where there are constraints)."""
    if PARETO_RANK not in trials:
        return trials.iloc[0:0]
    chosen = trials[PARETO_RANK] == 1
    if FEASIBLE in trials:
        chosen &= trials[FEASIBLE]
    return trials[chosen.fillna(False).astype(bool)]
