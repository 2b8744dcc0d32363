"""Ray's log lines that tuner's console replaces, silenced by name for as long as they would be noise."""

import _thread
import logging
import sys
import threading
import warnings
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Any

from tuner.ray_compat import private


class _TokenAuthOnNotice(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Token authentication is enabled")


TOKEN_SETUP_LOGGER = "ray._private.authentication.authentication_token_setup"


@contextmanager
def quiet_token_notice(quiet: bool) -> Iterator[None]:
    """Drops the line Ray logs to say token authentication is on, as it starts a local instance or
    connects to a cluster that uses it, or submits a job there. The line also says how to turn
    authentication off, advice tuner never gives (docs/reliability.md says why it keeps it on), so below -v it is
    left out; Ray's warning that authentication is off (RAY_AUTH_MODE=disabled) still shows. Can go
    when Ray logs it at DEBUG."""
    notice, logger = _TokenAuthOnNotice(), logging.getLogger(TOKEN_SETUP_LOGGER)
    if quiet:
        logger.addFilter(notice)
    try:
        yield
    finally:
        logger.removeFilter(notice)


class _DropMessages(logging.Filter):
    def __init__(self, *starts: str):
        super().__init__()
        self.starts = starts

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self.starts)


@contextmanager
def _filtered(logger_name: str, quiet: bool, *starts: str) -> Iterator[None]:
    dropped, logger = _DropMessages(*starts), logging.getLogger(logger_name)
    if quiet:
        logger.addFilter(dropped)
    try:
        yield
    finally:
        logger.removeFilter(dropped)


TUNE_RUN_LOGGER = "ray.tune.tune"
# Ray Tune 2.60 logs these on Ctrl-C at WARNING: that it is ending the run ("Press CTRL+C ... to
# skip"), then "Resume experiment with: Tuner.restore(path=..., trainable=...)", advice for Ray's Python
# API, printed above tuner's own resume command: two different instructions. tuner's summary says the
# run was interrupted and how to continue it. Can go when Ray lets the caller word its own interrupt.
TUNE_INTERRUPT_NOTICES = ("Stop signal received", "Experiment has been interrupted")


def quiet_interrupt_advice(quiet: bool) -> AbstractContextManager[None]:
    return _filtered(TUNE_RUN_LOGGER, quiet, *TUNE_INTERRUPT_NOTICES)


TUNE_LOGGERS_LOGGER = "ray.tune.logger.logger"
# Ray Tune 2.60's CSV logger opens a trial's progress.csv at its first result, and Tune hands a result to
# the scheduler before the loggers: when PBT exploits at a trial's first result (an interval of one
# epoch), the restarted trial's CSV logger looks for a progress.csv in storage that was never written,
# and warns at WARNING on the console. Nothing is missing: whatever a trial's loggers wrote is uploaded
# before they restore it (tuner/storage/trial_logs.py), so a file absent from storage was never
# written. Can go when Ray's logger skips a file that never existed.
UNWRITTEN_PROGRESS_FILE = "Remote file not found"


def quiet_unwritten_progress_file() -> AbstractContextManager[None]:
    return _filtered(TUNE_LOGGERS_LOGGER, True, UNWRITTEN_PROGRESS_FILE)


# Ray Tune 2.60 logs each failed trial at ERROR with its traceback, and each failed upload to storage
# (its syncer at WARNING, its experiment state at ERROR) with one too. When the storage takes no writes
# (a full disk: a checkpoint or a state file could not be written; an object store gone: even a listing
# fails, and tuner's checkpoint retention raising from Ray's snapshot ends the run at once), those
# tracebacks are Ray's and pyarrow's, with nothing of the user's code in them, and the uploads fail
# again every few seconds: one line per failed trial and one for everything else Ray could not save
# instead, naming the storage's problem (the run's end says what to do, in one line too). A trial that
# failed on anything but an OSError keeps its traceback: a bug in the user's code shows the user's
# code. Can go when Ray words storage failures.
TRIAL_FAILED = ("ray.tune.execution.tune_controller", "Trial task failed for trial")
# A trial's failure Ray never collected, as the run ended on a failed snapshot: RayTaskError's text, which
# ends in the cause's `OSError: ...` line.
NEVER_COLLECTED = ("ray._private.worker", "Unhandled error")
SAVE_FAILED = (
    ("ray.train._internal.syncer", "Last sync command failed"),
    ("ray.tune.execution.experiment_state", "Saving experiment state to storage at"),
    ("ray.train._internal.storage", "Caught exception when creating directory"),
    ("ray.tune.execution.tune_controller", "Trial controller checkpointing failed"),
    ("ray.tune.execution.tune_controller", "Error encountered during processing of callbacks"),
    ("ray.tune.execution.tune_controller", "Trial %s: Error handling checkpoint"),
    # Ray's last snapshot as the run ends; tuner's own check of the store (an answer in a moment where
    # nothing listens) can end the run before Ray's earlier snapshots fail.
    (TUNE_RUN_LOGGER, "Experiment state snapshotting failed"),
    NEVER_COLLECTED,
)


