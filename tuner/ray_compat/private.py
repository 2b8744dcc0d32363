"""Imports of Ray's private modules, each with why there is no public way yet. Imported on first use:
a Ray release that moves one breaks the function that needs it, with Ray's ImportError naming it."""

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


def train_context_file() -> str:
    """The path Ray 2.60 names Train's worker-context logger by (see logs.train_report_lines)."""
    from ray.train.v2._internal.execution import context

    return str(context.__file__)


def send_token_if_available() -> None:
    """Ray's own switch that turns token mode on for this client when a token is available and
    RAY_AUTH_MODE is unset; it also reloads Ray's config, which read RAY_AUTH_MODE when Ray was
    imported. Ray does this itself only for a local instance it starts; can go when `ray.init(address=...)`
    sends an available token by itself."""
    from ray._private.authentication.authentication_token_setup import maybe_enable_token_auth_if_token_available

    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


def gcs_refuses_this_client(address: str) -> bool:
    """Whether the GCS at `address` (host:port) refuses the token this process sends, or its lack of one,
    in one request. ray.init finds out the same, then retries for ~20 s (Ray 2.60's Node builds its
    GcsClient up to RAY_NUM_REDIS_GET_RETRIES times, 1 s apart) and reports a failed connection. Can go
    when ray.init reports a refused token at once. Anything but a refusal returns False: ray.init then
    reports it as it would have."""
    from ray._raylet import GcsClient  # type: ignore[attr-defined]  # compiled; its stub leaves it out
    from ray.exceptions import AuthenticationError

    try:
        GcsClient(address=address)
    except AuthenticationError:
        return True
    except Exception:  # not a refusal: ray.init's to report
        return False
    return False


def function_trainable_class(trainable: Callable[..., Any], name: str) -> type:
    """The class Ray Tune builds for a function trainable, to subclass (tuner's multi-worker trial waits
    in its `cleanup` for the trial's Train run to end). `ray.tune` exports no way to build it; can go
    when Tune lets a function trainable add its own cleanup."""
    from ray.tune.trainable.function_trainable import wrap_function

    return wrap_function(trainable, name=name)


def torch_trainer_without_needless_actors(local_instance: bool) -> type:
    """TorchTrainer without Ray Train's DatasetsCallback, which starts a DatasetManager actor (one more
    process per multi-worker trial, ~1 s of a start-up on two cores) even when the trainer has no Ray
    Datasets, as tuner's never has: its loops read their data themselves. `_create_default_callbacks`
    is private; this can go when Train starts that actor only for a trainer given datasets.
    On a `local_instance`, also without the AutoscalingCoordinator (below)."""
    from ray.train.torch import TorchTrainer
    from ray.train.v2._internal.callbacks.datasets import DatasetsCallback
    from ray.train.v2._internal.execution.scaling_policy import FixedScalingPolicy

    class FixedScalingWithoutAutoscaler(FixedScalingPolicy):
        """Ray Train's fixed-size policy without its AutoscalingCoordinator: the controller of a
        local instance's first Train run started that actor (a detached process, ~1 s before the
        worker group on two cores) only to pass resource requests to an autoscaler a local instance
        does not have. Can go when Train asks for the coordinator only where an autoscaler runs."""

        def after_controller_start(self, train_run_context: Any) -> None:
            pass

        def _maybe_send_resource_request(self) -> None:
            pass

    class LeanTorchTrainer(TorchTrainer):
        def _create_default_callbacks(self) -> list[Any]:
            defaults = super()._create_default_callbacks()  # type: ignore[misc]
            return [c for c in defaults if not isinstance(c, DatasetsCallback)]

        def _initialize_and_run_controller(self, **controller_init_kwargs: Any) -> Any:
            policy = controller_init_kwargs.get("scaling_policy")
            if local_instance and type(policy) is FixedScalingPolicy:
                controller_init_kwargs["scaling_policy"] = FixedScalingWithoutAutoscaler(policy.scaling_config)
            return super()._initialize_and_run_controller(**controller_init_kwargs)  # type: ignore[misc]

    return LeanTorchTrainer


def first_variant(param_space: dict[str, Any], seed: int) -> dict[str, Any]:
    """The config Ray's grid generator gives first, its sampled values drawn with `seed`: what the smoke
    step runs before Ray starts. `ray.tune` exports no function for one variant; can go when it does."""
    import numpy as np
    from ray.tune.search.variant_generator import generate_variants

    _, variant = next(generate_variants({"config": param_space}, random_state=np.random.RandomState(seed)))
    return variant["config"]


WorkerLineHandler = Callable[[dict[str, Any]], None]


