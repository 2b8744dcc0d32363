"""`--mlflow`: a real run logged to a real local MLflow store, read back with MLflow's own client; where
the store goes when no URI is given."""

import importlib.util
import os
import signal
import subprocess
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import TINY_GRID, free_port, run_tuner, tuner_without
from tuner.command import install_command
from tuner.errors import TunerError
from tuner.execution import tracking
from tuner.settings.run import DEFAULT_MLFLOW_STORE


def test_the_default_store_is_under_the_storage_path_and_a_given_one_is_kept():
    assert tracking.store(DEFAULT_MLFLOW_STORE, "/data/tuner_results") == "/data/tuner_results/mlflow.db"
    assert tracking.store(DEFAULT_MLFLOW_STORE, "file:///data/tuner_results/") == "/data/tuner_results/mlflow.db"
    assert tracking.store("store.db", "/data/tuner_results") == "store.db"
    assert tracking.store("http://127.0.0.1:5000", "s3://bucket/results") == "http://127.0.0.1:5000"
    with pytest.raises(TunerError, match="not local here"):  # a SQLite file cannot go into a bucket
        tracking.store(DEFAULT_MLFLOW_STORE, "s3://bucket/results")


@pytest.mark.slow
def test_every_trial_is_an_mlflow_run_with_its_params_and_each_epochs_metrics(tmp_path):
    mlflow = pytest.importorskip("mlflow", reason="MLflow is the optional extra tuner[mlflow]")
    (tmp_path / "tiny.py").write_text(textwrap.dedent(TINY_GRID))
    # No URI: the store goes under the storage path, not into the folder the command ran in.
    result = run_tuner(
        "run", "tiny.py", "--name", "tracked", "--storage-path", "results", "--mlflow", "--no-smoke", cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert not (tmp_path / "mlflow.db").exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["results", "tiny.py"]
    _check_the_ui_hint(result.stdout + result.stderr, f"sqlite:///{tmp_path / 'results' / 'mlflow.db'}", tmp_path)

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'results' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("tracked")
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    assert len(runs) == 4  # the 2 x 2 grid
    assert sorted((run.data.params["lr"], run.data.params["batch_size"]) for run in runs) == [
        ("0.001", "32"),
        ("0.001", "64"),
        ("0.01", "32"),
        ("0.01", "64"),
    ]
    for run in runs:
        history = client.get_metric_history(run.info.run_id, "val_acc")
        assert len(history) == 2 and all(0 <= point.value <= 1 for point in history)  # one per epoch
        assert run.info.status == "FINISHED"


def _check_the_ui_hint(output: str, uri: str, folder: Path) -> None:
    """The `mlflow ui` command tuner printed serves the store (full MLflow: mlflow-skinny has no UI), or,
    where only mlflow-skinny is installed, comes after the install command that adds the UI."""
    line = next(line for line in output.splitlines() if "mlflow: every trial is a run of experiment tracked" in line)
    command = line[line.index("(") + 1 : line.rindex(")")]
    if importlib.util.find_spec("flask") is None:
        assert command.startswith(f"{install_command('mlflow')}, then "), command
        assert command.endswith(f"/mlflow ui --backend-store-uri {uri}"), command
        return
    port = free_port()
    ui = subprocess.Popen(
        f"{command} --port {port}", shell=True, cwd=folder, start_new_session=True, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            assert ui.poll() is None, ui.communicate()[1][-3000:]
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as response:
                    assert response.status == 200
                    return
            except OSError:
                time.sleep(1)
        raise AssertionError(f"{command} served nothing on port {port} within 180 s")
    finally:
        os.killpg(ui.pid, signal.SIGKILL)
        ui.wait(timeout=30)


@pytest.mark.slow
def test_mlflow_not_installed_is_one_line_before_anything_runs(tmp_path):
    (tmp_path / "tiny.py").write_text(textwrap.dedent(TINY_GRID))
    result = tuner_without(
        ("mlflow",), "sys.exit(main(['run', 'tiny.py', '--name', 'untracked', '--mlflow']))", tmp_path
    )
    assert result.returncode == 2, result.stderr[-2000:]
    assert result.stderr.strip().splitlines()[-1] == (
        f"tuner: error: --mlflow needs MLflow, an optional extra: {install_command('mlflow')}"
    )
    assert not (tmp_path / "tuner_results" / "untracked").exists()
