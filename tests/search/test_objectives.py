"""Several objectives and constraints without Ray running: how they are declared and read back, the
non-dominated sorting behind the report's ranking and the Pareto ASHA rungs, feasibility, and what
optuna is told."""

import dataclasses
import math

import numpy as np
import optuna
import pandas as pd
import pytest
from ray import tune
from ray.tune.schedulers import TrialScheduler

from tuner.errors import TunerError
from tuner.results import objectives as ranking
from tuner.search import pareto
from tuner.search.optuna_objectives import OptunaObjectives
from tuner.search.pareto_asha import ParetoASHA
from tuner.search.plan import plan
from tuner.settings import Objective
from tuner.settings.declaration import as_record, from_record
from tuner.settings.objectives import parse_constraint
from tuner.spec import space as space_modules
from tuner.storage import meta as meta_file
from tuner.storage.meta import ExperimentMeta

TWO = (("val_acc", "max"), ("latency_ms", "min"))


# --- declaring them --------------------------------------------------------------------------------


def test_lists_and_a_mapping_declare_the_same_objectives_with_the_first_as_metric_and_mode():
    by_lists = Objective(["val_acc", "latency_ms"], ["max", "min"])
    by_mapping = Objective({"val_acc": "max", "latency_ms": "min"})
    assert by_lists == by_mapping
    assert by_lists.objectives == TWO and by_lists.several
    assert (by_lists.metric, by_lists.mode) == ("val_acc", "max")  # plain strings: the primary objective
    single = Objective("val_acc", "max")
    assert single.objectives == (("val_acc", "max"),) and not single.several and single.constraints == ()


@pytest.mark.parametrize(
    "metric, mode, constraints, message",
    [
        (["val_acc", "latency_ms"], "max", (), "metric names 2 objective(s) (val_acc, latency_ms) but mode gives 1"),
        (["val_acc", "val_acc"], ["max", "max"], (), "names an objective twice"),
        ("val_acc", "maximize", (), "mode must be 'min' or 'max'"),
        ({"val_acc": "max", "latency_ms": "least"}, None, (), "latency_ms' maps to 'least'"),
        ({"val_acc": "max"}, "max", (), "drop mode"),
        ("val_acc", "max", ["latency_ms = 5"], "constraint 'latency_ms = 5' is not METRIC OP NUMBER"),
        ("val_acc", "max", ["latency_ms <= fast"], "is not METRIC OP NUMBER"),
        ("val_acc", "max", "latency_ms <= 5", "constraints must be a list of constraints"),
    ],
)
def test_bad_objectives_and_constraints_are_one_line(metric, mode, constraints, message):
    with pytest.raises(TunerError) as error:
        Objective(metric, mode, constraints=constraints)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_constraints_read_each_operator_and_measure_the_violation():
    at_most = parse_constraint("latency_ms <= 5")
    assert (at_most.metric, at_most.op, at_most.bound) == ("latency_ms", "<=", 5.0)
    assert at_most.satisfied(5.0) and not at_most.satisfied(5.5) and not at_most.satisfied(math.nan)
    assert at_most.violation(4.0) == -1.0 and at_most.violation(6.5) == 1.5 and at_most.violation(None) == math.inf
    at_least = parse_constraint("params>=2e6")
    assert at_least.bound == 2e6 and at_least.satisfied(3e6) and at_least.violation(1e6) == 1e6
    strictly = parse_constraint("x<1")
    assert not strictly.satisfied(1.0) and strictly.violation(1.0) > 0  # on the bound breaks a strict one


def test_tuner_json_records_every_objective_and_reads_back_the_same():
    objective = Objective(["val_acc", "latency_ms"], ["max", "min"], constraints=["latency_ms<=5"])
    meta = ExperimentMeta(space="s", params=["lr"], objective=objective)
    record = meta_file.to_record(meta)
    assert record["objective"]["metric"] == "val_acc"  # older readers still find the primary objective
    assert meta_file.from_json_record(record).objective == objective
    assert from_record(Objective, {"metric": "val_loss", "mode": "min"}).objectives == (("val_loss", "min"),)
    assert as_record(Objective("val_acc", "max"))["objectives"] == [("val_acc", "max")]


def test_the_command_line_replaces_the_objectives_and_keeps_the_modes_it_was_not_given():
    spec = space_modules.load("digits_mlp")
    two = spec.with_overrides(metric=["val_acc", "val_loss"], mode=["max", "min"], constraints=["val_loss<=1"])
    assert two.objective.objectives == (("val_acc", "max"), ("val_loss", "min"))
    assert two.objective.constraints == ("val_loss<=1",)
    assert two.with_overrides(mode=["min", "max"]).objective.objectives == (("val_acc", "min"), ("val_loss", "max"))
    assert two.with_overrides(metric="val_loss", mode="min").objective.objectives == (("val_loss", "min"),)
    with pytest.raises(TunerError, match="give one mode per metric"):
        two.with_overrides(metric="val_acc")  # one metric, two modes: said, not guessed