def worker_line_handlers() -> list[tuple[str, WorkerLineHandler]]:
    """The driver's handlers of the lines Ray's worker processes print (log_to_driver): (name, handler)
    pairs that Ray 2.60 calls in turn; its own printer is named "ray_print_logs". None with Ray Client,
    whose lines come through its own log stream."""
    from ray._private.ray_logging import global_worker_stdstream_dispatcher

    return list(global_worker_stdstream_dispatcher.handlers)


def set_worker_line_handlers(handlers: list[tuple[str, WorkerLineHandler]]) -> None:
    """Ray's dispatcher reads its list afresh on every emit, and replaces it (never edits it) itself."""
    from ray._private.ray_logging import global_worker_stdstream_dispatcher

    with global_worker_stdstream_dispatcher._lock:
        global_worker_stdstream_dispatcher.handlers = handlers


def client_log_stream() -> Any | None:
    """Ray Client's log stream, whose `stdstream(level, msg)` prints the cluster processes' lines on the
    client (Ray 2.60), or None when this process is no Ray Client."""
    from ray.util.client import ray as client

    if not client.is_connected():
        return None
    return getattr(client.get_context().client_worker, "log_client", None)


def gcs_wants_token(address: str, timeout_s: float) -> bool | None:
    """Whether the GCS at `host:port` refuses a call that carries no token: True or False, or None when
    it gives no clear answer in time (a TLS cluster, a GCS still starting). Ray 2.60 has no public way to
    ask a cluster's authentication mode, and ray.init with a token connects to a cluster without
    authentication all the same (tuner/execution/cluster_token.py says what then fails); one unary call
    of the GCS's own service, without a token, tells. Can go when ray.init matches the cluster's mode."""
    import grpc  # type: ignore[import-untyped]  # no stubs
    from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

    channel = grpc.insecure_channel(address)
    try:
        stub = gcs_service_pb2_grpc.NodeInfoGcsServiceStub(channel)
        stub.GetClusterId(gcs_service_pb2.GetClusterIdRequest(), timeout=timeout_s)  # type: ignore[attr-defined]
    except grpc.RpcError as err:
        return True if err.code() == grpc.StatusCode.UNAUTHENTICATED else None
    finally:
        channel.close()
    return False


def resolved_address(address: str) -> str | None:
    """The GCS `host:port` that `ray.init(address=...)` would connect to for `auto` (the latest cluster
    `ray start` recorded on this machine) or a `host:port`; None when Ray would find none. Ray exports no
    resolver; can go with gcs_wants_token."""
    from ray._private.services import canonicalize_bootstrap_address

    try:
        return canonicalize_bootstrap_address(address)
    except Exception:  # Ray's own ConnectionError/ValueError: ray.init says it better
        return None


def stop_local_monitor() -> None:
    """Ends the autoscaler monitor of the local instance this process started, before ray.shutdown().
    Ray 2.60's shutdown stops its processes one by one with SIGTERM, the GCS before the monitor; the
    monitor's SIGTERM handler then tries to tell the (gone) GCS that it died, and is killed after
    waiting out Ray's 1 s grace period: 1 s of every run's shutdown. Killed first, it has nothing to
    tell and no one to tell it to. Can go when ray.shutdown() no longer waits on the monitor (a run's
    shutdown then takes as long with and without this)."""
    from ray._private import ray_constants, worker

    node = worker._global_node
    if node is None or not node.is_head():  # an existing cluster's monitor is not this process's
        return
    for info in node.all_processes.get(ray_constants.PROCESS_TYPE_MONITOR, []):
        info.process.kill()
        info.process.wait()


def stop_failed_local_start() -> str:
    """Kills what a local start that raised left running, and returns where its logs are. Ray's
    Node.__init__ raises after it started the instance's processes (GCS, raylet, dashboard, monitors)
    and drops its handle to them, so ray.shutdown() has nothing to stop: they are this process's
    children that run Ray's own programs, and they would hold their ports and memory until it exits.
    Can go when Ray stops them itself."""
    import psutil  # type: ignore[import-untyped]  # no stubs
    import ray
    from ray._common.utils import get_default_ray_temp_dir

    ray_dir = os.path.dirname(ray.__file__)
    for child in psutil.Process().children():
        try:
            if not any(ray_dir in part for part in child.cmdline()):
                continue  # not Ray's (a data loader's worker, a kept instance's keeper)
            for process in [*child.children(recursive=True), child]:
                process.kill()
        except psutil.Error:
            pass  # gone already
    return os.path.join(get_default_ray_temp_dir(), "session_latest", "logs")


