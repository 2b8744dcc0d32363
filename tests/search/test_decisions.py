"""The schedulers' recorded decisions, driven as Ray's own scheduler tests drive them: real Trials
(stubs, as Ray's tests make them) fed results through on_trial_add / on_trial_result, no trainer and no
controller (ASHA never asks it anything). The cutoff of each row is checked against ASHA's rule
computed here from the values the test fed: the (1 - 1/rf) percentile of the earlier values at the rung."""

import numpy as np
import pytest
from ray import cloudpickle, tune
from ray.tune.experiment import Trial
from ray.tune.schedulers import ASHAScheduler, TrialScheduler

from tuner.search import schedulers
from tuner.search.decision import Decision
from tuner.search.decisions import Recording, RecordingASHA
from tuner.search.schedulers.base import SchedulerRequest
from tuner.storage.decisions import DecisionFile


def _feed(scheduler, values: dict[int, list[float]], epochs: int, one_at_a_time: bool) -> tuple[list, dict, list]:
    """Trials i = 0..n-1 reporting values[i][epoch - 1], either epoch by epoch across trials or each trial
    to its end before the next starts (one slot: where Ray's synchronous HyperBand stopped nothing).
    Returns the rows, each trial's last epoch, and Ray's actions."""
    rows, actions = [], []
    scheduler.set_search_properties("val_acc", "max")
    if isinstance(scheduler, Recording):
        scheduler.record_to(lambda trial, decided: rows.append(decided.to_json()))  # as the file holds it
    trials = [Trial("__fake", stub=True) for _ in values]
    for trial in trials:
        scheduler.on_trial_add(None, trial)
    last = {t.trial_id: 0 for t in trials}
    order = (
        [(t, e) for t in range(len(trials)) for e in range(1, epochs + 1)]
        if one_at_a_time
        else [(t, e) for e in range(1, epochs + 1) for t in range(len(trials))]
    )
    stopped: set[str] = set()
    for index, epoch in order:
        trial = trials[index]
        if trial.trial_id in stopped:
            continue
        result = {"training_iteration": epoch, "epoch": epoch, "val_acc": values[index][epoch - 1]}
        action = scheduler.on_trial_result(None, trial, result)
        actions.append(action)
        last[trial.trial_id] = epoch
        if action == TrialScheduler.STOP:
            stopped.add(trial.trial_id)
            scheduler.on_trial_complete(None, trial, result)
    return rows, last, actions


def _values(count: int, epochs: int, seed: int = 0) -> dict[int, list[float]]:
    rng = np.random.default_rng(seed)
    return {i: sorted(rng.uniform(0, 1, epochs).tolist()) for i in range(count)}


def test_asha_records_each_rung_decision_with_the_cutoff_it_was_compared_with():
    epochs, values = 9, _values(12, 9)
    rows, last, _ = _feed(schedulers.scheduler("asha").build(SchedulerRequest({}, epochs)), values, epochs, False)
    seen: dict[int, list[float]] = {}  # rung -> values recorded there, in the order they arrived
    for row in rows:
        assert row["scheduler"] == "asha" and row["epoch"] == row["rung"] in (1, 3)  # 9 is the budget: no rung
        earlier = seen.setdefault(row["rung"], [])
        expected = np.percentile(earlier, (1 - 1 / 3) * 100) if earlier else None
        assert row["cutoff"] == pytest.approx(expected)
        assert row["decision"] == ("stop" if expected is not None and row["value"] < expected else "continue")
        earlier.append(row["value"])
    stops = {row["trial_id"]: row for row in rows if row["decision"] == "stop"}
    assert stops, "ASHA stopped nobody: the test shows nothing"
    for trial_id, epoch in last.items():  # a trial stops exactly where its stop row says, the others run on
        assert epoch == (stops[trial_id]["epoch"] if trial_id in stops else epochs)


def test_a_minimised_metric_is_recorded_in_its_own_units():
    scheduler = RecordingASHA("asha", time_attr="training_iteration", max_t=3, grace_period=1, reduction_factor=3)
    rows = []
    scheduler.set_search_properties("val_loss", "min")
    scheduler.record_to(lambda trial, decided: rows.append(decided.to_json()))  # as the file holds it
    trials = [Trial("__fake", stub=True) for _ in range(3)]
    for trial, loss in zip(trials, (0.2, 0.3, 0.9)):
        scheduler.on_trial_add(None, trial)
        scheduler.on_trial_result(None, trial, {"training_iteration": 1, "val_loss": loss})
    assert [(r["value"], r["decision"]) for r in rows] == [(0.2, "continue"), (0.3, "stop"), (0.9, "stop")]
    assert rows[1]["cutoff"] == pytest.approx(0.2) and rows[2]["cutoff"] == pytest.approx(
        np.percentile([0.2, 0.3], 100 / 3)
    )


