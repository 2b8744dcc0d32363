"""Conditional spaces (tuner/spec/conditions.py) compiled for each searcher (tuner/search/conditional.py):
the searchers' own objects are asked for configs, as Tune asks them, without training."""

import itertools

import numpy as np
import pytest
from ray import cloudpickle, tune

from tuner.errors import TunerError
from tuner.search import conditional
from tuner.search import search as searcher
from tuner.search.plan import plan
from tuner.search.warm_start import Earlier, Evaluated
from tuner.spec.space import ExperimentSpec
from tuner.training.config_reads import given_keys

# 3 optimizers, momentum (3 values) only with sgd; 1-3 layers, width_2 with 2 or 3, width_3 with 3:
# (3 + 1 + 1) x (1 + 2 + 4) = 35 active combinations of the 3 x 3 x 3 x 2 x 2 = 108 of the full grid.
GRID = {
    "optimizer": tune.grid_search(["sgd", "adam", "adamw"]),
    "momentum": tune.grid_search([0.0, 0.5, 0.9]),
    "layers": tune.grid_search([1, 2, 3]),
    "width_2": tune.grid_search([16, 32]),
    "width_3": tune.grid_search([16, 32]),
    "lr": tune.loguniform(1e-4, 1e-1),
    "batch_size": 32,
}
CONDITIONS = {"momentum": {"optimizer": "sgd"}, "width_2": {"layers": [2, 3]}, "width_3": {"layers": 3}}
# The same with everything sampled, ranges among them, and a constant that is itself conditional.
SAMPLED = {
    "optimizer": tune.choice(["sgd", "adam"]),
    "lr": tune.loguniform(1e-4, 1e-1),
    "momentum": tune.uniform(0.0, 0.99),
    "nesterov": True,
    "beta2": tune.uniform(0.9, 0.9999),
    "layers": tune.choice([1, 2, 3]),
    "width_2": tune.choice([16, 32]),
    "width_3": tune.randint(8, 64),
}
SAMPLED_CONDITIONS = {
    "momentum": {"optimizer": "sgd"},
    "nesterov": {"optimizer": "sgd"},
    "beta2": {"optimizer": "adam"},
    "width_2": {"layers": [2, 3]},
    "width_3": {"layers": 3},
}


def spec(param_space=GRID, conditions=CONDITIONS, **settings):
    settings = {"metric": "val_acc", "mode": "max", **settings}
    return ExperimentSpec.of(
        "cond", model="mlp", dataset="digits", param_space=param_space, conditions=conditions, **settings,
    )  # fmt: skip


def expected_keys(config, space=SAMPLED):
    """The keys of `space` a config must have, no more, no fewer, read from its parents' values."""
    needed = {"momentum": config["optimizer"] == "sgd", "nesterov": config["optimizer"] == "sgd"}
    needed |= {
        "beta2": config["optimizer"] == "adam",
        "width_2": config["layers"] >= 2,
        "width_3": config["layers"] == 3,
    }
    return {key for key in space if needed.get(key, True)}


def all_active_grid_points():
    """By brute force: every point of the full grid with its inactive keys dropped, distinct."""
    axes = {key: value["grid_search"] for key, value in GRID.items() if isinstance(value, dict)}
    points = set()
    for values in itertools.product(*axes.values()):
        point = dict(zip(axes, values))
        pruned = spec().conditional.prune(point)
        points.add(tuple(sorted(pruned.items())))
    return points


def test_grid_enumerates_exactly_the_active_combinations():
    planned = plan(spec(num_samples=2), seed=0)
    assert planned.param_space == {}  # the searcher carries the space
    assert planned.total_trials == 2 * 35
    configs = planned.search_algorithm(0).configs
    assert len(configs) == 70
    points = {tuple(sorted((k, v) for k, v in c.items() if k not in ("lr", "batch_size"))) for c in configs}
    assert points == all_active_grid_points() and len(points) == 35
    for config in configs:
        assert set(config) == expected_keys(config, GRID), config
        assert config["batch_size"] == 32 and 1e-4 <= config["lr"] <= 1e-1


