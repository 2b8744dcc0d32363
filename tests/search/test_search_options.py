"""Search algorithm, scheduler and budget options: validation and seeding, without running trials."""

import dataclasses

import pytest
from ray import tune
from ray.tune.schedulers import AsyncHyperBandScheduler, HyperBandForBOHB
from ray.tune.search.sample import Categorical

from tests.conftest import tuner_without
from tuner.command import install_command
from tuner.errors import TunerError
from tuner.execution.stopper import MetricThreshold
from tuner.search import SEARCHES, auto, schedulers, space_counts
from tuner.search import search as searcher
from tuner.search.base import SearchRequest
from tuner.search.plan import plan
from tuner.search.schedulers.base import SchedulerRequest
from tuner.search.schedulers.pbt import pbt_mutations
from tuner.settings import Tuning
from tuner.settings.budgets import parse_duration, parse_stop
from tuner.spec.space import ExperimentSpec

SPACE = {
    "lr": tune.loguniform(1e-4, 1e-1),
    "hidden": tune.choice([16, 32, 64]),
    "dropout": tune.uniform(0.0, 0.3),
    "batch_size": 32,
}


def test_grid_axes_become_choices_for_random_search():
    space = {"lr": tune.grid_search([0.1, 0.01]), "hidden": 8}
    converted = searcher("random").tuner_space(space)
    assert isinstance(converted["lr"], Categorical) and converted["lr"].categories == [0.1, 0.01]
    assert converted["hidden"] == 8
    assert searcher("grid").tuner_space(space) == space


@pytest.mark.parametrize("search", ["optuna", "hyperopt", "bohb"])
def test_model_based_searchers_sample_grid_axes_as_choices(search):
    space = {"lr": tune.grid_search([0.1, 0.01]), "hidden": tune.grid_search([8, 16]), "batch_size": 32}
    algorithm = searcher(search).build(SearchRequest(space, num_samples=6, seed=0))
    converted = searcher(search).tuner_space(space)
    assert converted["lr"].categories == [0.1, 0.01] and converted["hidden"].categories == [8, 16]
    algorithm.set_search_properties("val_acc", "max", converted)
    configs = [algorithm.suggest(f"trial_{i}") for i in range(6)]
    assert all(c["lr"] in (0.1, 0.01) and c["hidden"] in (8, 16) for c in configs)
    assert searcher(search).grid_notice(space, 6) == (
        f"{search} samples the grid axes (hidden, lr) as choices of the same values; num_samples = 6 now counts "
        "configs in all (--num-samples N for more)"
    )
    assert searcher("grid").grid_notice(space, 6) is None
    # `tuner extend --num-samples 6`: the user gave the number, so no advice to give it.
    assert searcher(search).grid_notice(space, 6, extend=True) == (
        f"{search} samples the grid axes (hidden, lr) as choices of the same values: 6 new configs"
    )


@pytest.mark.parametrize("search", ["optuna", "hyperopt", "bohb"])
def test_model_based_searchers_refuse_a_grid_axis_they_cannot_sample(search):
    with pytest.raises(
        TunerError,
        match=f"{search} cannot sample grid axis layers, whose values are not numbers "
        "or strings; use --search grid or random",
    ):
        searcher(search).check({"layers": tune.grid_search([[8], [8, 8]])})


def test_unknown_names():
    with pytest.raises(TunerError, match="unknown search 'sobol'"):
        searcher("sobol").check(SPACE)
    with pytest.raises(TunerError, match="unknown scheduler 'pb2'"):
        schedulers.scheduler("pb2")


def test_the_optional_searchers_libraries_are_found_when_installed():
    for name in SEARCHES:  # the test extra pulls in tuner[hyperopt,bohb]
        searcher(name).check(SPACE)


