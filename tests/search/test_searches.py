"""One conformance suite over every searcher in `tuner.search.SEARCHES`: what its flags promise is what
its built searcher does, asked for configs as Tune asks, without training. A searcher added to the table
runs here with no test of its own; a flag that lies (a searcher said to take several objectives, a
warm start or conditions that it does not) fails here."""

import math

import pytest
from ray import cloudpickle, tune

from tuner.errors import TunerError
from tuner.search import SEARCHES
from tuner.search import search as searcher
from tuner.search.base import SearchRequest
from tuner.search.plan import plan
from tuner.search.warm_start import Earlier, Evaluated
from tuner.spec.space import ExperimentSpec

SPACE = {
    "lr": tune.loguniform(1e-4, 1e-1),
    "dropout": tune.uniform(0.0, 0.5),
    "hidden": tune.choice([16, 32, 64]),
    "batch_size": 32,
}
CONDITIONAL = {"optimizer": tune.choice(["sgd", "adam"]), "momentum": tune.uniform(0.0, 0.99), "lr": SPACE["lr"]}
CONDITIONS = {"momentum": {"optimizer": "sgd"}}
TWO = [("val_acc", "max"), ("latency_ms", "min")]


def _score(config: dict) -> dict:
    """Best near lr = 1e-2, dropout = 0.1: a shape every model-based searcher can find."""
    loss = (math.log10(config["lr"]) + 2) ** 2 + (config.get("dropout", 0.1) - 0.1) ** 2
    return {"val_acc": 1 - loss, "latency_ms": config.get("hidden", 16) / 64, "training_iteration": 1}


def _ask(algorithm, count: int, param_space: dict | None = None) -> list[dict]:
    """Configs as Tune asks for them, each trial ended with its score before the next is asked for: from
    a Searcher (suggest) or from Ray's BasicVariantGenerator (next_trial over the Tuner's param_space)."""
    if hasattr(algorithm, "next_trial"):
        algorithm.add_configurations({"exp": {"run": lambda config: None, "config": param_space, "num_samples": count}})
        configs = []
        while len(configs) < count and (trial := algorithm.next_trial()) is not None:
            configs.append(trial.config)
        return configs
    configs = []
    for index in range(count):
        config = algorithm.suggest(f"t{index}")
        assert isinstance(config, dict), config
        configs.append(config)
        algorithm.on_trial_complete(f"t{index}", _score(config))
    return configs


def _built(name: str, seed: int, objectives=(("val_acc", "max"),), **options):
    search = searcher(name)
    param_space = search.tuner_space(SPACE)
    algorithm = search.build(SearchRequest(SPACE, num_samples=12, seed=seed, objectives=list(objectives), **options))
    if not hasattr(algorithm, "next_trial"):
        metric, mode = objectives[0]
        algorithm.set_search_properties(metric, mode, param_space)
    return algorithm, param_space


def _configs(name: str, seed: int) -> list[dict]:
    algorithm, param_space = _built(name, seed)
    return _ask(algorithm, 12, param_space)


@pytest.mark.parametrize("name", SEARCHES)
def test_every_searcher_draws_inside_the_space_and_repeats_with_its_seed(name):
    searcher(name).check(SPACE)
    first, again, other = _configs(name, 3), _configs(name, 3), _configs(name, 4)
    assert len(first) == 12
    for config in first:
        assert 1e-4 <= config["lr"] <= 1e-1 and 0 <= config["dropout"] <= 0.5, config
        # A model-based searcher leaves the constants out; Tune adds them to the trial's config.
        assert config["hidden"] in (16, 32, 64) and config.get("batch_size", 32) == 32, config
    assert first == again, "the same seed proposes the same configs"
    assert first != other, "another seed proposes others"


@pytest.mark.parametrize("name", SEARCHES)
def test_the_built_searcher_survives_the_pickle_of_a_saved_experiment(name):
    algorithm, param_space = _built(name, seed=0)
    _ask(algorithm, 3, param_space)
    restored = cloudpickle.loads(cloudpickle.dumps(algorithm))
    if not hasattr(restored, "next_trial"):  # Ray's generator saves its own state, not its next draws
        assert len(_ask(restored, 2, param_space)) == 2


