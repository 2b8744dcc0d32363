"""Warm start without Ray running: earlier trials fitted to a changed space (keys dropped, said in one
line), refused where the searcher cannot use them, handed to optuna's study through the storage that
Ray's OptunaSearch loads, and skipped by random over a finite space."""

import numpy as np
import pytest
from ray import tune

from tuner.errors import TunerError
from tuner.search import search as searcher
from tuner.search import space_counts, warm_start
from tuner.search.base import SearchRequest
from tuner.search.plan import plan
from tuner.search.warm_start import Earlier, Evaluated
from tuner.spec.space import ExperimentSpec

SPACE = {
    "lr": tune.loguniform(1e-4, 1e-2),
    "hidden": tune.choice([32, 64]),
    "layers": tune.randint(1, 4),
    "opt": tune.grid_search(["adam", "sgd"]),
    "batch_size": 64,
}


def _earlier(*configs, scores=None):
    scores = scores or [0.5 + i / 100 for i in range(len(configs))]
    return Earlier("old", tuple(Evaluated(config, (score,)) for config, score in zip(configs, scores)))


def test_keys_not_in_the_space_and_values_outside_it_are_dropped_in_one_line():
    earlier = _earlier(
        {"lr": 1e-3, "hidden": np.int64(64), "layers": 2.0, "opt": "adam", "momentum": 0.9, "batch_size": 64},
        {"lr": 0.1, "hidden": 128, "layers": 4, "opt": "rmsprop", "momentum": 0.5, "batch_size": 32},
        {"lr": 5e-3, "hidden": 32.0, "layers": 1, "opt": "sgd", "batch_size": 64},
    )
    warm = warm_start.fit(earlier, space_counts.grid_as_choice(SPACE))
    assert [trial.config for trial in warm.trials] == [
        {"lr": 1e-3, "hidden": 64, "layers": 2, "opt": "adam"},  # numpy and float cells as the domain has them
        {"lr": 5e-3, "hidden": 32, "layers": 1, "opt": "sgd"},
    ]  # the second trial has no value left inside the space: dropped whole
    assert isinstance(warm.trials[0].config["hidden"], int) and isinstance(warm.trials[0].config["layers"], int)
    assert warm.notice == (
        "warm start from old: 2 earlier trials seed the search; dropped keys not in the space: momentum; "
        "outside the space's domain: batch_size (in 1 of 3 trials), hidden (in 1 of 3 trials), "
        "layers (in 1 of 3 trials), lr (in 1 of 3 trials), opt (in 1 of 3 trials)"
    )


def test_a_key_the_earlier_trials_lack_is_said_and_missing_values_are_skipped():
    earlier = _earlier({"lr": 1e-3, "hidden": 64, "layers": float("nan")})
    warm = warm_start.fit(earlier, space_counts.grid_as_choice(SPACE))
    assert warm.trials[0].config == {"lr": 1e-3, "hidden": 64}
    assert warm.notice.endswith("new keys without earlier values: layers, opt")


def test_an_experiment_of_another_space_is_one_line():
    with pytest.raises(TunerError, match=r"--warm-start old: none of its trials has a searched key of this space"):
        warm_start.fit(_earlier({"width": 3, "depth": 2}), SPACE)


@pytest.mark.parametrize(
    "search, finite, message",
    [
        ("grid", True, "grid runs every combination"),
        ("hyperopt", False, "HyperOptSearch takes earlier configs only to run them again"),
        ("bohb", False, "TuneBOHB takes earlier configs only to run them again"),
        ("random", False, "this space samples from a range"),
    ],
)
def test_searchers_that_cannot_use_earlier_results_are_refused(search, finite, message):
    with pytest.raises(TunerError, match=message):
        searcher(search).check_warm_start(finite=finite)


def test_extend_draws_new_configs_over_a_range_with_random():
    # A warm start of random over a range is refused (nothing to skip); `extend` of such an experiment
    # is not: it plans the new configs asked for, the earlier trials kept beside them.
    ranges = {"lr": tune.loguniform(1e-4, 1e-1), "dropout": tune.uniform(0.0, 0.5)}
    spec = ExperimentSpec.of(
        "ranges", model="mlp", dataset="digits", param_space=ranges, metric="val_acc", mode="max", search="random",
        num_samples=5,
    )  # fmt: skip
    earlier = _earlier({"lr": 1e-3, "dropout": 0.1}, {"lr": 1e-2, "dropout": 0.2}, scores=[0.9, 0.8])
    with pytest.raises(TunerError, match="this space samples from a range"):
        plan(spec, seed=0, earlier=earlier)
    extended = plan(spec, seed=1, earlier=earlier, extend=True)
    assert extended.total_trials == 5 and extended.warm is not None and len(extended.warm.trials) == 2