def test_a_missing_optional_searcher_is_one_line_naming_its_extra_before_anything_runs(tmp_path):
    """A fresh interpreter where `import hyperopt` and `import ConfigSpace` fail, as without the extras
    (a None entry in sys.modules: importlib.util.find_spec answers None, an import raises ImportError).
    For bohb, one of its two libraries missing is enough. The space's validation refuses before Ray starts."""
    calls = "print([main(['run', '--search', search, '--name', search]) for search in ('hyperopt', 'bohb')])"
    result = tuner_without(("hyperopt", "ConfigSpace"), calls, cwd=tmp_path)
    assert result.stdout.strip() == "[2, 2]", result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-2:] == [
        "tuner: error: space digits_mlp: --search hyperopt needs HyperOpt, an optional extra: "
        + install_command("hyperopt"),
        "tuner: error: space digits_mlp: --search bohb needs hpbandster and ConfigSpace, an optional extra: "
        + install_command("bohb"),
    ]
    assert not (tmp_path / "tuner_results").exists()


def _suggestions(search: str, seed: int, n: int = 4) -> list[dict]:
    algorithm = searcher(search).build(SearchRequest(SPACE, num_samples=n, seed=seed))
    algorithm.set_search_properties("val_acc", "max", searcher(search).tuner_space(SPACE))
    return [algorithm.suggest(f"trial_{i}") for i in range(n)]


@pytest.mark.parametrize("search", ["optuna", "hyperopt", "bohb"])
def test_same_seed_same_configs(search):
    first, again, other = _suggestions(search, 1), _suggestions(search, 1), _suggestions(search, 2)
    assert first == again
    assert first != other
    assert all(1e-4 <= config["lr"] <= 1e-1 for config in first)


def _variants(search: str, seed: int) -> list[dict]:
    space = {**SPACE, "batch_size": tune.grid_search([16, 32])}
    generator = searcher(search).build(SearchRequest(space, num_samples=3, seed=seed))
    param_space = searcher(search).tuner_space(space)
    generator.add_configurations({"exp": {"run": lambda config: None, "config": param_space, "num_samples": 3}})
    configs = []
    while (trial := generator.next_trial()) is not None:
        configs.append(trial.config)
    return configs


@pytest.mark.parametrize("search,count", [("grid", 6), ("random", 3)])
def test_grid_and_random_variants_are_reproducible_by_seed(search, count):
    first, again, other = _variants(search, 5), _variants(search, 5), _variants(search, 6)
    assert len(first) == count
    assert first == again and first != other


def test_pbt_mutates_only_what_a_checkpoint_survives():
    space = {**SPACE, "optimizer": tune.choice(["adam", "sgd"]), "weight_decay": tune.grid_search([0.0, 1e-4])}
    assert set(pbt_mutations(space)) == {"lr", "dropout", "weight_decay"}
    assert pbt_mutations(space)["weight_decay"] == [0.0, 1e-4]


def test_pbt_mutates_what_the_space_marks_mutable():
    space = {**SPACE, "ema_decay": tune.uniform(0.9, 0.999)}
    assert set(pbt_mutations(space, ["lr", "ema_decay"])) == {"lr", "ema_decay"}
    assert "ema_decay" not in pbt_mutations(space)  # the default list knows only tuner's names
    with pytest.raises(TunerError, match="pbt has nothing to mutate: give one of ema_decay a search domain"):
        schedulers.scheduler("pbt").check(searcher("grid"), {"ema_decay": 0.99}, mutable=["ema_decay"])


def test_pbt_without_anything_to_mutate():
    with pytest.raises(TunerError, match="pbt has nothing to mutate"):
        schedulers.scheduler("pbt").check(searcher("grid"), {"hidden": tune.choice([8, 16]), "lr": 0.1})


def test_bohb_brings_its_own_scheduler():
    with pytest.raises(TunerError, match="bohb runs with its own scheduler"):
        schedulers.scheduler("asha").check(searcher("bohb"), SPACE)
    assert isinstance(searcher("bohb").own_scheduler(epochs=9), HyperBandForBOHB)


def test_scheduler_budgets_follow_the_epochs():
    asha = schedulers.scheduler("asha").build(SchedulerRequest(SPACE, epochs=27))
    assert (asha._max_t, asha._reduction_factor) == (27, 3)
    assert schedulers.scheduler("fifo").build(SchedulerRequest(SPACE, epochs=5)) is None
    pbt = schedulers.scheduler("pbt").build(SchedulerRequest(SPACE, epochs=12))
    assert pbt._perturbation_interval == 3


