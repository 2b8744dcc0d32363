"""One suite over every scheduler in `tuner.search.schedulers.SCHEDULERS`: what its flags promise is what
the plan and its built Ray scheduler do, without Ray started. A scheduler added to the table runs here."""

import pytest
from ray import cloudpickle, tune
from ray.tune.schedulers import PopulationBasedTraining, TrialScheduler

from tuner.errors import TunerError
from tuner.search import SEARCHES, auto, schedulers
from tuner.search import search as searcher
from tuner.search.decisions import Recording
from tuner.search.plan import plan
from tuner.search.schedulers.base import SchedulerRequest
from tuner.settings.experiment import SCHEDULERS as NAMES
from tuner.spec.space import ExperimentSpec

SPACE = {"lr": tune.loguniform(1e-4, 1e-1), "dropout": tune.uniform(0.0, 0.5), "hidden": tune.choice([16, 32])}


def _spec(**fields) -> ExperimentSpec:
    given = {"model": "mlp", "dataset": "digits", "param_space": SPACE, "metric": "val_acc", "mode": "max"}
    return ExperimentSpec.of("s", **{**given, "epochs": 9, "num_samples": 4, **fields})


def test_the_table_holds_every_name_the_settings_give_and_each_class_its_own_name():
    assert tuple(schedulers.SCHEDULERS) == NAMES
    assert all(schedulers.scheduler(name).name == name for name in NAMES)
    with pytest.raises(TunerError, match="unknown scheduler 'pb2'; choose one of fifo, asha"):
        schedulers.scheduler("pb2")


@pytest.mark.parametrize("name", NAMES)
def test_each_builds_a_scheduler_that_records_its_decisions_and_survives_pickling(name):
    built = schedulers.scheduler(name).build(SchedulerRequest(SPACE, epochs=9))
    if not schedulers.scheduler(name).stops_early:
        assert built is None  # Ray's FIFO
        return
    assert isinstance(built, TrialScheduler) and isinstance(built, Recording) and built.name == name
    assert type(cloudpickle.loads(cloudpickle.dumps(built))) is type(built)  # as Ray saves it for resume


@pytest.mark.parametrize("name", NAMES)
def test_the_plan_runs_the_scheduler_asked_for_with_every_searcher_it_takes(name):
    stopping = schedulers.scheduler(name)
    for search in SEARCHES:
        if searcher(search).extra:  # hyperopt and bohb: optional extras, checked in test_search_options
            continue
        spec = _spec(search=search, scheduler=name)
        takes = (stopping.model_search_refused is None or searcher(search).basic_variant) and (
            searcher(search).schedulers is None or name in searcher(search).schedulers
        )
        if not takes:
            with pytest.raises(TunerError, match=f"space s: {name} "):
                plan(spec, seed=0)
            continue
        built = plan(spec, seed=0).scheduler
        assert (built is None) == (not stopping.stops_early), search
        if built is not None:
            assert built.name == name


@pytest.mark.parametrize("name", NAMES)
def test_conditions_are_refused_in_one_line_only_by_a_scheduler_that_says_why(name):
    stopping = schedulers.scheduler(name)
    spec = _spec(
        search="random",
        scheduler=name,
        param_space={**SPACE, "optimizer": tune.choice(["sgd", "adam"]), "momentum": tune.uniform(0, 0.9)},
        conditions={"momentum": {"optimizer": "sgd"}},
    )
    if stopping.conditions_refused:
        with pytest.raises(TunerError, match=f"space s: {name} {stopping.conditions_refused}; use --scheduler asha"):
            plan(spec, seed=0)
    else:
        assert plan(spec, seed=0).tuning.scheduler == name


@pytest.mark.parametrize("name", NAMES)
def test_with_two_objectives_a_scheduler_says_what_it_stops_by(name):
    notices = plan(
        _spec(search="random", scheduler=name, metric=["val_acc", "latency_ms"], mode=["max", "min"]), seed=0
    ).notices
    said = [notice for notice in notices if notice.startswith(f"{name} ")]
    if not schedulers.scheduler(name).stops_early:
        assert said == []
    else:
        assert len(said) == 1 and ("Pareto front" in said[0] or "primary objective, val_acc (max)" in said[0])


@pytest.mark.parametrize("name", NAMES)
def test_auto_keeps_a_stopping_scheduler_and_picks_random_where_it_refuses_a_model(name):
    stopping = schedulers.scheduler(name)
    choice = auto.choose(SPACE, 32, name, epochs=9)
    assert choice.scheduler == (name if stopping.stops_early else "asha")
    assert (choice.search == "random") == bool(stopping.model_search_refused)


def test_only_a_scheduler_that_shares_checkpoints_keeps_them_all():
    sharing = [name for name in NAMES if schedulers.scheduler(name).shares_checkpoints]
    assert sharing == ["pbt"]
    assert isinstance(schedulers.scheduler("pbt").build(SchedulerRequest(SPACE, epochs=12)), PopulationBasedTraining)
    assert not isinstance(
        schedulers.scheduler("asha").build(SchedulerRequest(SPACE, epochs=9)), PopulationBasedTraining
    )
