"""Where a run's seconds go: with -v, one line per phase of the driver as it ends (its imports, Ray's
start, the smoke step's wait, the trials, Ray's shutdown, the report), how long it took and when, and
the moments of the trials between (tuner/execution/trial_phases.py), so that a slow start is told from
a slow search without a profiler. Ray-free: it only reads the clock."""

import logging
import time

log = logging.getLogger(__name__)
# Imported with tuner's command line (tuner/cli.py), so the first phase counts the driver's imports.
STARTED = time.monotonic()
_runs_before = [0]


class Phases:
    def __init__(self, shown: bool) -> None:
        self._shown = shown
        # A later run in the same process (a notebook) has imported everything already.
        self._last = STARTED if not _runs_before[0] else time.monotonic()
        _runs_before[0] += 1

    @property
    def shown(self) -> bool:
        return self._shown

    def moment(self, what: str, seconds_ago: float = 0.0) -> None:
        """`what` happened now, or `seconds_ago`."""
        if self._shown:
            log.info("phase: %s (at %.2f s)", what, time.monotonic() - STARTED - seconds_ago)

    def mark(self, phase: str) -> None:
        """`phase` has just ended."""
        now = time.monotonic()
        if self._shown:
            log.info("phase: %s %.2f s (at %.2f s)", phase, now - self._last, now - STARTED)
        self._last = now