def test_grid_hands_out_every_config_once_then_finishes_and_resumes_where_it_was(tmp_path):
    searcher = plan(spec(), seed=0).search_algorithm(0)
    handed = [searcher.suggest(f"t{i}") for i in range(10)]
    searcher.save(tmp_path / "state.pkl")
    restored = conditional.ConfigList([])
    restored.restore(tmp_path / "state.pkl")
    handed += [restored.suggest(f"t{i}") for i in range(10, 35)]
    assert restored.suggest("t35") == "FINISHED"
    assert len({tuple(sorted(c.items())) for c in handed}) == 35


def test_a_grid_axis_needing_a_sampled_key_is_refused_under_grid():
    space = {**GRID, "optimizer": tune.choice(["sgd", "adam"])}
    with pytest.raises(TunerError, match="grid axis momentum depends on optimizer, which is sampled"):
        plan(spec(space), seed=0)


@pytest.mark.parametrize("seed", [0, 1])
def test_random_never_sets_an_inactive_key(seed):
    planned = plan(spec(SAMPLED, SAMPLED_CONDITIONS, search="random", num_samples=40), seed=seed)
    configs = planned.search_algorithm(0).configs
    assert len(configs) == 40
    for config in configs:
        assert set(config) == expected_keys(config), config
    assert {c["optimizer"] for c in configs} == {"sgd", "adam"} and {c["layers"] for c in configs} == {1, 2, 3}


def test_random_over_a_finite_conditional_space_runs_each_active_config_once():
    space = {key: value for key, value in GRID.items() if key != "lr"}
    planned = plan(spec(space, search="random", num_samples=100), seed=0)
    assert planned.total_trials == 35
    assert any("the space has 35 distinct configs" in notice for notice in planned.notices)
    configs = planned.search_algorithm(0).configs
    assert len({tuple(sorted(c.items())) for c in configs}) == 35


def test_auto_counts_only_the_active_configs():
    space = {"optimizer": tune.choice(["sgd", "adam"]), "momentum": tune.choice([0.0, 0.5, 0.9]), "lr": 0.01}
    planned = plan(spec(space, {"momentum": {"optimizer": "sgd"}}, search="auto"), seed=0)
    assert planned.tuning.search == "random" and planned.total_trials == 4  # 3 with sgd, 1 with adam
    assert "every one of the space's 4 configs once" in planned.notices[0]


def ask(searcher, count):
    """Configs as Tune asks for them: each trial finished (with a score) before the next is asked for,
    so the model-based searchers get past their random start."""
    configs = []
    for index in range(count):
        config = searcher.suggest(f"t{index}")
        assert isinstance(config, dict), config
        configs.append(config)
        score = 0.9 if config.get("optimizer") == "adam" else 0.1 * (index % 5)
        result = {"val_acc": score, "training_iteration": 1, "time_total_s": 1.0}
        if hasattr(searcher, "searcher"):
            searcher.on_trial_result(f"t{index}", result)
        searcher.on_trial_complete(f"t{index}", result)
    return configs


@pytest.mark.parametrize("search", ["optuna", "hyperopt", "bohb"])
def test_model_based_searchers_sample_only_active_keys(search):
    planned = plan(spec(SAMPLED, SAMPLED_CONDITIONS, search=search, num_samples=30), seed=0)
    configs = ask(planned.search_algorithm(0), 30)
    for config in configs:
        assert set(config) == expected_keys(config), config
        if config["optimizer"] == "sgd":
            assert config["nesterov"] is True and 0.0 <= config["momentum"] <= 0.99
        if config["layers"] == 3:
            assert 8 <= config["width_3"] < 64
    assert {c["optimizer"] for c in configs} == {"sgd", "adam"}
    assert {int(c["layers"]) for c in configs} == {1, 2, 3}


@pytest.mark.parametrize("search", ["optuna", "hyperopt", "bohb"])
def test_model_based_searchers_keep_their_conditional_space_through_a_pickle(search):
    """Ray saves the searcher with the experiment, cloudpickled (`tuner resume` loads it)."""
    searcher = plan(spec(SAMPLED, SAMPLED_CONDITIONS, search=search, num_samples=8), seed=0).search_algorithm(0)
    ask(searcher, 3)
    restored = cloudpickle.loads(cloudpickle.dumps(searcher))
    for config in ask(restored, 3):
        assert set(config) == expected_keys(config), config