@pytest.mark.parametrize("name", SEARCHES)
def test_several_objectives_are_taken_or_refused_in_one_line(name):
    search = searcher(name)
    if not search.several_objectives:
        with pytest.raises(TunerError, match=f"^{name} optimizes one metric, and this space has 2 objectives"):
            search.check(SPACE, objectives=2)
        return
    search.check(SPACE, objectives=2)
    algorithm, param_space = _built(name, seed=0, objectives=TWO)
    assert len(_ask(algorithm, 6, param_space)) == 6
    if hasattr(algorithm, "_ot_study"):  # an Optuna study: it ranks by both
        assert algorithm.metric == ["val_acc", "latency_ms"]
        assert len(algorithm._ot_study.directions) == 2


@pytest.mark.parametrize("name", SEARCHES)
def test_conditions_are_followed_or_refused_in_one_line(name):
    spec = ExperimentSpec.of(
        "cond", model="mlp", dataset="digits", param_space=CONDITIONAL, conditions=CONDITIONS,
        metric="val_acc", mode="max", search=name, num_samples=8,
    )  # fmt: skip
    if searcher(name).conditions_refused:
        with pytest.raises(TunerError, match=f"^space cond: {name} .*use --search optuna"):
            plan(spec, seed=0)
        return
    algorithm = plan(spec, seed=0).search_algorithm(0)
    configs = []
    for index in range(8):
        config = algorithm.suggest(f"t{index}")
        if config is None:  # BOHB waits for a running trial
            break
        configs.append(config)
        algorithm.on_trial_complete(f"t{index}", {"val_acc": 0.5, "training_iteration": 1})
    assert configs
    for config in configs:
        assert ("momentum" in config) == (config["optimizer"] == "sgd"), config


@pytest.mark.parametrize("name", SEARCHES)
def test_a_warm_start_is_taken_or_refused_in_one_line(name):
    space = {"lr": SPACE["lr"], "hidden": tune.choice([16, 32, 64])}
    spec = ExperimentSpec.of(
        "warm", model="mlp", dataset="digits", param_space=space, metric="val_acc", mode="max", search=name,
        num_samples=4,
    )  # fmt: skip
    earlier = Earlier(
        "old", (Evaluated({"lr": 1e-3, "hidden": 32}, (0.9,)), Evaluated({"lr": 1e-2, "hidden": 16}, (0.7,)))
    )
    search = searcher(name)
    if search.warm_start_refused is not None or name == "random":  # random: only over a finite space
        with pytest.raises(TunerError, match="^space warm: --warm-start"):
            plan(spec, seed=0, earlier=earlier)
        return
    planned = plan(spec, seed=0, earlier=earlier)
    assert planned.warm is not None and len(planned.warm.trials) == 2
    algorithm = planned.search_algorithm(0)
    algorithm.set_search_properties("val_acc", "max", planned.param_space)
    study = algorithm._ot_study  # every warm-startable model-based searcher is an Optuna study
    assert [trial.value for trial in study.trials if trial.value is not None] == [0.9, 0.7]
    if search.warm_best_first:
        assert algorithm.suggest("t0") == {"lr": 1e-3, "hidden": 32}, "the earlier best runs first"


def test_each_optuna_searcher_runs_its_own_sampler():
    import optuna

    expected = {
        "optuna": optuna.samplers.TPESampler,
        "gp": optuna.samplers.GPSampler,
        "cmaes": optuna.samplers.CmaEsSampler,
        "nsga2": optuna.samplers.NSGAIISampler,
    }
    for name, sampler in expected.items():
        algorithm, _ = _built(name, seed=0)
        assert isinstance(algorithm._ot_study.sampler, sampler), name


def test_cmaes_says_which_keys_it_draws_at_random():
    assert searcher("cmaes").space_notice(SPACE, 12) == (
        "cmaes models numeric keys only; it draws hidden at random in every trial"
    )
    assert searcher("cmaes").space_notice({"lr": SPACE["lr"]}, 12) is None


@pytest.mark.parametrize("name", SEARCHES)
def test_a_grid_axis_of_lists_is_refused_by_exactly_the_model_based_searchers(name):
    space = {"layers": tune.grid_search([[8], [8, 8]]), "lr": SPACE["lr"]}
    search = searcher(name)
    if search.model_based:
        with pytest.raises(TunerError, match=f"^{name} cannot sample grid axis layers"):
            search.check(space)
        assert search.grid_notice({"lr": tune.grid_search([0.1, 0.01])}, 4).startswith(f"{name} samples the grid")
    else:  # grid crosses it, random draws it as a choice: lists are values like any other
        search.check(space)
        assert search.grid_notice(space, 4) is None