def test_a_space_module_may_give_one_mapping_instead_of_metric_and_mode(tmp_path):
    module = tmp_path / "mapping.py"
    module.write_text(
        'model = "mlp"\ndataset = "digits"\nmetric = {"val_acc": "max", "val_loss": "min"}\n'
        'constraints = ["val_loss <= 2"]\nparam_space = {"lr": 0.01}\n'
    )
    spec = space_modules.load(str(module))
    assert spec.objective.objectives == (("val_acc", "max"), ("val_loss", "min"))
    assert spec.objective.constraint_list[0].bound == 2.0


# --- searching with them ---------------------------------------------------------------------------


def _two_objective_spec(**settings):
    spec = space_modules.load("digits_mlp")
    return spec.with_overrides(metric=["val_acc", "val_loss"], mode=["max", "min"], **settings)


def test_hyperopt_and_bohb_refuse_several_objectives_and_auto_picks_multi_objective_tpe():
    for search in ("hyperopt", "bohb"):
        with pytest.raises(TunerError, match=f"{search} optimizes one metric.*use --search optuna"):
            plan(_two_objective_spec(search=search), 0)
    chosen = plan(_two_objective_spec(search="auto", num_samples=40, epochs=9), 0)
    assert chosen.tuning.search == "optuna" and chosen.tuning.scheduler == "asha"
    assert any("multi-objective TPE" in notice for notice in chosen.notices)
    assert isinstance(chosen.scheduler, ParetoASHA)
    assert any("by Pareto front" in notice for notice in chosen.notices)


def test_schedulers_of_one_metric_say_they_stop_by_the_primary_objective():
    median = plan(_two_objective_spec(scheduler="median"), 0)
    assert "median takes one metric: it stops trials by the primary objective, val_acc (max), alone" in median.notices
    random = plan(_two_objective_spec(search="random", constraints=["val_loss<=1"]), 0)
    assert any("random proposes configs without regard to the constraints" in n for n in random.notices)


def test_optuna_keeps_its_objectives_and_learns_which_configs_break_a_constraint():
    sampler = optuna.samplers.TPESampler(seed=1)
    searcher = OptunaObjectives(TWO, [parse_constraint("latency_ms <= 0.25")], sampler=sampler)
    # Tune hands every searcher the primary objective; this one keeps both.
    searcher.set_search_properties("val_acc", "max", {"x": tune.uniform(0, 1)})
    assert searcher.metric == ["val_acc", "latency_ms"] and searcher.mode == ["max", "min"]
    for i in range(40):
        x = searcher.suggest(str(i))["x"]
        searcher.on_trial_complete(str(i), {"val_acc": x, "latency_ms": x * x})
    trials = searcher._ot_study.trials
    assert len(trials[0].values) == 2
    assert all((t.constraints["latency_ms<=0.25"] <= 0) == (t.params["x"] ** 2 <= 0.25) for t in trials)
    # Feasible configs (x <= 0.5) make half the range; once TPE has a model, most of its picks.
    later = [t.params["x"] for t in trials[20:]]
    assert sum(x <= 0.5 for x in later) >= 0.75 * len(later)


# --- fronts -----------------------------------------------------------------------------------------


def test_non_dominated_sorting_finds_each_front_and_orients_min_and_missing_values():
    points = pareto.oriented(
        [[0.9, 5.0], [0.8, 2.0], [0.7, 3.0], [0.9, 5.0], [0.6, 9.0], [np.nan, 1.0]], ["max", "min"]
    )
    # Equal points share a front; a missing value is the worst in its objective only (the best latency
    # still puts the last point on the front: the report sorts only trials with every value).
    assert pareto.front_ranks(points).tolist() == [1, 1, 2, 1, 3, 1]
    assert pareto.dominates(points[1], points[2]) and not pareto.dominates(points[0], points[1])
    single = pareto.oriented([[3.0], [1.0], [2.0]], ["min"])
    assert pareto.front_ranks(single).tolist() == [3, 1, 2]  # one objective: plain ranking


def test_a_rung_keeps_the_first_front_and_stops_a_trial_once_enough_dominate_it():
    rung = pareto.oriented([[0.9, 5.0], [0.5, 1.0], [0.4, 6.0]], ["max", "min"])
    assert pareto.keeps(rung, 0, 3) and pareto.keeps(rung, 1, 3)  # the front: never stopped
    assert not pareto.keeps(rung, 2, 3)  # dominated by both, with 2 >= 3 / 3 ahead of it
    lone = pareto.oriented([[0.1, 9.0], [0.9, 1.0]], ["max", "min"])
    assert not pareto.keeps(lone, 0, 3) and pareto.keeps(lone[:1], 0, 3)


