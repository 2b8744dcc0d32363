"""The live view names trials' statuses as the reports do, so its last line, the summary, `tuner list`
and `tuner report` count the same things; it cannot import tuner.results (tests/test_layers.py). And a
trial process that Ray ends while it runs a finalizer leaves no traceback on the console below -v."""

import os
import subprocess
import sys

from tests.conftest import REPO
from tuner.execution import console
from tuner.results.status import SCORED, TrialStatus


def test_the_live_view_uses_the_reports_words():
    said = {
        console.FINISHED: TrialStatus.FINISHED,
        console.STOPPED_EARLY: TrialStatus.STOPPED_EARLY,
        console.PAUSED: TrialStatus.PAUSED,
        console.DIVERGED: TrialStatus.DIVERGED,
        console.INCOMPLETE: TrialStatus.INCOMPLETE,
        console.NOT_STARTED: TrialStatus.NOT_STARTED,
    }
    assert [str(status) for status in said.values()] == list(said)  # each the report's word for it
    assert {TrialStatus(word) for word in console.COUNTED} == set(SCORED)


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