class _StorageFailuresInOneLine(logging.Filter):
    def __init__(self, storage: str, storage_problem: Callable[[], str | None]) -> None:
        super().__init__()
        self._storage, self._storage_problem = storage, storage_problem
        self._saves_said = False

    def filter(self, record: logging.LogRecord) -> bool:
        message = str(record.msg)
        failure = record.exc_info[1] if record.exc_info else None
        trial_failed = record.name == TRIAL_FAILED[0] and message.startswith(TRIAL_FAILED[1])
        save_failed = any(record.name == name and message.startswith(start) for name, start in SAVE_FAILED)
        if trial_failed or failure is not None:
            if not isinstance(getattr(failure, "cause", failure), OSError):
                return True
        elif save_failed and record.name == NEVER_COLLECTED[0]:
            if not message.rstrip().splitlines()[-1].startswith(("OSError", "FileNotFoundError")):
                return True
        if not (trial_failed or save_failed) or (problem := self._storage_problem()) is None:
            return True
        tuner_log = logging.getLogger("tuner")
        if trial_failed:
            trial = message.removeprefix(TRIAL_FAILED[1]).strip()
            tuner_log.warning("trial %s could not write to %s: %s", trial, self._storage, problem)
        elif not self._saves_said:
            self._saves_said = True
            tuner_log.warning("Ray could not save to %s: %s", self._storage, problem)
        return False


@contextmanager
def storage_failures_in_one_line(
    quiet: bool, storage: str, storage_problem: Callable[[], str | None]
) -> Iterator[None]:
    """For the block, Ray's failed trials and saves while `storage` takes no writes (`storage_problem()`
    says why, or None: asked at each such record, so one that keeps its answer a while, as
    filesystem.recent_write_problem does, spares a burst of them a probe each) are tuner warnings of
    one line instead of Ray's tracebacks (kept with -v)."""
    one_line = _StorageFailuresInOneLine(storage, storage_problem)
    names = dict.fromkeys(name for name, _ in (TRIAL_FAILED, *SAVE_FAILED))
    loggers = [logging.getLogger(name) for name in names] if quiet else []
    for logger in loggers:
        logger.addFilter(one_line)
    try:
        yield
    finally:
        for logger in loggers:
            logger.removeFilter(one_line)


# Ray 2.60's Train controller starts a PreemptionWatcher actor (max_restarts=-1) for every worker group,
# and Ray's core worker then logs at ERROR, from C++ (so no Python logger or level reaches it), that
# an actor with constructor arguments in the object store may fail to restart: once per multi-worker
# trial, about Ray's own actor, with nothing for the user to do. Ray's only switch
# (RAY_TRAIN_ENABLE_PREEMPTION_WATCHER=0) turns the watcher itself off, so the line is dropped on its way
# to the console instead. Can go when Ray no longer warns about its own watcher (ray-project/ray#53727).
# Also pyarrow's C++, which prints to stderr when a stream it destroys fails to close: a trial's upload
# cut short by a storage that stopped answering, which the trial's failure and the run's end each say in
# one line (storage_failures_in_one_line). Can go when pyarrow raises it instead.
WORKER_NOISE = (
    ("'PreemptionWatcher'", "max_restarts > 0"),
    ("arrow/io/interfaces.cc", "Error ignored when destroying file"),
)


