"""Where an experiment runs: a local Ray instance that tuner starts, or an existing Ray cluster.

A local instance listens on loopback and keeps Ray's token authentication; an existing cluster is
reached by its GCS address (`host:port`), Ray Client (`ray://host:port`) or `auto`. An address that
cannot be reached, or that refuses the client's token, fails in seconds, before Ray's own retries.
"""

import logging
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager, nullcontext
from typing import Any
from urllib.parse import urlsplit

import ray
from ray.exceptions import AuthenticationError
from ray.job_config import JobConfig

from tuner.command import ray_command, tuner_command, tuner_hint
from tuner.errors import TunerError
from tuner.execution import dashboard_port, kept_ray
from tuner.execution.cluster_token import mode_for, refusal_hint, send_token_if_available
from tuner.ray_compat import env, errors, logs, private
from tuner.settings.budgets import parse_keep
from tuner.settings.run import LOOPBACK, Cluster
from tuner.storage import filesystem

log = logging.getLogger(__name__)
CONNECT_TIMEOUT_S = 3.0
CLIENT_SERVER_ATTEMPTS = 3  # see ray_compat.errors.CLIENT_SERVER_FAILED
LOCAL_START_ATTEMPTS = 2  # see ray_compat.errors.LOCAL_START_TIMED_OUT


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


def _gcs_address(address: str) -> str | None:
    """host:port of a GCS address as a user gives it; None for Ray Client and `auto`."""
    return address if "://" not in address and _host_port(address) is not None else None


def check_token_accepted(address: str, source: str | None) -> None:
    """Fail in a second where the cluster refuses this client's token (or its lack of one), rather than
    after ray.init's ~20 s of retries. The GCS answers a refusal at once; a probe that gets no answer in
    CONNECT_TIMEOUT_S (something else listening there) leaves the address to ray.init, as before."""
    gcs = _gcs_address(address)
    if gcs is None:
        return
    answer: Future[bool] = Future()
    # A thread, so that a server that never answers costs CONNECT_TIMEOUT_S, not Ray's 40 s timeout.
    threading.Thread(
        target=lambda: answer.set_result(private.gcs_refuses_this_client(gcs)), name="tuner-token-probe", daemon=True
    ).start()
    try:
        refused = answer.result(timeout=CONNECT_TIMEOUT_S)
    except FutureTimeout:
        return
    if refused:
        raise TunerError(f"cannot connect to a Ray cluster at {address}: {refusal_hint(source)}")


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
            f"or start one with `{ray_command()} start --head`"
        ) from None


def _token_hint() -> str:
    if os.environ.get("RAY_AUTH_MODE", "").lower() == "token":
        return " (token authentication is on: sign in with the token `ray get-auth-token` prints)"
    return ""


@contextmanager
def connect(
    cluster: Cluster,
    experiment_path: str | None = None,
    *,
    state_api: bool = False,
    ray_logs: str = "INFO",
    verbose: int = 2,
) -> Iterator[None]:
    """Ray, up for the duration of the block, with the dashboard URL logged before the first trial (and
    the run's job naming `experiment_path`'s experiment, see `job_metadata`);
    `ray_logs` is the level of the Ray loggers in the processes of the run: a local instance's raylet
    starts them with this process's environment, and on an existing cluster the job's runtime_env sets
    it (with the rest of env.cluster_job_variables(verbose)) in the processes this run starts.

    A local run goes to the instance an earlier run kept (`--keep-ray`, tuner/execution/kept_ray.py)
    where there is one for this folder, and starts it where asked to keep one: an existing cluster to
    Ray, whose processes are given what this run's environment has otherwise in the job's runtime_env.

    `state_api`: multi-worker trials need Ray's State API, which the dashboard process serves: Ray
    Train's PlacementGroupCleaner asks it whether a Train controller died, and without an answer a
    killed controller's worker bundles stay reserved until Ray shuts down (the next trial then waits
    forever). A local instance then starts its dashboard on a free port (the first from 8265 with
    --dashboard), and its processes are told its address (tuner/execution/dashboard_port.py).

    In a process that has already called ray.init (a notebook, a script, a test session), trials run
    on that Ray, as they would in Ray Tune, and it stays up afterwards. Where that process started it
    (`ray.init()` with no address), it is a local instance as one tuner starts: no preemption watcher.
    Its processes keep their own log level; and without its dashboard a Train controller that dies
    mid-run (not a normal stop) keeps its worker group's resources until that Ray shuts down (see
    `state_api`)."""
    if cluster.keep_ray is not None and cluster.target != "local":
        raise TunerError(
            f"--keep-ray keeps a local Ray instance, and this run is on the cluster at {cluster.target}, which "
            "stays up on its own; leave one of them out"
        )
    if ray.is_initialized():
        with _in_process(cluster):
            yield
        return
    quiet = ray_logs.upper() != "INFO"
    context = _attach(cluster, state_api, ray_logs, verbose, job_metadata(experiment_path))
    with logs.quiet_worker_lines(quiet):
        try:
            if context.dashboard_url:
                log.info("Ray dashboard: http://%s%s", context.dashboard_url, _token_hint())
                if cluster.dashboard and experiment_path is not None:
                    log.info(
                        "live page: %s (the experiment's trials, curves and best so far)",
                        tuner_hint("ui", experiment_path),
                    )
            yield
        finally:
            _shutdown()


