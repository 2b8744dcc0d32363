"""Bad input: one line on stderr naming the problem and the fix, exit code 2, no traceback, nothing written."""

import pytest

from tests.conftest import run_tuner

MISSING_FIELDS = 'model = "mlp"\ndataset = "digits"\n'


@pytest.mark.parametrize(
    "args,message",
    [
        (["run", "no_such_space"], "unknown space 'no_such_space'; available:"),
        (["run", "nowhere/space.py"], "space module nowhere/space.py does not exist"),
        (["run", "missing_fields.py"], "is missing metric, mode, param_space"),
        (["run", "--set", "lr"], "--set 'lr' is not key=value"),
        (["run", "--set", "learning_rate=0.1"], "--set learning_rate: unknown hyperparameter"),
        (["run", "--set", "batch_size=0"], "batch_size must be an integer >= 1, not 0"),
        (["run", "--workers", "0"], "argument --workers: must be at least 1, not 0"),
        (["run", "--name", "../elsewhere"], "argument --name: '../elsewhere' is not a plain name"),
        (["run", "--epochs", "many"], "argument --epochs: 'many' is not a whole number"),
        (["run", "mnist_cnn"], "pass --data-dir DIR or set TUNER_DATA_DIR"),
        (["run", "mnist_cnn", "--data-dir", "absent_dir"], "data dir"),
        (["run", "digits_mlp", "--space", "digits_cnn"], "either as an argument or with --space"),
        (["report", "not_an_experiment"], "is not a tuner experiment"),
        (["resume", "not_an_experiment"], "is not a tuner experiment"),
        (["run", "--time-budget", "abc"], "time budget 'abc' is not a duration; write e.g. 90s, 30m"),
        (["run", "--stop", "accuracy>0.9"], "'accuracy' is not reported; choose one of val_acc"),
        (["run", "--scheduler", "pb2"], "unknown scheduler 'pb2'"),
        (["run", "--search", "optuna"], "optuna cannot take grid axes (lr); use --search grid or random"),
        (["run", "--scheduler", "pbt", "--set", "lr=0.1", "--set", "weight_decay=0", "--set", "batch_size=64"],
         "pbt has nothing to mutate"),
        (["run", "--max-failures", "-3"], "argument --max-failures: must be at least 0, not -3"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
    ],
)
def test_bad_input_is_one_clear_line(tmp_path, args, message):
    (tmp_path / "missing_fields.py").write_text(MISSING_FIELDS)
    (tmp_path / "not_an_experiment").mkdir()
    before = set(tmp_path.iterdir())
    result = run_tuner(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr + result.stdout
    assert set(tmp_path.iterdir()) == before  # no experiment directory, no tuner_results/


def test_workers_beyond_the_cluster_fail_before_any_trial(tmp_path):
    result = run_tuner("run", "--workers", "8", "--storage-path", "results", "--name", "too_big", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert "tuner: error: a trial needs 8 workers x 1 CPU = 8 CPU, but the Ray cluster has 2; lower --workers" \
        in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "results" / "too_big").exists()
