"""Notebook access to a finished or interrupted experiment: the same DataFrames `tuner report` writes.

    from tuner import analysis
    exp = analysis.load("tuner_results/digits_mlp-20261202-120000")
    exp.trials      # one row per trial, ranked best first
    exp.history     # one row per trial per epoch
    exp.best()      # the best trial's row, among those that ran to the end or were stopped by the scheduler
"""

from dataclasses import dataclass
from typing import Any

import pandas as pd

from tuner import report


@dataclass(frozen=True)
class Experiment:
    path: str
    meta: dict[str, Any]
    trials: pd.DataFrame
    history: pd.DataFrame

    @property
    def metric(self) -> str:
        return self.meta["metric"]

    @property
    def mode(self) -> str:
        return self.meta["mode"]

    @property
    def params(self) -> list[str]:
        return list(self.meta["params"])

    def best(self) -> pd.Series:
        scored = self.trials[self.trials["status"].isin(report.SCORED)]
        if scored.empty:
            raise ValueError(f"no trial of {self.path} completed; see exp.trials[['status', 'error']]")
        return scored.iloc[0]

    def curves(self, metric: str | None = None) -> pd.DataFrame:
        """Epoch x trial table of one metric, ready for `.plot()`."""
        return self.history.pivot(index="epoch", columns="trial_id", values=metric or self.metric)


def load(path: str) -> Experiment:
    meta = report.load_meta(path)
    trials, history = report.build(path)
    return Experiment(path=path, meta=meta, trials=trials, history=history)
