"""Hyperparameter importance from a trials table as the report writes it, through optuna's real
evaluators: synthetic tables where the answer is known (one hyperparameter decides the score, another is
noise), so a ranking that comes out wrong fails here."""

import numpy as np
import pandas as pd
import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

from tuner.errors import TunerError
from tuner.results import importance as importance_module
from tuner.results.importance import EVALUATORS, MIN_TRIALS, _distribution, importance, importances
from tuner.results.visualization import plot_importance
from tuner.settings import Objective
from tuner.storage.meta import ExperimentMeta

PARAMS = ["lr", "noise", "optimizer", "batch_size"]


def meta(mode: str = "max", params: list[str] = PARAMS) -> ExperimentMeta:
    return ExperimentMeta(space="synthetic", params=params, objective=Objective("val_acc", mode))


def table(n: int = 40, seed: int = 0, sign: float = 1.0) -> pd.DataFrame:
    """n finished trials: best_val_acc peaks at lr=1e-2 (loguniform over four decades) and ignores the
    uniform `noise`, the categorical `optimizer` and the constant `batch_size`."""
    rng = np.random.default_rng(seed)
    lr = 10 ** rng.uniform(-5, -1, n)
    frame = pd.DataFrame(
        {
            "trial_id": [f"t{i:03d}" for i in range(n)],
            "status": "finished",
            "lr": lr,
            "noise": rng.uniform(0, 1, n),
            "optimizer": rng.choice(["adam", "sgd"], n),
            "batch_size": 64,
        }
    )
    frame["best_val_acc"] = sign * (0.9 - 0.1 * (np.log10(lr) + 2) ** 2 + rng.normal(0, 0.005, n))
    return frame


@pytest.mark.parametrize("evaluator", sorted(EVALUATORS))
@pytest.mark.parametrize("mode", ["max", "min"])
def test_the_hyperparameter_the_score_depends_on_comes_first(evaluator, mode):
    # Under min the scores are negated, so the same trials are best and the same lr matters.
    frame = importance(table(sign=1.0 if mode == "max" else -1.0), meta(mode), evaluator).set_index("param")
    assert list(frame.columns) == ["importance", "low", "high"]
    assert frame.index[0] == "lr", frame
    assert frame.loc["lr", "importance"] > 3 * frame.loc["noise", "importance"], frame
    assert frame.loc["lr", "importance"] > 3 * frame.loc["optimizer", "importance"], frame
    assert frame.loc["batch_size", ["importance", "low", "high"]].tolist() == [0.0, 0.0, 0.0]  # one value: 0
    assert frame["importance"].sum() == pytest.approx(1.0)  # shares of the total
    # An interval of shares, from the bootstrap's quantiles: within 0 and 1, low below high.
    assert np.isfinite(frame[["low", "high"]]).all().all()
    assert ((0 <= frame["low"]) & (frame["low"] <= frame["high"]) & (frame["high"] <= 1)).all(), frame
    assert frame.loc["lr", "low"] > frame.loc["noise", "high"], frame  # it matters beyond the resampling's noise


def test_the_mode_decides_which_trials_are_the_top_ones():
    # The best trials share lr near 1e-2, the worst ones noise > 0.8: PED-ANOVA, which looks at the top
    # trials, must see lr under max and noise under min. (fANOVA splits the score's variance, the same
    # either way.)
    trials = table(n=60, seed=3)
    trials["best_val_acc"] = 0.9 - 0.05 * (np.log10(trials["lr"]) + 2) ** 2 - 0.5 * (trials["noise"] > 0.8)
    assert importance(trials, meta("max"), "ped-anova")["param"].iloc[0] == "lr"
    assert importance(trials, meta("min"), "ped-anova")["param"].iloc[0] == "noise"


def test_auto_is_fanova_and_deterministic():
    first, again = importance(table(), meta()), importance(table(), meta())
    assert first.attrs["evaluator"] == "fANOVA"
    pd.testing.assert_frame_equal(first, again)


def test_beyond_max_trials_a_seeded_sample_is_assessed_and_says_so(monkeypatch):
    monkeypatch.setattr(importance_module, "MAX_TRIALS", 50)
    trials = table(n=200)
    frame = importance(trials, meta())
    assert frame.attrs["sampled"] == (50, 200)
    assert frame["param"].iloc[0] == "lr", frame  # the sample still finds what the score depends on
    pd.testing.assert_frame_equal(frame, importance(trials, meta()))  # the same sample each time
    assert "sampled" not in importance(table(n=50), meta()).attrs  # up to MAX_TRIALS: every trial


def test_a_categorical_hyperparameter_that_decides_the_score_comes_first():
    trials = table(seed=1)
    trials["best_val_acc"] = np.where(trials["optimizer"] == "adam", 0.9, 0.5) + np.random.default_rng(1).normal(
        0, 0.005, len(trials)
    )
    # Only under fANOVA, the default: PED-ANOVA ranks such a 50/50 choice first about half the time
    # (bench/importance_evaluators.py), which is why it is not the default.
    frame = importance(trials, meta())
    assert frame["param"].iloc[0] == "optimizer", frame
    assert frame["importance"].iloc[0] > 0.8, frame


