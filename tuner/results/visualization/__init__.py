"""Plots of one experiment, one per module, in the manner of `optuna.visualization`.

Each function takes the frames `tuner.results.report.read_tables` returns (trials, history) and the experiment's
meta (`tuner.json`), needs no Ray, and returns a `matplotlib.figure.Figure` that is not registered
with pyplot: save it, or let a notebook display it. Only trials whose status is in `tuner.trial_status.SCORED`
count as scored; a plot with nothing to draw returns a figure whose title says why.
"""

from tuner.results.visualization.best_so_far import plot_best_so_far
from tuner.results.visualization.early_stopping import plot_early_stopping
from tuner.results.visualization.importance import plot_importance
from tuner.results.visualization.learning_curves import plot_learning_curves
from tuner.results.visualization.parallel_coordinates import plot_parallel_coordinates
from tuner.results.visualization.param import plot_param
from tuner.results.visualization.pareto import plot_pareto

__all__ = [
    "plot_best_so_far",
    "plot_early_stopping",
    "plot_importance",
    "plot_learning_curves",
    "plot_parallel_coordinates",
    "plot_param",
    "plot_pareto",
]
