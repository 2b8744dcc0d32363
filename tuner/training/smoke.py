"""The smoke step: one batch of the space's own code on the first config, in the driver, before Ray starts.

A broken space module (a model that raises, outputs of the wrong shape, a metric never reported, a
loop that never reports) would otherwise fail every trial after Ray's start-up, N times over. Here
it fails in seconds with the user's own traceback, and nothing is written. The loop runs as a trial
would, through the same `run_trial_loop`, with a context whose data passes stop after one batch; its
first report ends the run (and has saved the checkpoint, so unpicklable state shows up here too).
"""

import time
from dataclasses import dataclass, replace
from typing import Any

from tuner.data.splits import Splits
from tuner.errors import TunerError
from tuner.training import gpu_memory
from tuner.training.context import LoopSetup
from tuner.training.result_keys import BOOKKEEPING, COSTS
from tuner.training.trial import Parts, run_trial_loop
from tuner.training.user_traceback import UserCodeError


class _FirstReport(Exception):
    """Raised by the smoke step's report function: one report is all the smoke step needs."""


@dataclass(frozen=True)
class SmokeResult:
    metrics: dict[str, Any]  # the first report
    seconds: float
    gpu_peak_bytes: int | None = None  # the step's peak GPU memory; None on the CPU


def smoke_test(
    parts: Parts,
    config: dict[str, Any],
    setup: LoopSetup,
    *,
    data: Splits | None,
    space: str,
) -> SmokeResult:
    """Runs the loop until its first report, each data pass stopped after one batch; raises
    UserCodeError (with the user's traceback) if the space's code raises, TunerError if it returns
    without reporting."""
    reports: list[dict[str, Any]] = []

    def report(metrics: dict[str, Any], checkpoint_dir: str | None) -> None:
        reports.append(metrics)
        raise _FirstReport

    gpu_memory.reset_peak(setup.device)
    started = time.perf_counter()
    try:
        run_trial_loop(parts, config, replace(setup, max_batches=1), data=data, trial_id="smoke", report=report)
    except _FirstReport:
        pass
    except TunerError:
        raise  # e.g. dataset(config) returned something that is not (train, val): already one line
    except Exception as error:  # the space's own code: whatever it raises is the user's to see
        raise UserCodeError(
            f"space {space}: its code failed on the first config {config} (traceback above); "
            "fix it, or skip this check with --no-smoke",
            error,
        ) from None
    if not reports:
        raise TunerError(
            f"space {space}: train_loop returned without calling ctx.report; report each epoch's "
            "metrics with ctx.report({...}) so the search can rank the trials"
        )
    return SmokeResult(reports[0], time.perf_counter() - started, gpu_memory.peak_bytes(setup.device))


def check_reported(space: str, reported: dict[str, Any], metric: str, what: str = "metric") -> None:
    """`metric` (or the `stop` condition's metric) must be one the loop reports."""
    if metric not in reported:
        names = ", ".join(name for name in reported if name not in BOOKKEEPING)
        # tuner measures these itself, given the model: prepare_model counts params, measure_model both.
        how = "ctx.measure_model(model, x)" if metric in COSTS else "ctx.report"
        raise TunerError(
            f"space {space}: {what} {metric!r} is never reported; the loop reports {names}; "
            f"name one of those, or report {metric!r} with {how}"
        )