@pytest.mark.parametrize("text,seconds", [("90", 90), ("90s", 90), ("30m", 1800), ("2h", 7200), ("1h30m", 5400)])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["abc", "", "-5m", "0", "30 minutes"])
def test_bad_durations(text):
    with pytest.raises(TunerError, match="time budget"):
        parse_duration(text)


def test_stop_conditions():
    stop = MetricThreshold(parse_stop("val_acc>=0.98"))
    assert not stop("t1", {"val_acc": 0.5}) and not stop.stop_all()
    assert stop("t1", {"val_acc": 0.99}) and stop.stop_all()
    assert MetricThreshold(parse_stop(" val_loss < 0.1 "))("t", {"val_loss": 0.05})
    assert parse_stop("val_f1>=0.9").metric == "val_f1"  # any name; whether it is reported, the smoke step says
    for bad, message in (("val_acc=0.9", "not METRIC OP NUMBER"), ("val_acc>=high", "not METRIC OP NUMBER")):
        with pytest.raises(TunerError, match=message):
            parse_stop(bad)


@pytest.mark.parametrize("search", SEARCHES)
def test_every_searcher_proposes_at_most_max_concurrent_trials_at_once(search):
    space = {**SPACE, "batch_size": tune.grid_search([16, 32])} if searcher(search).basic_variant else SPACE
    algorithm = searcher(search).build(SearchRequest(space, num_samples=4, seed=0, max_concurrent=2))
    param_space = searcher(search).tuner_space(space)
    if hasattr(algorithm, "next_trial"):  # Ray's BasicVariantGenerator (grid, random)
        algorithm.add_configurations({"x": {"run": lambda config: None, "config": param_space, "num_samples": 4}})
        proposed = [algorithm.next_trial() for _ in range(3)]
        assert [trial is not None for trial in proposed] == [True, True, False]  # a third waits
        algorithm.on_trial_complete(proposed[0].trial_id, {"val_acc": 0.5})
        assert algorithm.next_trial() is not None  # one ended: one more may start
        return
    algorithm.set_search_properties("val_acc", "max", param_space)
    proposed = [algorithm.suggest(f"t{index}") for index in range(3)]
    assert [config is not None for config in proposed] == [True, True, False]
    algorithm.on_trial_complete("t0", {"val_acc": 0.5, "training_iteration": 1})
    assert algorithm.suggest("t3") is not None


def _all_variants(search: str, space: dict, num_samples: int, seed: int = 0) -> list[dict]:
    """The configs Ray's generator hands out for `search`, as Tune would ask for them."""
    generator = searcher(search).build(SearchRequest(space, num_samples=num_samples, seed=seed))
    param_space = searcher(search).tuner_space(space)
    count = searcher(search).trials(space, num_samples)
    generator.add_configurations({"exp": {"run": lambda config: None, "config": param_space, "num_samples": count}})
    configs = []
    while (trial := generator.next_trial()) is not None:
        configs.append(trial.config)
    return configs


FINITE = {
    "lr": tune.grid_search([1e-3, 1e-2, 1e-1]),
    "hidden": tune.choice([16, 32, 64, 128]),
    "optimizer": tune.choice(["adam", "sgd"]),
    "batch_size": 64,
}  # 3 x 4 x 2 = 24 configs


def _key(config: dict) -> tuple:
    return config["lr"], config["hidden"], config["optimizer"]


def test_random_search_over_a_finite_space_runs_every_config_once():
    configs = _all_variants("random", FINITE, num_samples=24)
    assert len(configs) == 24
    expected = {
        (lr, hidden, optimizer)
        for lr in (1e-3, 1e-2, 1e-1)
        for hidden in (16, 32, 64, 128)
        for optimizer in ("adam", "sgd")
    }
    assert {_key(config) for config in configs} == expected  # 24 distinct: each config exactly once
    assert all(config["batch_size"] == 64 for config in configs)
    # A different seed: the same set in another order.
    again = _all_variants("random", FINITE, num_samples=24, seed=1)
    assert {_key(config) for config in again} == expected and [_key(c) for c in again] != [_key(c) for c in configs]


