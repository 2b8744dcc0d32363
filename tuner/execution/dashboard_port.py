"""The dashboard port of a local Ray instance that tuner starts, chosen before Ray starts.

Ray picks a free one itself (8265, else the next ones) only once it is starting, and its processes are
never told which: Ray Train's PlacementGroupCleaner then asks for "the" local instance's State API, which
fails with a second instance on the machine (another run's, a notebook's). Chosen here, the port goes to
ray.init and its URL into the instance's environment (for_local_instance). Hand-written for that reason.

A port chosen ahead is free only until Ray's dashboard binds it, seconds later; two runs starting at
once would choose the same one, and the second Ray waits a minute for a dashboard that cannot bind,
then raises. So tuner processes on the machine choose one at a time (a file lock, held until the
instance is up); and an instance whose dashboard nobody asked to see takes a port the system assigns,
not one near 8265, where another Ray (a notebook's) looks for its own at the same moment.
"""

import fcntl
import os
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tuner.errors import TunerError
from tuner.ray_compat import env
from tuner.settings.run import DEFAULT_DASHBOARD_PORT, LOOPBACK

PORTS_TRIED = 50  # as many as Ray's own search (services.start_api_server, port_retries)
# Machine-wide, not per user nor per TUNER_RUNTIME_DIR: any tuner process here may choose the same port.
CHOOSING_LOCK = Path(tempfile.gettempdir()) / "tuner-dashboard-port.lock"


def _bind_problem(port: int) -> OSError | None:
    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Ray's dashboard binds it
        try:
            probe.bind((LOOPBACK, port))
        except OSError as err:
            return err
    return None


def check_free(port: int) -> None:
    """Fail before Ray starts where the port the user named cannot be had on loopback: Ray raises a
    ValueError from inside its start-up there."""
    if (err := _bind_problem(port)) is not None:
        reason = err.strerror or type(err).__name__
        raise TunerError(
            f"--dashboard-port {port} cannot be used on {LOOPBACK} ({reason}; another Ray's dashboard?); "
            f"give another port, or leave the option out for the first free one from {DEFAULT_DASHBOARD_PORT}"
        )


def first_free() -> int:
    """The first port from 8265 that loopback has free."""
    for port in range(DEFAULT_DASHBOARD_PORT, DEFAULT_DASHBOARD_PORT + PORTS_TRIED):
        if _bind_problem(port) is None:
            return port
    raise TunerError(
        f"no free port for Ray's dashboard on {LOOPBACK} from {DEFAULT_DASHBOARD_PORT} to "
        f"{DEFAULT_DASHBOARD_PORT + PORTS_TRIED - 1}; give one with --dashboard-port"
    )


def assigned() -> int:
    """A free port on loopback as the system hands them out (outside 8265's neighbours)."""
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        port: int = probe.getsockname()[1]
        return port


def _lock_file() -> int | None:
    """The choosing lock, opened; None where this user may not open it (another user's file that
    the system's protections keep from this one): this process then chooses unguarded."""
    for flags in (os.O_RDONLY, os.O_RDONLY | os.O_CREAT):  # another user's: no O_CREAT (fs.protected_regular)
        try:
            return os.open(CHOOSING_LOCK, flags, 0o644)
        except FileNotFoundError:
            continue
        except OSError:
            return None
    return None


@contextmanager
def _one_chooser_at_a_time() -> Iterator[None]:
    descriptor = _lock_file()
    if descriptor is None:
        yield
        return
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # and the lock with it


@contextmanager
def for_local_instance(named: int | None = None, *, shown: bool) -> Iterator[int]:
    """The port for the dashboard of a local instance that starts inside the block: `named` (checked
    free), else, `shown` (the user asked for the dashboard, or the instance outlives the run), the first
    free one from 8265, else one the system assigns. Its URL is in the environment the instance's
    processes start with. No other tuner process chooses until the block ends: start Ray in it."""
    with _one_chooser_at_a_time():
        if named is not None:
            check_free(named)
        port = named if named is not None else first_free() if shown else assigned()
        with env.own_state_api(f"http://{LOOPBACK}:{port}"):
            yield port
