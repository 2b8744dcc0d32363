"""`--mlflow`: a real run logged to a real local MLflow store, read back with MLflow's own client."""

import textwrap

import pytest

from tests.conftest import TINY_GRID, run_tuner

pytestmark = pytest.mark.slow


def test_every_trial_is_an_mlflow_run_with_its_params_and_each_epochs_metrics(tmp_path):
    mlflow = pytest.importorskip("mlflow", reason="MLflow is the optional extra tuner[mlflow]")
    (tmp_path / "tiny.py").write_text(textwrap.dedent(TINY_GRID))
    result = run_tuner("run", "tiny.py", "--name", "tracked", "--mlflow", "store.db", "-q", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]

    client = mlflow.MlflowClient(tracking_uri=f"sqlite:///{tmp_path / 'store.db'}")
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


def test_mlflow_not_installed_is_one_line_before_anything_runs(tmp_path):
    (tmp_path / "tiny.py").write_text(textwrap.dedent(TINY_GRID))
    # `python -m` puts the working directory first on sys.path: there `import mlflow` fails, as it does
    # without the extra, whether or not this machine has MLflow.
    (tmp_path / "mlflow.py").write_text("raise ImportError('No module named mlflow')\n")
    result = run_tuner("run", "tiny.py", "--name", "untracked", "--mlflow", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        "tuner: error: --mlflow needs MLflow, which is an optional extra: pip install 'tuner[mlflow]' "
        "(or pip install mlflow)"
    )
    assert not (tmp_path / "tuner_results" / "untracked").exists()