@pytest.mark.parametrize("epochs, brackets", [(1, 1), (2, 1), (3, 2), (8, 2), (9, 3), (27, 4), (100, 5)])
def test_hyperband_has_one_bracket_per_hyperband_bracket(epochs, brackets):
    scheduler = schedulers.scheduler("hyperband").build(SchedulerRequest({}, epochs))
    assert isinstance(scheduler, RecordingASHA) and len(scheduler._brackets) == brackets
    # Bracket s first stops trials at 3^s epochs; the last has no rung before the budget.
    assert [min(m for m, _ in b._rungs) for b in scheduler._brackets] == [3**s for s in range(brackets)]


def test_hyperband_stops_trials_with_one_trial_at_a_time_and_never_pauses():
    # Ray's synchronous HyperBand paused each trial at a rung until its bracket filled: with one slot
    # (or any concurrency below a bracket's size) it stopped nothing.
    np.random.seed(0)  # Ray draws each trial's bracket from numpy's global generator
    epochs, values = 9, _values(30, 9, seed=1)
    rows, last, actions = _feed(
        schedulers.scheduler("hyperband").build(SchedulerRequest({}, epochs)), values, epochs, True
    )
    assert TrialScheduler.PAUSE not in actions
    stops = [row for row in rows if row["decision"] == "stop"]
    assert stops and all(row["scheduler"] == "hyperband" and row["bracket"] is not None for row in stops)
    assert sum(last.values()) < 30 * epochs
    assert {row["bracket"] for row in rows} >= {0, 1}  # trials went to more than one bracket


def test_recording_leaves_rays_decisions_as_they_were():
    epochs, values = 9, _values(12, 9)
    _, recorded_last, recorded = _feed(
        schedulers.scheduler("asha").build(SchedulerRequest({}, epochs)), values, epochs, False
    )
    ray_asha = ASHAScheduler(time_attr="training_iteration", max_t=epochs, grace_period=1, reduction_factor=3)
    _, ray_last, ray_actions = _feed(ray_asha, values, epochs, False)
    assert recorded == ray_actions and list(recorded_last.values()) == list(ray_last.values())


class _Trials:
    """What PBT asks its controller before it pauses a trial: its search algorithm (none of Ray's
    generators, which it refuses) and the live trials."""

    search_alg = None

    def __init__(self, trials: list[Trial]) -> None:
        self.trials = trials

    def get_live_trials(self) -> list[Trial]:
        return self.trials


def test_pbt_pauses_at_each_perturbation_but_lets_every_trial_end_after_its_last_epoch():
    epochs = 4  # perturbation interval 1: every epoch, the last included, is a perturbation point
    scheduler = schedulers.scheduler("pbt").build(SchedulerRequest({"lr": tune.loguniform(1e-4, 1e-1)}, epochs))
    scheduler.set_search_properties("val_acc", "max")
    trials = [Trial("__fake", stub=True) for _ in range(2)]
    controller = _Trials(trials)
    for trial in trials:
        scheduler.on_trial_add(controller, trial)

    def decision(trial: Trial, epoch: int) -> str:
        result = {"training_iteration": epoch, "epoch": epoch, "val_acc": 0.5}
        return scheduler.on_trial_result(controller, trial, result)

    # The first to reach a perturbation point waits for the other (Ray's synchronous PBT)...
    assert decision(trials[0], 1) == TrialScheduler.PAUSE
    # ...but after the last epoch there is nothing left to train: no pause, no exploit, each trial ends.
    assert decision(trials[0], epochs) == TrialScheduler.CONTINUE
    assert decision(trials[1], epochs) == TrialScheduler.CONTINUE


@pytest.mark.parametrize("name", ["asha", "hyperband", "median", "pbt"])
def test_a_scheduler_and_its_decision_file_survive_the_pickling_of_a_saved_experiment(name):
    # Ray pickles the scheduler into the experiment (tuner.pkl) and `tuner resume` unpickles it: the file
    # it records to must come back with it, and be found from the trials, not from a path of the first run.
    scheduler = schedulers.scheduler(name).build(SchedulerRequest({"lr": tune.loguniform(1e-4, 1e-1)}, 9))
    scheduler.record_to(DecisionFile())
    restored = cloudpickle.loads(cloudpickle.dumps(scheduler))  # as Ray writes tuner.pkl
    assert type(restored) is type(scheduler) and isinstance(restored.sink, DecisionFile)
    # By module path, not by value: the saved experiment names tuner.search.decisions (PICKLED_BY_PATH).
    assert b"tuner.search.decisions" in cloudpickle.dumps(scheduler)
    assert restored.name == scheduler.name
    restored.sink(
        Trial("__fake", stub=True), Decision("t", decision="stop")
    )  # a trial without storage: nothing to write
