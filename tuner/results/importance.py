"""Which hyperparameters the score depends on, from the trials an experiment ran, by optuna's importance
evaluators rather than a model of tuner's own.

The trials table is turned into an in-memory optuna study: one complete trial per scored trial (status in
`tuner.trial_status.SCORED`, with a finite best_<metric>), its value that best_<metric> (already the
best over its epochs in the objective's mode) and the study's direction the objective's mode. optuna
needs each hyperparameter's distribution, which the table does not keep, so it is read from the values:

- strings, bools, or anything else that is not a number: a categorical of the values seen;
- numbers that are all whole: an int range, else a float range, from the smallest to the largest seen;
  on a log scale when they are all positive and span two decades or more (the plots' rule,
  `visualization._common.use_log_scale`: tuner.json records the names of the hyperparameters, not how
  the space drew them);
- one value in every scored trial (or none at all): left out of the study, listed with importance 0,
  since it cannot explain anything;
- blank (NaN or None) in some trials, as a conditional space leaves a key that a trial did not use: the
  key is left out of those trials only, so each trial's params are the ones it had. PED-ANOVA assesses
  such a hyperparameter as optuna's conditional PED-ANOVA does (active trials against inactive ones);
  fANOVA assesses only hyperparameters active in every scored trial, so the others get NaN ("not
  assessed") rather than a number measured on a different set of trials.

Evaluators (`EVALUATORS`, chosen by name; the default is `auto`): fANOVA
(`optuna.importance.FanovaImportanceEvaluator`: a random forest from the hyperparameters to the score,
whose variance it splits among them; scikit-learn, a tuner dependency, fits it) and PED-ANOVA
(`PedAnovaImportanceEvaluator`: how differently the top trials' values are spread than all trials', from
Parzen estimators; no model, so ten times faster, and it assesses conditional hyperparameters). `auto` is
fANOVA, and PED-ANOVA when a hyperparameter is blank in some scored trials, since fANOVA cannot assess
those. fANOVA is the default because it answers the report's question, what the score depends on, more
reliably from few trials (bench/README.md, importance): a choice that splits the trials in half can be at
most twice as common among PED-ANOVA's top trials, while the Parzen density of five top trials' values of
a noise hyperparameter differs from all trials' by chance. PED-ANOVA's top set is the best 10% of trials, but at least
`TOP_TRIALS` of them (at most half), as optuna advises five or more there.

An importance is the hyperparameter's share of the total (they add up to 1 over those assessed; all 0
when none matters), and `low` and `high` bound it: the `INTERVAL` quantiles of that share over `REPEATS`
bootstrap resamples of the scored trials (from `LARGE` trials, fANOVA fits each resample with a smaller
forest). With a handful of trials the numbers are rough, and the interval
says how rough; like the share, it stays within 0 and 1 (a mean plus or minus a std would not). Under
an early-stopping scheduler the trials it stopped are scored on fewer epochs, so the importance also
reflects which trials the scheduler let run on. Fewer than `MIN_TRIALS` scored trials is a TunerError.
More than `MAX_TRIALS` are assessed from a seeded random sample of that many (`.attrs["sampled"]` says so).
"""

import logging
import math
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import optuna
import pandas as pd
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.importance import BaseImportanceEvaluator, FanovaImportanceEvaluator, PedAnovaImportanceEvaluator

from tuner.errors import TunerError
from tuner.results import report
from tuner.results.columns import best_column, is_blank
from tuner.results.visualization._common import use_log_scale
from tuner.storage.meta import ExperimentMeta
from tuner.trial_status import SCORED

MIN_TRIALS = 4  # below this the importances say nothing a glance at the table doesn't
REPEATS, SEED = 10, 0  # bootstrap resamples for the interval; the seed of the resampling and of fANOVA's forest
INTERVAL = (0.05, 0.95)  # the quantiles of the resampled shares that bound an importance: a 90% interval
# fANOVA's forest: optuna's default 64 trees of depth 64 take seconds per fit from a few hundred trials
# (x REPEATS); 32 trees of depth 6 take a tenth of that and rank the synthetic cases of
# tests/results/test_importance.py and bench/importance_evaluators.py as well.
TREES, DEPTH = 32, 6
# From this many scored trials each bootstrap resample is fitted with a forest of RESAMPLE_TREES: the
# resampling's spread is then narrow, and the smaller forest keeps it so at under half the cost; below, it
# would widen the interval by a third (bench/README.md, importance intervals).
LARGE, RESAMPLE_TREES = 200, 8
TOP_TRIALS = 5  # PED-ANOVA's top quantile holds at least this many trials (at most half of them)
TOP_QUANTILE = 0.1  # ... and otherwise optuna's default 10%
# Beyond this many scored trials a seeded random sample of them is assessed: the forest and the Parzen
# estimators change little past it, while optuna's study copies every trial it is given, 11 times
# (bench/README.md, scale: the `--html` column).
MAX_TRIALS = 1000

