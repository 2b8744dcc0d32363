"""The settings of one run of an experiment that are not the experiment itself: where it is kept, its
seed, where Ray runs, how much is printed. `RunOptions` is what `tuner.run` takes; the command line's
options for them are generated from these declarations, as for the experiment's own settings."""

import os
from dataclasses import dataclass, field

from tuner.settings.budgets import parse_keep
from tuner.settings.declaration import check, setting
from tuner.settings.kinds import Flag, Parsed, PlainName, Text, Whole

DEFAULT_STORAGE_PATH = "./tuner_results"  # where `tuner run` and tuner.run keep experiments unless told
# `--mlflow` without a URI: a SQLite file (MLflow 3 refuses its old ./mlruns file store) under the storage
# path, beside the experiments it logs, never in the current folder (often a checkout). Written as the
# option is named; tuner.execution.tracking.store resolves it once the storage path is known.
DEFAULT_MLFLOW_STORE = "<storage-path>/mlflow.db"
DEFAULT_DASHBOARD_PORT = 8265
DEFAULT_UI_PORT = 8080  # `tuner ui`
DEFAULT_KEEP = "10m"  # `--keep-ray` alone: long enough for an edit-and-run loop, short enough to be forgotten
LOOPBACK = "127.0.0.1"
MAX_SEED = 2**32 - 1  # numpy's legacy seeding (np.random.seed) refuses anything larger
SEED_WHY = "numpy's seeding takes 32-bit seeds"
PORT_WHY = "a TCP port is a 16-bit number"
MAX_RETRIES = 1000
RETRIES_WHY = "a trial that crashed that often will crash again"


@dataclass(frozen=True)
class Cluster:
    """Where trials run: a local Ray instance that tuner starts, or an existing cluster."""

    address: str | None = setting(
        None,
        Text(),
        "an existing Ray cluster (auto, host:port, ray://...); default: RAY_ADDRESS, else a new local instance",
        optional=True,
    )
    dashboard: bool = setting(False, Flag(), f"start the local Ray instance with its dashboard on {LOOPBACK}")
    # Unset: 8265 or the first free port after it, as Ray would choose (a second run's dashboard, beside the
    # first's; tuner/execution/dashboard_port.py). A port the user names is theirs: taken, it is refused
    # before Ray starts.
    dashboard_port: int | None = setting(
        None,
        Whole(1, 65535, PORT_WHY),
        f"the dashboard's port (default {DEFAULT_DASHBOARD_PORT}, or the first free one after it)",
        optional=True,
    )
    keep_ray: str | None = setting(
        None,
        Parsed(parse_keep, "'10m'"),
        f"keep the local Ray instance up after the run until it has been idle this long (default {DEFAULT_KEEP}): "
        "later runs from this folder start on it, without Ray's start-up; `tuner down` stops it",
        optional=True,
        argparse={"nargs": "?", "const": DEFAULT_KEEP, "metavar": "IDLE"},
    )

    def __post_init__(self) -> None:
        check(self)

    @property
    def target(self) -> str:
        # "local" rather than Ray's default, which silently joins any cluster `ray start` left running.
        return self.address or os.environ.get("RAY_ADDRESS") or "local"


@dataclass(frozen=True)
class RunOptions:
    """How one run goes, apart from the experiment: where it is stored and named, its seed, the
    cluster, the output. Each field is the command-line option of the same name (`tuner run --help`)."""

    storage_path: str = setting(DEFAULT_STORAGE_PATH, Text(), "where experiments go: a local path or pyarrow-fs URI")
    name: str | None = setting(
        None, PlainName(), "experiment directory name (default: <space>-<timestamp>)", optional=True
    )
    seed: int = setting(
        0, Whole(0, MAX_SEED, SEED_WHY), "seeds sampling and every trial's initialisation and shuffling"
    )
    data_dir: str | None = setting(
        None, Text(), "root of local torchvision datasets (or TUNER_DATA_DIR)", optional=True
    )
    max_failures: int = setting(
        2, Whole(0, MAX_RETRIES, RETRIES_WHY), "retries of a crashed trial, each from its latest checkpoint"
    )
    smoke: bool = setting(
        True,
        Flag(),
        "skip the smoke step (one batch of the space's code on the first config, run while Ray starts)",
        flag="--no-smoke",
        argparse={"action": "store_false"},
    )
    # 0: nothing printed but through logging (the default from Python), 1: tuner's live view on stdout
    # (the command line's default), 2: Ray's own full output. No option of its own: the command line
    # sets it from -q and -v (tuner/cli.py).
    verbose: int = setting(0, Whole(0, 2), "how much is printed", flag=None)
    mlflow: str | None = setting(
        None,
        Text(),
        f"log every trial to MLflow (default store {DEFAULT_MLFLOW_STORE}; needs tuner[mlflow])",
        optional=True,
        argparse={"nargs": "?", "const": DEFAULT_MLFLOW_STORE, "metavar": "URI"},
    )
    warm_start: str | None = setting(
        None,
        Text(),
        "an earlier experiment's directory whose trials seed the search (optuna learns from them, random "
        "skips configs already run)",
        optional=True,
    )
    cluster: Cluster = field(default_factory=Cluster)

    def __post_init__(self) -> None:
        check(self)