def test_random_search_draws_distinct_configs_and_caps_at_the_space():
    configs = _all_variants("random", FINITE, num_samples=10)
    assert len({_key(config) for config in configs}) == 10
    assert _all_variants("random", FINITE, num_samples=10) == configs  # seeded
    assert len(_all_variants("random", FINITE, num_samples=100)) == 24
    assert searcher("random").space_notice(FINITE, 100) == (
        "random: the space has 24 distinct configs, so 24 trials run (each config once), not num_samples = 100"
    )
    assert searcher("random").space_notice(FINITE, 24) is None


def test_random_search_samples_ranges_with_replacement_as_before():
    """A space with a range is drawn as Ray drew it before tuner drew finite spaces without replacement:
    every trial independently, so each of `hidden`'s 3 values comes up again and again in 50 trials, and
    the configs are exactly those of Ray's own generator with the same seed and no points handed to it."""
    assert space_counts.discrete_axes(SPACE) is None  # lr and dropout are ranges
    assert searcher("random").trials(SPACE, 50) == 50
    configs = _all_variants("random", SPACE, num_samples=50)
    assert len(configs) == 50
    hidden = [config["hidden"] for config in configs]
    assert min(hidden.count(value) for value in SPACE["hidden"].categories) >= 2  # each drawn, and drawn again
    assert len({config["lr"] for config in configs}) == 50  # a range never runs out of values
    ray_own = tune.search.BasicVariantGenerator(random_state=0)
    ray_own.add_configurations({"exp": {"run": lambda config: None, "config": SPACE, "num_samples": 50}})
    assert configs == [trial.config for trial in iter(ray_own.next_trial, None)]


def test_a_huge_finite_space_is_sampled_without_enumerating_it():
    huge = {f"k{i}": tune.choice(list(range(10))) for i in range(12)}  # 10^12 configs
    configs = _all_variants("random", huge, num_samples=5)
    assert len({tuple(sorted(config.items())) for config in configs}) == 5


def test_auto_runs_a_small_finite_space_whole_under_asha_when_the_epochs_leave_it_rungs():
    nine = {"lr": tune.grid_search([1e-3, 1e-2, 1e-1]), "hidden": tune.grid_search([32, 64, 128])}
    choice = auto.choose(nine, num_samples=1, scheduler="fifo", epochs=9)
    assert (choice.search, choice.scheduler, choice.num_samples) == ("random", "asha", 9)
    assert choice.reason == (
        "search auto: every one of the space's 9 configs once, in random order, asha stopping the weak ones "
        "early (a finite space of <= 16 configs)"
    )
    # Two epochs leave ASHA no second rung: every config runs to the end.
    short = auto.choose(nine, num_samples=1, scheduler="fifo", epochs=2)
    assert (short.search, short.scheduler) == ("random", "fifo")
    assert short.reason == (
        "search auto: every one of the space's 9 configs once, in random order (a finite space of <= 16 configs)"
    )
    assert auto.choose(nine, num_samples=1, scheduler="median", epochs=9).scheduler == "median"  # the space's
    # num_samples above the threshold is a budget for the whole space too.
    assert auto.choose(FINITE, num_samples=24, scheduler="fifo", epochs=9).search == "random"