# The evaluators by the name `importance(evaluator=...)` takes, each with the words a reader is shown.
EVALUATORS: dict[str, str] = {"fanova": "fANOVA", "ped-anova": "PED-ANOVA"}
AUTO = "auto"  # fANOVA, or PED-ANOVA when a hyperparameter is blank in some scored trials

MetricMode = tuple[str, str]  # an objective: (metric, "max" or "min")
_Encode = Callable[[Any], Any]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, (bool, np.bool_))


def _distribution(values: list[Any]) -> tuple[BaseDistribution, _Encode] | None:
    """The distribution these (non-blank) values are read as, and how to turn one into optuna's param
    value; None for a hyperparameter with fewer than two distinct values (see the module docstring)."""
    if all(_is_number(v) for v in values):
        numbers = [float(v) for v in values]
        if len(set(numbers)) < 2:
            return None
        log = use_log_scale(pd.Series(numbers))
        low, high = min(numbers), max(numbers)
        if all(n.is_integer() for n in numbers):
            return IntDistribution(int(low), int(high), log=log), lambda v: int(v)
        return FloatDistribution(low, high, log=log), float
    if all(isinstance(v, (bool, np.bool_)) for v in values):
        flags = sorted({bool(v) for v in values})
        return (CategoricalDistribution(flags), bool) if len(flags) > 1 else None
    # Strings, or a mix of kinds (a choice of lists, of None and numbers): compared as text.
    texts = sorted({str(v) for v in values})
    return (CategoricalDistribution(texts), str) if len(texts) > 1 else None


def _evaluator(name: str, trials: int, trees: int) -> BaseImportanceEvaluator:
    if name == "fanova":
        return FanovaImportanceEvaluator(n_trees=trees, max_depth=DEPTH, seed=SEED)
    return PedAnovaImportanceEvaluator(target_quantile=max(TOP_QUANTILE, min(0.5, TOP_TRIALS / trials)))


@contextmanager
def _quiet() -> Iterator[None]:
    """optuna logs each study it creates and warns about small samples (which the std shows here)."""
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(logging.WARNING)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        optuna.logging.set_verbosity(verbosity)


def _shares(
    params: list[dict[str, Any]],
    distributions: list[dict[str, BaseDistribution]],
    scores: np.ndarray,
    mode: str,
    assessed: list[str],
    evaluator: str,
    trees: int = TREES,
) -> dict[str, float]:
    """Each assessed hyperparameter's share of the importance on these trials (0 for one they never use)."""
    study = optuna.create_study(direction="maximize" if mode == "max" else "minimize")
    study.add_trials(
        [
            optuna.trial.create_trial(params=p, distributions=d, value=float(s))
            for p, d, s in zip(params, distributions, scores)
        ]
    )
    present = [name for name in assessed if any(name in p for p in params)]
    raw: dict[str, float] = {}
    # Scores that never vary (every trial alike, or a bootstrap resample of equal ones) leave nothing to
    # explain: every share is 0, where optuna's fANOVA raises "zero total variance".
    if present and np.ptp(scores) > 0:
        try:
            raw = optuna.importance.get_param_importances(
                study, evaluator=_evaluator(evaluator, len(scores), trees), params=present, normalize=False
            )
        except RuntimeError as error:
            if "zero total variance" not in str(error):
                raise
    total = sum(raw.values())
    return {name: raw.get(name, 0.0) / total if total > 0 else 0.0 for name in assessed}


