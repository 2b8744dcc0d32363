"""Whether a trial reported a result to Ray. Ray 2.60's `Trial.last_result` is never empty: before any
report it holds the trial's id, and the actor's auto-filled metrics (host, pid, date) once the actor
started, so a trial that the time budget or --stop ended before its first report looks like one that
reported. `Trial.has_reported_at_least_once` cannot tell either: reading `last_result` fills the record it
reads. Only a reported result carries `training_iteration`, which Ray counts per report. Can go when
`has_reported_at_least_once` is left true to its name."""

from typing import Any

REPORT_COUNT = "training_iteration"  # ray.tune.result.TRAINING_ITERATION, without importing Ray Tune


def has_reported(trial: Any) -> bool:
    """`trial`: Ray's Trial, or an object without `last_result` (a trial read from its files alone)."""
    return REPORT_COUNT in (getattr(trial, "last_result", None) or {})