def test_auto_picks_a_model_with_asha_for_a_large_or_continuous_space():
    large = auto.choose(FINITE, num_samples=1, scheduler="fifo", epochs=9)
    assert (large.search, large.scheduler, large.num_samples) == ("gp", "asha", 16)
    # FINITE has tune.choice axes, which grid would sample rather than cross: no hint to use grid.
    assert large.reason == (
        "search auto: gp (Gaussian process) with asha, 16 configs (the space has 24 configs, more than 16; "
        f"<= {auto.GP_MAX_TRIALS} trials)"
    )
    all_grid = {key: tune.grid_search(values) for key, values in space_counts.discrete_axes(FINITE).items()}
    assert auto.choose(all_grid, num_samples=1, scheduler="fifo", epochs=9).reason == (
        "search auto: gp (Gaussian process) with asha, 16 configs (the space has 24 configs, more than 16; "
        f"--search grid runs every one; <= {auto.GP_MAX_TRIALS} trials)"
    )
    beyond_gp = auto.GP_MAX_TRIALS + 1
    ranges = auto.choose(SPACE, num_samples=beyond_gp, scheduler="fifo", epochs=9)
    assert (ranges.search, ranges.scheduler, ranges.num_samples) == ("optuna", "asha", beyond_gp)
    assert ranges.reason == f"search auto: optuna (TPE) with asha, {beyond_gp} configs (the space samples from a range)"
    assert auto.choose(SPACE, num_samples=40, scheduler="median", epochs=9).scheduler == "median"  # the space's own
    assert auto.choose(SPACE, num_samples=8, scheduler="pbt", epochs=9).search == "random"


def test_auto_picks_a_model_by_the_budget():
    ranges = {"lr": tune.loguniform(1e-4, 1e-1), "dropout": tune.uniform(0.0, 0.5), "layers": tune.randint(1, 4)}
    small = auto.choose(ranges, num_samples=auto.GP_MAX_TRIALS, scheduler="fifo", epochs=9)
    assert (small.search, small.scheduler) == ("gp", "asha")
    assert small.reason == (
        f"search auto: gp (Gaussian process) with asha, {auto.GP_MAX_TRIALS} configs (the space samples from a "
        f"range; <= {auto.GP_MAX_TRIALS} trials)"
    )
    assert auto.choose(ranges, num_samples=auto.GP_MAX_TRIALS + 1, scheduler="fifo", epochs=9).search == "optuna"
    large = auto.choose(ranges, num_samples=auto.CMAES_MIN_TRIALS, scheduler="fifo", epochs=9)
    assert large.search == "cmaes" and f">= {auto.CMAES_MIN_TRIALS} trials" in large.reason
    # CMA-ES reads no constraints and models no choice: TPE takes those; a GP takes choices.
    assert auto.choose(ranges, auto.CMAES_MIN_TRIALS, "fifo", 9, constrained=True).search == "optuna"
    with_choice = {**ranges, "act": tune.choice(["relu", "gelu"])}
    assert auto.choose(with_choice, auto.CMAES_MIN_TRIALS, "fifo", 9).search == "optuna"
    assert auto.choose(with_choice, 20, "fifo", 9).search == "gp"
    assert auto.choose(ranges, 20, "fifo", 9, objectives=2).search == "optuna"
    # What it picks runs: the plan builds it over the same space.
    spec = ExperimentSpec.of(
        "ranges", metric="val_acc", mode="max", model="mlp", dataset="digits", param_space=ranges, search="auto",
        num_samples=20, epochs=9,
    )  # fmt: skip
    assert plan(spec, seed=0).tuning.search == "gp"


def test_the_plan_resolves_auto_once_and_carries_what_runs():
    spec = ExperimentSpec.of(
        "planned",
        metric="val_acc",
        mode="max",
        model="mlp",
        dataset="digits",
        param_space=SPACE,
        search="auto",
        epochs=9,
    )
    planned = plan(spec, seed=0)
    assert (planned.tuning.search, planned.tuning.scheduler) == ("gp", "asha")
    assert planned.budget.num_samples == planned.num_samples == auto.AUTO_WHOLE_SPACE_MAX
    assert planned.budget.epochs == 9 and spec.budget.num_samples == 1  # the spec itself is left as written
    assert planned.notices[0].startswith("search auto: gp (Gaussian process) with asha")
    assert isinstance(planned.scheduler, AsyncHyperBandScheduler) and planned.scheduler.name == "asha"
    with pytest.raises(TunerError, match="space planned: bohb runs with its own scheduler"):
        plan(dataclasses.replace(spec, tuning=Tuning(search="bohb", scheduler="asha")), seed=0)
