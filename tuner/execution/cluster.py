"""Where an experiment runs: a local Ray instance that tuner starts, or an existing Ray cluster.

A local instance listens on loopback and keeps Ray's token authentication; an existing cluster is
reached by its GCS address (`host:port`), Ray Client (`ray://host:port`) or `auto`. An address that
cannot be reached fails in seconds, before Ray's own minute-long retries.
"""

import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import ray
from ray.exceptions import AuthenticationError

from tuner.errors import TunerError
from tuner.execution.cluster_token import refusal_hint, send_token_if_available

LOOPBACK = "127.0.0.1"
DEFAULT_DASHBOARD_PORT = 8265
CONNECT_TIMEOUT_S = 3.0
# A Ray Client head forks a server process per client; on a busy head that fork can die at once
# (Ray answers "Starting Ray client server failed", its log empty). A new connection gets a new one.
CLIENT_SERVER_ATTEMPTS = 3
CLIENT_SERVER_FAILED = "Starting Ray client server failed"


@dataclass(frozen=True)
class Cluster:
    address: str | None = None  # None: RAY_ADDRESS if set (as in a Ray Job), else a new local instance
    dashboard: bool = False  # only for a local instance; a cluster has its own
    dashboard_port: int = DEFAULT_DASHBOARD_PORT
    # Multi-worker trials need Ray's State API, which the dashboard process serves: Ray Train's
    # PlacementGroupCleaner asks it whether a Train controller died, and without an answer a killed
    # controller's worker bundles stay reserved until Ray shuts down (the next trial then waits forever).
    state_api: bool = False

    @property
    def target(self) -> str:
        # "local" rather than Ray's default, which silently joins any cluster `ray start` left running.
        return self.address or os.environ.get("RAY_ADDRESS") or "local"


def _host_port(address: str) -> tuple[str, int] | None:
    """(host, port) to probe, or None for addresses Ray resolves itself (`auto`)."""
    if address in ("auto", "local"):
        return None
    parts = urlsplit(address if "://" in address else f"gcs://{address}")
    if parts.scheme in ("http", "https"):
        raise TunerError(
            f"--address {address} is a dashboard (Jobs API) address: use it with `tuner submit`; "
            "`tuner run` needs the cluster's GCS address (host:6379), ray://host:10001 or auto"
        )
    if parts.scheme not in ("gcs", "ray") or not parts.hostname or parts.port is None:
        raise TunerError(f"--address {address!r} is not a Ray address; use auto, host:port or ray://host:port")
    return parts.hostname, parts.port


def check_reachable(address: str, shown: str | None = None) -> None:
    """Fail fast unless something listens at the address; `shown` is how the user wrote it."""
    target = _host_port(address)
    if target is None:
        return
    try:
        socket.create_connection(target, timeout=CONNECT_TIMEOUT_S).close()
    except OSError as err:
        reason = err.strerror or type(err).__name__
        raise TunerError(
            f"cannot reach a Ray cluster at {shown or address} ({reason}); check the address, "
            "or start one with `ray start --head`"
        ) from None


def _token_hint() -> str:
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "token":
        return " (token authentication is on: sign in with the token `ray get-auth-token` prints)"
    return ""


class _TokenAuthOnNotice(logging.Filter):
    """Drops the line Ray logs on every start of a local instance to say token authentication is on.
    tuner's local instances always keep it on (README says so), so below -v the line is noise; Ray's
    warning that authentication is off (RAY_AUTH_MODE=disabled) still shows."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Token authentication is enabled")


TOKEN_SETUP_LOGGER = "ray._private.authentication.authentication_token_setup"


@contextmanager
def _quiet_token_notice(quiet: bool) -> Iterator[None]:
    notice, logger = _TokenAuthOnNotice(), logging.getLogger(TOKEN_SETUP_LOGGER)
    if quiet:
        logger.addFilter(notice)
    try:
        yield
    finally:
        logger.removeFilter(notice)


@contextmanager
def connect(cluster: Cluster, ray_logs: str = "INFO") -> Iterator[None]:
    """Ray, up for the duration of the block, with the dashboard URL printed before the first trial;
    `ray_logs` is the level of the Ray loggers in the processes of a local instance (its raylet starts
    them with this process's environment; a cluster's own nodes keep their level).

    In a process that has already called ray.init (a notebook, a script, a test session), trials run
    on that Ray, as they would in Ray Tune, and it stays up afterwards. Its processes keep their own
    log level; and without its dashboard a Train controller that dies mid-run (not a normal stop) keeps
    its worker group's resources until that Ray shuts down (see Cluster.state_api)."""
    if ray.is_initialized():
        if cluster.address is not None or cluster.dashboard:
            given = f"the address {cluster.address}" if cluster.address is not None else "a dashboard"
            raise TunerError(
                f"Ray is already running in this process, so {given} cannot apply; leave it out to run "
                "the trials on that Ray, or call ray.shutdown() first"
            )
        yield
        return
    token = None
    if cluster.target != "local":
        check_reachable(cluster.target)
        token = send_token_if_available()
    previous_level = os.environ.get("RAY_LOGGER_LEVEL")
    os.environ["RAY_LOGGER_LEVEL"] = ray_logs.lower()
    try:
        with _quiet_token_notice(cluster.target == "local" and ray_logs.upper() != "INFO"):
            context = _init(cluster)
    except AuthenticationError:
        raise TunerError(f"cannot connect to a Ray cluster at {cluster.target}: {refusal_hint(token)}") from None
    except ConnectionError as err:
        # Ray reports a refused token as a failed connection, after its own retries.
        raise TunerError(
            f"cannot connect to a Ray cluster at {cluster.target}: {err} (if the cluster uses token "
            f"authentication, {refusal_hint(token)})"
        ) from None
    finally:  # the instance's processes have their level now; this process's environment is as it was
        if previous_level is None:
            os.environ.pop("RAY_LOGGER_LEVEL", None)
        else:
            os.environ["RAY_LOGGER_LEVEL"] = previous_level
    try:
        if context.dashboard_url:
            print(f"Ray dashboard: http://{context.dashboard_url}{_token_hint()}", flush=True)
        yield
    finally:
        _shutdown()


def _init(cluster: Cluster) -> Any:
    for attempt in range(1, CLIENT_SERVER_ATTEMPTS + 1):
        try:
            return ray.init(
                address=cluster.target,
                include_dashboard=cluster.dashboard or cluster.state_api,
                dashboard_host=LOOPBACK,
                # Asked for: the user's port; started only for the State API: any free one.
                dashboard_port=cluster.dashboard_port if cluster.dashboard else None,
                configure_logging=True,
                logging_level=logging.WARNING,
            )
        except ConnectionError as err:
            if CLIENT_SERVER_FAILED not in str(err) or attempt == CLIENT_SERVER_ATTEMPTS:
                raise
            print(
                f"tuner: the head at {cluster.target} failed to start a Ray Client server for this run; "
                f"connecting again ({attempt + 1} of {CLIENT_SERVER_ATTEMPTS})",
                file=sys.stderr,
                flush=True,
            )
            ray.shutdown()
            time.sleep(attempt)


def _shutdown() -> None:
    """ray.shutdown() that a further Ctrl-C cannot cut short: half shut down, Ray's core worker sees its
    raylet gone and exits the process with code 1, skipping tuner's own exit message and code."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: signals cannot reach us here anyway
        ray.shutdown()
        return
    try:
        ray.shutdown()
    finally:
        signal.signal(signal.SIGINT, previous)
