"""A local Ray instance that outlives the run that started it (`tuner run --keep-ray`), so that the next
runs from the same folder skip Ray's start-up, seconds of every small run. Ray-free (`tuner list` and
`tuner down` import it): the instance itself belongs to tuner/execution/keeper.py; this module starts
it, finds it, describes it and stops it.

Why a keeper process and not `ray start --head`: Ray's CLI has no idle stop, and `ray stop` stops every
Ray instance on the machine, the user's own included. An instance that `ray.init` starts ends with the
process that started it and with nothing else, so the keeper's exit is the whole clean-up.

Trials on a kept instance run in its processes' folder and environment: a run attaches only from the
folder and Python it was started from, and hands Ray the variables its own environment sets otherwise
(`environment_changes`), as a local instance's trials would have inherited them."""

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import psutil  # type: ignore[import-untyped]  # no stubs

from tuner import environment
from tuner.errors import TunerError

RUNTIME_DIR_ENV = "TUNER_RUNTIME_DIR"  # where the record lives; tests give each their own
START_TIMEOUT_S = 120.0
STOP_TIMEOUT_S = 60.0
# Differ between two shells of one user without changing what a trial does; or set by Ray or the keeper
# for the instance's own processes.
_VOLATILE = {"_", "PWD", "OLDPWD", "SHLVL", "TERM", "COLUMNS", "LINES", "PS1", "SSH_TTY", "TMUX_PANE"}
# The instance's own, not the run's: RAY_API_SERVER_ADDRESS names its State API (env.own_state_api).
_OWN = {"RAY_AUTH_MODE", "RAY_CLIENT_MODE", "RAY_API_SERVER_ADDRESS", RUNTIME_DIR_ENV}
# What tuner sets for a run's Ray processes (tuner/ray_compat/env.py, --data-dir) as it connects.
RUN_VARIABLES = ("RAY_LOGGER_LEVEL", "RAY_TRAIN_ENABLE_PREEMPTION_WATCHER", "TUNER_DATA_DIR")


@dataclass(frozen=True)
class Kept:
    address: str  # the GCS address, host:port
    dashboard_url: str
    pid: int  # the keeper's
    python: str
    cwd: str
    keep: str  # the idle time as the user wrote it
    started_at: float
    environment: dict[str, str]  # the keeper's, which its trials inherit
    drivers: int = 0  # runs on it now, as the keeper last saw

    def line(self, tuner: str) -> str:
        """`tuner`: the command as this user runs it (tuner.command.tuner_command)."""
        busy = f"{self.drivers} run(s) on it now; " if self.drivers else ""
        return (
            f"a Ray instance kept by tuner is up at {self.address} ({busy}it stops once idle for {self.keep}, or "
            f"now with `{tuner} down`)"
        )


def runtime_dir() -> Path:
    """Per user: the record names a process to signal and holds an environment."""
    directory = Path(os.environ.get(RUNTIME_DIR_ENV) or Path(tempfile.gettempdir()) / f"tuner-{os.getuid()}")
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    return directory


def record_path() -> Path:
    return runtime_dir() / "kept_ray.json"