def _is_noise(line: str) -> bool:
    return any(all(part in line for part in parts) for parts in WORKER_NOISE)


@contextmanager
def quiet_worker_lines(quiet: bool) -> Iterator[None]:
    """Drops WORKER_NOISE from the worker lines Ray prints on the driver (log_to_driver), or on a
    Ray Client through its log stream, for the block; enter it once Ray is up."""
    if not quiet:
        yield
        return
    stream = private.client_log_stream()
    if stream is not None:
        printed = stream.stdstream

        def stdstream(level: int, msg: str) -> None:
            kept = "".join(line for line in msg.splitlines(keepends=True) if not _is_noise(line))
            if kept or not msg:
                printed(level, kept)

        stream.stdstream = stdstream  # an attribute of this stream only; Ray reads it for each line
        try:
            yield
        finally:
            del stream.stdstream
        return

    def without_noise(handler: private.WorkerLineHandler) -> private.WorkerLineHandler:
        def handle(data: dict[str, Any]) -> None:
            lines = [line for line in data.get("lines", []) if not _is_noise(line)]
            if lines or not data.get("lines"):
                handler({**data, "lines": lines})

        return handle

    wrapped = {name: without_noise(handler) for name, handler in private.worker_line_handlers()}
    originals = dict(private.worker_line_handlers())
    private.set_worker_line_handlers([(name, wrapped[name]) for name in originals])
    try:
        yield
    finally:
        # Only the handlers still there: ray.shutdown() removes Ray's own printer, and a later ray.init
        # adds it again.
        private.set_worker_line_handlers(
            [
                (name, originals[name] if handler is wrapped.get(name) else handler)
                for name, handler in private.worker_line_handlers()
            ]
        )


# Ray Client's server calls ray.init for the client in a thread of its own, and Ray 2.60 then warns,
# through the client's log stream, that it could not set a SIGTERM handler there: about Ray's process,
# not tuner's. Can go when Ray stops warning there.
CLIENT_LOGGER = "ray.util.client.logsclient"


def quiet_client_notice(quiet: bool) -> AbstractContextManager[None]:
    return _filtered(CLIENT_LOGGER, quiet, "SIGTERM handler is not set")


def train_report_lines(level: str) -> None:
    """Ray 2.60 names the logger of Train's worker context by its file path, so Train's LoggingConfig
    (which filters `ray.train.*`) misses it and every rank prints "Reporting training result ..." each
    epoch. Set in each Train worker's process. Can go when a Ray release names it `ray.train...`."""
    logging.getLogger(private.train_context_file()).setLevel(level)


def _exit_in_finalizer(unraisable: Any) -> None:
    if isinstance(unraisable.exc_value, SystemExit):
        return
    sys.__unraisablehook__(unraisable)


def quiet_exit_in_finalizers(level: str) -> None:
    """Ray 2.60 ends an idle actor process (a trial's, once the run is over) with SIGTERM, and its handler
    raises SystemExit. When the signal lands while Python runs a finalizer (a weakref callback), Python
    cannot raise it there and prints "Exception ignored in ... SystemExit: 1" with a traceback, which
    Ray forwards to the console at the end of a run. The process is on its way out either way. Set in
    each trial's and Train worker's process below -v. Can go when Ray's handler exits without raising
    inside finalizers."""
    if level.upper() != "INFO":
        sys.unraisablehook = _exit_in_finalizer


REDELIVERY_DELAY_S = 0.05  # past the finalizer's end


@contextmanager
def ctrl_c_outside_finalizers() -> Iterator[None]:
    """A Ctrl-C that lands while Python runs a finalizer (Ray's PlacementGroup.__del__, as Tune lets a
    stopped trial's resources go) cannot be raised there: Python prints "Exception ignored in ...
    KeyboardInterrupt" with a traceback, and drops it. Inside the block it is delivered again instead, to
    whatever handles SIGINT then, as if pressed a moment later: a second Ctrl-C still ends the run at
    once, without the traceback. From another thread, since the main thread would take it at once, still
    inside the finalizer. Can go when Ray's finalizers no longer run while a run stops."""
    previous = sys.unraisablehook

    def deliver_again(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, KeyboardInterrupt):
            threading.Timer(REDELIVERY_DELAY_S, _thread.interrupt_main).start()
            return
        previous(unraisable)

    sys.unraisablehook = deliver_again
    try:
        yield
    finally:
        sys.unraisablehook = previous