def test_hyperopt_space_nests_a_choice_per_parent_value():
    space = conditional.hyperopt_space(SAMPLED, spec(SAMPLED, SAMPLED_CONDITIONS).conditional)
    assert set(space) == {"__branch__optimizer", "lr", "__branch__layers"}


def test_bohb_space_has_a_condition_per_conditional_key():
    space = conditional.bohb_space(SAMPLED, spec(SAMPLED, SAMPLED_CONDITIONS).conditional)
    conditioned = {condition.child.name for condition in space.conditions}
    assert conditioned == {"momentum", "beta2", "width_2", "width_3"}  # nesterov is a constant, added after


def test_a_pinned_parent_leaves_out_the_keys_it_can_no_longer_activate():
    pinned = spec(SAMPLED, SAMPLED_CONDITIONS, search="random", num_samples=5).with_overrides({"optimizer": "adam"})
    for config in plan(pinned, seed=0).search_algorithm(0).configs:
        assert config["optimizer"] == "adam" and "momentum" not in config and "beta2" in config


def test_pbt_is_refused_with_conditions():
    with pytest.raises(TunerError, match="pbt mutates each hyperparameter on its own"):
        plan(spec(SAMPLED, SAMPLED_CONDITIONS, search="random", scheduler="pbt"), seed=0)


@pytest.mark.parametrize(
    "settings",
    [{"metric": ["val_acc", "val_loss"], "mode": ["max", "min"]}, {"constraints": ["val_loss <= 1"]}],
)
@pytest.mark.parametrize("search", ["optuna", "random", "grid"])
def test_conditions_with_several_objectives_or_constraints(settings, search):
    planned = plan(spec(SAMPLED, SAMPLED_CONDITIONS, search=search, num_samples=12, **settings), seed=0)
    algorithm = planned.search_algorithm(0)
    configs = []
    for index in range(12):
        config = algorithm.suggest(f"t{index}")
        configs.append(config)
        val_loss = 0.5 if config["optimizer"] == "adam" else 2.0  # sgd breaks the constraint
        result = {"val_acc": 1 - val_loss / 4, "val_loss": val_loss, "training_iteration": 1}
        algorithm.on_trial_complete(f"t{index}", result)
    for config in configs:
        assert set(config) == expected_keys(config), config
    if search == "optuna":  # one study, ranking by both objectives, told each trial's violations
        study = algorithm._ot_study
        if "constraints" in settings:
            assert all((t.constraints["val_loss<=1"] > 0) == (t.params["optimizer"] == "sgd") for t in study.trials)
        else:
            assert len(study.directions) == 2 and all(len(t.values) == 2 for t in study.trials)


def test_a_warm_start_of_a_conditional_space_under_optuna_learns_from_the_keys_each_trial_had():
    earlier = Earlier(
        "earlier",
        (
            Evaluated({"optimizer": "sgd", "lr": 1e-2, "momentum": 0.9, "layers": 1}, (0.8,)),
            Evaluated({"optimizer": "adam", "lr": 1e-3, "beta2": 0.99, "layers": 3, "width_3": 20}, (0.95,)),
        ),
    )
    planned = plan(spec(SAMPLED, SAMPLED_CONDITIONS, search="optuna", num_samples=6), seed=0, earlier=earlier)
    algorithm = planned.search_algorithm(0)
    done = [t for t in algorithm._ot_study.trials if t.values]
    assert [(t.params, t.value) for t in done] == [(e.config, e.scores[0]) for e in earlier.trials]
    first = algorithm.suggest("t0")  # the earlier best runs first, with the space's active constants
    assert {k: v for k, v in first.items() if k in earlier.trials[1].config} == earlier.trials[1].config
    assert set(first) == expected_keys(first), first


