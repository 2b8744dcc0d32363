"""The live view names trials' statuses as the reports do, so its last line, the summary, `tuner list`
and `tuner report` count the same things; it cannot import tuner.results (tests/test_layers.py)."""

from tuner.execution import console
from tuner.results.status import SCORED, TrialStatus


def test_the_live_view_uses_the_reports_words():
    words = (console.FINISHED, console.STOPPED_EARLY, console.PAUSED, console.DIVERGED)
    assert {TrialStatus(word) for word in (*words, console.INCOMPLETE, console.NOT_STARTED)}
    assert {TrialStatus(word) for word in console.COUNTED} == set(SCORED)