def ray_started_here() -> bool:
    """Whether this process started the Ray instance it is connected to (its head node), as `ray.init()`
    with no address does in a notebook, a script or a test session, rather than connected to one
    running elsewhere. Ray's public runtime context names the node, not who started it."""
    from ray._private import worker

    node = worker._global_node
    return node is not None and node.is_head()


def name_log_lines(name: str) -> None:
    """Names this actor's later log lines `name` ("(name pid=...)" on the driver), as Ray names them by
    the actor's __repr__ once it is made: through the same marker line, which Ray's log monitor reads and
    hides. Ray has no public way to rename an actor it reuses (Tune's reuse_actors)."""
    import sys

    from ray._private.ray_constants import LOG_PREFIX_ACTOR_NAME

    marker = f"{LOG_PREFIX_ACTOR_NAME}{name}\n"
    print(marker, end="", flush=True)
    print(marker, end="", file=sys.stderr, flush=True)


def session_dir() -> str | None:
    """The session directory of the Ray this process is connected to, where Ray writes the Grafana
    dashboards its `grafana.ini` provisions (`metrics/grafana/dashboards`); None before ray.init. Ray's
    public runtime context names the session, not its directory."""
    from ray._private import worker

    node = worker._global_node
    return None if node is None else str(node.get_session_dir_path())


def live_drivers(besides: str) -> int:
    """How many drivers other than job `besides` are connected to this process's Ray, from the GCS's job
    table (Ray marks a job dead as soon as its driver exits, killed or not). Ray's public job listing
    (ray.util.state.list_jobs) goes through the dashboard's HTTP server and includes no more; can go
    when Ray Core exports its job table."""
    from ray._private import state

    return sum(1 for job in state.jobs() if not job["IsDead"] and job["JobID"] != besides)


@contextmanager
def callback_usage_untagged() -> Iterator[None]:
    """Ray Tune's usage telemetry counts the callbacks a run passes by class, and to know the classes it
    imports every logger integration Ray has (`ray.air._internal.usage._count_callbacks`): with mlflow
    installed that is mlflow, 0.7 s of every run that does not log to MLflow. tuner always passes
    callbacks of its own, which Ray would count as custom ones; their count is left out of the
    telemetry instead. Can go when Ray counts callbacks without importing integrations the process has
    not imported."""
    from ray.air._internal import usage

    tag_callbacks = usage.tag_callbacks
    usage.tag_callbacks = lambda callbacks: False
    try:
        yield
    finally:
        usage.tag_callbacks = tag_callbacks


@contextmanager
def snapshot_period_follows_cost(floor_s: float) -> Iterator[None]:
    """Ray's experiment snapshots every `floor_s` seconds while they are cheap, and at most ~5 % of the
    driver's time once the experiment is big: each snapshot writes every trial's state, so at a fixed
    period its cost grows with the trials so far and the run slows down as it goes. Ray's own "auto"
    period follows the cost the same way (19x the last snapshot's time) but from a floor of 10 s, which
    leaves up to 10 s of results out of what a killed driver leaves for `tuner resume`. Can go when
    TUNE_GLOBAL_CHECKPOINT_S takes a floor for its "auto" period."""
    from ray.tune.execution.experiment_state import _ExperimentCheckpointManager

    ray_rule = _ExperimentCheckpointManager._update_auto_checkpoint_time

    def follow_cost(manager: Any, time_taken: float) -> None:
        if manager._auto_checkpoint_enabled:  # the user's own "auto": Ray's rule
            ray_rule(manager, time_taken)
        else:
            manager._checkpoint_period = max(floor_s, time_taken * 19)

    _ExperimentCheckpointManager._update_auto_checkpoint_time = follow_cost  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        _ExperimentCheckpointManager._update_auto_checkpoint_time = ray_rule  # type: ignore[method-assign]


def recorded_trials(experiment_path: str, fs: Any) -> list[Any]:
    """Ray's trials as its experiment state records them, read by Ray's own reader (ExperimentAnalysis)
    without the rest of what that reader does: it also reads every trial's result file into a DataFrame
    of its own, a file and a frame per trial, which tuner reads once for the whole experiment
    (tuner/results/report.py). Can go when ExperimentAnalysis reads its trials' results on demand."""
    from ray.tune import ExperimentAnalysis

    class TrialsOnly(ExperimentAnalysis):
        def _fetch_trial_dataframes(self) -> dict[str, Any]:
            return {}

    return list(TrialsOnly(experiment_path, storage_filesystem=fs).trials)


def sync_in_progress(syncer: Any) -> bool:
    """Whether Ray's background copy of the driver's staging directory to storage is still running (Ray
    2.60's _BackgroundSyncer). Can go when Ray's syncer says so in its public API."""
    return bool(syncer._should_continue_existing_sync())