@contextmanager
def _in_process(cluster: Cluster) -> Iterator[None]:
    """The Ray this process already runs (see `connect`)."""
    if cluster.address is not None or cluster.dashboard or cluster.keep_ray is not None:
        given = f"the address {cluster.address}" if cluster.address is not None else "a dashboard"
        given = "--keep-ray" if cluster.keep_ray is not None else given
        raise TunerError(
            f"Ray is already running in this process, so {given} cannot apply; leave it out to run "
            "the trials on that Ray, or call ray.shutdown() first"
        )
    with env.no_preemption_watcher() if private.ray_started_here() else nullcontext():
        yield


def job_metadata(experiment_path: str | None) -> dict[str, str]:
    """What the run's Ray job carries in its metadata, so that Ray's dashboard (its Jobs page, a job's
    detail) and `ray list jobs --detail` name the experiment; `tuner submit` gives its job the same key."""
    if experiment_path is None:
        return {}
    return {"tuner_experiment": filesystem.base_name(experiment_path), "tuner_experiment_path": experiment_path}


def _attach(cluster: Cluster, state_api: bool, ray_logs: str, verbose: int, metadata: dict[str, str]) -> Any:
    """ray.init on the run's target: an existing cluster, the instance tuner keeps, or a local one of
    the run's own; Ray's context."""
    dashboard = cluster.dashboard or state_api
    if cluster.target != "local":
        return _on_cluster(cluster.target, dashboard, ray_logs, verbose, metadata)
    with kept_ray.locked():  # until connected: see kept_ray.locked
        kept = _kept_instance(cluster, ray_logs)
        if kept is not None:
            return _on_kept(kept, dashboard, ray_logs, metadata)
    # A local instance's dashboard port, chosen now.
    with (
        dashboard_port.for_local_instance(
            cluster.dashboard_port if cluster.dashboard else None, shown=cluster.dashboard
        )
        if dashboard
        else nullcontext(None)
    ) as port:
        with _environment(ray_logs, local=True):
            return _connected("local", dashboard, port, None, metadata)


def _on_cluster(target: str, dashboard: bool, ray_logs: str, verbose: int, metadata: dict[str, str]) -> Any:
    """An existing cluster, whose processes are given this run's log level and settings in the job's
    runtime_env (env.cluster_job_variables)."""
    auth_mode, token = _authenticated(target, ray_logs)
    with _environment(ray_logs, local=False, auth_mode=auth_mode):
        return _connected(target, dashboard, None, env.cluster_job_variables(verbose, ray_logs), metadata, token)


def _on_kept(kept: kept_ray.Kept, dashboard: bool, ray_logs: str, metadata: dict[str, str]) -> Any:
    """The local instance tuner keeps, whose processes are given what this run's environment has
    otherwise in the job's runtime_env."""
    auth_mode, token = _authenticated(kept.address, ray_logs)
    with _environment(ray_logs, local=True, auth_mode=auth_mode):
        job_variables = kept_ray.environment_changes(kept)  # within: the run's own variables are set
        if job_variables:
            log.info(
                "tuner: this run's environment differs from the kept instance's in %s: its trials start "
                "processes of their own (a few seconds each) to see it",
                ", ".join(sorted(job_variables)),
            )
        return _connected(kept.address, dashboard, None, job_variables, metadata, token)


def _authenticated(target: str, ray_logs: str) -> tuple[str | None, str | None]:
    """The address answers, and accepts this client's token where it asks for one: (its auth mode, the
    token sent), checked in seconds, not after Ray's 20 s of retries."""
    check_reachable(target)
    auth_mode = mode_for(target)
    with logs.quiet_token_notice(ray_logs.upper() != "INFO"):
        token = send_token_if_available() if auth_mode != "disabled" else None
    if auth_mode == "token" and token is None:
        raise TunerError(f"cannot connect to a Ray cluster at {target}: {refusal_hint(None)}")
    if auth_mode != "disabled":
        check_token_accepted(target, token)
    return auth_mode, token