@contextlib.contextmanager
def locked() -> Iterator[None]:
    """Held while a run reads the record and connects, and while the keeper decides to stop: a run never
    connects to an instance that is going away, and two runs never start two instances."""
    with open(runtime_dir() / "kept_ray.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write(kept: Kept) -> None:
    path = record_path()
    partial = path.with_suffix(".partial")
    partial.write_text(json.dumps(asdict(kept)))
    partial.chmod(0o600)
    partial.replace(path)


KEEPER_MODULE = "tuner.execution.keeper"


def _alive(pid: int) -> bool:
    """Whether `pid` is a keeper still running: a record outlives a machine's restart, and its pid may
    then be any other process, which `tuner down` must never signal."""
    try:
        process = psutil.Process(pid)
        return KEEPER_MODULE in process.cmdline() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def find() -> Kept | None:
    """The kept instance, if its keeper is alive; a record a killed keeper left is removed."""
    path = record_path()
    try:
        kept = Kept(**json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (ValueError, TypeError):  # torn or from another version: nothing can be signalled through it
        path.unlink(missing_ok=True)
        return None
    if not _alive(kept.pid):
        path.unlink(missing_ok=True)
        return None
    return kept


def busy(wait_s: float = 3.0) -> Kept | None:
    """The kept instance if runs are on it: its keeper counts them every second, so a run that has just
    ended is given that long to leave the count (`tuner down` right after a run is not refused)."""
    deadline = time.monotonic() + wait_s
    while (kept := find()) is not None and kept.drivers and time.monotonic() < deadline:
        time.sleep(0.2)
    return kept if kept is not None and kept.drivers else None


def unusable_here(kept: Kept) -> str | None:
    """Why this process cannot run trials on `kept`, or None."""
    if os.path.realpath(kept.python) != os.path.realpath(sys.executable):
        return f"it runs {kept.python}, this run {sys.executable}"
    if os.path.realpath(kept.cwd) != os.path.realpath(os.getcwd()):
        return f"its trials run in {kept.cwd}, started from there"
    return None


def run_environment() -> dict[str, str]:
    """The environment a run's own local instance would give its trials: the user's, and what tuner
    sets for the run (call it where tuner has set that)."""
    given = {name: os.environ[name] for name in RUN_VARIABLES if name in os.environ}
    return {**environment.AT_IMPORT, **given}


def environment_changes(kept: Kept) -> dict[str, str]:
    """The variables this run's trials see otherwise than the kept instance's (run_environment), for the
    job's runtime_env: trials see the environment of the run that started them, as on an instance of
    their own. One the instance has and this run has not is passed empty (a runtime_env cannot unset
    one). Empty in the usual case, the same shell."""
    mine = {key: value for key, value in run_environment().items() if key not in _VOLATILE | _OWN}
    theirs = {key: value for key, value in kept.environment.items() if key not in _VOLATILE | _OWN}
    changes = {key: value for key, value in mine.items() if theirs.get(key) != value}
    changes.update({key: "" for key in theirs.keys() - mine.keys()})
    return changes


def start(keep: str, idle_s: float) -> Kept:
    """A keeper process, detached from this one (its own session: Ctrl-C here does not reach it), and the
    instance it started, with this run's environment (run_environment). Call with the lock held."""
    log_path = runtime_dir() / "keeper.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", KEEPER_MODULE, "--keep", keep, "--idle-s", str(idle_s)],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            # Where this process looks for the record, whatever the environment the run was started with.
            env={**run_environment(), RUNTIME_DIR_ENV: str(runtime_dir())},
            start_new_session=True,
        )
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if (kept := find()) is not None and kept.pid == process.pid:
            return kept
        if process.poll() is not None:
            lines = [line for line in log_path.read_text().splitlines() if line.strip()]
            said = lines[-1] if lines else f"exit code {process.returncode}"
            raise TunerError(
                f"the Ray instance to keep did not start ({said}); see {log_path}, or run without --keep-ray"
            )
        time.sleep(0.1)
    # The keeper leads its own process group (start_new_session), and Ray's processes that its ray.init
    # started are in it: the whole group goes, so nothing outlives this refusal.
    _kill_group(process.pid)
    raise TunerError(f"the Ray instance to keep did not start in {START_TIMEOUT_S:.0f} s; see {log_path}")


def _kill_group(leader: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(leader, signal.SIGKILL)


def answers(address: str, timeout_s: float = 1.0) -> bool:
    """Whether something still listens at the GCS address `host:port`."""
    host, _, port = address.rpartition(":")
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except (OSError, ValueError):
        return False
    return True


def stop() -> tuple[Kept, bool] | None:
    """Stop the kept instance, if one is up: its keeper shuts Ray down, and where it does not in
    STOP_TIMEOUT_S, its process group (the keeper and the instance's processes) is killed. The instance,
    and whether its GCS has stopped answering."""
    kept = find()
    if kept is None:
        return None
    os.kill(kept.pid, signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while _alive(kept.pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if _alive(kept.pid) or answers(kept.address):
        _kill_group(kept.pid)
    record_path().unlink(missing_ok=True)
    deadline = time.monotonic() + STOP_TIMEOUT_S / 6  # a killed GCS's port closes as the kernel reaps it
    while answers(kept.address) and time.monotonic() < deadline:
        time.sleep(0.2)
    return kept, not answers(kept.address)