def _objective_importance(
    trials: pd.DataFrame, params: list[str], metric: str, mode: str, evaluator: str, resample_trees: int | None
) -> pd.DataFrame:
    score = best_column(metric)
    rows = report.scored(trials, metric)
    if len(rows):  # an empty table may lack the column
        rows = rows[np.isfinite(rows[score].to_numpy(float))]
    if len(rows) < MIN_TRIALS:
        raise TunerError(
            f"parameter importance needs at least {MIN_TRIALS} scored trials "
            f"({', '.join(SCORED)}) with a {score}; this experiment has {len(rows)}"
        )
    scored_trials = len(rows)
    if scored_trials > MAX_TRIALS:
        rows = rows.sample(MAX_TRIALS, random_state=SEED)
    read = {}  # the hyperparameters that vary: (distribution, encode), and whether every trial has one
    for param in params:
        active = [v for v in rows[param] if not is_blank(v)]
        found = _distribution(active) if active else None
        if found is not None:
            read[param] = (found, len(active) == len(rows))
    if evaluator == AUTO:
        evaluator = "fanova" if all(everywhere for _, everywhere in read.values()) else "ped-anova"
    # fANOVA takes only hyperparameters every trial has; the rest are not assessed (NaN).
    assessed = [p for p, (_, everywhere) in read.items() if everywhere or evaluator != "fanova"]
    trial_params: list[dict[str, Any]] = []
    trial_distributions: list[dict[str, BaseDistribution]] = []
    for _, row in rows.iterrows():
        used = [p for p in assessed if not is_blank(row[p])]  # a conditional key the trial did not use: left out
        trial_params.append({p: read[p][0][1](row[p]) for p in used})
        trial_distributions.append({p: read[p][0][0] for p in used})
    scores = rows[score].to_numpy(float)
    means = dict.fromkeys(params, 0.0) | {p: math.nan for p in read if p not in assessed}
    lows, highs = dict(means), dict(means)
    if resample_trees is None:
        resample_trees = RESAMPLE_TREES if len(scores) >= LARGE else TREES
    if assessed:
        with _quiet():
            means.update(_shares(trial_params, trial_distributions, scores, mode, assessed, evaluator))
            rng = np.random.default_rng(SEED)
            resamples = []
            for _ in range(REPEATS):
                pick = rng.integers(0, len(scores), len(scores))
                resamples.append(
                    _shares(
                        [trial_params[i] for i in pick],
                        [trial_distributions[i] for i in pick],
                        scores[pick],
                        mode,
                        assessed,
                        evaluator,
                        resample_trees,
                    )
                )
        for p in assessed:
            low, high = np.clip(np.quantile([shares[p] for shares in resamples], INTERVAL), 0.0, 1.0)
            lows[p], highs[p] = float(low), float(high)
    frame = pd.DataFrame(
        {
            "param": params,
            "importance": [means[p] for p in params],
            "low": [lows[p] for p in params],
            "high": [highs[p] for p in params],
        }
    )
    frame = frame.sort_values("importance", ascending=False, kind="stable", na_position="last").reset_index(drop=True)
    frame.attrs["evaluator"] = EVALUATORS[evaluator]  # which one `auto` chose, for the plot and the page
    if scored_trials > MAX_TRIALS:
        frame.attrs["sampled"] = (MAX_TRIALS, scored_trials)  # assessed from a sample of the scored trials
    return frame


def importances(
    trials: pd.DataFrame,
    params: list[str],
    objectives: list[MetricMode],
    evaluator: str = AUTO,
    resample_trees: int | None = None,
) -> dict[str, pd.DataFrame]:
    """Per objective metric, one row per hyperparameter (param, importance, low, high), most important first,
    with the evaluator's name in `.attrs["evaluator"]` (and `.attrs["sampled"]`, (assessed, scored), when
    a sample was assessed); see the module docstring. Each objective is
    assessed on its own scored trials, in its own mode. `resample_trees` sizes each bootstrap resample's
    fANOVA forest (None: by the number of trials, as the module docstring says)."""
    if evaluator not in (AUTO, *EVALUATORS):
        raise TunerError(f"unknown importance evaluator {evaluator!r}; use one of: {', '.join((AUTO, *EVALUATORS))}")
    return {
        metric: _objective_importance(trials, params, metric, mode, evaluator, resample_trees)
        for metric, mode in objectives
    }


def importance(trials: pd.DataFrame, meta: ExperimentMeta, evaluator: str = AUTO) -> pd.DataFrame:
    """`importances` of the experiment's objective."""
    metric = meta.objective.metric
    return importances(trials, list(meta.params), [(metric, meta.objective.mode)], evaluator)[metric]
