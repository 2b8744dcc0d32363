"""The dashboard port of a local Ray instance that tuner starts, chosen before Ray starts.

Ray picks a free one itself (8265, else the next ones) only once it is starting, and its processes are
never told which: Ray Train's PlacementGroupCleaner then asks for "the" local instance's State API, which
fails with a second instance on the machine (another run's, a notebook's). Chosen here, the port goes to
ray.init and its URL into the instance's environment (for_local_instance). Hand-written
for that reason; it looks for a port as Ray's dashboard does (the same start, one after another).
"""

import socket
from collections.abc import Iterator
from contextlib import contextmanager

from tuner.errors import TunerError
from tuner.ray_compat import env
from tuner.settings.run import DEFAULT_DASHBOARD_PORT, LOOPBACK

PORTS_TRIED = 50  # as many as Ray's own search (services.start_api_server, port_retries)


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


@contextmanager
def for_local_instance(named: int | None = None) -> Iterator[int]:
    """The port for the dashboard of a local instance that starts inside the block: `named` (checked free)
    or the first free one; its URL is in the environment the instance's processes start with."""
    if named is not None:
        check_free(named)
    port = named if named is not None else first_free()
    with env.own_state_api(port):
        yield port
