"""The live view names trials' statuses as the reports do, so its last line, the summary, `tuner list`
and `tuner report` count the same things; it cannot import tuner.results (tests/test_layers.py). And a
trial process that Ray ends while it runs a finalizer leaves no traceback on the console below -v."""

import os
import subprocess
import sys

from tests.conftest import REPO
from tuner.execution import console
from tuner.trial_status import SCORED, TrialStatus


def test_the_live_view_counts_each_status_in_the_reports_word_for_it():
    """An experiment's earlier trials (an extension's view) and this run's, ended every way: the last
    line names each status as `tuner report` and the summary do (report.describe)."""
    from tuner.results import report

    earlier = {TrialStatus.FINISHED: 3, TrialStatus.ERROR: 1, TrialStatus.DIVERGED: 1}
    view = console.LiveProgress("acc", "max", ["lr"], 1, earlier_trials=console.EarlierTrials.of(earlier, None))
    view.total = 4
    view.ended = {"a": TrialStatus.ERROR, "b": TrialStatus.STOPPED_EARLY, "c": TrialStatus.PAUSED}
    view.final = ""  # the run is over; a fourth trial never started
    line = view._status([_ended(trial_id, 0.5, 1) for trial_id in view.ended])
    for status, count in {TrialStatus.ERROR: 2, TrialStatus.STOPPED_EARLY: 1, TrialStatus.PAUSED: 1}.items():
        assert report.describe({status: count}) in line, line
    assert report.describe({TrialStatus.DIVERGED: 1}) in line and "1 not started" in line, line
    assert line.startswith("8/9 trials done"), line
    assert {*console.SCORED} == set(SCORED)  # the trials the view's best is chosen from are the report's


FINALIZER = """
import weakref
from tuner.ray_compat import logs

class Thing:
    pass

def exits(_):  # what Ray's SIGTERM handler does when the signal lands in a finalizer
    raise SystemExit(1)

def fails(_):
    raise ValueError("a real error in a finalizer")

logs.quiet_exit_in_finalizers({level!r})
for callback in (exits, fails):
    thing = Thing()
    ref = weakref.ref(thing, callback)
    del thing
"""


def test_a_trial_process_ending_inside_a_finalizer_prints_no_traceback_below_verbose():
    for level, shown in (("WARNING", False), ("INFO", True)):
        result = subprocess.run(
            [sys.executable, "-c", FINALIZER.format(level=level)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            timeout=60,
        )
        assert ("SystemExit: 1" in result.stderr) is shown, result.stderr
        assert "ValueError: a real error in a finalizer" in result.stderr  # other errors still show


def test_the_status_line_says_how_trials_share_the_gpus_when_they_do():
    from tuner.execution.tune_run import gpu_sharing
    from tuner.settings import Resources

    assert gpu_sharing(Resources(gpus_per_worker=0.25)) == "4 trials per GPU"
    assert gpu_sharing(Resources(gpus_per_worker=0.3333)) == "3 trials per GPU"
    for alone in (0, 1, 2, "auto"):
        assert gpu_sharing(Resources(gpus_per_worker=alone)) is None
    shared = console.LiveProgress("val_acc", "max", ["lr"], 2, gpu_sharing="4 trials per GPU")
    assert "0 running (4 trials per GPU) · " in shared._status([])
    assert "running (" not in console.LiveProgress("val_acc", "max", ["lr"], 2)._status([])


def _ended(trial_id: str, acc: float, size: float):
    from types import SimpleNamespace

    return SimpleNamespace(
        trial_id=trial_id,
        status="TERMINATED",
        config={"lr": 0.1},
        last_result={"acc": acc, "size": size},
        metric_analysis={"acc": {"max": acc, "min": acc}},
    )


def test_the_best_trial_shown_meets_the_constraints_when_any_trial_does():
    from tuner.settings.objectives import parse_constraint

    trials = [_ended("a", 1.0, 6), _ended("b", 0.9, 3), _ended("c", 0.95, 7), _ended("d", 0.8, 2)]
    constrained = console.LiveProgress("acc", "max", ["lr"], 1, constraints=[parse_constraint("size <= 5")])
    plain = console.LiveProgress("acc", "max", ["lr"], 1)
    for view in (constrained, plain):
        news = [view._count_towards_best(trial, console.FINISHED) for trial in trials]
        assert news == ([True, True, False, False] if view is constrained else [True, False, False, False])
    assert "best b acc=0.9" in constrained._status([])  # as the report ranks: feasible first
    assert "best a acc=1" in plain._status([])
    for view in (constrained, plain):  # the run is over: the view ranks every ended trial once more
        view.final, view.ended = "", {trial.trial_id: console.FINISHED for trial in trials}
    assert "best b acc=0.9" in constrained._status(trials) and "best a acc=1" in plain._status(trials)
