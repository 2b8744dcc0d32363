"""A multi-worker trial's Mailbox on a real local Ray: the trial waits for its next report without polling,
and no report is lost when the Train run ends right after putting it."""

import pytest
import ray

from tuner.execution.mailbox import Mailbox

pytestmark = pytest.mark.slow


def test_the_trial_waits_for_the_next_report_until_one_comes_or_the_run_ends(local_ray):
    mailbox = Mailbox.remote()  # type: ignore[attr-defined]
    waiting = mailbox.next_report.remote()
    ready, _ = ray.wait([waiting], timeout=1.0)
    assert not ready  # no report yet, and the run goes on: no answer, not an empty one
    ray.get(mailbox.put_report.remote(({"epoch": 1}, None)))
    assert ray.get(waiting, timeout=30) == ({"epoch": 1}, None)

    # The last report, then the run's end, both before the trial asks again: the report comes first.
    ray.get(mailbox.put_report.remote(({"epoch": 2}, None)))
    ray.get(mailbox.end.remote())
    assert ray.get(mailbox.next_report.remote(), timeout=30) == ({"epoch": 2}, None)
    assert ray.get(mailbox.next_report.remote(), timeout=30) is None


def test_a_trial_waiting_as_the_run_ends_is_told_so(local_ray):
    mailbox = Mailbox.remote()  # type: ignore[attr-defined]
    waiting = mailbox.next_report.remote()
    ray.wait([waiting], timeout=0.5)
    ray.get(mailbox.end.remote())
    assert ray.get(waiting, timeout=30) is None