@pytest.mark.parametrize("search", ["random", "grid"])
def test_a_warm_start_of_a_conditional_space_under_random_or_grid_is_one_line(search):
    with pytest.raises(TunerError, match=f"--warm-start over a space with conditions takes --search optuna .*{search}"):
        plan(spec(SAMPLED, SAMPLED_CONDITIONS, search=search), seed=0, earlier=Earlier("earlier", ()))


def test_a_plain_space_plans_as_before():
    planned = plan(spec(conditions=None), seed=0)
    assert planned.param_space == GRID and planned.total_trials == 108 and not planned.conditions
    assert type(planned.search_algorithm(0)).__name__ == "BasicVariantGenerator"


def test_smoke_step_config_has_only_active_keys():
    for seed in range(10):
        config = conditional.first_config(SAMPLED, spec(SAMPLED, SAMPLED_CONDITIONS).conditional, seed)
        assert set(config) == expected_keys(config)


def test_a_key_no_trial_had_is_not_one_no_trial_read():
    configs = [{"optimizer": "adam", "lr": 0.1, "net": {"width": 8}}, {"optimizer": "adam", "lr": 0.2}]
    assert given_keys(["lr", "momentum", "net/width", "optimizer"], configs) == ["lr", "net", "optimizer"]


@pytest.mark.parametrize(
    "conditions, message",
    [
        ({"momentom": {"optimizer": "sgd"}}, "conditions name 'momentom', which is no key of param_space"),
        ({"momentum": {"optimiser": "sgd"}}, "conditions name 'optimiser', which is no key of param_space"),
        ({"momentum": {"optimizer": "sgdd"}}, "needs optimizer='sgdd', a value optimizer never takes"),
        ({"momentum": {"optimizer": ["sgd", "lion"]}}, "needs optimizer='lion', a value optimizer never takes"),
        ({"momentum": {"lr": 0.1}}, "depends on 'lr', which is sampled from a range"),
        ({"width_2": {"width_3": 16}, "width_3": {"width_2": 16}}, "conditions form a cycle: width_2 needs width_3"),
        ({"momentum": {"momentum": 0.0}}, "'momentum' depends on itself"),
        ({"momentum": "sgd"}, "conditions['momentum'] must map the keys it depends on to their values"),
        (["momentum"], "conditions must be a dict"),
    ],
)
def test_a_bad_condition_is_one_line(conditions, message):
    space = {**SAMPLED, "width_2": tune.choice([16, 32]), "width_3": tune.choice([16, 32])}
    with pytest.raises(TunerError, match="^space cond: .*" + message.replace("[", r"\[").replace("(", r"\(")) as error:
        spec(space, conditions)
    assert "\n" not in str(error.value)


def test_conditions_need_a_flat_space():
    with pytest.raises(TunerError, match="conditions need a flat param_space, and net is a nested group"):
        spec({**SAMPLED, "net": {"width": 8}}, SAMPLED_CONDITIONS)


def test_random_counts_every_combination_without_conditions_and_only_active_ones_with():
    space = {"a": tune.choice([1, 2]), "b": tune.choice([10, 20])}
    assert searcher("random").trials(space, 10) == 4  # the default: a space without conditions
    only_under_2 = spec(space, {"b": {"a": 2}}).conditional  # b is searched only where a is 2
    assert searcher("random").trials(space, 10, conditions=only_under_2) == 3  # (1), (2, 10), (2, 20)


def test_a_bool_parent_matches_its_own_values_only():
    space = {"use_momentum": tune.choice([True, False]), "momentum": tune.uniform(0, 0.9), "flag": tune.choice([0, 1])}
    conditions = spec(space, {"momentum": {"use_momentum": True}}).conditional
    assert set(conditions.prune({"use_momentum": True, "momentum": 0.5})) == {"use_momentum", "momentum"}
    assert set(conditions.prune({"use_momentum": np.True_, "momentum": 0.5})) == {"use_momentum", "momentum"}
    assert set(conditions.prune({"use_momentum": False, "momentum": 0.5})) == {"use_momentum"}
    with pytest.raises(TunerError, match="needs flag=True, a value flag never takes"):
        spec(space, {"momentum": {"flag": True}})