ANALYSIS_LOGGER = "ray.tune.analysis.experiment_analysis"


@contextmanager
def quiet_analysis_warnings() -> Iterator[None]:
    """Ray warns once per trial that has no result files yet, both in Tuner.fit and when a report reads
    the experiment; the report says "not started" for those trials, so the warning is noise. Can go when
    Ray stops warning for a trial that never started."""
    logger = logging.getLogger(ANALYSIS_LOGGER)
    previous = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(previous)


# Ray logs each step of packaging and uploading a job's working dir, and the end of the log stream of a
# job it follows; `tuner submit`'s job id and links, and the job's own last line, say enough. Can go when
# Ray logs those steps at DEBUG.
JOB_UPLOAD_LOGGERS = (
    "ray.dashboard.modules.dashboard_sdk",
    "ray._private.runtime_env.packaging",
    "ray.dashboard.modules.job.sdk",  # "WebSocket closed for job ... with close code 1000"
)
WORKING_DIR_LOGGER = "ray._private.runtime_env.working_dir"
# Ray 2.60 warns, for each of .git, .venv and the like in the working dir, that it now leaves it out of the
# job's copy by default; tuner's own excludes leave out the same folders, so nothing changes for the job.
# Can go when Ray drops the warning (its TODO says "in a few releases").
DEFAULT_EXCLUDES_NOTICE = "is now ignored by default when packaging the working directory"


class _DropContaining(logging.Filter):
    def __init__(self, part: str):
        super().__init__()
        self.part = part

    def filter(self, record: logging.LogRecord) -> bool:
        return self.part not in record.getMessage()


def quiet_job_upload() -> None:
    for name in JOB_UPLOAD_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    logging.getLogger(WORKING_DIR_LOGGER).addFilter(_DropContaining(DEFAULT_EXCLUDES_NOTICE))


# What Ray's job supervisor writes into a job's log before the job's own output: that it sets up the
# runtime env, and the entrypoint it runs, whole (tuner's is a shell line that finds the cluster's
# Python, and a Python program: 11 lines of no use to the user). Can go when Ray writes them at DEBUG.
JOB_SETUP_LINE = "-- Runtime env is setting up."


class JobLogFilter:
    """A job's log stream as `tuner submit --follow` shows it: the job's own output, without what Ray's
    supervisor writes before it. Fed the stream's pieces in order, which may cut a line anywhere."""

    def __init__(self, job_id: str, entrypoint: str) -> None:
        self._echo = f"Running entrypoint for job {job_id}: {entrypoint}\n"
        self._pending = ""
        self._echo_seen = False

    def feed(self, text: str) -> str:
        """What to print of `text` now. Before the echo, whole lines go out and the rest waits: the last
        line may be cut short, or be the echo's start."""
        if self._echo_seen:
            return text
        self._pending += text
        before, echo, after = self._pending.partition(self._echo)
        if echo:
            self._echo_seen, self._pending = True, ""
            return self._without_setup(before) + after
        starts = [0, *(at + 1 for at, char in enumerate(self._pending) if char == "\n")]
        wait = next((start for start in starts if self._echo.startswith(self._pending[start:])), starts[-1])
        shown, self._pending = self._pending[:wait], self._pending[wait:]
        return self._without_setup(shown)

    def rest(self) -> str:
        """What waits still, once the stream has ended."""
        shown, self._pending = self._pending, ""
        return self._without_setup(shown)

    @staticmethod
    def _without_setup(text: str) -> str:
        return "".join(line for line in text.splitlines(keepends=True) if JOB_SETUP_LINE not in line)


@contextmanager
def quiet_pbt_reuse_advice() -> Iterator[None]:
    """Ray warns under PBT that reuse_actors would be faster; tuner turns it off for multi-worker trials
    on purpose (tuner/execution/tune_run.py says why). Can go when Ray stops advising it, or when
    multi-worker trials can reuse their actors."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Consider boosting PBT performance")
        yield