@contextmanager
def _environment(ray_logs: str, *, local: bool, auth_mode: str | None = None) -> Iterator[None]:
    """What every target's ray.init runs in; this process's environment is put back after. `local`: the
    instance runs on this machine (no preemption watcher)."""
    quiet = ray_logs.upper() != "INFO"
    # The instance's processes take the level as they start. A cluster without authentication: no token
    # mode, not even Ray's own for `auto`. Otherwise the variable is left alone: Ray sets it as it starts a
    # local instance, and the dashboard line reads it.
    with (
        env.variable("RAY_AUTH_MODE", "disabled", user_wins=True) if auth_mode == "disabled" else nullcontext(),
        env.local_instance_log_level(ray_logs),
        env.no_preemption_watcher() if local else nullcontext(),
        env.no_prestarted_idle_workers() if local else nullcontext(),
        logs.quiet_token_notice(quiet),
        logs.quiet_client_notice(quiet),
    ):
        yield


def _connected(
    target: str,
    dashboard: bool,
    port: int | None,
    job_variables: dict[str, str] | None,
    metadata: dict[str, str],
    token: str | None = None,
) -> Any:
    """ray.init; a refused token or a failed connection is one line."""
    try:
        return _init(target, dashboard, port, job_variables, metadata)
    except AuthenticationError:
        raise TunerError(f"cannot connect to a Ray cluster at {target}: {refusal_hint(token)}") from None
    except ConnectionError as err:
        # Ray reports a refused token as a failed connection, after its own retries.
        raise TunerError(
            f"cannot connect to a Ray cluster at {target}: {err} (if the cluster uses token "
            f"authentication, {refusal_hint(token)})"
        ) from None


def _init(
    target: str, dashboard: bool, port: int | None, job_variables: dict[str, str] | None, metadata: dict[str, str]
) -> Any:
    runtime_env = {"env_vars": job_variables} if job_variables else None
    # Ray Client sends ray.init's other arguments to its server as JSON, which a JobConfig is not: a
    # ray:// run's job goes without the experiment's name.
    job: dict[str, Any] = {} if target.startswith("ray://") else {"job_config": JobConfig(metadata=metadata)}
    attempt = 0
    while True:
        attempt += 1
        try:
            return ray.init(
                address=target,
                include_dashboard=dashboard,
                dashboard_host=LOOPBACK,
                dashboard_port=port,
                configure_logging=True,
                logging_level=logging.WARNING,
                runtime_env=runtime_env,
                **job,
            )
        except ConnectionError as err:
            if not errors.is_client_server_failure(err) or attempt == CLIENT_SERVER_ATTEMPTS:
                raise
            log.warning(
                "the head at %s failed to start a Ray Client server for this run; connecting again (%d of %d)",
                target,
                attempt + 1,
                CLIENT_SERVER_ATTEMPTS,
            )
            ray.shutdown()
            time.sleep(attempt)
        except Exception as err:  # Ray raises a bare Exception for a start that timed out
            if target != "local" or not errors.is_local_start_timeout(err):
                raise
            logs_dir = private.stop_failed_local_start()
            if attempt == LOCAL_START_ATTEMPTS:
                raise TunerError(
                    f"Ray's local instance did not start: its raylet did not register within Ray's 30 s, "
                    f"{LOCAL_START_ATTEMPTS} times (is the machine busy?); Ray's logs: {logs_dir}"
                ) from None
            log.warning(
                "Ray's local instance did not start within Ray's 30 s (is the machine busy?); "
                "starting it again (%d of %d)",
                attempt + 1,
                LOCAL_START_ATTEMPTS,
            )


def _kept_instance(cluster: Cluster, ray_logs: str) -> kept_ray.Kept | None:
    """The instance tuner keeps, to run on instead of starting one (started now for --keep-ray); None: a
    local instance of this run's own. Called with kept_ray's lock held."""
    kept = kept_ray.find()
    if kept is not None and (why := kept_ray.unusable_here(kept)) is not None:
        log.info("tuner: not on the Ray instance tuner keeps at %s (%s): this run starts its own", kept.address, why)
        return None
    if kept is not None:
        log.info(
            "tuner: on the Ray instance kept at %s (it stops once idle for %s, or with `%s down`)",
            kept.address,
            kept.keep,
            tuner_command(),
        )
        return kept
    if cluster.keep_ray is None:
        return None
    with env.local_instance_log_level(ray_logs), env.no_preemption_watcher():  # as connect sets them
        kept = kept_ray.start(cluster.keep_ray, parse_keep(cluster.keep_ray))
    log.info(
        "tuner: keeping this Ray instance (%s) for the next runs from this folder; it stops once idle for "
        "%s, or with `%s down`",
        kept.address,
        kept.keep,
        tuner_command(),
    )
    return kept


def _shutdown() -> None:
    """ray.shutdown() that a further Ctrl-C cannot cut short: half shut down, Ray's core worker sees its
    raylet gone and exits the process with code 1, skipping tuner's own exit message and code."""
    private.stop_local_monitor()
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # not the main thread: signals cannot reach us here anyway
        ray.shutdown()
        return
    try:
        ray.shutdown()
    finally:
        signal.signal(signal.SIGINT, previous)
