"""Which hyperparameters the score depends on, from the trials an experiment ran.

The method: a scikit-learn `RandomForestRegressor(n_estimators=200, random_state=0)` is fitted to map
each scored trial's hyperparameters to its best_<metric> (scored: status in `tuner.results.status.SCORED`). Strings
and bools are ordinal-encoded; numbers are used as they are, with no log scaling, because a tree's
splits do not change under a monotone transform. A hyperparameter's importance is then
`sklearn.inspection.permutation_importance(n_repeats=20, random_state=0)` on the same trials: the mean
drop in the forest's R² when that hyperparameter's column is shuffled, with its standard deviation over
the 20 shuffles. A hyperparameter that took one value in every scored trial cannot explain anything
and gets importance 0. With a handful of trials the numbers are rough; the std says how rough. Under
an early-stopping scheduler the trials it stopped are scored on fewer epochs, so the importance also
reflects which trials the scheduler let run on.
"""

import numpy as np
import pandas as pd
from sklearn.ensemble import RandomForestRegressor
from sklearn.inspection import permutation_importance

from tuner.errors import TunerError
from tuner.results import report
from tuner.results.columns import best_column
from tuner.results.status import SCORED
from tuner.storage.meta import ExperimentMeta

MIN_TRIALS = 4  # below this a forest fitted to the trials says nothing a glance at the table doesn't
TREES, REPEATS, SEED = 200, 20, 0


def _encoded(values: pd.Series) -> np.ndarray:
    """Numbers as floats; anything else (strings, bools) as the rank of its text. A missing value (a
    conditional key the trial did not have) is a value of its own: below the numbers, "" as text."""
    numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
    if numeric:
        numbers = values.astype(float).to_numpy(copy=True)
        missing = np.isnan(numbers)
        if missing.any():
            numbers[missing] = np.nanmin(numbers) - 1 if not missing.all() else 0.0
        return numbers
    text = values.map(lambda value: "" if pd.isna(value) else str(value))
    codes = {value: code for code, value in enumerate(sorted(text.unique()))}
    return text.map(codes).to_numpy(float)


def importance(trials: pd.DataFrame, meta: ExperimentMeta) -> pd.DataFrame:
    """One row per hyperparameter (param, importance, std), most important first; see the module docstring."""
    score = best_column(meta.objective.metric)
    params = list(meta.params)
    rows = report.scored(trials, meta.objective.metric)
    if len(rows) < MIN_TRIALS:
        raise TunerError(
            f"parameter importance needs at least {MIN_TRIALS} scored trials "
            f"({', '.join(SCORED)}); this experiment has {len(rows)}"
        )
    varying = [p for p in params if rows[p].astype(str).nunique() > 1]
    means = dict.fromkeys(params, 0.0)
    stds = dict.fromkeys(params, 0.0)
    if varying:
        features = np.column_stack([_encoded(rows[p]) for p in varying])
        target = rows[score].to_numpy(float)
        forest = RandomForestRegressor(n_estimators=TREES, random_state=SEED).fit(features, target)
        result = permutation_importance(forest, features, target, n_repeats=REPEATS, random_state=SEED)
        means.update(zip(varying, result.importances_mean.tolist()))
        stds.update(zip(varying, result.importances_std.tolist()))
    frame = pd.DataFrame({"param": params, "importance": [means[p] for p in params], "std": [stds[p] for p in params]})
    return frame.sort_values("importance", ascending=False, kind="stable").reset_index(drop=True)
