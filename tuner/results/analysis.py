"""Notebook access to a finished or interrupted experiment: the same DataFrames `tuner report` writes,
and the plots and importances of `tuner.results.visualization` and `tuner.results.importance` drawn from them.

    from tuner.results import analysis
    exp = analysis.load("tuner_results/digits_mlp-20261202-120000")
    exp.trials                  # one row per trial, ranked best first
    exp.history                 # one row per trial per epoch
    exp.best()                  # the best trial's row, among those that ran to the end or were stopped by the scheduler
    exp.curves()                # epoch x trial table of the metric
    exp.plot_learning_curves()  # matplotlib Figures: also plot_param, plot_parallel_coordinates,
                                # plot_early_stopping, plot_importance, plot_pareto (several objectives)
    exp.importance()            # which hyperparameters the score depends on (optuna's fANOVA or PED-ANOVA)
"""

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pandas as pd
from matplotlib.figure import Figure

from tuner.results import importance as importances
from tuner.results import objectives, report, stops, visualization
from tuner.storage import decisions, filesystem, study_journal
from tuner.storage.meta import ExperimentMeta

if TYPE_CHECKING:
    import optuna


@dataclass(frozen=True)
class Experiment:
    path: str
    meta: ExperimentMeta
    trials: pd.DataFrame
    history: pd.DataFrame

    @property
    def name(self) -> str:
        """The experiment directory's name (a bucket URI's query is no part of it)."""
        return filesystem.base_name(self.path)

    @property
    def metric(self) -> str:
        return self.meta.objective.metric

    @property
    def mode(self) -> str:
        return self.meta.objective.mode

    @property
    def objective_columns(self) -> list[str]:
        """`best_<metric>` of each objective, then `pareto_rank` and `feasible` where they apply."""
        return objectives.columns(self.meta.objective)

    @property
    def params(self) -> list[str]:
        return list(self.meta.params)

    def best(self) -> pd.Series:
        scored = report.scored(self.trials, self.metric)
        if scored.empty:
            raise ValueError(f"no trial of {self.path} completed; see exp.trials[['status', 'error']]")
        return scored.iloc[0]

    def curves(self, metric: str | None = None) -> pd.DataFrame:
        """Epoch x trial table of one metric, ready for `.plot()`."""
        return self.history.pivot(index="epoch", columns="trial_id", values=metric or self.metric)

    def plot_best_so_far(self) -> Figure:
        return visualization.plot_best_so_far(self.trials, self.history, self.meta)

    def plot_learning_curves(self, metric: str | None = None, top: int = 5) -> Figure:
        return visualization.plot_learning_curves(self.trials, self.history, self.meta, metric=metric, top=top)

    def plot_param(self, param: str | None = None) -> Figure:
        return visualization.plot_param(self.trials, self.meta, param=param)

    def plot_parallel_coordinates(self) -> Figure:
        return visualization.plot_parallel_coordinates(self.trials, self.meta)

    def plot_pareto(self, x: str | None = None, y: str | None = None) -> Figure:
        """With several objectives: objective x against y (default the first two), the front marked."""
        return visualization.plot_pareto(self.trials, self.meta, x=x, y=y)

    def plot_early_stopping(self) -> Figure:
        return visualization.plot_early_stopping(
            self.trials, self.history, self.meta, stops.frame(decisions.read(self.path))
        )

    def study(self) -> "optuna.Study":
        """The experiment as the Optuna study its runs wrote (storage/study_journal.py), for
        `optuna.visualization` and anything else that takes a study; `tuner ui` serves the same."""
        return study_journal.load_study(self.path)

    def importance(self, evaluator: str = importances.AUTO) -> pd.DataFrame:
        """param, importance, low, high per hyperparameter, most important first; needs 4 scored trials.
        evaluator: "auto", "fanova" or "ped-anova" (tuner/results/importance.py says which to use)."""
        return importances.importance(self.trials, self.meta, evaluator)

    def plot_importance(self, evaluator: str = importances.AUTO) -> Figure:
        return visualization.plot_importance(self.importance(evaluator))


def load(path: str) -> Experiment:
    """The experiment at `path` (a directory or a bucket URI) in pandas, read from its report files, or
    from Ray's own files while a run goes on or after one was interrupted."""
    meta = report.load_meta(path)
    trials, history = report.read_tables(path)
    return Experiment(path=path, meta=meta, trials=trials, history=history)
