"""The moments of a run between its driver's phases (tuner/execution/phases.py), shown with -v: when the
first trial started (its process up, Ray's worker and the trial's imports done), when its process had
started, its first report, and the end of the last trial. What a user waits for before the first
number, told apart from the driver's own start-up."""

import os
import socket
import time
from pathlib import Path
from typing import Any

from ray import tune
from ray.tune.experiment import Trial

from tuner.execution.phases import Phases


class TrialPhases(tune.Callback):
    def __init__(self, phases: Phases) -> None:
        self._phases = phases
        self._started = self._reported = False

    def __getstate__(self) -> dict[str, Any]:
        # Ray pickles the run's callbacks into its saved state; a resumed run tells its own phases.
        return {"_phases": Phases(False), "_started": True, "_reported": True}

    def on_trial_start(self, iteration: int, trials: list[Trial], trial: Trial, **info: Any) -> None:
        if not self._started:
            self._started = True
            self._phases.moment("first trial started: its process up, its imports done")

    def on_trial_result(
        self, iteration: int, trials: list[Trial], trial: Trial, result: dict[str, Any], **info: Any
    ) -> None:
        if self._reported:
            return
        self._reported = True
        self._phases.moment("first report")
        if result.get("hostname") == socket.gethostname() and (ago := _started_ago_s(result["pid"])) is not None:
            self._phases.moment("  its trial process had started", ago)

    def on_experiment_end(self, trials: list[Trial], **info: Any) -> None:
        self._phases.moment("last trial ended")


def _started_ago_s(pid: int) -> float | None:
    """How long ago process `pid` of this machine started, to the kernel's clock tick; None where there
    is no /proc. Not psutil's create_time: it adds the boot time, which Linux gives in whole seconds."""
    try:
        after_name = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    started = int(after_name[19]) / os.sysconf("SC_CLK_TCK")  # field 22, starttime: since boot
    return time.clock_gettime(time.CLOCK_BOOTTIME) - started