def test_optunas_study_holds_the_earlier_trials_before_the_first_suggestion():
    """Through Ray's own OptunaSearch, as the Tuner sets it up: the study it loads has the earlier
    trials (one lacking a key) as complete trials, and its next suggestion is inside the space."""
    import optuna

    space = space_counts.grid_as_choice(SPACE)
    earlier = _earlier(
        {"lr": 1e-3, "hidden": 64, "layers": 2, "opt": "adam"},
        {"lr": 2e-3, "hidden": 32, "opt": "sgd"},
        scores=[0.9, 0.7],
    )
    warm = warm_start.fit(earlier, space)
    algorithm = searcher("optuna").build(SearchRequest(SPACE, 4, seed=0, warm=warm, objectives=[("val_acc", "max")]))
    algorithm.set_search_properties("val_acc", "max", space)
    study = algorithm._ot_study
    done = study.get_trials(states=[optuna.trial.TrialState.COMPLETE])
    assert [(trial.params, trial.value) for trial in done] == [
        ({"lr": 1e-3, "hidden": 64, "layers": 2, "opt": "adam"}, 0.9),
        ({"lr": 2e-3, "hidden": 32, "opt": "sgd"}, 0.7),
    ]
    assert study.best_value == 0.9 and study.direction == optuna.study.StudyDirection.MAXIMIZE
    config = algorithm.suggest("t1")
    assert 1e-4 <= config["lr"] <= 1e-2 and config["hidden"] in (32, 64) and config["opt"] in ("adam", "sgd")


def test_random_over_a_finite_space_skips_the_configs_already_run():
    space = {"lr": tune.grid_search([0.1, 0.01]), "hidden": tune.choice([16, 32, 64]), "batch_size": 64}
    earlier = _earlier({"lr": 0.1, "hidden": 16}, {"lr": 0.01, "hidden": 64}, {"lr": 0.5, "hidden": 16})
    spec = ExperimentSpec.of(
        "tiny", metric="val_acc", mode="max", param_space=space, model="mlp", dataset="digits", search="random"
    )
    planned = plan(dataclass_replace_samples(spec, 10), seed=0, earlier=earlier)
    assert planned.num_samples == 4  # 6 configs, 2 of them run before (the third is outside the space)
    assert any("4 of the space's configs have not run before" in notice for notice in planned.notices)
    points = planned.search_algorithm(0)._points_to_evaluate  # Ray's generator keeps them here
    drawn = {(point["lr"], point["hidden"]) for point in points}
    assert len(points) == 4 and drawn.isdisjoint({(0.1, 16), (0.01, 64)})


def test_random_with_every_config_run_is_one_line():
    space = {"lr": tune.choice([0.1, 0.01])}
    spec = ExperimentSpec.of(
        "tiny", metric="val_acc", mode="max", param_space=space, model="mlp", dataset="digits", search="random"
    )
    with pytest.raises(TunerError, match="every one of the space's 2 configs has run in old"):
        plan(spec, seed=0, earlier=_earlier({"lr": 0.1}, {"lr": 0.01}))


def dataclass_replace_samples(spec: ExperimentSpec, num_samples: int) -> ExperimentSpec:
    return spec.with_overrides(num_samples=num_samples)


def test_a_quantized_range_keeps_only_values_on_its_step():
    space = {"lr": tune.quniform(0.1, 1.0, 0.1), "units": tune.qrandint(8, 64, 8)}
    warm = warm_start.fit(_earlier({"lr": 0.3, "units": 16}, {"lr": 0.35, "units": 20}), space)
    assert warm.configs == [{"lr": 0.3, "units": 16}]


def test_a_warm_started_optuna_runs_the_earlier_best_config_first_and_extend_does_not():
    space = {"lr": tune.loguniform(1e-4, 1e-1), "hidden": tune.choice([32, 64, 128])}
    spec = ExperimentSpec.of(
        "tiny", metric="val_loss", mode="min", param_space=space, model="mlp", dataset="digits", search="optuna"
    )
    earlier = _earlier(
        {"lr": 1e-3, "hidden": 64}, {"lr": 3e-2, "hidden": 128}, {"lr": 5e-3, "hidden": 32}, scores=[0.4, 0.2, 0.3]
    )
    warm = plan(spec, seed=0, earlier=earlier)
    assert warm.notices[-1].endswith("its best config runs first")
    algorithm = warm.search_algorithm(0)
    algorithm.set_search_properties("val_loss", "min", space)
    assert algorithm.suggest("t1") == {"lr": 3e-2, "hidden": 128}  # the lowest val_loss: mode min
    extended = plan(spec, seed=0, earlier=earlier, extend=True).search_algorithm(0)
    extended.set_search_properties("val_loss", "min", space)
    assert extended.suggest("t1") not in [trial.config for trial in earlier.trials]


def test_extending_an_experiment_whose_searcher_takes_no_results_is_one_line():
    with pytest.raises(TunerError, match=r"extend needs an experiment searched by optuna, random or grid .*HyperOpt"):
        searcher("hyperopt").check_warm_start(finite=False, extend=True)