def test_pareto_asha_stops_only_dominated_trials_at_its_rungs():
    scheduler = ParetoASHA(TWO, max_t=9, grace_period=1, reduction_factor=3)
    assert [milestone for milestone, _ in scheduler._rungs] == [1, 3, 9]
    oriented = pareto.oriented([[0.9, 5.0], [0.5, 1.0], [0.4, 6.0]], ["max", "min"])
    decisions = [scheduler.decide(f"t{i}", 1, point) for i, point in enumerate(oriented)]
    assert decisions == [TrialScheduler.CONTINUE, TrialScheduler.CONTINUE, TrialScheduler.STOP]
    assert scheduler.decide("t0", 2, oriented[0]) == TrialScheduler.CONTINUE  # between rungs: nothing to compare
    assert scheduler.decide("t1", 3, oriented[1]) == TrialScheduler.CONTINUE  # first at rung 3


def test_a_fast_model_on_the_front_goes_on_where_asha_on_the_primary_objective_would_stop_it():
    from types import SimpleNamespace

    from ray.tune.schedulers import ASHAScheduler

    results = [(0.9, 50.0), (0.8, 40.0), (0.3, 1.0)]  # the last: least accurate, by far the fastest
    asha = ASHAScheduler(metric="val_acc", mode="max", max_t=9, grace_period=1, reduction_factor=3)
    pareto_asha = ParetoASHA(TWO, max_t=9, grace_period=1, reduction_factor=3)
    decisions = {}
    for scheduler in (asha, pareto_asha):
        for i, (acc, latency) in enumerate(results):
            trial = SimpleNamespace(trial_id=f"t{i}")
            scheduler.on_trial_add(None, trial)
            result = {"training_iteration": 1, "val_acc": acc, "latency_ms": latency}
            decisions[type(scheduler).__name__, i] = scheduler.on_trial_result(None, trial, result)
    assert decisions["AsyncHyperBandScheduler", 2] == TrialScheduler.STOP
    assert decisions["ParetoASHA", 2] == TrialScheduler.CONTINUE


def test_hypervolume_of_a_2d_front():
    # Maximize both, reference (0, 0): the staircase of (1, 3), (2, 2), (3, 1) covers 3 + 2 + 1.
    assert pareto.hypervolume_2d(np.array([[1, 3], [2, 2], [3, 1], [1, 1]]), [0, 0]) == 6.0
    assert pareto.hypervolume_2d(np.array([[-1, 5]]), [0, 0]) == 0.0  # beyond the reference: nothing


# --- the report's ranking -----------------------------------------------------------------------------


def _trials():
    return pd.DataFrame(
        {
            "trial_id": ["t_00000", "t_00001", "t_00002", "t_00003", "t_00004", "t_00005"],
            "best_val_acc": [0.95, 0.90, 0.80, 0.97, 0.85, np.nan],
            "best_latency_ms": [4.0, 2.0, 3.0, 9.0, 2.0, np.nan],
            "latency_ms": [4.0, 2.0, 3.0, 9.0, 2.0, np.nan],
        }
    )


def test_the_report_ranks_by_front_then_by_the_primary_objective():
    ranked = ranking.rank(_trials(), Objective(["val_acc", "latency_ms"], ["max", "min"]))
    # Front 1: t3 (best acc), t0, t1 (2 ms, higher acc than t4); then t4, then t2 (t4 beats it); no score last.
    assert ranked["trial_id"].tolist() == ["t_00003", "t_00000", "t_00001", "t_00004", "t_00002", "t_00005"]
    assert ranked["pareto_rank"].tolist()[:5] == [1, 1, 1, 2, 3] and pd.isna(ranked["pareto_rank"].iloc[5])
    assert ranked["rank"].tolist() == [1, 2, 3, 4, 5, 6] and "feasible" not in ranked


def test_infeasible_trials_never_rank_above_feasible_ones():
    objective = Objective(["val_acc", "latency_ms"], ["max", "min"], constraints=["latency_ms <= 5"])
    ranked = ranking.rank(_trials(), objective)
    assert ranked["trial_id"].tolist() == ["t_00000", "t_00001", "t_00004", "t_00002", "t_00003", "t_00005"]
    assert ranked["feasible"].tolist() == [True, True, True, True, False, False]
    # Fronts among the trials of the same feasibility: t3 (9 ms) is the front of the infeasible ones.
    assert ranked["pareto_rank"].tolist()[:5] == [1, 1, 2, 3, 1]
    assert ranking.front(ranked, objective)["trial_id"].tolist() == ["t_00000", "t_00001"]
    # One objective with constraints: feasible first, then by the score.
    single = ranking.rank(_trials(), Objective("val_acc", "max", constraints=["latency_ms <= 5"]))
    assert single["trial_id"].tolist()[:4] == ["t_00000", "t_00001", "t_00004", "t_00002"]
    assert "pareto_rank" not in single


def test_the_ranked_table_shows_each_objective_the_front_and_feasibility():
    from tuner.results.report import ranked

    objective = Objective(["val_acc", "latency_ms"], ["max", "min"], constraints=["latency_ms <= 5"])
    table = ranked(ranking.rank(_trials(), objective), "val_acc", [], objective=objective)
    assert list(table.columns) == ["rank", "trial_id", "best_val_acc", "best_latency_ms", "pareto_rank", "feasible"]
    one = Objective("val_acc", "max")
    assert ranking.columns(one) == ["best_val_acc"]
    assert dataclasses.replace(one) == one
