"""What the plots share: which trials carry a score, how a hyperparameter's values are shown, and the
figure that stands in for a plot with nothing to draw."""

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from tuner.results import report
from tuner.results.columns import best_column
from tuner.storage.meta import ExperimentMeta

# Few enough values that a box per value reads better than a scatter (e.g. a 3-point grid of lr).
MAX_CATEGORIES = 6
# Values spanning this many decades are drawn on a log axis, as loguniform samples are meant to be read.
LOG_DECADES = 2.0


def new_figure(width: float, height: float) -> Figure:
    """A figure outside pyplot's registry: nothing to close, never shown twice in a notebook, and safe
    under any backend (Agg renders it when saved)."""
    return Figure(figsize=(width, height), layout="constrained")


def score_column(meta: ExperimentMeta) -> str:
    return best_column(meta.objective.metric)


def scored(trials: pd.DataFrame, meta: ExperimentMeta) -> pd.DataFrame:
    return report.scored(trials, meta.objective.metric)


def no_score_figure(meta: ExperimentMeta, what: str) -> Figure:
    fig = new_figure(6, 2)
    fig.suptitle(f"{what}: no trial has a score (best {meta.objective.metric})")
    return fig


def is_categorical(values: pd.Series) -> bool:
    """Strings, bools and few-valued numbers are categories: a box per value, evenly spaced labels."""
    present = values.dropna()
    numeric = pd.api.types.is_numeric_dtype(present) and not pd.api.types.is_bool_dtype(present)
    return not numeric or present.nunique() <= MAX_CATEGORIES


def use_log_scale(values: pd.Series) -> bool:
    present = values.dropna().astype(float)
    return bool(len(present)) and bool((present > 0).all()) and np.log10(present.max() / present.min()) >= LOG_DECADES


def categories(values: pd.Series) -> list[Any]:
    """Distinct values in reading order: numbers ascending, anything else by its text."""
    distinct = list(values.dropna().unique())
    numeric = all(isinstance(v, (int, float, np.number)) and not isinstance(v, (bool, np.bool_)) for v in distinct)
    return sorted(distinct) if numeric else sorted(distinct, key=str)


def label(value: Any) -> str:
    if isinstance(value, (float, np.floating)):
        return f"{value:.3g}"
    return str(value)


def varying(trials: pd.DataFrame, params: list[str]) -> list[str]:
    """The hyperparameters that take more than one value across these trials."""
    return [p for p in params if trials[p].nunique(dropna=True) > 1]


def plural(number: int, noun: str) -> str:
    return f"{number} {noun}" if number == 1 else f"{number} {noun}s"


def short_config(row: pd.Series, params: list[str]) -> str:
    """`lr=0.01, optimizer=adam`; a conditional key the trial did not have is left out, not `nan`."""
    return ", ".join(f"{p}={label(row[p])}" for p in params if not pd.isna(row[p]))
