"""`--mlflow [URI]`: every trial logged to MLflow, one MLflow run per trial with its config as params and
its metrics per epoch, through Ray Tune's own MLflowLoggerCallback. MLflow is an optional extra
(`tuner[mlflow]`, full MLflow: mlflow-skinny logs but has no `mlflow ui`); asking for it
without MLflow installed is one line, before Ray starts. TensorBoard needs nothing to log: Ray Tune writes
its event files into every trial directory through tensorboardX; `tensorboard` itself is the extra
`tuner[tensorboard]`.
"""

import importlib.util
import logging
import shlex
from typing import Any

from tuner import extras
from tuner.command import with_extra
from tuner.errors import TunerError
from tuner.home import expand_home
from tuner.settings.run import DEFAULT_MLFLOW_STORE


def store(uri: str, storage_path: str) -> str:
    """`--mlflow`'s store: the default (DEFAULT_MLFLOW_STORE) becomes `<storage path>/mlflow.db`, anything
    else stays as given. A SQLite file needs a local folder, so with a storage URI (s3://, gs://) the
    default is refused in one line rather than put back in the current folder."""
    if uri != DEFAULT_MLFLOW_STORE:
        return uri
    prefix = DEFAULT_MLFLOW_STORE.split("/", 1)[0]
    if storage_path.startswith("file://"):
        storage_path = storage_path.removeprefix("file://")
    if "://" in storage_path:
        raise TunerError(
            f"--mlflow without a URI keeps its SQLite store under --storage-path, which is not local here "
            f"({storage_path}); give it one: --mlflow http://<mlflow server> or --mlflow /path/mlflow.db"
        )
    return uri.replace(prefix, storage_path.rstrip("/"), 1)


def tracking_uri(uri: str) -> str:
    """A path ending in .db becomes an absolute sqlite:/// URI, any other path a file: URI (MLflow's
    file store, which MLflow 3 refuses in one message of its own); URIs (http://, sqlite:///,
    databricks) pass through. Absolute, because the callback runs in the driver, whose working
    directory need not be the user's by then."""
    if "://" in uri or uri.startswith(("sqlite:", "databricks")):
        return uri
    path = expand_home(uri).resolve()
    return f"sqlite:///{path}" if path.suffix == ".db" else path.as_uri()


def check_installed() -> None:
    extras.require("mlflow", "--mlflow")


def ui_command(uri: str) -> str:
    """The command that shows the store in MLflow's UI, preceded by the install command where this
    installation has only mlflow-skinny (its `mlflow ui` fails: No module named 'flask')."""
    usable = importlib.util.find_spec("flask") is not None
    return with_extra(
        "mlflow", "mlflow", lambda mlflow: f"{mlflow} ui --backend-store-uri {shlex.quote(uri)}", usable=usable
    )


def mlflow_callback(uri: str, experiment_name: str) -> Any:
    """Ray's callback, logging to the MLflow experiment named after tuner's experiment."""
    from ray.air.integrations.mlflow import MLflowLoggerCallback

    for name in ("mlflow", "alembic"):  # a new SQLite store's table set-up is not the user's business
        logging.getLogger(name).setLevel(logging.WARNING)
    return MLflowLoggerCallback(tracking_uri=tracking_uri(uri), experiment_name=experiment_name, save_artifact=False)
