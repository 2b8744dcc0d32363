"""A trial's status as tuner's reports name it: Ray's own states (TERMINATED, ERROR, PAUSED, ...)
do not tell a trial that ran every epoch from one a scheduler stopped, nor a stale RUNNING snapshot
from a trial that got somewhere."""

from enum import Enum


class TrialStatus(str, Enum):
    """A str, so the status column of a report's DataFrame compares equal to these as plain strings."""

    FINISHED = "finished"  # every epoch
    STOPPED_EARLY = "stopped early"  # by the scheduler, a --stop condition or the time budget
    PAUSED = "paused"  # HyperBand paused it at a rung and its bracket never filled
    DIVERGED = "diverged"  # the loop stopped on a non-finite loss
    ERROR = "error"
    # Any other Ray state (RUNNING, PENDING) is a snapshot that may be stale: the run may still be
    # going or may have been killed. What the files do show is whether the trial got anywhere.
    INCOMPLETE = "incomplete"
    NOT_STARTED = "not started"

    def __str__(self) -> str:
        return self.value


# A run that ended with trials of these statuses can go on (`tuner resume`).
UNFINISHED = (TrialStatus.INCOMPLETE, TrialStatus.NOT_STARTED)
# The statuses whose scores count towards the best trial.
SCORED = (TrialStatus.FINISHED, TrialStatus.STOPPED_EARLY, TrialStatus.PAUSED)
# Ray's end states, as reported.
FROM_RAY = {"TERMINATED": TrialStatus.FINISHED, "ERROR": TrialStatus.ERROR, "PAUSED": TrialStatus.PAUSED}
