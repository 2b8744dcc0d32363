"""Environment variables Ray reads, set for as long as tuner needs them and then put back."""

import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager


@contextmanager
def variable(name: str, value: str | None, *, user_wins: bool = False) -> Iterator[None]:
    """`name` set to `value` (None: left as it is) for the block; with `user_wins`, a value the user
    set stays. Put back as it was afterwards."""
    previous = os.environ.get(name)
    if value is not None and not (user_wins and previous is not None):
        os.environ[name] = value
    try:
        yield
    finally:
        if previous is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = previous


def quiet_tune_reporter(verbose: int) -> AbstractContextManager[None]:
    """Ray Tune's reporter only at -v: its quietest level still prints an experiment table and a
    TensorBoard hint, while its older engine (RAY_AIR_NEW_OUTPUT=0) prints nothing at verbose=0.
    Can go when Ray Tune's verbose=0 prints nothing with the new engine."""
    return variable("RAY_AIR_NEW_OUTPUT", "0" if verbose < 2 else None)


# How often Ray saves the experiment state and result rows to storage: what a killed driver or a full
# disk leaves for `tuner resume` and `tuner report`. Ray's default waits 10 s or more. Not a
# workaround but a choice; it stays as long as Ray reads this variable. The period grows with what a
# snapshot costs (private.snapshot_period_follows_cost), unless the user set the variable.
SNAPSHOT_PERIOD_S = "2"
SNAPSHOT_PERIOD_VARIABLE = "TUNE_GLOBAL_CHECKPOINT_S"


@contextmanager
def frequent_snapshots() -> Iterator[None]:
    if os.environ.get(SNAPSHOT_PERIOD_VARIABLE) is not None:  # the user's own period, as they set it
        yield
        return
    from tuner.ray_compat import private

    with (
        variable(SNAPSHOT_PERIOD_VARIABLE, SNAPSHOT_PERIOD_S),
        private.snapshot_period_follows_cost(float(SNAPSHOT_PERIOD_S)),
    ):
        yield


# Ray Train's controller learns of a report only when it next polls its workers, every 2 s by default,
# and the workers wait after each report until Tune has its checkpoint (checkpoint_bridge.py): at 2 s,
# every epoch of a multi-worker trial took at least 2 s however short it was (bench/overhead.py, rows
# (d) and (d2)). A poll is one small remote call per worker. Ray passes the variable from the process
# that calls fit() to the controller. Can go when Train's controller hears of reports without polling
# (bench/overhead.py row (d2) then equals (d)).
POLL_INTERVAL_VARIABLE, POLL_INTERVAL_S = "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", "0.1"


def fast_train_polls() -> AbstractContextManager[None]:
    return variable(POLL_INTERVAL_VARIABLE, POLL_INTERVAL_S, user_wins=True)


def cluster_job_variables(verbose: int, level: str) -> dict[str, str]:
    """The variables above, for every process of a run on an existing cluster (`--address`), set as the
    job's runtime_env: a local instance's processes inherit tuner's own environment, a cluster's do
    not. With Ray Client (ray://) Tune's loop itself runs on the cluster (Tuner.fit in a remote
    TunerInternal), so its reporter and snapshot period must be set there too."""
    variables = {"RAY_LOGGER_LEVEL": level.lower()}
    if verbose < 2:
        variables["RAY_AIR_NEW_OUTPUT"] = "0"
    variables[SNAPSHOT_PERIOD_VARIABLE] = os.environ.get(SNAPSHOT_PERIOD_VARIABLE, SNAPSHOT_PERIOD_S)
    return variables


# Ray Train's preemption watcher is an actor per Train run (one more process at each multi-worker trial's
# start) that polls Ray Core for nodes being drained, as a cloud cluster drains a preempted spot node. A
# local instance tuner starts on this machine never drains a node. Set for the instance's processes, so
# the trial's actor passes it on to Train's controller (Train propagates the variable); a cluster's
# runs keep the watcher.
PREEMPTION_WATCHER_VARIABLE = "RAY_TRAIN_ENABLE_PREEMPTION_WATCHER"


def no_preemption_watcher() -> AbstractContextManager[None]:
    return variable(PREEMPTION_WATCHER_VARIABLE, "0", user_wins=True)


def on_local_instance() -> bool:
    """In a trial's process: whether it runs on a local instance, as the variable above tells it."""
    return os.environ.get(PREEMPTION_WATCHER_VARIABLE) == "0"


# As the first driver connects, Ray prestarts an idle worker per CPU for that job's tasks. Tune gives every
# trial's actor a runtime_env of its own (ray/tune/execution/class_cache.py: PL_DISABLE_FORK and the
# variables it passes on), as Ray Train gives its controller: no process a run needs is ever one of
# those, which then idle through the run (a Python process and its start-up per CPU). Set for the
# raylet of a run's own local instance; a kept instance (its keeper gets kept_ray.RUN_VARIABLES only)
# and a cluster's nodes keep Ray's default.
PRESTART_VARIABLE = "RAY_prestart_worker_first_driver"


def no_prestarted_idle_workers() -> AbstractContextManager[None]:
    return variable(PRESTART_VARIABLE, "0", user_wins=True)


def own_state_api(url: str) -> AbstractContextManager[None]:
    """The State API of a local instance that starts inside the block, named to its own processes (its
    raylet starts them with this process's environment). Ray Train's PlacementGroupCleaner asks it, with
    no address, whether a Train controller died: Ray then takes RAY_API_SERVER_ADDRESS, else looks for
    "the" local instance, and with two on the machine that raises; the cleaner's thread ends, and a dead
    controller's workers stay reserved. A value the user set (for `tuner submit`) names another cluster,
    where no controller of this run is found: the cleaner would take it for dead."""
    return variable("RAY_API_SERVER_ADDRESS", url)


def local_instance_log_level(level: str) -> AbstractContextManager[None]:
    """The level of the Ray loggers in the processes of a local instance that starts inside the block:
    its raylet starts them with this process's environment (a cluster's own nodes keep their level)."""
    return variable("RAY_LOGGER_LEVEL", level.lower())
