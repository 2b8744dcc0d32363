"""What the driver does while Ray starts: the space's parts resolved, the data every trial shares
loaded once, and the smoke step (one batch of the space's code on the first config). Ray's start is
mostly waiting on the processes it spawns, so this work runs meanwhile on a thread; its errors surface
once Ray is up, before anything is written. Measured by bench/peers.py."""

import dataclasses
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TypeVar

from tuner.data import DATA_DIR_ENV, local_root
from tuner.data.splits import Splits
from tuner.errors import TunerError
from tuner.execution.packing import Measured
from tuner.execution.trainable import device_for
from tuner.ray_compat import env, private
from tuner.search import conditional
from tuner.spec.space import ExperimentSpec
from tuner.training import gpu_memory
from tuner.training.context import LoopSetup
from tuner.training.smoke import check_reported, smoke_test
from tuner.training.trial import Parts
from tuner.training.user_traceback import UserCodeError

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class Prepared:
    parts: Parts
    data: Splits | None  # the data every trial shares; None when each trial loads its own
    measured: Measured | None = None  # the smoke step's peak GPU memory and time, when it ran on a GPU
    unmeasured: str = "--no-smoke: nothing measured"  # why `measured` is None, for the packing line


def parts_of(spec: ExperimentSpec) -> Parts:
    """The space's parts, shipped names resolved (importing a shipped dataset's library: scikit-learn
    takes ~1 s)."""
    return Parts.of(
        model=spec.model,
        dataset=spec.dataset,
        loss=spec.loss,
        metrics=spec.metrics,
        optimizer=spec.optimizer,
        train_loop=spec.train_loop,
    )


def load(spec: ExperimentSpec) -> Prepared:
    parts = parts_of(spec)
    if parts.per_trial_data:  # a `dataset(config)` loads in every trial
        return Prepared(parts, None)
    try:
        return Prepared(parts, parts.load_data())
    except TunerError:
        raise
    except Exception as error:  # the space's own dataset(): its failure is the user's to see
        raise UserCodeError(f"space {spec.name}: dataset() failed (traceback above)", error) from None


def smoke(spec: ExperimentSpec, prepared: Prepared, seed: int) -> Prepared:
    """Runs the smoke step; returns `prepared` with what it measured on the driver's GPU, if it has one."""
    resources = spec.resources
    device = device_for(resources)
    # One process: ddp and fsdp run unwrapped, pipeline as one stage of all its layers; dp needs a GPU,
    # so without one the step runs it as the single-process strategy.
    parallel = "ddp" if resources.parallel == "dp" and device.type != "cuda" else resources.parallel
    setup = LoopSetup(
        epochs=spec.budget.epochs, seed=seed, device=device, parallel=parallel, precision=resources.precision
    )
    first = (
        conditional.first_config(spec.param_space, spec.conditional, seed)
        if spec.conditional
        else private.first_variant(spec.param_space, seed)
    )
    result = smoke_test(prepared.parts, first, setup, data=prepared.data, space=spec.name)
    check_reported(spec.name, result.metrics, spec.objective.metric)
    for metric, _ in spec.objective.objectives[1:]:
        check_reported(spec.name, result.metrics, metric, what="objective")
    for text, constraint in zip(spec.objective.constraints, spec.objective.constraint_list, strict=True):
        check_reported(spec.name, result.metrics, constraint.metric, what=f"constraint {text!r}: metric")
    if (stop := spec.budget.stop_condition) is not None:
        check_reported(spec.name, result.metrics, stop.metric, what="stop condition's metric")
    log.info(
        "smoke step: one batch of the space's code on the first config ran in %.0f ms (--no-smoke skips it)",
        result.seconds * 1000,
    )
    gpu_memory.release_cache(device)
    if result.gpu_peak_bytes is None:
        return dataclasses.replace(prepared, unmeasured="the driver has no GPU to measure a trial on")
    measured = Measured(result.gpu_peak_bytes, gpu_memory.total_bytes(device), result.seconds)
    return dataclasses.replace(prepared, measured=measured)


def load_and_smoke(spec: ExperimentSpec, seed: int, smoke_step: bool) -> Prepared:
    prepared = load(spec)
    return smoke(spec, prepared, seed) if smoke_step else prepared


def while_ray_starts(work: Callable[[], T]) -> Callable[[], T]:
    """Starts `work` on a daemon thread; returns the function that waits for its result or raises its
    error. Not a ThreadPoolExecutor: the interpreter joins its threads at exit, so a space's dataset()
    that hangs would keep the process alive after Ctrl-C."""
    future: Future[T] = Future()

    def keep_outcome() -> None:
        try:
            future.set_result(work())
        except BaseException as error:  # the space's own code may raise anything; result() re-raises it
            future.set_exception(error)

    def result() -> T:
        # Polled, not one blocking wait: once Ray runs, a Ctrl-C may land on one of its threads, and
        # Python acts on it only when this thread next runs its own code.
        while not future.done():
            time.sleep(0.1)
        return future.result()

    threading.Thread(target=keep_outcome, name="tuner-prepare", daemon=True).start()
    return result


def check_data(spec: ExperimentSpec, data_dir: str | None) -> None:
    """What can be told of the data before Ray starts, in a moment: the data directory, and a shipped set's
    files in it (tuner/data/local_root.py); the load itself runs while Ray starts."""
    local_root.check(spec.dataset, data_dir)


def data_dir(path: str | None) -> AbstractContextManager[None]:
    """`--data-dir` as TUNER_DATA_DIR, where the shipped loaders (and Ray's workers, started meanwhile)
    look, for the duration of the run."""
    return env.variable(DATA_DIR_ENV, path or None)