def test_bools_ints_and_mixed_values_are_read_as_categories_or_ranges():
    trials = table(n=30, seed=2).assign(
        flag=np.random.default_rng(2).choice([True, False], 30),
        layers=np.random.default_rng(3).choice([1, 2, 3], 30),
        hidden=[[[16, 16], None, 8][i % 3] for i in range(30)],  # a choice of lists and others, as Ray gives them
    )
    params = [*PARAMS, "flag", "layers", "hidden"]
    frame = importance(trials, meta(params=params)).set_index("param")
    assert sorted(frame.index) == sorted(params) and frame.index[0] == "lr"
    assert np.isfinite(frame.to_numpy()).all()


def test_a_conditional_hyperparameter_blank_in_some_trials():
    trials = table(n=40, seed=5)
    sgd = trials["optimizer"] == "sgd"
    rng = np.random.default_rng(50)
    # momentum only with sgd, blank (NaN, as trials.csv reads back) with adam, and the score among the sgd
    # trials; betas only with adam (None, as a trial's config in memory has it), and noise.
    trials["momentum"] = np.where(sgd, rng.uniform(0.5, 0.99, len(trials)), np.nan)
    trials["betas"] = np.where(sgd, None, rng.choice(["a", "b"], len(trials)))
    trials["best_val_acc"] = np.where(sgd, 0.5 + 0.4 * (trials["momentum"] - 0.5) / 0.49, 0.7) + rng.normal(
        0, 0.005, len(trials)
    )
    params = [*PARAMS, "momentum", "betas"]
    ped = importance(trials, meta(params=params)).set_index("param")  # auto: PED-ANOVA, as keys are blank
    assert ped.attrs["evaluator"] == "PED-ANOVA"
    assert ped.index[0] == "momentum" and np.isfinite(ped.to_numpy()).all(), ped
    assert ped.loc["momentum", "importance"] > 3 * ped.loc["betas", "importance"], ped
    # fANOVA assesses only what every trial has: the conditional ones are listed, not assessed.
    fanova = importance(trials, meta(params=params), "fanova").set_index("param")
    assert fanova.loc[["momentum", "betas"], "importance"].isna().all()
    assert list(fanova.index[-2:]) == ["momentum", "betas"]  # after every number
    assert fanova["importance"].sum() == pytest.approx(1.0)


def test_trials_without_a_score_are_left_out_and_too_few_is_one_line():
    trials = table(n=MIN_TRIALS)
    importance(trials, meta())  # exactly enough
    trials.loc[0, "status"] = "error"
    trials.loc[1, "best_val_acc"] = np.nan
    with pytest.raises(TunerError, match=f"at least {MIN_TRIALS} scored trials.*has 2$"):
        importance(trials, meta())
    with pytest.raises(TunerError, match="has 0$"):
        importance(pd.DataFrame(), meta())  # an experiment with no trial recorded
    trials.loc[2, "best_val_acc"] = np.inf  # not a score either
    with pytest.raises(TunerError, match="has 1$"):
        importance(trials, meta())


def test_nothing_varies_gives_zeros():
    trials = table(n=10).assign(lr=0.01, noise=0.5, optimizer="adam")
    frame = importance(trials, meta())
    assert (frame[["importance", "low", "high"]] == 0).all().all()


def test_several_objectives_each_in_its_own_mode():
    trials = table(n=40, seed=7)
    # latency depends on the hyperparameter named noise only (the one val_acc ignores), and is better low
    trials["best_latency_ms"] = 10 * trials["noise"] + np.random.default_rng(70).normal(0, 0.05, len(trials))
    both = importances(trials, PARAMS, [("val_acc", "max"), ("latency_ms", "min")])
    assert list(both) == ["val_acc", "latency_ms"]
    assert both["val_acc"]["param"].iloc[0] == "lr"
    assert both["latency_ms"]["param"].iloc[0] == "noise"


def test_an_unknown_evaluator_is_one_line():
    with pytest.raises(TunerError, match="unknown importance evaluator 'forest'; use one of: auto, fanova, ped-anova$"):
        importance(table(), meta(), "forest")


def test_the_plot_names_the_evaluator_and_what_it_did_not_assess():
    frame = pd.DataFrame(
        {"param": ["lr", "momentum"], "importance": [0.9, np.nan], "low": [0.7, np.nan], "high": [1.0, np.nan]}
    )
    frame.attrs["evaluator"] = "fANOVA"
    ax = plot_importance(frame).axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["lr", "momentum (not assessed)"]
    assert "fANOVA" in ax.get_title()
    whisker = next(c for c in ax.collections if hasattr(c, "get_segments")).get_segments()[0]
    assert whisker[:, 0].tolist() == pytest.approx([0.7, 1.0])  # from low to high: the interval as it is


def test_distributions_are_read_from_the_values():
    # optuna needs a distribution per hyperparameter, which the trials table does not keep.
    assert _distribution([1e-5, 3e-4, 1e-2])[0] == FloatDistribution(1e-5, 1e-2, log=True)  # two decades or more
    assert _distribution([0.1, 0.5, 0.9])[0] == FloatDistribution(0.1, 0.9)
    assert _distribution([16.0, 64.0, 32.0])[0] == IntDistribution(16, 64)  # whole floats, as NaN leaves ints
    assert _distribution([1, 1000])[0] == IntDistribution(1, 1000, log=True)
    assert _distribution([True, False])[0] == CategoricalDistribution([False, True])
    assert _distribution(["sgd", "adam", "sgd"])[0] == CategoricalDistribution(["adam", "sgd"])
    assert _distribution([3, 3.0]) is None and _distribution(["adam"]) is None  # one value
